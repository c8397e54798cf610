// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The proxy threads of the NCCL stand-in: one per communicator, like NCCL's.  Each
 * moves each op's data in steps over the per-channel, per-peer shared
 * memory connections and calls the profiler hook functions with NCCL 2.28's
 * names, signatures and call points (src/proxy.cc append, transport/net.cc
 * sendProxyProgress / recvProxyProgress).  ccld attaches uprobes to them.
 *
 * Per connection step t (slot t % NCCL_STEPS), the protocol mirrors NCCL's
 * network transport:
 *   receiver posts a buffer       slot.posted = t+1     (recv: posted)
 *   GPU hands data to the proxy   sub.gpuStep > s       (send: posted -> ready)
 *   sender isends                 copy into the slot    (send: transmitted)
 *   network delivers              slot.delivered = t+1  (send: done,
 *                                                        recv: received)
 *   receiver GPU consumes         slot.consumed = t+1   (recv: done)
 * A network stall (CCLD_SIM_FAULT netstall) stops delivery and the
 * receiver's network side, so counters freeze where a real NIC would.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "sim.h"

/* the real NCCL hooks are local symbols that cannot be optimised away */
#define HOOK static __attribute__((noipa, used))

/*
 * NCCL's internals are C++: these functions carry the symbols g++ gives
 * them in NCCL 2.28 (same names, same parameters), so ccld finds them in
 * the stand-in exactly as in the real library.
 */
#define CXX_SYMBOL(s) __asm__(s)
HOOK ncclResult_t ncclProfilerStartProxyOpEvent(int sub, struct ncclProxyArgs *args)
	CXX_SYMBOL("_Z29ncclProfilerStartProxyOpEventiP13ncclProxyArgs");
HOOK ncclResult_t ncclProfilerStopProxyOpEvent(int sub, struct ncclProxyArgs *args)
	CXX_SYMBOL("_Z28ncclProfilerStopProxyOpEventiP13ncclProxyArgs");
HOOK ncclResult_t ncclProfilerRecordProxyOpEventState(int sub, struct ncclProxyArgs *args,
						       int state)
	CXX_SYMBOL("_Z35ncclProfilerRecordProxyOpEventStateiP13ncclProxyArgs"
		   "24ncclProfilerEventState_t");
HOOK ncclResult_t ncclProfilerStartSendProxyStepEvent(int sub, struct ncclProxyArgs *args,
						       int stepId)
	CXX_SYMBOL("_Z35ncclProfilerStartSendProxyStepEventiP13ncclProxyArgsi");
HOOK ncclResult_t ncclProfilerStartRecvProxyStepEvent(int sub, struct ncclProxyArgs *args,
						       int stepId)
	CXX_SYMBOL("_Z35ncclProfilerStartRecvProxyStepEventiP13ncclProxyArgsi");
HOOK ncclResult_t ncclProfilerStopProxyStepEvent(int sub, struct ncclProxyArgs *args,
						  int stepId)
	CXX_SYMBOL("_Z30ncclProfilerStopProxyStepEventiP13ncclProxyArgsi");
HOOK ncclResult_t ncclProfilerRecordProxyStepEventState(int sub, struct ncclProxyArgs *args,
							 int stepId, int state)
	CXX_SYMBOL("_Z37ncclProfilerRecordProxyStepEventStateiP13ncclProxyArgsi"
		   "24ncclProfilerEventState_t");
static ncclResult_t sendProxyProgress(struct ncclProxyState *ps, struct ncclProxyArgs *args)
	CXX_SYMBOL("_ZL17sendProxyProgressP14ncclProxyStateP13ncclProxyArgs");
static ncclResult_t recvProxyProgress(struct ncclProxyState *ps, struct ncclProxyArgs *args)
	CXX_SYMBOL("_ZL17recvProxyProgressP14ncclProxyStateP13ncclProxyArgs");

/*
 * NCCL's transport table of the network transport (src/include/transport.h):
 * the loader fills its function pointers, and ccld reads which transport a
 * progress function belongs to from it.  Only the progress slots are used.
 */
struct ncclTransportComm {
	void *setup, *connect, *free, *proxySharedInit, *proxySetup, *proxyConnect,
		*proxyFree;
	ncclResult_t (*proxyProgress)(struct ncclProxyState *, struct ncclProxyArgs *);
	void *proxyRegister, *proxyDeregister;
};

