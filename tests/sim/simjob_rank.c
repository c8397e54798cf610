// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One rank of ccld-simjob (started by the launcher, simjob.c): a
 * training-like loop on NCCL and the CUDA runtime.  Layout as Megatron:
 * rank = (pp * DP + dp) * TP + tp.  World comm by ncclCommInitRankConfig
 * (or InitRank), TP/DP/PP comms by ncclCommSplit.  Per step: compute
 * (sleep), two TP all-reduces, PP send/recv in a group, DP reduce-scatter +
 * all-gather, a loss all-reduce on the world, event record + synchronize;
 * every result is checked.  --pattern pytorch drives NCCL the way PyTorch
 * does: everything (compute kernels included) is queued on one stream
 * without waiting, so the CPU runs a whole step ahead of its GPU.
 * Application faults per docs/simjob.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cuda_runtime_api.h"
#include "nccl.h"
#include "sim_cudart.h"
#include "simjob_opts.h"

#define NCCLOK(call)							\
	do {								\
		ncclResult_t r_ = (call);				\
		if (r_ != ncclSuccess) {				\
			fprintf(stderr, "rank %d: %s: %s (%s)\n", g_rank, #call, \
				ncclGetErrorString(r_), ncclGetLastError(NULL)); \
			exit(1);					\
		}							\
	} while (0)

#define CUDAOK(call)							\
	do {								\
		cudaError_t e_ = (call);				\
		if (e_ != cudaSuccess) {				\
			fprintf(stderr, "rank %d: %s: %s\n", g_rank, #call, \
				cudaGetErrorString(e_));		\
			exit(1);					\
		}							\
	} while (0)

static int g_rank, g_errors;
static struct simjob_opts o;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The moment an injected application fault takes effect, for whoever
 * scores a diagnosis against it (tests/scenarios/fuzz.sh): one line
 * {"rank":R,"fault":KIND,"step":S,"t_ns":MONOTONIC} in
 * $CCLD_SIM_CALLLOG/appfault.R.json, beside the stand-in's call logs (same
 * clock).  Only the first fault of the rank is written.
 */
static void mark_fault(const char *kind, int step)
{
	const char *dir = getenv("CCLD_SIM_CALLLOG");
	static int done;
	char path[4096];
	struct timespec ts;
	FILE *f;

	if (done || !dir || !*dir)
		return;
	done = 1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(path, sizeof(path), "%s/appfault.%d.json", dir, g_rank);
	f = fopen(path, "w");
	if (!f || fprintf(f, "{\"rank\":%d,\"fault\":\"%s\",\"step\":%d,\"t_ns\":%lld}\n", g_rank,
			  kind, step, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec) < 0 ||
	    fclose(f))
		fprintf(stderr, "rank %d: cannot write %s: %s\n", g_rank, path, strerror(errno));
}

/*
 * The step number the fault options count in: the step itself, or with
 * --fault-at-ms the steps since the first one that started that many ms
 * after the first step (-1 before it)
 */
static int fault_step(int step, double tstart)
{
	static int base = -1;

	if (o.fault_at_ms <= 0)
		return step;
	if (base < 0 && now_ms() - tstart >= o.fault_at_ms)
		base = step;
	return base < 0 ? -1 : step - base;
}

/* the compute phase on the simulated GPU: ARG points to its microseconds */
static void gpu_compute_kernel(void *arg)
{
	ccldsim_gpu_busy(*(const double *)arg);
}

/*
 * Compute kernels queued without waiting (--pattern pytorch): their
 * durations must live until they ran, i.e. until the step's event completed.
 */
#define PT_KERNELS 4
#define BCAST_N 16	/* --bcast: floats broadcast per step */
static double g_kernel_us[PT_KERNELS];

static void compute_kernel(cudaStream_t s, int k, double ms)
{
	g_kernel_us[k] = ms * 1e3;
	CUDAOK(ccldsim_stream_launch(s, gpu_compute_kernel, &g_kernel_us[k]));
}

static void sleep_ms(double ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1e3);
	ts.tv_nsec = (long)((ms - ts.tv_sec * 1e3) * 1e6);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * --hang R:S:write=PATH: a checkpoint write that never finishes.  PATH is a
 * FIFO nobody reads, opened read-write (so open() does not wait for a
 * reader): writes fill its 64 KiB buffer, then one blocks for good.
 */
