/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A thread's native stack, read without stopping or attaching to it: the
 * stack pointer and program counter the kernel shows for a thread blocked
 * in it (/proc/PID/task/TID/syscall: a system call, a stop, a page fault),
 * its memory through process_vm_readv, the frames unwound with the
 * modules' call frame information (.eh_frame, .debug_frame) by libdw, and
 * named from their symbol tables (C++ names demangled, parameters left
 * out).  A thread running in user space shows no registers there: it has
 * no stack to read this way.
 */
#ifndef CCLD_USTACK_H
#define CCLD_USTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define USTACK_MAX_FRAMES	16

/*
 * Thread TID of PID's stack, from its stack pointer SP and program counter
 * PC (threads_task_regs), as "fn+0x17 < caller+0x4e < ..." (innermost
 * first; "module+0xoff" where no symbol covers the address) into OUT (LEN
 * bytes, cut at a frame's end, "..." after the last one kept).  Returns the
 * number of frames (0: not even the first could be named), or -errno:
 * -ENOTSUP on an architecture whose stack pointer register it does not
 * know, -ESRCH where libdw could not attach (the process is gone).  LIB
 * (or NULL): *IN_LIB says whether a frame, named or not, lies in a module
 * whose file name contains it ("libnccl": a thread NCCL started).
 */
int ustack_read(pid_t pid, pid_t tid, uint64_t sp, uint64_t pc, char *out, size_t len,
		const char *lib, bool *in_lib);

/*
 * The same for several threads of one process: its modules are reported,
 * and their symbol tables loaded, once (a PyTorch process maps hundreds of
 * libraries, some with 100,000s of symbols).  ustack_open: NULL and *ERR
 * (-errno as above) on failure.
 */
struct ustack;
struct ustack *ustack_open(pid_t pid, int *err);
int ustack_thread(struct ustack *u, pid_t tid, uint64_t sp, uint64_t pc, char *out,
		  size_t len, const char *lib, bool *in_lib);
void ustack_close(struct ustack *u);

/*
 * The call sites of thread TID's frames (the innermost frame's pc, then
 * each return address less one), MAX at most into PCS, without naming
 * them.  *COMPLETE: the walk reached the outermost frame (not cut by MAX,
 * an unwinding error or a frame outside every module).  Returns how many,
 * or -EINVAL.
 */
int ustack_thread_pcs(struct ustack *u, pid_t tid, uint64_t sp, uint64_t pc, uint64_t *pcs,
		      size_t max, bool *complete);

#endif
