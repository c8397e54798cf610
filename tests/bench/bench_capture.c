// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Capture file throughput: writes N records (default 1M) shaped like a
 * training job's (call/return pairs of 8 ranks on 2 communicators, ticks),
 * then reads them back; prints records/s both ways and bytes per record.
 * Usage: bench_capture [N [FILE]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "capture.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void make_event(uint64_t i, struct ccld_event *ev)
{
	uint32_t rank = i / 2 % 8;

	memset(ev, 0, sizeof(*ev));
	ev->version = CCLD_ABI_VERSION;
	ev->pid = 4000 + rank;
	ev->tid = 4100 + rank;
	ev->ts_ns = 3600000000000ull + i * 7919 + (i * 2654435761u) % 1000;
	if (i % 1000 == 999) {
		ev->type = CCLD_EV_TICK;
		return;
	}
	ev->fn = CCLD_FN_ALLREDUCE + i / 16 % 3;
	ev->flags = 3;
	ev->id.comm = 0x55d0c0a01000ull + (i / 64 % 2) * 0x4000;
	ev->id.hash = 0x9e3779b97f4a7c15ull * (1 + i / 64 % 2);
	ev->id.rank = rank;
	ev->id.nranks = 8;
	ev->id.nccl_seq = i / 16;
	if (i % 2 == 0) {
		ev->type = CCLD_EV_CALL;
		ev->u.call.count = 1u << (10 + i / 16 % 12);
		ev->u.call.sendbuff = 0x7f0000000000ull + (i % 4096) * 0x100000;
		ev->u.call.recvbuff = ev->u.call.sendbuff;
		ev->u.call.stream = 0x55d0c1000000ull + rank * 0x1000;
		ev->u.call.root_or_peer = -1;
		ev->u.call.dtype = 7;
		ev->u.call.redop = 0;
	} else {
		ev->type = CCLD_EV_RET;
		ev->flags |= CCLD_F_RETPROBE;
		ev->u.ret.entry_ns = ev->ts_ns - 5000 - i % 3000;
	}
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000, i, got = 0;
	const char *path = argc > 2 ? argv[2] : "/tmp/bench_capture.ccld";
	struct capture_header h;
	struct capture_writer *w;
	struct capture_reader *r;
	struct ccld_event ev;
	const char *meta;
	enum capture_item k;
	struct stat st;
	char err[256];
	double t0, tw, tr;

	capture_header_local(&h);
	w = capture_create(path, &h, err, sizeof(err));
	if (!w) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	t0 = now();
	for (i = 0; i < n; i++) {
		make_event(i, &ev);
		if (capture_write_event(w, &ev)) {
			fprintf(stderr, "%s\n", capture_error(w));
			return 1;
		}
	}
	if (capture_close(w)) {
		fprintf(stderr, "%s\n", capture_error(w));
		return 1;
	}
	tw = now() - t0;
	if (stat(path, &st)) {
		perror(path);
		return 1;
	}

	t0 = now();
	r = capture_open(path, &h, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	while ((k = capture_next(r, &ev, &meta)) != CAPTURE_END) {
		if (k == CAPTURE_ERROR) {
			fprintf(stderr, "%s\n", capture_reader_error(r));
			return 1;
		}
		got += k == CAPTURE_EVENT;
	}
	capture_close_reader(r);
	tr = now() - t0;
	if (got != n) {
		fprintf(stderr, "read %llu of %llu records\n",
			(unsigned long long)got, (unsigned long long)n);
		return 1;
	}
	printf("records %llu, file %lld bytes (%.1f bytes/record, raw 128)\n",
	       (unsigned long long)n, (long long)st.st_size,
	       (double)st.st_size / n);
	printf("write %.2f s, %.2f M records/s\n", tw, n / tw / 1e6);
	printf("read  %.2f s, %.2f M records/s\n", tr, n / tr / 1e6);
	return 0;
}