struct ncclTransport {
	const char name[8];
	void *canConnect;
	struct ncclTransportComm send, recv;
};

__attribute__((used, visibility("hidden"))) struct ncclTransport netTransport = {
	.name = "NET",
	.send = { .proxyProgress = sendProxyProgress },
	.recv = { .proxyProgress = recvProxyProgress },
};

static struct ncclProxyState *g_states;	/* every proxy state, newest first */
static pthread_mutex_t g_states_mu = PTHREAD_MUTEX_INITIALIZER;
/*
 * Wakes this process's kernels.  Shared, not private: a same-host peer's
 * kernel rings it directly when it moved an intra-node step, as a GPU
 * polling NVLink memory sees the step at once, not through a proxy thread.
 */
static struct sim_bell *g_kernel_bell;
static char g_kernel_bell_name[64];
static pthread_once_t g_kernel_bell_once = PTHREAD_ONCE_INIT;
static volatile sig_atomic_t g_dump;	/* dump requests (a generation) */
static uint64_t g_hook_calls;		/* profiler hook calls, for the dump */
/*
 * Like NCCL's hooks (which first test whether a profiler plugin is loaded),
 * each starts with a plain load: x86 uprobes refuse a lock-prefixed first
 * instruction (ENOTSUPP), which a bare atomic increment would be.
 */
static volatile int g_no_profiler_count;
#define COUNT_HOOK() do { \
		if (!g_no_profiler_count) \
			__atomic_add_fetch(&g_hook_calls, 1, __ATOMIC_RELAXED); \
	} while (0)

/* ---- profiler hooks (src/include/profiler.h, 2.27+) -------------------- */

HOOK ncclResult_t ncclProfilerStartProxyOpEvent(int sub, struct ncclProxyArgs *args)
{
	COUNT_HOOK();
	__asm__ volatile("" : : "r"(sub), "r"(args) : "memory");
	return ncclSuccess;
}

HOOK ncclResult_t ncclProfilerStopProxyOpEvent(int sub, struct ncclProxyArgs *args)
{
	COUNT_HOOK();
	__asm__ volatile("" : : "r"(sub), "r"(args) : "memory");
	return ncclSuccess;
}

HOOK ncclResult_t ncclProfilerRecordProxyOpEventState(int sub, struct ncclProxyArgs *args,
						       int state)
{
	COUNT_HOOK();
	__asm__ volatile("" : : "r"(sub), "r"(args), "r"(state) : "memory");
	return ncclSuccess;
}

HOOK ncclResult_t ncclProfilerStartSendProxyStepEvent(int sub, struct ncclProxyArgs *args,
						       int stepId)
{
	COUNT_HOOK();
	__asm__ volatile("" : : "r"(sub), "r"(args), "r"(stepId) : "memory");
	return ncclSuccess;
}

HOOK ncclResult_t ncclProfilerStartRecvProxyStepEvent(int sub, struct ncclProxyArgs *args,
						       int stepId)
{
	COUNT_HOOK();
	__asm__ volatile("" : : "r"(sub), "r"(args), "r"(stepId) : "memory");
	return ncclSuccess;
}

HOOK ncclResult_t ncclProfilerStopProxyStepEvent(int sub, struct ncclProxyArgs *args,
						  int stepId)
{
	COUNT_HOOK();
	__asm__ volatile("" : : "r"(sub), "r"(args), "r"(stepId) : "memory");
	return ncclSuccess;
}

HOOK ncclResult_t ncclProfilerRecordProxyStepEventState(int sub, struct ncclProxyArgs *args,
							 int stepId, int state)
{
	COUNT_HOOK();
	__asm__ volatile("" : : "r"(sub), "r"(args), "r"(stepId), "r"(state) : "memory");
	return ncclSuccess;
}

/* ---- kernel doorbell (process-private) --------------------------------- */

static void kernel_bell_unlink(void)
{
	shm_unlink(g_kernel_bell_name);
}

