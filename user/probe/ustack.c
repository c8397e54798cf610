// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Native stacks without stopping the thread (ustack.h).  libdw's unwinder
 * is given the process through callbacks of our own instead of
 * dwfl_linux_proc_attach, which ptrace-stops every thread it looks at:
 * memory comes from process_vm_readv, the first frame's registers from
 * /proc (stack pointer and program counter only; a frame whose CFA rule
 * needs another register ends the walk).  The thread may run on while it
 * is read; a blocked thread, the one worth reading, does not.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <elfutils/libdwfl.h>
#include <libiberty/demangle.h>
#include "ustack.h"

#if defined(__x86_64__)
#define SP_DWARF_REG	7	/* rsp */
#elif defined(__aarch64__)
#define SP_DWARF_REG	31	/* sp */
#else
#define SP_DWARF_REG	-1
#endif

struct walk {
	pid_t pid, tid;
	uint64_t sp, pc;
	Dwfl *dwfl;
	char *out;
	size_t len, used;
	int nframes;		/* in the text */
	int seen;		/* walked */
	bool cut;
	const char *lib;	/* a frame in a module whose file name holds it ... */
	bool in_lib;		/* ... was seen */
	uint64_t *pcs;		/* ustack_thread_pcs: the frames' call sites */
	size_t max_pcs, npcs;
};

/* No separate debug files: the modules' own symbol tables and CFI suffice. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static char *debuginfo_path;
static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = no_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

/* the one thread asked about */
static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct walk *w = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = w;
	return w->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct walk *w = arg;

	(void)dwfl;
	if (tid != w->tid)
		return false;
	*thread_argp = w;
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct walk *w = arg;
	struct iovec local = { result, sizeof(*result) };
	struct iovec remote = { (void *)(uintptr_t)addr, sizeof(*result) };

	(void)dwfl;
	return process_vm_readv(w->pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(*result);
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct walk *w = arg;
	Dwarf_Word sp = w->sp;

	if (!dwfl_thread_state_registers(thread, SP_DWARF_REG, 1, &sp))
		return false;
	dwfl_thread_state_register_pc(thread, w->pc);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* FRAME's name, "fn+0x17" or "libfoo.so+0x1a2b", into BUF; its module noted in W */
static void frame_name(struct walk *w, Dwarf_Addr pc, bool activation, char *buf, size_t n)
{
	Dwfl *dwfl = w->dwfl;
	/* a return address is past its call: look the call up */
	Dwarf_Addr at = activation || !pc ? pc : pc - 1;
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, at);
	const char *name = NULL, *mname;
	GElf_Off off = 0;
	GElf_Sym sym;
	Dwarf_Addr start = 0;
	char *dem;

	mname = mod ? dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL) : NULL;
	if (mname && w->lib) {
		const char *base = strrchr(mname, '/');

		if (strstr(base ? base + 1 : mname, w->lib))
			w->in_lib = true;
	}
	if (mod)
		name = dwfl_module_addrinfo(mod, at, &off, &sym, NULL, NULL, NULL);
	if (name) {
		dem = cplus_demangle(name, DMGL_NO_OPTS);
		snprintf(buf, n, "%.48s+0x%" PRIx64, dem ? dem : name, (uint64_t)(off + (pc - at)));
		free(dem);
		return;
	}
	if (mname) {
		const char *base = strrchr(mname, '/');

		snprintf(buf, n, "%.32s+0x%" PRIx64, base ? base + 1 : mname,
			 (uint64_t)(pc - start));
		return;
	}
	snprintf(buf, n, "0x%" PRIx64, (uint64_t)pc);
}

/*
 * A frame's pc inside a module's mapped range: a return address read from
 * a frame the CFI did not describe (a stand-in library's hand-made stack,
 * say) points anywhere, and ends the walk
 */
static bool in_module(Dwfl *dwfl, Dwarf_Addr at)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, at);
	Dwarf_Addr start = 0, end = 0;

	return mod && dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL) &&
	       at >= start && at < end;
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	char name[80];
	Dwarf_Addr pc;
	bool activation;
	size_t need;

	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	if (w->seen && !in_module(w->dwfl, activation ? pc : pc - 1))
		return DWARF_CB_ABORT;
	if (w->pcs) {
		/* the call site: a return address is past its call */
		w->pcs[w->npcs++] = activation ? pc : pc - 1;
		w->seen++;
		return w->npcs < w->max_pcs ? DWARF_CB_OK : DWARF_CB_ABORT;
	}
	frame_name(w, pc, activation, name, sizeof(name));
	/* " < name", and room left for " ..." and the NUL after it */
	need = strlen(name) + (w->used ? 3 : 0);
	if (!w->cut && w->used + need + 5 > w->len)
		w->cut = true;
	if (!w->cut) {
		w->used += (size_t)snprintf(w->out + w->used, w->len - w->used, "%s%s",
					    w->used ? " < " : "", name);
		w->nframes++;
	}
	/* past the text's end only to see the modules of the frames below */
	if (++w->seen >= USTACK_MAX_FRAMES || (w->cut && !w->lib))
		return DWARF_CB_ABORT;
	return DWARF_CB_OK;
}

