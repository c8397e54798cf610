// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Replay of capture files through the same pipeline as live tracing.
 * Several files (one per host) are merged by wall-clock time, computed per
 * file from its own CLOCK_REALTIME - CLOCK_MONOTONIC offset; within a file
 * the recorded order is kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture.h"
#include "pipeline.h"
#include "replay.h"

struct source {
	const char *path;
	struct capture_reader *r;
	struct capture_header h;
	uint32_t host;
	bool has_ev;
	struct ccld_event ev;
	bool damaged;
};

/* Advances S to its next event; reports damage once per region. */
static void next_event(struct source *s)
{
	const char *meta;

	s->has_ev = false;
	for (;;) {
		enum capture_item it = capture_next(s->r, &s->ev, &meta);

		switch (it) {
		case CAPTURE_EVENT:
			s->has_ev = true;
			return;
		case CAPTURE_META:
			continue;
		case CAPTURE_ERROR:
			fprintf(stderr, "ccld-trace: %s: %s\n", s->path,
				capture_reader_error(s->r));
			s->damaged = true;
			continue;
		case CAPTURE_END:
			return;
		}
	}
}

int replay_run(const struct trace_opts *o, char **files, int nfiles)
{
	struct pipeline_opts po = {
		.out = stdout, .json = o->json, .events = o->events,
		.an = o->an,
	};
	struct source *src = calloc(nfiles, sizeof(*src));
	struct pipeline *pl = pipeline_new(&po);
	uint64_t first = 0, last = 0;
	bool any_damaged = false;
	int i, rc = 1;

	if (!src || !pl) {
		fprintf(stderr, "ccld-trace: out of memory\n");
		goto out;
	}
	for (i = 0; i < nfiles; i++) {
		char err[512];

		src[i].path = files[i];
		src[i].r = capture_open(files[i], &src[i].h, err, sizeof(err));
		if (!src[i].r) {
			fprintf(stderr, "ccld-trace: %s\n", err);
			goto out;
		}
		src[i].host = pipeline_add_host(pl, src[i].h.host,
						src[i].h.realtime_offset_ns);
		next_event(&src[i]);
	}
	for (;;) {
		struct source *best = NULL;
		int64_t best_t = 0;

		for (i = 0; i < nfiles; i++) {
			int64_t t;

			if (!src[i].has_ev)
				continue;
			t = (int64_t)src[i].ev.ts_ns + src[i].h.realtime_offset_ns;
			if (!best || t < best_t) {
				best = &src[i];
				best_t = t;
			}
		}
		if (!best)
			break;
		if (!first)
			first = best->ev.ts_ns;
		last = best->ev.ts_ns;
		pipeline_feed(pl, best->host, &best->ev);
		next_event(best);
	}
	pipeline_finish(pl, last > first ? (last - first) / 1e9 : 0);
	for (i = 0; i < nfiles; i++)
		any_damaged |= src[i].damaged;
	rc = any_damaged ? 1 : 0;
out:
	for (i = 0; src && i < nfiles; i++)
		if (src[i].r)
			capture_close_reader(src[i].r);
	free(src);
	pipeline_free(pl);
	return rc;
}
