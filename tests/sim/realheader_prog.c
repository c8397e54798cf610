// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A plain NCCL program, compiled against NVIDIA's nccl.h/cuda_runtime_api.h
 * or against ccld's include/ (tests/sim/test_realheader.sh does both) and
 * run on the stand-in: every collective x datatype x reduction, in-place
 * variants, grouped send/recv, split, and argument errors, with every
 * result checked against values computed here independently.
 *
 * usage: realheader_prog NRANKS     (forks NRANKS rank processes)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#define COUNT 2000
#define NDT 12
#define NOPS 5

static int g_fails;

#define FAILF(...)							\
	do {								\
		if (g_fails++ < 20)					\
			fprintf(stderr, __VA_ARGS__);			\
	} while (0)

#define NCCLOK(call)							\
	do {								\
		ncclResult_t r_ = (call);				\
		if (r_ != ncclSuccess) {				\
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, \
				ncclGetErrorString(r_));		\
			exit(2);					\
		}							\
	} while (0)

#define CUDAOK(call)							\
	do {								\
		cudaError_t e_ = (call);				\
		if (e_ != cudaSuccess) {				\
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorString(e_));		\
			exit(2);					\
		}							\
	} while (0)

static const char *dt_name[NDT] = { "int8", "uint8", "int32", "uint32", "int64", "uint64",
				    "float16", "float32", "float64", "bfloat16", "fp8e4m3",
				    "fp8e5m2" };
static const size_t dt_size[NDT] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

/* ---- independent codecs for the small floats --------------------------- */

static double dec_minifloat(uint32_t bits, int ebits, int mbits, int has_inf_nan_max_exp)
{
	int bias = (1 << (ebits - 1)) - 1;
	uint32_t e = (bits >> mbits) & ((1u << ebits) - 1), m = bits & ((1u << mbits) - 1);
	int sign = (bits >> (ebits + mbits)) & 1;
	double v;

	if (has_inf_nan_max_exp && e == (1u << ebits) - 1)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp((double)m, 1 - bias - mbits);
	else
		v = ldexp((double)((1u << mbits) | m), (int)e - bias - mbits);
	return sign ? -v : v;
}

static double decode(int dt, const void *p, size_t i)
{
	switch (dt) {
	case 0: return ((const int8_t *)p)[i];
	case 1: return ((const uint8_t *)p)[i];
	case 2: return ((const int32_t *)p)[i];
	case 3: return ((const uint32_t *)p)[i];
	case 4: return (double)((const int64_t *)p)[i];
	case 5: return (double)((const uint64_t *)p)[i];
	case 6: return dec_minifloat(((const uint16_t *)p)[i], 5, 10, 1);
	case 7: return ((const float *)p)[i];
	case 8: return ((const double *)p)[i];
	case 9: return dec_minifloat(((const uint16_t *)p)[i], 8, 7, 1);
	case 10: {
		uint8_t c = ((const uint8_t *)p)[i];

		return (c & 0x7f) == 0x7f ? NAN : dec_minifloat(c, 4, 3, 0);
	}
	default: return dec_minifloat(((const uint8_t *)p)[i], 5, 2, 1);
	}
}

/* small integers in the small float formats, found by scanning codes */
static uint16_t int_code[4][129];	/* fp16, bf16, e4m3, e5m2 for 0..128 */

static void build_codes(void)
{
	static const int dts[4] = { 6, 9, 10, 11 };
	int f, v;
	uint32_t c, ncodes;

	for (f = 0; f < 4; f++) {
		ncodes = dt_size[dts[f]] == 2 ? 65536 : 256;
		for (v = 0; v <= 128; v++)
			int_code[f][v] = 0xffff;
		for (c = 0; c < ncodes; c++) {
			uint16_t c16 = (uint16_t)c;
			uint8_t c8 = (uint8_t)c;
			double d = decode(dts[f], ncodes == 256 ? (void *)&c8 : (void *)&c16, 0);

			if (d >= 0 && d <= 128 && d == floor(d) && !signbit(d) &&
			    int_code[f][(int)d] == 0xffff)
				int_code[f][(int)d] = c16;
		}
	}
}

static void store_int(int dt, void *p, size_t i, int v)
{
	switch (dt) {
	case 0: ((int8_t *)p)[i] = (int8_t)v; break;
	case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case 2: ((int32_t *)p)[i] = v; break;
	case 3: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case 4: ((int64_t *)p)[i] = v; break;
	case 5: ((uint64_t *)p)[i] = (uint64_t)v; break;
	case 7: ((float *)p)[i] = (float)v; break;
	case 8: ((double *)p)[i] = v; break;
	case 6: ((uint16_t *)p)[i] = int_code[0][v]; break;
	case 9: ((uint16_t *)p)[i] = int_code[1][v]; break;
	case 10: ((uint8_t *)p)[i] = (uint8_t)int_code[2][v]; break;
	default: ((uint8_t *)p)[i] = (uint8_t)int_code[3][v]; break;
	}
}