/* never inlined: its own frame on the stack names what the rank is doing */
static __attribute__((noinline)) void hang_in_write(const char *path, int step)
{
	static char chunk[1 << 16];
	const char *rundir = getenv("CCLD_SIMJOB_RUNDIR");
	char rel[4096];
	int fd;

	/* a relative path is a FIFO made in the job's run directory */
	if (path[0] != '/' && rundir) {
		snprintf(rel, sizeof(rel), "%s/%s", rundir, path);
		path = rel;
		if (mkfifo(path, 0600) && errno != EEXIST) {
			fprintf(stderr, "rank %d: mkfifo %s: %s\n", g_rank, path, strerror(errno));
			exit(2);
		}
	}
	fd = open(path, O_RDWR);

	if (fd < 0) {
		fprintf(stderr, "rank %d: --hang write=%s: %s\n", g_rank, path, strerror(errno));
		exit(2);
	}
	fprintf(stderr, "rank %d: blocked in write() on %s at step %d (injected)\n",
		g_rank, path, step);
	fflush(NULL);
	for (;;)
		if (write(fd, chunk, sizeof(chunk)) < 0 && errno != EINTR)
			break;
	fprintf(stderr, "rank %d: write to %s: %s\n", g_rank, path, strerror(errno));
	exit(2);
}

static void *dalloc(size_t n)
{
	void *p;

	CUDAOK(cudaMalloc(&p, n));
	return p;
}

/* rank 0 makes the unique id and publishes it in the launcher's run dir */
static void exchange_id(ncclUniqueId *id, const char *dir)
{
	char path[4096], tmp[4200], hex[2 * NCCL_UNIQUE_ID_BYTES + 2];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/id", dir);
	if (g_rank == 0) {
		NCCLOK(ncclGetUniqueId(id));
		for (i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
			sprintf(hex + 2 * i, "%02x", (unsigned char)id->internal[i]);
		snprintf(tmp, sizeof(tmp), "%s/id.tmp", dir);
		f = fopen(tmp, "w");
		if (!f || fprintf(f, "%s\n", hex) < 0 || fclose(f) || rename(tmp, path)) {
			fprintf(stderr, "rank 0: cannot write %s: %s\n", path, strerror(errno));
			exit(1);
		}
		return;
	}
	for (;;) {
		f = fopen(path, "r");
		if (f)
			break;
		sleep_ms(10);
	}
	if (!fgets(hex, sizeof(hex), f) || strlen(hex) < 2 * NCCL_UNIQUE_ID_BYTES) {
		fprintf(stderr, "rank %d: bad id file %s\n", g_rank, path);
		exit(1);
	}
	fclose(f);
	for (i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
		unsigned int b;

		sscanf(hex + 2 * i, "%2x", &b);
		id->internal[i] = (char)b;
	}
}

/*
 * ncclCommSplit with a named config, as PyTorch's split_group does: the name
 * is a temporary that does not outlive the call (NCCL keeps the pointer).
 */
static void split_named(ncclComm_t parent, int color, const char *group, ncclComm_t *out)
{
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	char name[32];

	snprintf(name, sizeof(name), "%s%d", group, color);
	cfg.commName = name;
	NCCLOK(ncclCommSplit(parent, color, g_rank, out, &cfg));
}

static void expect_f(const char *what, int step, const float *got, size_t n,
		     float (*want)(size_t, const int *), const int *ctx)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float w = want(i, ctx);

		if (got[i] != w) {
			if (g_errors++ < 10)
				fprintf(stderr, "rank %d step %d: %s element %zu is %g, want %g\n",
					g_rank, step, what, i, got[i], w);
			return;
		}
	}
}

/* inputs: small integers, exact in float whatever the order of reduction */
static float in_tp(int r, int step, size_t i) { return (float)((r + step + i) % 7); }
static float in_pp(int r, int step, size_t i) { return (float)((r * 3 + step + i) % 11); }
static float in_dp(int r, int step, size_t i) { return (float)((r * 5 + step + i) % 13); }

/* ctx: [0] step, [1] count, [2..] member ranks */
static float want_sum_tp(size_t i, const int *c)
{
	float s = 0;
	int k;

	for (k = 0; k < c[1]; k++)
		s += in_tp(c[2 + k], c[0], i);
	return s;
}

static float want_sum_dp(size_t i, const int *c)
{
	float s = 0;
	int k;

	for (k = 0; k < c[1]; k++)
		s += in_dp(c[2 + k], c[0], i);
	return s;
}

static float want_pp(size_t i, const int *c)
{
	return in_pp(c[2], c[0], i);
}

/* the TP all-reduce WHICH (0-based, in step order) is skipped at this step */
static int tp_skipped(int skip, int which)
{
	return skip == SKIP_TP || (skip == SKIP_TP1 && which == 1);
}

