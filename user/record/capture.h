/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Capture files (.ccld): a header (magic, format version, host, boot id,
 * CLOCK_REALTIME - CLOCK_MONOTONIC at start, kernel, ccld version), then
 * blocks, each zlib-compressed with a CRC32.  A block holds either event
 * records (struct ccld_event) or one metadata text (process, library and
 * communicator facts as "key=value ..." lines).  Items come back in the
 * order they were written.  docs/formats.md is the specification.
 */
#ifndef CCLD_CAPTURE_H
#define CCLD_CAPTURE_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>
#include "ccld.h"

struct capture_header {
	char host[64];
	char boot_id[40];
	int64_t realtime_offset_ns;	/* CLOCK_REALTIME - CLOCK_MONOTONIC */
	char kernel[65];
	char ccld_version[32];
};

/* Fills H for this machine (hostname, boot id, clock offset, uname). */
void capture_header_local(struct capture_header *h);

struct capture_writer;

struct capture_writer *capture_create(const char *path,
				      const struct capture_header *h,
				      char *err, size_t errlen);
/* Buffers EV; a block is compressed and written every N records. */
int capture_write_event(struct capture_writer *w, const struct ccld_event *ev);
/* Flushes pending events, then writes TEXT as a metadata block. */
int capture_write_meta(struct capture_writer *w, const char *text);
/* Writes out pending events (also called periodically by the tracer). */
int capture_flush(struct capture_writer *w);
/*
 * Flushes and closes; returns 0 or -1 (ERR filled by capture_error).  After
 * -1, W stays valid for capture_error; a second capture_close(W) frees it.
 */
int capture_close(struct capture_writer *w);
const char *capture_error(const struct capture_writer *w);

struct capture_reader;

enum capture_item { CAPTURE_END = 0, CAPTURE_EVENT = 1, CAPTURE_META = 2,
		    CAPTURE_ERROR = -1 };

/* Opens PATH and reads its header; NULL with ERR filled if not a capture. */
struct capture_reader *capture_open(const char *path, struct capture_header *h,
				    char *err, size_t errlen);
/* The same over LEN bytes at BUF (kept by the caller until closed). */
struct capture_reader *capture_open_mem(const void *buf, size_t len,
					struct capture_header *h,
					char *err, size_t errlen);
/*
 * Next item: CAPTURE_EVENT fills *ev, CAPTURE_META points *meta at a NUL
 * terminated text valid until the next call.  At a corrupt or truncated
 * block it returns CAPTURE_ERROR once for that damaged region
 * (capture_reader_error says what and at which file offset), then resyncs
 * on the next intact block and goes on; CAPTURE_END at the end of file.
 */
enum capture_item capture_next(struct capture_reader *r, struct ccld_event *ev,
			       const char **meta);
const char *capture_reader_error(const struct capture_reader *r);
void capture_close_reader(struct capture_reader *r);

#endif