/* input of RANK at element I: exact in every type, results too */
static int val(int dt, int op, int rank, size_t i)
{
	if (op == ncclProd)
		return 1 + (int)((rank + i) % 2);
	if (dt >= 10)
		return (int)((rank + i) % 2);
	return (int)((rank + i * 7) % 3);
}

/* expected reduction of element I over NRANKS ranks, wrapped like DT */
static double expect(int dt, int op, int nranks, size_t i)
{
	double acc = val(dt, op, 0, i);
	int r;

	for (r = 1; r < nranks; r++) {
		double v = val(dt, op, r, i);

		switch (op) {
		case ncclProd: acc *= v; break;
		case ncclMax: acc = acc > v ? acc : v; break;
		case ncclMin: acc = acc < v ? acc : v; break;
		default: acc += v; break;
		}
	}
	if (op == ncclAvg)
		acc = dt <= 5 ? floor(acc / nranks) : acc / nranks;
	if (dt == 0)
		acc = (int8_t)(int64_t)acc;
	else if (dt == 1)
		acc = (uint8_t)(int64_t)acc;
	return acc;
}

static void check(const char *what, int dt, const void *buf, size_t n, double (*want)(size_t, void *),
		  void *ctx)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double got = decode(dt, buf, i), w = want(i, ctx);

		if (!(fabs(got - w) <= 1e-6 * fabs(w))) {
			FAILF("%s %s: element %zu is %g, want %g\n", what, dt_name[dt], i, got, w);
			return;
		}
	}
}

struct red_ctx { int dt, op, n; size_t base; };

static double want_red(size_t i, void *c)
{
	struct red_ctx *x = c;

	return expect(x->dt, x->op, x->n, x->base + i);
}

struct val_ctx { int dt, op, rank; size_t per_rank; int gather; };

static double want_val(size_t i, void *c)
{
	struct val_ctx *x = c;

	if (x->gather)
		return val(x->dt, x->op, (int)(i / x->per_rank), i % x->per_rank);
	return val(x->dt, x->op, x->rank, i);
}

static void *dev_alloc(size_t n)
{
	void *p;

	CUDAOK(cudaMalloc(&p, n ? n : 1));
	return p;
}

static void fill(int dt, int op, int rank, void *p, size_t n, size_t base)
{
	size_t i;

	for (i = 0; i < n; i++)
		store_int(dt, p, i, val(dt, op, rank, base + i));
}

struct colls {
	void *ar_s[NDT][NOPS], *ar_r[NDT][NOPS];
	void *rd_s[NDT][NOPS], *rd_r[NDT][NOPS];
	void *rs_s[NDT][NOPS], *rs_r[NDT][NOPS];
	void *ag_s[NDT], *ag_r[NDT], *bc_s[NDT], *bc_r[NDT], *bi[NDT];
};