/* one TP all-reduce of COUNT floats: inputs filled, call queued; returns 1 */
static int tp_allreduce(float *buf, size_t count, int step, ncclComm_t comm, cudaStream_t s)
{
	size_t i;

	for (i = 0; i < count; i++)
		buf[i] = in_tp(g_rank, step, i);
	NCCLOK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s));
	return 1;
}

/* ---- --pattern moe ------------------------------------------------------ */

/*
 * A mixture-of-experts step driven as PyTorch's ProcessGroupNCCL does:
 * compute kernels on one stream, every NCCL call on another, the two joined
 * by events both ways; each stage's DP comm is the expert-parallel group:
 * the dispatch all-to-all is one group of send/recv per peer, itself
 * included (all_to_all_single with uneven splits), the combine one
 * ncclAlltoAll (equal splits, NCCL >= 2.28); the pipeline send/recv on the
 * world comm; the host
 * synchronises every other step, so the CPU runs up to two steps ahead.
 * Buffers are doubled by step parity for that run-ahead.
 */
struct moe {
	ncclComm_t world, ep;
	int n, ep_n, ep_i, stage, pp, dp_stride;
	cudaStream_t cs, ns;
	cudaEvent_t to_nccl, to_comp, sync;
	size_t tok, act, grad;
	float *disp_s[2], *disp_r[2], *comb_s[2], *comb_r[2];
	float *acts[2], *actr[2], *grds[2], *grdr[2], *grads[2], *loss[2];
	double kus[2][2];
	struct expert_arg { double us; const float *in; float *out; size_t n; } expert[2];
	int done_step;		/* latest step whose results were checked */
};

/* the experts' kernel: what they send back is what they got, plus one */
static void expert_kernel(void *arg)
{
	const struct expert_arg *e = arg;
	size_t i;

	ccldsim_gpu_busy(e->us);
	for (i = 0; i < e->n; i++)
		e->out[i] = e->in[i] + 1;
}

static float in_a2a(int from, int to, int step, size_t i)
{
	return (float)((from * 7 + to * 3 + step + i) % 17);
}

static void moe_init(struct moe *m, ncclComm_t world, ncclComm_t ep, int n, int ep_n,
		     int ep_i, int stage, int pp, size_t size)
{
	int b;

	m->world = world;
	m->ep = ep;
	m->n = n;
	m->ep_n = ep_n;
	m->ep_i = ep_i;
	m->stage = stage;
	m->pp = pp;
	m->dp_stride = ep_n;	/* world ranks of one stage are consecutive */
	m->tok = size / 8 ? size / 8 : 1;
	m->act = size / 4 ? size / 4 : 1;
	m->grad = size;
	m->done_step = -1;
	CUDAOK(cudaStreamCreateWithFlags(&m->cs, cudaStreamNonBlocking));
	CUDAOK(cudaStreamCreateWithFlags(&m->ns, cudaStreamNonBlocking));
	CUDAOK(cudaEventCreateWithFlags(&m->to_nccl, cudaEventDisableTiming));
	CUDAOK(cudaEventCreateWithFlags(&m->to_comp, cudaEventDisableTiming));
	CUDAOK(cudaEventCreateWithFlags(&m->sync, cudaEventDisableTiming));
	for (b = 0; b < 2; b++) {
		m->disp_s[b] = dalloc(m->tok * ep_n * 4);
		m->disp_r[b] = dalloc(m->tok * ep_n * 4);
		m->comb_s[b] = dalloc(m->tok * ep_n * 4);
		m->comb_r[b] = dalloc(m->tok * ep_n * 4);
		m->acts[b] = dalloc(m->act * 4);
		m->actr[b] = dalloc(m->act * 4);
		m->grds[b] = dalloc(m->act * 4);
		m->grdr[b] = dalloc(m->act * 4);
		m->grads[b] = dalloc(m->grad * 4);
		m->loss[b] = dalloc(16);
	}
}

/* the compute stream's work so far is ordered before the NCCL stream's next */
static void moe_join(cudaEvent_t ev, cudaStream_t from, cudaStream_t to)
{
	CUDAOK(cudaEventRecord(ev, from));
	CUDAOK(cudaStreamWaitEvent(to, ev, 0));
}