static void kernel_bell_init(void)
{
	struct timespec ts;

	/*
	 * The pid alone is not unique: a killed process leaves its bell in
	 * /dev/shm, and a later process of another user that gets the same
	 * pid could not open that 0600 file.  The start time makes it unique.
	 */
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(g_kernel_bell_name, sizeof(g_kernel_bell_name), "/ccldsim-k%d-%llx%09ld",
		 (int)getpid(), (unsigned long long)ts.tv_sec, ts.tv_nsec);
	g_kernel_bell = sim_bell_map(g_kernel_bell_name);
	if (!g_kernel_bell) {
		fprintf(stderr, "ccldsim: cannot create the kernel doorbell %s: %s\n",
			g_kernel_bell_name, strerror(errno));
		abort();
	}
	atexit(kernel_bell_unlink);
}

const char *sim_kernel_bell_name(void)
{
	pthread_once(&g_kernel_bell_once, kernel_bell_init);
	return g_kernel_bell_name;
}

uint32_t sim_kernel_bell_read(void)
{
	pthread_once(&g_kernel_bell_once, kernel_bell_init);
	return __atomic_load_n(&g_kernel_bell->seq, __ATOMIC_SEQ_CST);
}

void sim_kernel_bell_ring(void)
{
	pthread_once(&g_kernel_bell_once, kernel_bell_init);
	sim_bell_ring(g_kernel_bell);
}

void sim_kernel_bell_wait(uint32_t seen)
{
	pthread_once(&g_kernel_bell_once, kernel_bell_init);
	/* bounded: an aborted comm or a fault change is noticed within 100 ms */
	__atomic_add_fetch(&g_kernel_bell->sleeping, 1, __ATOMIC_SEQ_CST);
	sim_futex_wait(&g_kernel_bell->seq, seen, 100000000);
	__atomic_sub_fetch(&g_kernel_bell->sleeping, 1, __ATOMIC_SEQ_CST);
}

/* ---- progress ---------------------------------------------------------- */

/* chunk k of a message: [k * SIM_STEP_BYTES, +len) */
static size_t chunk_len(const struct sim_op *op, int k)
{
	size_t off = (size_t)k * SIM_STEP_BYTES;

	if (off >= op->mbytes)
		return 0;
	return op->mbytes - off < SIM_STEP_BYTES ? op->mbytes - off : SIM_STEP_BYTES;
}

static void deadline(struct ncclProxyState *ps, uint64_t t)
{
	if (t < ps->progressState.simNextDeadline)
		ps->progressState.simNextDeadline = t;
}

static uint64_t step_latency_ns(size_t len, uint64_t now)
{
	double us = sim_net_base_us + (double)len / (sim_net_gbps * 1e3);

	return (uint64_t)(us * sim_net_factor(now) * 1000.0);
}

/*
 * Socket transport: a step goes on the wire once its simulated latency
 * passed (so the net faults still apply) and is done when the receiver's
 * thread marked it delivered.  Returns nonzero when something moved.
 */
static int socket_progress(struct ncclProxyState *ps, struct ncclProxyArgs *args, int s,
			   uint64_t now, int stalled)
{
	struct ncclProxySubArgs *sub = args->subs + s;
	struct sim_slot *slot;
	uint64_t t;

	if (sub->simWired < sub->transmitted && !stalled) {
		int id = (int)sub->simWired;
		int k = id * args->nChannels + sub->channelId;

		t = sub->base + sub->simWired;
		if (now < sub->deliverAt[t % NCCL_STEPS]) {
			deadline(ps, sub->deliverAt[t % NCCL_STEPS]);
		} else if (sim_net_send(args->comm, sub->simKind, sub->channelId, sub->peer, t,
					args->sig, sim_net_stage(args->comm, sub->simKind,
								 sub->channelId, sub->peer, t),
					(uint32_t)chunk_len(args->op, k))) {
			if (!sub->simSendErr++)
				fprintf(stderr, "ccld-sim: pid %d rank %d: socket send to rank %d"
					" failed (%s), retrying\n", (int)getpid(), sub->rank,
					sub->peer, strerror(errno));
			deadline(ps, now + 100000000ull);
		} else {
			sub->simWired += args->sliceSteps;
			return 1;
		}
	}
	if (sub->done < sub->simWired) {
		int id = (int)sub->done;

		t = sub->base + sub->done;
		slot = &sub->connection->slot[t % NCCL_STEPS];
		if (__atomic_load_n(&slot->delivered, __ATOMIC_ACQUIRE) == t + 1) {
			sub->done += args->sliceSteps;
			ncclProfilerStopProxyStepEvent(s, args, id);
			sim_kernel_bell_ring();
			if (sub->done == (uint64_t)sub->nsteps)
				args->done++;
			return 1;
		}
	}
	return 0;
}

