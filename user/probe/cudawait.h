/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which CUDA synchronize a thread that blocked before ccld attached waits
 * in.  Its call was entered before the uprobes were in, so the BPF entries
 * map does not have it; its user stack does.  A conservative scan of the
 * words above the stack pointer of its system call for a return address
 * into cudaStreamSynchronize / cudaEventSynchronize (libcudart) or
 * cuStreamSynchronize / cuEventSynchronize (libcuda): a word counts only
 * where the bytes before it are a call instruction (x86-64), so a stale
 * value in an unused slot of a live frame rarely passes.
 */
#ifndef CCLD_CUDAWAIT_H
#define CCLD_CUDAWAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CUDAWAIT_MAX_FNS	16	/* sync functions of one process kept */
#define CUDAWAIT_STACK_BYTES	(32 << 10)	/* stack read above the pointer */

/* One synchronize function as loaded in a process: [start, end) */
struct cudawait_fn {
	uint64_t start, end;
	uint8_t fn;		/* CCLD_FN_CUDA_STREAM_SYNC or CCLD_FN_CUDA_EVENT_SYNC */
};

/*
 * The synchronize functions of the CUDA libraries (libcudart.so*,
 * libcuda.so*) PID maps, at most MAX into OUT.  Returns how many, or -errno
 * (-ENOENT: no such process).
 */
int cudawait_fns(pid_t pid, struct cudawait_fn *out, size_t max);

/*
 * Of N stack words, the first that points into one of FNS (NFNS) and that
 * IS_CALL_RET (NULL: every such word) takes for a return address: that
 * function's CCLD_FN_CUDA_*; 0 none.
 */
uint8_t cudawait_match(const uint64_t *words, size_t n, const struct cudawait_fn *fns,
		       size_t nfns, bool (*is_call_ret)(void *ctx, uint64_t addr), void *ctx);

/*
 * A thread of PID inside a system call, its stack pointer SP there
 * (threads_task_regs): the CUDA synchronize its stack says it waits in
 * (CCLD_FN_CUDA_*), 0 none or not known.
 */
uint8_t cudawait_thread(pid_t pid, uint64_t sp, const struct cudawait_fn *fns, size_t nfns);

#define CUDAWAIT_FRAMES	32	/* frames walked to confirm a scan's answer */

/*
 * FN, cudawait_thread's answer for thread TID of PID, checked against its
 * frames unwound from SP and PC (read with SP, in one threads_task_regs:
 * the thread may have moved between two reads) (ustack.h): a stale return address into a synchronize,
 * left in an unused slot of a live frame by an earlier call, passes the
 * scan (a rank blocked in a checkpoint write after its step's
 * cudaEventSynchronize).  The frame's synchronize where one lies in it;
 * 0 where the walk reached the outermost frame, or CUDAWAIT_FRAMES of
 * them, without one; FN where the walk ended early (no CFI: the scan's
 * answer stands).
 */
uint8_t cudawait_confirm(pid_t pid, pid_t tid, uint64_t sp, uint64_t pc,
			 const struct cudawait_fn *fns, size_t nfns, uint8_t fn);

#endif