/* one all-to-all of the EP comm as a group of send/recv per peer */
static void moe_a2a(struct moe *m, const float *sb, float *rb, int skip_send_to)
{
	int q;

	NCCLOK(ncclGroupStart());
	for (q = 0; q < m->ep_n; q++) {
		if (q != skip_send_to)
			NCCLOK(ncclSend(sb + q * m->tok, m->tok, ncclFloat, q, m->ep, m->ns));
		NCCLOK(ncclRecv(rb + q * m->tok, m->tok, ncclFloat, q, m->ep, m->ns));
	}
	NCCLOK(ncclGroupEnd());
}

static void moe_check(struct moe *m, int step)
{
	int b = step & 1, q, rank = m->stage * m->dp_stride + m->ep_i, r;
	size_t i;
	float want, back;

	/* dispatch: what q sent me; combine: what I sent q, plus one */
	for (q = 0; q < m->ep_n; q++)
		for (i = 0; i < m->tok; i++) {
			want = in_a2a(q, m->ep_i, step, i);
			back = in_a2a(m->ep_i, q, step, i) + 1;
			if (m->disp_r[b][q * m->tok + i] != want ||
			    m->comb_r[b][q * m->tok + i] != back) {
				if (g_errors++ < 10)
					fprintf(stderr, "rank %d step %d: all-to-all from %d element"
						" %zu is %g/%g, want %g/%g\n", g_rank, step, q, i,
						m->disp_r[b][q * m->tok + i],
						m->comb_r[b][q * m->tok + i], want, back);
				return;
			}
		}
	for (i = 0; i < m->act; i++) {
		if ((m->stage > 0 && m->actr[b][i] != in_pp(rank - m->dp_stride, step, i)) ||
		    (m->stage + 1 < m->pp && m->grdr[b][i] != in_pp(rank + m->dp_stride, step, i))) {
			if (g_errors++ < 10)
				fprintf(stderr, "rank %d step %d: pipeline element %zu wrong\n",
					g_rank, step, i);
			return;
		}
	}
	for (i = 0; i < m->grad; i++) {
		float s = 0;

		for (q = 0; q < m->ep_n; q++)
			s += in_dp(m->stage * m->dp_stride + q, step, i);
		if (m->grads[b][i] != s) {
			if (g_errors++ < 10)
				fprintf(stderr, "rank %d step %d: gradient all-reduce element %zu is"
					" %g, want %g\n", g_rank, step, i, m->grads[b][i], s);
			return;
		}
	}
	r = m->n;
	if (m->loss[b][0] != (float)(r * (r - 1) / 2 + r * step) && g_errors++ < 10)
		fprintf(stderr, "rank %d step %d: loss %g\n", g_rank, step, m->loss[b][0]);
}

/*
 * One step (compute C ms in three kernels); SKIP is the --skip kind of this
 * rank at this step (or -1), MM whether its loss all-reduce mismatches.
 * Returns the collectives called; *P2PS counts the p2p calls.
 */