static __attribute__((noipa)) ncclResult_t sendProxyProgress(struct ncclProxyState *ps,
							     struct ncclProxyArgs *args)
{
	uint64_t now = sim_now_ns();
	int stalled = sim_net_stalled(now), s;

	if (args->state == ncclProxyOpReady) {
		for (s = 0; s < args->nsubs; s++) {
			struct ncclProxySubArgs *sub = args->subs + s;

			sub->posted = sub->transmitted = sub->done = sub->simWired = 0;
			ncclProfilerRecordProxyOpEventState(s, args, ncclProfilerProxyOpInProgress_v4);
		}
		args->state = ncclProxyOpProgress;
	}
	args->idle = 1;
	for (s = 0; s < args->nsubs; s++) {
		struct ncclProxySubArgs *sub = args->subs + s;
		struct sim_conn *conn = sub->connection;
		uint64_t t;
		struct sim_slot *slot;

		if (sub->done == (uint64_t)sub->nsteps)
			continue;
		/* post buffers to the GPU */
		if (sub->posted < (uint64_t)sub->nsteps && sub->posted < sub->done + NCCL_STEPS) {
			int id = (int)sub->posted;

			ncclProfilerStartSendProxyStepEvent(s, args, id);
			__atomic_store_n(&sub->posted, sub->posted + args->sliceSteps, __ATOMIC_RELEASE);
			ncclProfilerRecordProxyStepEventState(s, args, id,
							      ncclProfilerProxyStepSendGPUWait);
			sim_kernel_bell_ring();
			args->idle = 0;
			continue;
		}
		/* data from the GPU: isend once the receiver posted a buffer */
		if (sub->transmitted < sub->posted &&
		    sub->transmitted < __atomic_load_n(&sub->gpuStep, __ATOMIC_ACQUIRE)) {
			int id = (int)sub->transmitted;
			int k = id * args->nChannels + sub->channelId;
			size_t len = chunk_len(args->op, k);

			t = sub->base + sub->transmitted;
			slot = &conn->slot[t % NCCL_STEPS];
			if (__atomic_load_n(&slot->posted, __ATOMIC_ACQUIRE) == t + 1) {
				/* over sockets: staged here, on the wire later */
				uint8_t *dst = args->comm->simNet ?
					sim_net_stage(args->comm, sub->simKind, sub->channelId,
						      sub->peer, t) : conn->data[t % NCCL_STEPS];

				if (!dst)
					continue;	/* no memory yet: retried */
				memcpy(dst, sub->buff + (size_t)k * SIM_STEP_BYTES, len);
				slot->size = (uint32_t)len;
				slot->sig = args->sig;
				sub->deliverAt[t % NCCL_STEPS] = now + step_latency_ns(len, now);
				sub->transSize = len;
				__atomic_store_n(&sub->transmitted, sub->transmitted + args->sliceSteps,
						 __ATOMIC_RELEASE);
				ncclProfilerRecordProxyStepEventState(s, args, id,
								      ncclProfilerProxyStepSendWait);
				sim_kernel_bell_ring();
				args->idle = 0;
				continue;
			}
		}
		if (args->comm->simNet) {
			if (socket_progress(ps, args, s, now, stalled))
				args->idle = 0;
			continue;
		}
		/* network completion */
		if (sub->done < sub->transmitted && !stalled) {
			int id = (int)sub->done;

			t = sub->base + sub->done;
			if (now >= sub->deliverAt[t % NCCL_STEPS]) {
				slot = &conn->slot[t % NCCL_STEPS];
				__atomic_store_n(&slot->delivered, t + 1, __ATOMIC_RELEASE);
				sim_bell_ring(sub->peerBell);
				__atomic_store_n(&sub->done, sub->done + args->sliceSteps, __ATOMIC_RELEASE);
				ncclProfilerStopProxyStepEvent(s, args, id);
				sim_kernel_bell_ring();
				args->idle = 0;
				if (sub->done == (uint64_t)sub->nsteps)
					args->done++;
			} else {
				deadline(ps, sub->deliverAt[t % NCCL_STEPS]);
			}
		}
	}
	if (args->done == args->nsubs) {
		for (s = 0; s < args->nsubs; s++)
			ncclProfilerStopProxyOpEvent(s, args);
		args->state = ncclProxyOpNone;
	}
	(void)ps;
	return ncclSuccess;
}