static int run_rank(const ncclUniqueId *id, int rank, int n)
{
	struct colls *c = calloc(1, sizeof(*c));
	ncclComm_t comm, sub;
	cudaStream_t s;
	cudaEvent_t e0, e1;
	int dt, op, v, ndev, root, r;
	size_t i;
	float ms;

	CUDAOK(cudaGetDeviceCount(&ndev));
	CUDAOK(cudaSetDevice(rank % ndev));
	NCCLOK(ncclCommInitRank(&comm, n, *id, rank));
	NCCLOK(ncclCommCount(comm, &v));
	if (v != n)
		FAILF("ncclCommCount %d, want %d\n", v, n);
	NCCLOK(ncclCommUserRank(comm, &v));
	if (v != rank)
		FAILF("ncclCommUserRank %d, want %d\n", v, rank);
	NCCLOK(ncclCommCuDevice(comm, &v));
	if (v != rank % ndev)
		FAILF("ncclCommCuDevice %d, want %d\n", v, rank % ndev);
	CUDAOK(cudaStreamCreate(&s));
	CUDAOK(cudaEventCreate(&e0));
	CUDAOK(cudaEventCreate(&e1));
	CUDAOK(cudaEventRecord(e0, s));

	/* every collective x datatype x reduction, all queued before one sync */
	for (dt = 0; dt < NDT; dt++) {
		size_t es = dt_size[dt];

		for (op = 0; op < NOPS; op++) {
			void *h = malloc(COUNT * es * n);

			root = (dt + op) % n;
			c->ar_s[dt][op] = dev_alloc(COUNT * es);
			c->ar_r[dt][op] = dev_alloc(COUNT * es);
			fill(dt, op, rank, h, COUNT, 0);
			CUDAOK(cudaMemcpy(c->ar_s[dt][op], h, COUNT * es, cudaMemcpyHostToDevice));
			NCCLOK(ncclAllReduce(c->ar_s[dt][op], c->ar_r[dt][op], COUNT, dt, op, comm, s));
			c->rd_s[dt][op] = dev_alloc(COUNT * es);
			c->rd_r[dt][op] = dev_alloc(COUNT * es);
			CUDAOK(cudaMemcpy(c->rd_s[dt][op], h, COUNT * es, cudaMemcpyHostToDevice));
			NCCLOK(ncclReduce(c->rd_s[dt][op], c->rd_r[dt][op], COUNT, dt, op, root, comm, s));
			c->rs_s[dt][op] = dev_alloc(COUNT * es * n);
			c->rs_r[dt][op] = dev_alloc(COUNT * es);
			fill(dt, op, rank, h, COUNT * n, 0);
			CUDAOK(cudaMemcpy(c->rs_s[dt][op], h, COUNT * es * n, cudaMemcpyHostToDevice));
			NCCLOK(ncclReduceScatter(c->rs_s[dt][op], c->rs_r[dt][op], COUNT, dt, op, comm, s));
			free(h);
		}
		root = dt % n;
		c->ag_s[dt] = dev_alloc(COUNT * es);
		c->ag_r[dt] = dev_alloc(COUNT * es * n);
		fill(dt, ncclSum, rank, c->ag_s[dt], COUNT, 0);
		NCCLOK(ncclAllGather(c->ag_s[dt], c->ag_r[dt], COUNT, dt, comm, s));
		c->bc_s[dt] = dev_alloc(COUNT * es);
		c->bc_r[dt] = dev_alloc(COUNT * es);
		fill(dt, ncclSum, rank, c->bc_s[dt], COUNT, 0);
		NCCLOK(ncclBroadcast(c->bc_s[dt], c->bc_r[dt], COUNT, dt, root, comm, s));
		c->bi[dt] = dev_alloc(COUNT * es);
		fill(dt, ncclSum, rank, c->bi[dt], COUNT, 0);
		NCCLOK(ncclBcast(c->bi[dt], COUNT, dt, (root + 1) % n, comm, s));
	}
	CUDAOK(cudaEventRecord(e1, s));
	CUDAOK(cudaEventSynchronize(e1));
	if (cudaEventQuery(e1) != cudaSuccess || cudaStreamQuery(s) != cudaSuccess)
		FAILF("event/stream not complete after cudaEventSynchronize\n");
	CUDAOK(cudaEventElapsedTime(&ms, e0, e1));
	if (ms < 0)
		FAILF("cudaEventElapsedTime %f < 0\n", ms);

	for (dt = 0; dt < NDT; dt++) {
		for (op = 0; op < NOPS; op++) {
			struct red_ctx x = { dt, op, n, 0 };
			char what[64];

			root = (dt + op) % n;
			snprintf(what, sizeof(what), "AllReduce/op%d", op);
			check(what, dt, c->ar_r[dt][op], COUNT, want_red, &x);
			if (rank == root) {
				snprintf(what, sizeof(what), "Reduce/op%d", op);
				check(what, dt, c->rd_r[dt][op], COUNT, want_red, &x);
			}
			x.base = (size_t)rank * COUNT;
			snprintf(what, sizeof(what), "ReduceScatter/op%d", op);
			check(what, dt, c->rs_r[dt][op], COUNT, want_red, &x);
		}
		{
			struct val_ctx g = { dt, ncclSum, 0, COUNT, 1 };
			struct val_ctx b = { dt, ncclSum, dt % n, COUNT, 0 };
			struct val_ctx bi = { dt, ncclSum, (dt % n + 1) % n, COUNT, 0 };

			check("AllGather", dt, c->ag_r[dt], COUNT * n, want_val, &g);
			check("Broadcast", dt, c->bc_r[dt], COUNT, want_val, &b);
			check("Bcast", dt, c->bi[dt], COUNT, want_val, &bi);
		}
	}

	/* in-place all-reduce, large enough for several steps and channels */
	{
		size_t big = 50000;
		float *b = dev_alloc(big * 4);

		for (i = 0; i < big; i++)
			b[i] = (float)(rank + (i % 5));
		NCCLOK(ncclAllReduce(b, b, big, ncclFloat, ncclSum, comm, s));
		CUDAOK(cudaStreamSynchronize(s));
		for (i = 0; i < big; i++) {
			float w = (float)(n * (n - 1) / 2 + n * (int)(i % 5));

			if (b[i] != w) {
				FAILF("in-place AllReduce: element %zu is %g, want %g\n", i, b[i], w);
				break;
			}
		}
		cudaFree(b);
	}

	/* grouped ring send/recv plus a collective in the same group */
	if (n > 1) {
		size_t cnt = 30000;
		int32_t *sb = dev_alloc(cnt * 4), *rb = dev_alloc(cnt * 4), *ab = dev_alloc(4);
		int prev = (rank + n - 1) % n, next = (rank + 1) % n;

		for (i = 0; i < cnt; i++)
			sb[i] = rank * 100000 + (int32_t)i;
		*ab = rank;
		NCCLOK(ncclGroupStart());
		NCCLOK(ncclSend(sb, cnt, ncclInt32, next, comm, s));
		NCCLOK(ncclRecv(rb, cnt, ncclInt32, prev, comm, s));
		NCCLOK(ncclAllReduce(ab, ab, 1, ncclInt32, ncclMax, comm, s));
		NCCLOK(ncclGroupEnd());
		CUDAOK(cudaStreamSynchronize(s));
		for (i = 0; i < cnt; i++)
			if (rb[i] != prev * 100000 + (int32_t)i) {
				FAILF("Recv from %d: element %zu is %d\n", prev, i, rb[i]);
				break;
			}
		if (*ab != n - 1)
			FAILF("grouped AllReduce max %d, want %d\n", *ab, n - 1);
	}

	/* split by parity, reversed key order */
	NCCLOK(ncclCommSplit(comm, rank % 2, -rank, &sub, NULL));
	{
		int cnt = 0, pos = 0, sum = 0;
		int32_t *x = dev_alloc(4);

		for (r = 0; r < n; r++)
			if (r % 2 == rank % 2) {
				cnt++;
				sum += r;
				if (r > rank)
					pos++;
			}
		NCCLOK(ncclCommCount(sub, &v));
		if (v != cnt)
			FAILF("split count %d, want %d\n", v, cnt);
		NCCLOK(ncclCommUserRank(sub, &v));
		if (v != pos)
			FAILF("split rank %d, want %d\n", v, pos);
		*x = rank;
		NCCLOK(ncclAllReduce(x, x, 1, ncclInt32, ncclSum, sub, s));
		CUDAOK(cudaStreamSynchronize(s));
		if (*x != sum)
			FAILF("split AllReduce %d, want %d\n", *x, sum);
		NCCLOK(ncclCommDestroy(sub));
	}

	/* argument errors: rejected, not crashed, with a message */
	if (ncclAllReduce(c->ar_s[0][0], c->ar_r[0][0], 1, (ncclDataType_t)99, ncclSum, comm, s) !=
	    ncclInvalidArgument)
		FAILF("bad datatype not rejected\n");
	if (!ncclGetLastError(comm) || !*ncclGetLastError(comm))
		FAILF("ncclGetLastError empty after an error\n");
	if (ncclBroadcast(c->bc_s[0], c->bc_r[0], 1, ncclInt8, n, comm, s) != ncclInvalidArgument)
		FAILF("bad root not rejected\n");
	if (ncclAllReduce(c->ar_s[0][0], c->ar_r[0][0], 1, ncclInt8, (ncclRedOp_t)77, comm, s) !=
	    ncclInvalidArgument)
		FAILF("bad reduction op not rejected\n");
	if (ncclGroupEnd() != ncclInvalidUsage)
		FAILF("ncclGroupEnd outside a group not rejected\n");

	NCCLOK(ncclCommFinalize(comm));
	NCCLOK(ncclCommDestroy(comm));
	CUDAOK(cudaStreamDestroy(s));
	printf("rank %d/%d: %d collectives x datatypes x ops checked, %s\n", rank, n,
	       NDT * (NOPS * 3 + 3), g_fails ? "FAILED" : "ok");
	return g_fails ? 1 : 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2, r, status, bad = 0, ver;
	ncclUniqueId id;
	pid_t pids[64];

	if (n < 1 || n > 64) {
		fprintf(stderr, "usage: %s NRANKS (1..64)\n", argv[0]);
		return 2;
	}
	NCCLOK(ncclGetVersion(&ver));
	if (ver != NCCL_VERSION_CODE)
		fprintf(stderr, "note: library version %d, header %d\n", ver, NCCL_VERSION_CODE);
	build_codes();
	NCCLOK(ncclGetUniqueId(&id));
	fflush(NULL);
	for (r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r] < 0) {
			perror("fork");
			return 2;
		}
		if (pids[r] == 0) {
			int rc = run_rank(&id, r, n);

			fflush(NULL);
			exit(rc);
		}
	}
	for (r = 0; r < n; r++) {
		if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "rank %d failed (status 0x%x)\n", r, status);
			bad = 1;
		}
	}
	return bad;
}
