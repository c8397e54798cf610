// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cudawait: the CUDA synchronize a thread blocked in before ccld attached,
 * from its user stack.  Children load the stand-in libcudart (tests/sim)
 * with its GPU stalled, so that their main thread blocks inside
 * cudaEventSynchronize / cudaStreamSynchronize for good; one blocks in
 * pause() instead, its stack holding no synchronize.  No probe is involved:
 * this is the look at a process attached after its sync began.
 */
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <linux/types.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ccld.h"
#include "check.h"
#include "cudawait.h"
#include "threads.h"

static void test_syscall_sp(void)
{
	uint64_t sp;

	CHECK(threads_syscall_sp("202 0x7f00 0x80 0x1 0x0 0x0 0x0 0x7ffc1000 0x7f12345", &sp));
	CHECK_INT(sp, 0x7ffc1000);
	CHECK(threads_syscall_sp("-1 0x7ffc2000 0x401000", &sp));
	CHECK_INT(sp, 0x7ffc2000);
	CHECK(!threads_syscall_sp("running", &sp));
	CHECK(!threads_syscall_sp("202 0x1 0x2", &sp));
	CHECK(!threads_syscall_sp("", &sp));
	CHECK(!threads_syscall_sp("-2 0x1 0x2", &sp));
	CHECK(!threads_syscall_sp("202 0 0 0 0 0 0 0 0", &sp));
}

static bool never(void *ctx, uint64_t addr)
{
	(void)ctx;
	(void)addr;
	return false;
}

static void test_match(void)
{
	const struct cudawait_fn fns[] = {
		{ 0x1000, 0x1100, CCLD_FN_CUDA_STREAM_SYNC },
		{ 0x2000, 0x2040, CCLD_FN_CUDA_EVENT_SYNC },
	};
	const uint64_t words[] = { 7, 0x1000, 0x2040, 0x1050 };

	/* the entry itself is no return address; the end is (a last call) */
	CHECK_INT(cudawait_match(words, 4, fns, 2, NULL, NULL), CCLD_FN_CUDA_EVENT_SYNC);
	CHECK_INT(cudawait_match(words + 3, 1, fns, 2, NULL, NULL), CCLD_FN_CUDA_STREAM_SYNC);
	CHECK_INT(cudawait_match(words, 2, fns, 2, NULL, NULL), 0);
	CHECK_INT(cudawait_match(words, 4, fns, 2, never, NULL), 0);
	CHECK_INT(cudawait_match(words, 4, fns, 0, NULL, NULL), 0);
}

/* the stand-in libcudart beside this test's build: build/sim/lib */
static bool cudart_path(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *s;
	int up;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	for (up = 0; up < 3; up++) {	/* build/tests/bin/test_cudawait -> build */
		s = strrchr(exe, '/');
		if (!s)
			return false;
		*s = '\0';
	}
	if (strlen(exe) + sizeof("/sim/lib/libcudart.so.13") > len)
		return false;
	strcpy(out, exe);
	strcat(out, "/sim/lib/libcudart.so.13");
	return access(out, R_OK) == 0;
}

static void kernel(void *arg)
{
	(void)arg;
}

enum how { BY_EVENT, BY_STREAM, BY_PAUSE, BY_STALE };

/*
 * Blocks in pause() with STALE in an unused slot of its frame: what an
 * earlier call leaves behind, here a return address into
 * cudaEventSynchronize (a rank blocked in a checkpoint write after its
 * step's synchronize returned)
 */
static __attribute__((noinline)) void block_under_stale_frame(uint64_t stale)
{
	volatile uint64_t slot[64];

	slot[32] = stale;
	pause();
	(void)slot[32];
}

/* an address just past a call instruction (e8 rel32) inside FN, 0 none */
static uint64_t ret_addr_in(void *fn)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;
	const uint8_t *code = fn;
	size_t k;

	if (!dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 0;
	for (k = 0; k + 5 <= sym->st_size; k++)
		if (code[k] == 0xe8)
			return (uint64_t)(uintptr_t)(code + k + 5);
	return 0;
}