static __attribute__((noipa)) ncclResult_t recvProxyProgress(struct ncclProxyState *ps,
							     struct ncclProxyArgs *args)
{
	int stalled = sim_net_stalled(sim_now_ns()), s;

	if (args->state == ncclProxyOpReady) {
		for (s = 0; s < args->nsubs; s++) {
			struct ncclProxySubArgs *sub = args->subs + s;

			sub->posted = sub->received = sub->flushed = sub->transmitted = sub->done = 0;
			ncclProfilerRecordProxyOpEventState(s, args, ncclProfilerProxyOpInProgress_v4);
		}
		args->state = ncclProxyOpProgress;
	}
	args->idle = 1;
	for (s = 0; s < args->nsubs; s++) {
		struct ncclProxySubArgs *sub = args->subs + s;
		struct sim_conn *conn = sub->connection;
		struct sim_slot *slot;
		uint64_t t;

		if (sub->done == (uint64_t)sub->nsteps)
			continue;
		/* post receive buffers */
		if (sub->posted < (uint64_t)sub->nsteps && sub->posted < sub->done + NCCL_STEPS) {
			int id = (int)sub->posted;

			ncclProfilerStartRecvProxyStepEvent(s, args, id);
			sub->posted += args->sliceSteps;
			ncclProfilerRecordProxyStepEventState(s, args, id,
							      ncclProfilerProxyStepRecvWait);
			args->idle = 0;
		}
		/* tell the sender (a network message: not while stalled) */
		while (!stalled && (uint64_t)sub->credited < sub->posted) {
			t = sub->base + sub->credited;
			slot = &conn->slot[t % NCCL_STEPS];
			/* the slot's previous step must have been consumed */
			if (__atomic_load_n(&slot->consumed, __ATOMIC_ACQUIRE) !=
			    (t >= NCCL_STEPS ? t - NCCL_STEPS + 1 : 0))
				break;
			__atomic_store_n(&slot->posted, t + 1, __ATOMIC_RELEASE);
			sub->credited++;
			sim_bell_ring(sub->peerBell);
			args->idle = 0;
		}
		/* data arrived: check it belongs to this op, flush, hand to the GPU */
		if (!stalled && sub->received < (uint64_t)sub->credited) {
			int id = (int)sub->received;

			t = sub->base + sub->received;
			slot = &conn->slot[t % NCCL_STEPS];
			/* a mismatched op's data never matches: stuck, as NCCL hangs */
			if (__atomic_load_n(&slot->delivered, __ATOMIC_ACQUIRE) == t + 1 &&
			    slot->sig == args->sig) {
				sub->received += args->sliceSteps;
				sub->transSize = slot->size;
				ncclProfilerRecordProxyStepEventState(s, args, id,
								      ncclProfilerProxyStepRecvFlushWait);
				sub->flushed += args->sliceSteps;
				__atomic_store_n(&sub->transmitted, sub->transmitted + args->sliceSteps,
						 __ATOMIC_RELEASE);
				ncclProfilerRecordProxyStepEventState(s, args, id,
								      ncclProfilerProxyStepRecvGPUWait);
				sim_kernel_bell_ring();
				args->idle = 0;
			}
		}
		/* the GPU consumed it: free the slot */
		if (sub->done < sub->transmitted &&
		    sub->done < __atomic_load_n(&sub->gpuStep, __ATOMIC_ACQUIRE)) {
			int id = (int)sub->done;

			t = sub->base + sub->done;
			__atomic_store_n(&conn->slot[t % NCCL_STEPS].consumed, t + 1, __ATOMIC_RELEASE);
			sub->done += args->sliceSteps;
			ncclProfilerStopProxyStepEvent(s, args, id);
			args->idle = 0;
			if (sub->done == (uint64_t)sub->nsteps)
				args->done++;
		}
	}
	if (args->done == args->nsubs) {
		for (s = 0; s < args->nsubs; s++)
			ncclProfilerStopProxyOpEvent(s, args);
		args->state = ncclProxyOpNone;
	}
	(void)ps;
	return ncclSuccess;
}

/* ---- the thread -------------------------------------------------------- */