static long moe_step(struct moe *m, int step, double c, int skip, int mm, long *p2ps)
{
	int b = step & 1, q, rank = g_rank, last = m->stage + 1 == m->pp;
	long colls = 0;
	size_t i;

	m->kus[b][0] = m->kus[b][1] = c * 1e3 / 3;
	m->expert[b] = (struct expert_arg){ c * 1e3 / 3, m->disp_r[b], m->comb_s[b],
					    m->tok * m->ep_n };
	for (q = 0; q < m->ep_n; q++)
		for (i = 0; i < m->tok; i++) {
			m->disp_s[b][q * m->tok + i] = in_a2a(m->ep_i, q, step, i);
			m->disp_r[b][q * m->tok + i] = m->comb_r[b][q * m->tok + i] = -1;
		}
	/* attention, then the tokens to their experts */
	CUDAOK(ccldsim_stream_launch(m->cs, gpu_compute_kernel, &m->kus[b][0]));
	moe_join(m->to_nccl, m->cs, m->ns);
	moe_a2a(m, m->disp_s[b], m->disp_r[b], skip == SKIP_A2A ? (m->ep_i + 1) % m->ep_n : -1);
	*p2ps += 2 * m->ep_n - (skip == SKIP_A2A);
	/* the experts, then their output back to the tokens' ranks */
	moe_join(m->to_comp, m->ns, m->cs);
	CUDAOK(ccldsim_stream_launch(m->cs, expert_kernel, &m->expert[b]));
	moe_join(m->to_nccl, m->cs, m->ns);
	/* equal splits: PyTorch 2.11 calls ncclAlltoAll (NCCL >= 2.28) */
	NCCLOK(ncclAlltoAll(m->comb_s[b], m->comb_r[b], m->tok, ncclFloat, m->ep, m->ns));
	colls++;
	/* the pipeline on the world comm: activations on, gradients back */
	for (i = 0; i < m->act; i++)
		m->acts[b][i] = m->grds[b][i] = in_pp(rank, step, i);
	if (skip != SKIP_PP) {
		int drop = skip == SKIP_PPSEND;	/* its first send is left out */

		NCCLOK(ncclGroupStart());
		if (!last) {
			if (!drop)
				NCCLOK(ncclSend(m->acts[b], m->act, ncclFloat, rank + m->dp_stride,
						m->world, m->ns));
			NCCLOK(ncclRecv(m->grdr[b], m->act, ncclFloat, rank + m->dp_stride,
					m->world, m->ns));
			*p2ps += 2 - drop;
			drop = 0;
		}
		if (m->stage > 0) {
			NCCLOK(ncclRecv(m->actr[b], m->act, ncclFloat, rank - m->dp_stride,
					m->world, m->ns));
			if (!drop)
				NCCLOK(ncclSend(m->grds[b], m->act, ncclFloat, rank - m->dp_stride,
						m->world, m->ns));
			*p2ps += 2 - drop;
		}
		NCCLOK(ncclGroupEnd());
	}
	/* backward, then the dense gradients over the stage's DP group */
	moe_join(m->to_comp, m->ns, m->cs);
	CUDAOK(ccldsim_stream_launch(m->cs, gpu_compute_kernel, &m->kus[b][1]));
	for (i = 0; i < m->grad; i++)
		m->grads[b][i] = in_dp(rank, step, i);
	moe_join(m->to_nccl, m->cs, m->ns);
	if (skip != SKIP_DP) {
		NCCLOK(ncclAllReduce(m->grads[b], m->grads[b], m->grad, ncclFloat, ncclSum, m->ep,
				     m->ns));
		colls++;
	}
	m->loss[b][0] = (float)(rank + step);
	m->loss[b][1] = 1.0f;
	if (skip != SKIP_LOSS) {
		if (mm && o.mm_field == MM_OP)
			NCCLOK(ncclReduce(m->loss[b], m->loss[b], 2, ncclFloat, ncclSum, 0, m->world,
					  m->ns));
		else if (mm && o.mm_field == MM_COUNT)
			NCCLOK(ncclAllReduce(m->loss[b], m->loss[b], 3, ncclFloat, ncclSum, m->world,
					     m->ns));
		else if (mm && o.mm_field == MM_DTYPE)
			NCCLOK(ncclAllReduce(m->loss[b], m->loss[b], 1, ncclDouble, ncclSum,
					     m->world, m->ns));
		else if (mm && o.mm_field == MM_REDOP)
			NCCLOK(ncclAllReduce(m->loss[b], m->loss[b], 2, ncclFloat, ncclMax, m->world,
					     m->ns));
		else
			NCCLOK(ncclAllReduce(m->loss[b], m->loss[b], 2, ncclFloat, ncclSum,
					     m->world, m->ns));
		colls++;
	}
	/* the host waits every other step: the two steps' results are checked */
	if (step & 1 || step + 1 == o.steps) {
		CUDAOK(cudaEventRecord(m->sync, m->ns));
		CUDAOK(cudaEventSynchronize(m->sync));
		for (q = m->done_step + 1; q <= step; q++)
			if (q >= step - 1 && q != o.skip_step && q != o.mm_step)
				moe_check(m, q);
		m->done_step = step;
	}
	return colls;
}