/* the child: its GPU stalled, its main thread blocked as HOW says */
static void child(const char *lib, enum how how)
{
	void (*fault_set)(uint64_t, uint64_t, int, double);
	int (*launch)(void *, void (*)(void *), void *);
	int (*ev_create)(void **), (*ev_record)(void *, void *), (*ev_sync)(void *);
	int (*st_sync)(void *);
	void *h = dlopen(lib, RTLD_NOW), *ev = NULL;

	if (!h)
		_exit(2);
	fault_set = (void (*)(uint64_t, uint64_t, int, double))dlsym(h, "ccldsim_gpu_fault_set");
	launch = (int (*)(void *, void (*)(void *), void *))dlsym(h, "ccldsim_stream_launch");
	ev_create = (int (*)(void **))dlsym(h, "cudaEventCreate");
	ev_record = (int (*)(void *, void *))dlsym(h, "cudaEventRecord");
	ev_sync = (int (*)(void *))dlsym(h, "cudaEventSynchronize");
	st_sync = (int (*)(void *))dlsym(h, "cudaStreamSynchronize");
	if (!fault_set || !launch || !ev_create || !ev_record || !ev_sync || !st_sync)
		_exit(3);
	if (how != BY_STALE)
		fault_set(0, UINT64_MAX, 1, 1.0);
	if (launch(NULL, kernel, NULL) || ev_create(&ev) || ev_record(ev, NULL))
		_exit(4);
	if (how == BY_STALE) {
		uint64_t stale = ret_addr_in((void *)ev_sync);

		if (!stale || ev_sync(ev))
			_exit(6);
		block_under_stale_frame(stale);
	} else if (how == BY_EVENT)
		ev_sync(ev);
	else if (how == BY_STREAM)
		st_sync(NULL);
	else
		pause();
	_exit(5);	/* a stalled GPU never lets it get here */
}

/*
 * what the scan says of a child blocked as HOW, once it sleeps, and
 * *CONFIRMED what its unwound frames make of that
 */
static uint8_t scan_child(const char *lib, enum how how, int *nfns, uint8_t *confirmed)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	struct cudawait_fn fns[CUDAWAIT_MAX_FNS];
	uint64_t sp = 0, pc = 0;
	uint8_t fn = 0xff;
	int tries;
	pid_t pid = fork();

	if (pid == 0)
		child(lib, how);
	CHECK(pid > 0);
	if (pid < 0)
		return 0xff;
	*nfns = -1;
	/* until the library is in and the thread sleeps: 2 s at most */
	for (tries = 0; tries < 100; tries++) {
		char path[64], line[256] = "";
		FILE *f;

		nanosleep(&ts, NULL);
		*nfns = cudawait_fns(pid, fns, CUDAWAIT_MAX_FNS);
		snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)pid);
		f = fopen(path, "re");
		if (f) {
			if (!fgets(line, sizeof(line), f))
				line[0] = '\0';
			fclose(f);
		}
		if (!threads_task_regs(pid, pid, &sp, &pc))
			sp = pc = 0;
		fn = *nfns > 0 ? cudawait_thread(pid, sp, fns, (size_t)*nfns) : 0;
		/* futex (202) for a sync, pause (34) */
		if (*nfns > 0 && (how >= BY_PAUSE ? !strncmp(line, "34 ", 3) :
				  !strncmp(line, "202 ", 4)) && (fn || how == BY_PAUSE))
			break;
	}
	*confirmed = *nfns > 0 ? cudawait_confirm(pid, pid, sp, pc, fns, (size_t)*nfns, fn) : 0xff;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return fn;
}

static void test_live(void)
{
	char lib[PATH_MAX];
	int nfns;

	lib[0] = '\0';
	if (!cudart_path(lib, sizeof(lib))) {
		/* the stand-in is built with the tests (make all): its absence is a failure */
		fprintf(stderr, "test_cudawait: no stand-in libcudart at %s\n", lib);
		CHECK(0);
		return;
	}
	uint8_t confirmed;

	CHECK_INT(scan_child(lib, BY_EVENT, &nfns, &confirmed), CCLD_FN_CUDA_EVENT_SYNC);
	CHECK_INT(confirmed, CCLD_FN_CUDA_EVENT_SYNC);
	/* cudaStreamSynchronize, _ptsz and cudaEventSynchronize of the stand-in */
	CHECK(nfns >= 2);
	CHECK_INT(scan_child(lib, BY_STREAM, &nfns, &confirmed), CCLD_FN_CUDA_STREAM_SYNC);
	CHECK_INT(confirmed, CCLD_FN_CUDA_STREAM_SYNC);
	CHECK_INT(scan_child(lib, BY_PAUSE, &nfns, &confirmed), 0);
	CHECK_INT(confirmed, 0);
	/*
	 * the synchronize returned: the scan takes a stale return address
	 * into it for a wait (it did so of a rank blocked in a checkpoint
	 * write, named H3 "its CPU waits for its GPU"), the frames do not
	 */
	CHECK_INT(scan_child(lib, BY_STALE, &nfns, &confirmed), CCLD_FN_CUDA_EVENT_SYNC);
	CHECK_INT(confirmed, 0);
	/* a process that maps no CUDA library, and one that is gone */
	{
		struct cudawait_fn fns[CUDAWAIT_MAX_FNS];

		CHECK_INT(cudawait_fns(getpid(), fns, CUDAWAIT_MAX_FNS), 0);
		CHECK(cudawait_fns(INT_MAX, fns, CUDAWAIT_MAX_FNS) < 0);
	}
}

int main(void)
{
	test_syscall_sp();
	test_match();
	test_live();
	return check_finish("test_cudawait");
}