/* NCCL_PROXY_DUMP_SIGNAL: print the active ops, like NCCL's dumpProxyState */
static void dump_active(struct ncclProxyState *ps)
{
	struct ncclProxyArgs *a;
	size_t len = 0;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);
	int s;

	if (!f)
		return;
	fprintf(f, "ccld-sim: pid %d proxy state (%llu hook calls, net %s):\n",
		(int)getpid(), (unsigned long long)g_hook_calls,
		sim_net_stalled(sim_now_ns()) ? "stalled" : "ok");
	for (a = ps->progressState.active; a; a = a->next) {
		for (s = 0; s < a->nsubs; s++) {
			struct ncclProxySubArgs *b = a->subs + s;

			fprintf(f, "  comm %016llx rank %d opCount %llx %s peer %d ch %d "
				"nsteps %d posted %llu transmitted %llu received %llu done %llu"
				" (gpu %llu credited %llu)\n",
				(unsigned long long)a->comm->commHash, b->rank,
				(unsigned long long)a->opCount,
				a->progress == sendProxyProgress ? "send" : "recv", b->peer,
				b->channelId, b->nsteps, (unsigned long long)b->posted,
				(unsigned long long)b->transmitted,
				(unsigned long long)b->received, (unsigned long long)b->done,
				(unsigned long long)b->gpuStep, (unsigned long long)b->credited);
		}
	}
	fclose(f);
	/* one write: dumps of several processes sharing stderr do not interleave */
	if (write(2, buf, len) < 0)
		perror("ccld-sim: proxy dump");
	free(buf);
}

/*
 * NCCL takes an op's ncclProxyArgs from a pool and calls StartProxyOpEvent
 * when it appends the op (ncclProxyOpToArgs), before the progress function
 * resets the subs' counters (net.cc, state ncclProxyOpReady): the hook sees
 * the counters of the op that used the element before, usually finished.
 * The stand-in's kernels read the live counters, so its hook gets a copy
 * that shows what NCCL's would: the latest finished op's counters.
 */
static void start_op_events(struct ncclProxyProgressState *st, struct ncclProxyArgs *a)
{
	static __thread struct ncclProxyArgs view;
	int s;

	memcpy(&view, a, sizeof(view));
	for (s = 0; s < a->nsubs; s++) {
		view.subs[s].posted = st->simStale[s].posted;
		view.subs[s].transmitted = st->simStale[s].transmitted;
		view.subs[s].received = st->simStale[s].received;
		view.subs[s].done = st->simStale[s].done;
	}
	for (s = 0; s < a->nsubs; s++)
		ncclProfilerStartProxyOpEvent(s, &view);
}

static void keep_stale(struct ncclProxyProgressState *st, const struct ncclProxyArgs *a)
{
	int s;

	for (s = 0; s < a->nsubs; s++) {
		st->simStale[s].posted = a->subs[s].posted;
		st->simStale[s].transmitted = a->subs[s].transmitted;
		st->simStale[s].received = a->subs[s].received;
		st->simStale[s].done = a->subs[s].done;
	}
}

static void *proxy_main(void *arg)
{
	struct ncclProxyState *ps = arg;
	struct ncclProxyProgressState *st = &ps->progressState;
	struct ncclProxyArgs **tailp, *a, **pp;
	uint32_t rung = 0;
	uint64_t now;

	prctl(PR_SET_NAME, "ccldsim-proxy");
	prctl(PR_SET_TIMERSLACK, 1000UL);
	while (!st->stop) {
		uint32_t seen = __atomic_load_n(&ps->bell->seq, __ATOMIC_SEQ_CST);
		struct ncclProxyArgs *in;
		int progressed = 0;

		/* a same-host peer's kernel may have moved a step: wake ours */
		if (seen != rung) {
			rung = seen;
			sim_kernel_bell_ring();
		}

		pthread_mutex_lock(&ps->mu);
		in = ps->incoming;
		ps->incoming = NULL;
		pthread_mutex_unlock(&ps->mu);
		/* incoming is newest-first: reverse to keep launch order */
		{
			struct ncclProxyArgs *rev = NULL;

			while (in) {
				a = in->next;
				in->next = rev;
				rev = in;
				in = a;
			}
			in = rev;
		}
		for (tailp = &st->active; *tailp; tailp = &(*tailp)->next)
			;
		while (in) {
			a = in;
			in = in->next;
			a->next = NULL;
			start_op_events(st, a);
			*tailp = a;
			tailp = &a->next;
			progressed = 1;
		}
		st->simNextDeadline = UINT64_MAX;
		for (pp = &st->active; (a = *pp);) {
			if (__atomic_load_n(&a->comm->abortFlag, __ATOMIC_ACQUIRE)) {
				a->state = ncclProxyOpNone;
			} else {
				a->progress(ps, a);
				if (!a->idle)
					progressed = 1;
			}
			if (a->state == ncclProxyOpNone) {
				keep_stale(st, a);
				*pp = a->next;
				sim_op_unref(a->op);
				progressed = 1;
			} else {
				pp = &a->next;
			}
		}
		if (st->simDumpSeen != (unsigned)g_dump) {
			st->simDumpSeen = (unsigned)g_dump;
			dump_active(ps);
		}
		if (progressed)
			continue;
		now = sim_now_ns();
		{
			int64_t wait = 100000000;

			if (st->simNextDeadline != UINT64_MAX)
				wait = st->simNextDeadline > now ?
				       (int64_t)(st->simNextDeadline - now) : 0;
			if (wait > 100000000)
				wait = 100000000;
			if (wait == 0)
				continue;
			__atomic_store_n(&ps->bell->sleeping, 1, __ATOMIC_SEQ_CST);
			sim_futex_wait(&ps->bell->seq, seen, wait);
			__atomic_store_n(&ps->bell->sleeping, 0, __ATOMIC_SEQ_CST);
		}
	}
	return NULL;
}

