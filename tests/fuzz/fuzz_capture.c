// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the capture reader.  Input: one flag byte (bit 0:
 * accept blocks whose CRC does not match, so that forged lengths, zlib
 * streams and records reach the decoder), then the bytes of a file.  The
 * file is read from memory and through a file descriptor (the latter with
 * 37-byte reads in fuzzing builds); both must end, and give the same items
 * and the same errors.  NCCL's warnings among the records are put together
 * (ncclwarn.h), and threads' native stacks (stackasm.h), the same way from
 * both; a stack put together is printable text.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "capture.h"
#include "ncclwarn.h"
#include "stackasm.h"

extern bool capture_fuzz_ignore_crc;

static int memfd = -1;
static char memfd_path[64];

struct digest {
	uint64_t hash;
	size_t events, metas, errors;
	bool opened;
	struct warn_asm *warn;	/* NCCL's warnings from their records (ncclwarn.h) */
	struct stack_asm *stack;	/* threads' stacks (stackasm.h) */
};

static void feed(struct digest *d, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		d->hash = (d->hash ^ *c++) * 0x100000001b3ull;
}

static void drain(struct capture_reader *r, struct digest *d)
{
	struct ccld_event ev;
	const char *meta;
	enum capture_item k;
	size_t guard = 0;

	while ((k = capture_next(r, &ev, &meta)) != CAPTURE_END) {
		/* 16 MiB blocks of 128-byte records: far fewer items than this */
		if (++guard > (64u << 20)) {
			fprintf(stderr, "capture reader does not end\n");
			abort();
		}
		feed(d, &k, sizeof(k));
		switch (k) {
		case CAPTURE_EVENT:
			if (ev.version != CCLD_ABI_VERSION || ev.fn >= CCLD_FN_MAX)
				abort();	/* the reader let a bad record out */
			feed(d, &ev, sizeof(ev));
			d->events++;
			if (ev.type == CCLD_EV_THREAD_STACK)
				stack_asm_part(d->stack, 0, &ev);
			if (ev.type == CCLD_EV_THREAD) {
				char text[STACK_TEXT_MAX];
				size_t i, n;

				if (stack_asm_take(d->stack, 0, &ev, text, sizeof(text))) {
					n = strlen(text);
					for (i = 0; i < n; i++)
						if (text[i] < ' ' || text[i] > '~')
							abort();
					feed(d, text, n);
				}
			}
			if (ev.type == CCLD_EV_NCCL_WARN) {
				struct nccl_warning w;
				enum warn_feed wf = warn_asm_feed(d->warn, 0, &ev, &w);

				feed(d, &wf, sizeof(wf));
				if (wf == WARN_DONE)
					feed(d, w.msg, strlen(w.msg));
			}
			break;
		case CAPTURE_META:
			feed(d, meta, strlen(meta));
			d->metas++;
			break;
		case CAPTURE_ERROR:
			feed(d, capture_reader_error(r),
			     strlen(capture_reader_error(r)));
			d->errors++;
			break;
		case CAPTURE_END:
			break;
		}
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = memfd_create("fuzz_capture", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("memfd_create");
		abort();
	}
	snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct warn_asm wa, wb;
	static struct stack_asm sa, sb;
	struct digest a = { .hash = 14695981039346656037ull, .warn = &wa, .stack = &sa };
	struct digest b = { .hash = a.hash, .warn = &wb, .stack = &sb };
	struct capture_reader *r;
	struct capture_header h;
	char err[256];

	if (!size)
		return 0;
	memset(&wa, 0, sizeof(wa));
	memset(&wb, 0, sizeof(wb));
	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	capture_fuzz_ignore_crc = data[0] & 1;
	data++;
	size--;

	r = capture_open_mem(data, size, &h, err, sizeof(err));
	if (r) {
		a.opened = true;
		feed(&a, &h, sizeof(h));
		drain(r, &a);
		capture_close_reader(r);
	} else if (!err[0]) {
		abort();	/* refused without saying why */
	}

	if (ftruncate(memfd, 0) ||
	    pwrite(memfd, data, size, 0) != (ssize_t)size) {
		perror("memfd write");
		abort();
	}
	r = capture_open(memfd_path, &h, err, sizeof(err));
	if (r) {
		b.opened = true;
		feed(&b, &h, sizeof(h));
		drain(r, &b);
		capture_close_reader(r);
	}
	if (a.opened != b.opened || a.hash != b.hash || a.events != b.events ||
	    a.metas != b.metas || a.errors != b.errors) {
		fprintf(stderr, "memory and file readers differ: %zu/%zu events, %zu/%zu metas, %zu/%zu errors\n",
			a.events, b.events, a.metas, b.metas, a.errors, b.errors);
		abort();
	}
	return 0;
}