/* OUT empty and *IN_LIB false, whatever follows; -EINVAL where OUT is too short */
static int clear_out(char *out, size_t len, bool *in_lib)
{
	if (len)
		out[0] = '\0';
	if (in_lib)
		*in_lib = false;
	return len < 8 ? -EINVAL : 0;
}

struct ustack {
	Dwfl *dwfl;
	struct walk w;		/* the walk under way: the callbacks' state */
};

struct ustack *ustack_open(pid_t pid, int *err)
{
	struct ustack *u;
	int rc;

	*err = 0;
	if (SP_DWARF_REG < 0) {
		*err = -ENOTSUP;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u || !(u->dwfl = dwfl_begin(&proc_callbacks))) {
		free(u);
		*err = -ENOMEM;
		return NULL;
	}
	u->w.pid = pid;
	u->w.dwfl = u->dwfl;
	dwfl_report_begin(u->dwfl);
	rc = dwfl_linux_proc_report(u->dwfl, pid);
	if (dwfl_report_end(u->dwfl, NULL, NULL) || rc ||
	    !dwfl_attach_state(u->dwfl, NULL, pid, &thread_callbacks, &u->w)) {
		*err = rc > 0 ? -rc : -ESRCH;
		ustack_close(u);
		return NULL;
	}
	return u;
}

void ustack_close(struct ustack *u)
{
	if (!u)
		return;
	dwfl_end(u->dwfl);
	free(u);
}

/* W ready for a walk of thread TID from SP and PC: no text, no pcs yet */
static void walk_reset(struct walk *w, pid_t tid, uint64_t sp, uint64_t pc)
{
	w->tid = tid;
	w->sp = sp;
	w->pc = pc;
	w->out = NULL;
	w->len = w->used = 0;
	w->nframes = w->seen = 0;
	w->cut = w->in_lib = false;
	w->lib = NULL;
	w->pcs = NULL;
	w->max_pcs = w->npcs = 0;
}

int ustack_thread(struct ustack *u, pid_t tid, uint64_t sp, uint64_t pc, char *out,
		  size_t len, const char *lib, bool *in_lib)
{
	struct walk *w = &u->w;
	int err = clear_out(out, len, in_lib);

	if (err)
		return err;
	walk_reset(w, tid, sp, pc);
	w->out = out;
	w->len = len;
	w->lib = lib;
	/* an error past the first frame is the walk's end (no CFI, an unknown register) */
	dwfl_getthread_frames(u->dwfl, tid, on_frame, w);
	if (in_lib)
		*in_lib = w->in_lib;
	if (w->cut || w->seen == USTACK_MAX_FRAMES)
		snprintf(out + w->used, len - w->used, "%s...", w->used ? " " : "");
	return w->nframes;
}

int ustack_thread_pcs(struct ustack *u, pid_t tid, uint64_t sp, uint64_t pc, uint64_t *pcs,
		      size_t max, bool *complete)
{
	struct walk *w = &u->w;
	int rc;

	*complete = false;
	if (!max)
		return -EINVAL;
	walk_reset(w, tid, sp, pc);
	w->pcs = pcs;
	w->max_pcs = max;
	rc = dwfl_getthread_frames(u->dwfl, tid, on_frame, w);
	/* 0: unwound to the outermost frame (an abort or an error is not) */
	*complete = rc == 0 && w->npcs < max;
	w->pcs = NULL;
	return (int)w->npcs;
}

int ustack_read(pid_t pid, pid_t tid, uint64_t sp, uint64_t pc, char *out, size_t len,
		const char *lib, bool *in_lib)
{
	struct ustack *u;
	int err = clear_out(out, len, in_lib), n;

	if (err)
		return err;
	u = ustack_open(pid, &err);
	if (!u)
		return err;
	n = ustack_thread(u, tid, sp, pc, out, len, lib, in_lib);
	ustack_close(u);
	return n;
}