/* async-signal-safe: the list is only ever prepended to */
static void on_dump_signal(int sig)
{
	struct ncclProxyState *ps;

	g_dump++;
	for (ps = __atomic_load_n(&g_states, __ATOMIC_ACQUIRE); ps; ps = ps->simNext)
		sim_bell_ring(ps->bell);
	(void)sig;
}

static void unlink_bells(void)
{
	struct ncclProxyState *ps;

	for (ps = g_states; ps; ps = ps->simNext)
		shm_unlink(ps->bellName);
}

/* A communicator's proxy state and progress thread; its doorbell is named by TAG. */
ncclResult_t sim_proxy_create(const char *tag, struct ncclProxyState **out)
{
	static int nstates;
	struct ncclProxyState *ps;
	pthread_attr_t at;
	const char *sig;
	int err;

	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		SIM_WARN("cannot allocate a proxy state");
		return ncclSystemError;
	}
	pthread_mutex_init(&ps->mu, NULL);
	pthread_mutex_lock(&g_states_mu);
	snprintf(ps->bellName, sizeof(ps->bellName), "/ccldsim-%s-b%d-%d", tag, (int)getpid(),
		 nstates);
	ps->bell = sim_bell_map(ps->bellName);
	if (!ps->bell) {
		pthread_mutex_unlock(&g_states_mu);
		SIM_WARN("cannot create the doorbell %s: %s", ps->bellName,
			 strerror(errno));
		free(ps);
		return ncclSystemError;
	}
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&ps->progressState.thread, &at, proxy_main, ps);
	pthread_attr_destroy(&at);
	if (err) {
		pthread_mutex_unlock(&g_states_mu);
		shm_unlink(ps->bellName);
		SIM_WARN("cannot start the proxy thread: %s", strerror(err));
		free(ps);
		return ncclSystemError;
	}
	if (nstates++ == 0) {
		atexit(unlink_bells);
		sig = getenv("NCCL_PROXY_DUMP_SIGNAL");
		if (sig && atoi(sig) > 0)
			signal(atoi(sig), on_dump_signal);
	}
	ps->simNext = g_states;
	__atomic_store_n(&g_states, ps, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g_states_mu);
	*out = ps;
	return ncclSuccess;
}

/*
 * The communicator is gone (its ops finished): the thread ends.  The state
 * stays allocated, as peers may still ring its doorbell.
 */
void sim_proxy_stop(struct ncclProxyState *ps)
{
	ps->progressState.stop = 1;
	sim_bell_ring(ps->bell);
}

void sim_proxy_post(struct ncclProxyState *ps, struct ncclProxyArgs *args, int is_recv)
{
	args->progress = is_recv ? recvProxyProgress : sendProxyProgress;
	pthread_mutex_lock(&ps->mu);
	args->next = ps->incoming;
	ps->incoming = args;
	pthread_mutex_unlock(&ps->mu);
	sim_bell_ring(ps->bell);
}