int main(int argc, char **argv)
{
	int n, tp, dp, pp, tpi, dpi, ppi, step, k, l, ndev, pt;
	int tp_ctx[2 + 64], dp_ctx[2 + 64], pp_ctx[3];
	const char *rundir = getenv("CCLD_SIMJOB_RUNDIR");
	ncclComm_t world, ctp, cdp, cpp;
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId id;
	cudaStream_t s;
	cudaEvent_t ev;
	size_t size, blk, act, i;
	float *tpb[PT_KERNELS], *dpg, *dps, *dpf, *acts, *actr, *grds, *grdr, *loss, *bcb;
	int32_t *bar;
	double t0, tstart, total_ms = 0, max_ms = 0;
	long colls = 0, p2ps = 0;
	struct moe moe;

	if (simjob_parse(argc, argv, &o))
		return 2;
	if (!getenv("RANK") || !getenv("WORLD_SIZE") || !rundir) {
		fprintf(stderr, "ccld-simjob-rank: start ranks with ccld-simjob\n");
		return 2;
	}
	pt = o.pattern == PAT_PYTORCH;
	g_rank = atoi(getenv("RANK"));
	n = atoi(getenv("WORLD_SIZE"));
	tp = o.tp;
	pp = o.pp;
	dp = n / (tp * pp);
	tpi = g_rank % tp;
	dpi = (g_rank / tp) % dp;
	ppi = g_rank / (tp * dp);
	srand(g_rank * 7919 + 1);

	CUDAOK(cudaGetDeviceCount(&ndev));
	CUDAOK(cudaSetDevice(g_rank % ndev));
	exchange_id(&id, rundir);
	if (o.wait_init) {
		struct stat st;

		while (stat(o.wait_init, &st))
			sleep_ms(20);
	}
	if (o.noinit_rank == g_rank) {
		mark_fault("noinit", -1);
		fprintf(stderr, "rank %d: never calling init (injected)\n", g_rank);
		for (;;)
			pause();
	}
	/* names as a framework gives its groups (ncclConfig_t.commName) */
	cfg.commName = "world";
	if (!strcmp(o.init, "rank"))
		NCCLOK(ncclCommInitRank(&world, n, id, g_rank));
	else
		NCCLOK(ncclCommInitRankConfig(&world, n, id, g_rank, &cfg));
	if (o.nosplit_rank == g_rank) {
		fprintf(stderr, "rank %d: never calling ncclCommSplit (injected)\n", g_rank);
		for (;;)
			pause();
	}
	split_named(world, g_rank / tp, "tp", &ctp);
	split_named(world, ppi * tp + tpi, "dp", &cdp);
	split_named(world, dpi * tp + tpi, "pp", &cpp);
	if (o.wait_start) {
		struct stat st;

		while (stat(o.wait_start, &st))
			sleep_ms(20);
	}

	size = (size_t)o.size;
	blk = (size + dp - 1) / dp;
	act = size / 4 ? size / 4 : 1;
	CUDAOK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CUDAOK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	for (l = 0; l < PT_KERNELS; l++)
		tpb[l] = dalloc(size * 4);
	dpg = dalloc(blk * dp * 4);
	dps = dalloc(blk * 4);
	dpf = dalloc(blk * dp * 4);
	acts = dalloc(act * 4);
	actr = dalloc(act * 4);
	grds = dalloc(act * 4);
	grdr = dalloc(act * 4);
	loss = dalloc(16);
	bcb = dalloc(BCAST_N * 4);
	bar = dalloc(4);
	tp_ctx[1] = tp;
	for (k = 0; k < tp; k++)
		tp_ctx[2 + k] = g_rank - tpi + k;
	dp_ctx[1] = dp;
	for (k = 0; k < dp; k++)
		dp_ctx[2 + k] = (ppi * dp + k) * tp + tpi;
	if (o.pattern == PAT_MOE)
		moe_init(&moe, world, cdp, n, dp, dpi, ppi, pp, size);
	if (o.verbose)
		fprintf(stderr, "rank %d pid %d: tp %d/%d dp %d/%d pp %d/%d\n", g_rank, (int)getpid(),
			tpi, tp, dpi, dp, ppi, pp);

	tstart = now_ms();
	for (step = 0; step < o.steps; step++) {
		int fs = fault_step(step, tstart);
		int skip = g_rank == o.skip_rank && fs == o.skip_step ? o.skip_which : -1;
		int mm = g_rank == o.mm_rank && fs == o.mm_step;
		double c = o.compute_ms;
		float want_loss;
		/* pytorch: p2p on the world comm, peers by world rank */
		ncclComm_t ppc = pt ? world : cpp;
		int pnext = pt ? g_rank + tp * dp : ppi + 1, pprev = pt ? g_rank - tp * dp : ppi - 1;

		t0 = now_ms();
		if (skip >= 0)
			mark_fault("skip", step);
		if (mm)
			mark_fault("mismatch", step);
		if (g_rank == o.exit_rank && fs == o.exit_step) {
			fprintf(stderr, "rank %d: exiting at step %d (injected)\n", g_rank, step);
			mark_fault("exit", step);
			fflush(NULL);
			_exit(o.exit_code);
		}
		if (g_rank == o.stop_rank && fs == o.stop_step) {
			fprintf(stderr, "rank %d: stopping itself at step %d (injected)\n", g_rank,
				step);
			mark_fault("stop", step);
			fflush(NULL);
			raise(SIGSTOP);
		}
		if (g_rank == o.hang_rank && fs == o.hang_step) {
			mark_fault(o.hang_write ? "hang-write" : "hang", step);
			if (o.hang_write)
				hang_in_write(o.hang_write, step);
			fprintf(stderr, "rank %d: hanging in CPU code at step %d (injected)\n",
				g_rank, step);
			for (;;)
				pause();
		}
		if (step == o.pause_step) {
			if (g_rank == 0)
				fprintf(stderr, "all ranks: checkpoint pause %g s at step %d\n",
					o.pause_s, step);
			sleep_ms(o.pause_s * 1e3);
		}
		/* DDP: the module's buffers from the DP comm's rank 0 */
		if (o.bcast && skip != SKIP_BCAST) {
			for (i = 0; i < BCAST_N; i++)
				bcb[i] = dpi == 0 ? (float)(step + i) : -1.0f;
			NCCLOK(ncclBroadcast(bcb, bcb, BCAST_N, ncclFloat,
					     mm && o.mm_field == MM_ROOT ? 1 : 0, cdp, s));
			colls++;
		}
		/* compute phase */
		if (o.jitter_pct > 0)
			c *= 1 + o.jitter_pct / 100 * (2.0 * rand() / RAND_MAX - 1);
		if (g_rank == o.slow_rank && fs >= o.slow_step &&
		    (!o.slow_steps || fs < o.slow_step + o.slow_steps)) {
			c *= o.slow_factor;
			mark_fault("slow", step);
		}
		if (o.pattern == PAT_MOE) {
			colls += moe_step(&moe, step, c, skip, mm, &p2ps);
			goto step_done;
		}
		tp_ctx[0] = step;
		if (pt) {
			/* forward: two layers, each a kernel then its TP all-reduce */
			for (l = 0; l < 2; l++) {
				compute_kernel(s, l, c / PT_KERNELS);
				if (tp > 1 && !tp_skipped(skip, l))
					colls += tp_allreduce(tpb[l], size, step, ctp, s);
			}
		} else if (o.gpu_compute) {
			/* the forward/backward kernels, then the CPU reads a result */
			double us = c * 1e3;

			CUDAOK(ccldsim_stream_launch(s, gpu_compute_kernel, &us));
			CUDAOK(cudaStreamSynchronize(s));
		} else {
			sleep_ms(c);
		}

		/* tensor parallel: two all-reduces of different sizes */
		for (l = 0; !pt && l < 2; l++)
			if (tp > 1 && !tp_skipped(skip, l))
				colls += tp_allreduce(tpb[l], l ? size / 4 : size, step, ctp, s);
		/* pipeline: activations forward, gradients backward, one group */
		if (pp > 1 && skip != SKIP_PP) {
			int drop = skip == SKIP_PPSEND;	/* its first send left out */

			for (i = 0; i < act; i++)
				acts[i] = grds[i] = in_pp(g_rank, step, i);
			NCCLOK(ncclGroupStart());
			if (ppi + 1 < pp) {
				if (!drop)
					NCCLOK(ncclSend(acts, act, ncclFloat, pnext, ppc, s));
				NCCLOK(ncclRecv(grdr, act, ncclFloat, pnext, ppc, s));
				p2ps += 2 - drop;
				drop = 0;
			}
			if (ppi > 0) {
				NCCLOK(ncclRecv(actr, act, ncclFloat, pprev, ppc, s));
				if (!drop)
					NCCLOK(ncclSend(grds, act, ncclFloat, pprev, ppc, s));
				p2ps += 2 - drop;
			}
			NCCLOK(ncclGroupEnd());
		}
		/* pytorch: backward, two more layers */
		for (l = 2; pt && l < PT_KERNELS; l++) {
			compute_kernel(s, l, c / PT_KERNELS);
			if (tp > 1 && !tp_skipped(skip, l))
				colls += tp_allreduce(tpb[l], size, step, ctp, s);
		}
		/* data parallel: reduce-scatter the gradients, all-gather them back */
		dp_ctx[0] = step;
		for (i = 0; i < blk * dp; i++)
			dpg[i] = in_dp(g_rank, step, i);
		if (dp > 1 && skip != SKIP_DP) {
			NCCLOK(ncclReduceScatter(dpg, dps, blk, ncclFloat, ncclSum, cdp, s));
			NCCLOK(ncclAllGather(dps, dpf, blk, ncclFloat, cdp, s));
			colls += 2;
		}
		/* a barrier-sized all-reduce, one rank late */
		if (step == o.bw_step) {
			if (g_rank == o.bw_rank) {
				fprintf(stderr, "rank %d: %g s before the barrier at step %d (injected)\n",
					g_rank, o.bw_s, step);
				sleep_ms(o.bw_s * 1e3);
			}
			*bar = 1;
			NCCLOK(ncclAllReduce(bar, bar, 1, ncclInt32, ncclSum, world, s));
			colls++;
		}
		/*
		 * loss and token count on the world: 2 floats, so that it is not
		 * barrier-sized (<= 4 bytes), which a diagnoser may only judge by
		 * its long threshold
		 */
		loss[0] = (float)(g_rank + step);
		loss[1] = 1.0f;
		want_loss = (float)(n * (n - 1) / 2 + n * step);
		if (skip != SKIP_LOSS && n > 1) {
			if (mm && o.mm_field == MM_OP)
				NCCLOK(ncclReduce(loss, loss, 2, ncclFloat, ncclSum, 0, world, s));
			else if (mm && o.mm_field == MM_COUNT)
				NCCLOK(ncclAllReduce(loss, loss, 3, ncclFloat, ncclSum, world, s));
			else if (mm && o.mm_field == MM_DTYPE)
				NCCLOK(ncclAllReduce(loss, loss, 2, ncclDouble, ncclSum, world, s));
			else if (mm && o.mm_field == MM_REDOP)
				NCCLOK(ncclAllReduce(loss, loss, 2, ncclFloat, ncclMax, world, s));
			else
				NCCLOK(ncclAllReduce(loss, loss, 2, ncclFloat, ncclSum, world, s));
			colls++;
		}
		CUDAOK(cudaEventRecord(ev, s));
		CUDAOK(cudaEventSynchronize(ev));

		/* check */
		for (l = 0; tp > 1 && l < (pt ? PT_KERNELS : 2); l++)
			if (!tp_skipped(skip, l))
				expect_f("TP all-reduce", step, tpb[l], !pt && l ? size / 4 : size,
					 want_sum_tp, tp_ctx);
		if (pp > 1 && skip != SKIP_PP) {
			pp_ctx[0] = step;
			if (ppi > 0) {
				pp_ctx[2] = g_rank - tp * dp;
				expect_f("PP recv activations", step, actr, act, want_pp, pp_ctx);
			}
			if (ppi + 1 < pp) {
				pp_ctx[2] = g_rank + tp * dp;
				expect_f("PP recv gradients", step, grdr, act, want_pp, pp_ctx);
			}
		}
		if (dp > 1 && skip != SKIP_DP)
			expect_f("DP reduce-scatter/all-gather", step, dpf, blk * dp, want_sum_dp, dp_ctx);
		for (i = 0; o.bcast && !mm && i < BCAST_N; i++)
			if (bcb[i] != (float)(step + i) && g_errors++ < 10) {
				fprintf(stderr, "rank %d step %d: broadcast element %zu is %g, want %g\n",
					g_rank, step, i, bcb[i], (float)(step + i));
				break;
			}
		if (step == o.bw_step && *bar != n && g_errors++ < 10)
			fprintf(stderr, "rank %d step %d: barrier all-reduce %d, want %d\n", g_rank, step,
				*bar, n);
		if (n > 1 && skip != SKIP_LOSS && !mm &&
		    (loss[0] != want_loss || loss[1] != (float)n) && g_errors++ < 10)
			fprintf(stderr, "rank %d step %d: loss %g tokens %g, want %g %d\n",
				g_rank, step, loss[0], loss[1], want_loss, n);
step_done:
		sleep_ms(o.step_delay_ms);
		t0 = now_ms() - t0;
		total_ms += t0;
		if (t0 > max_ms)
			max_ms = t0;
		if (o.verbose)
			fprintf(stderr, "rank %d step %d done %.3f ms\n", g_rank, step, t0);
	}
	CUDAOK(cudaStreamSynchronize(s));
	NCCLOK(ncclCommDestroy(cpp));
	NCCLOK(ncclCommDestroy(cdp));
	NCCLOK(ncclCommDestroy(ctp));
	NCCLOK(ncclCommDestroy(world));
	printf("rank %d pid %d (tp %d dp %d pp %d): %d steps in %.1f ms, mean step %.3f ms, "
	       "max %.3f ms, %ld collectives, %ld p2p, %s\n",
	       g_rank, (int)getpid(), tpi, dpi, ppi, o.steps, now_ms() - tstart,
	       o.steps ? total_ms / o.steps : 0.0, max_ms, colls, p2ps,
	       g_errors ? "WRONG RESULTS" : "results ok");
	return g_errors ? 1 : 0;
}
