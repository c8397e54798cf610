// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Capture files (.ccld): writer and resyncing reader.  docs/formats.md is
 * the byte-by-byte specification; the constants below follow it.
 *
 * The reader trusts nothing it has not checked: a block's lengths are only
 * used once its header CRC matches and they are within bounds, its payload
 * only once the payload CRC matches, and every record is checked again after
 * decompression.  Every path either moves forward in the file or ends, so a
 * damaged file cannot make it loop, and no allocation exceeds one block.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <zlib.h>
#include "capture.h"

_Static_assert(sizeof(struct ccld_event) == CCLD_EVENT_SIZE,
	       "capture files store 128-byte records");

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/* records are stored as the kernel produced them: little-endian only */
#error "capture files store struct ccld_event as is: little-endian hosts only"
#endif

#ifndef CCLD_VERSION
#define CCLD_VERSION "unknown"
#endif

#define FILE_MAGIC		"CCLDCAP"	/* 8 bytes with its NUL */
#define FILE_VERSION		1
#define FILE_HDR_LEN		240
#define FILE_HDR_MAX		4096
#define FH_HOST			24
#define FH_HOST_LEN		64
#define FH_BOOT_ID		88
#define FH_BOOT_ID_LEN		40
#define FH_KERNEL		128
#define FH_KERNEL_LEN		72
#define FH_VERSION		200
#define FH_VERSION_LEN		32

#define BLOCK_MAGIC		"CCLDBLK"	/* 8 bytes with its NUL */
#define BLOCK_HDR_LEN		32
#define BLOCK_EVENTS		1
#define BLOCK_META		2
#define CODEC_ZLIB		1
#define BLOCK_RAW_MAX		(16u << 20)	/* bound on every allocation */
/* above any deflate output (zlib's compressBound), whatever zlib wrote it */
#define COMP_MAX(raw)		((raw) + (raw) / 1024 + 64)
#define BLOCK_RECORDS		4096		/* per events block (512 KiB) */
#ifndef ZLIB_LEVEL
#define ZLIB_LEVEL		1		/* docs/formats.md: speed vs size */
#endif

#define SCAN_WINDOW		(64u << 10)

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
/* lets the fuzzer reach the decoder with blocks whose CRC it cannot forge */
bool capture_fuzz_ignore_crc;
/* tiny reads exercise the reader's window at every boundary */
#define READ_CHUNK		37u
#else
#define READ_CHUNK		(1u << 20)
#endif

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, v);
	put_le16(p + 2, v >> 16);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, v);
	put_le32(p + 4, v >> 32);
}

static uint16_t get_le16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static uint32_t get_le32(const uint8_t *p)
{
	return get_le16(p) | (uint32_t)get_le16(p + 2) << 16;
}

static uint64_t get_le64(const uint8_t *p)
{
	return get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static uint32_t crc(const uint8_t *p, size_t n)
{
	return crc32(crc32(0, Z_NULL, 0), p, n);
}

static bool crc_ok(const uint8_t *p, size_t n, uint32_t want)
{
	bool ok = crc(p, n) == want;

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	if (capture_fuzz_ignore_crc)
		return true;
#endif
	return ok;
}

/* ---- header ------------------------------------------------------------ */

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Copies at most N-1 bytes of SRC and NUL-terminates: no truncation warning. */
static void copy_str(char *dst, size_t n, const char *src)
{
	size_t len = strnlen(src, n - 1);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

void capture_header_local(struct capture_header *h)
{
	int64_t best = INT64_MAX;
	struct utsname u;
	char buf[64];
	FILE *f;
	int i;

	memset(h, 0, sizeof(*h));
	if (gethostname(h->host, sizeof(h->host) - 1))
		copy_str(h->host, sizeof(h->host), "unknown");
	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f)) {
			buf[strcspn(buf, "\n")] = '\0';
			copy_str(h->boot_id, sizeof(h->boot_id), buf);
		}
		fclose(f);
	}
	/* the pair read in the shortest window is the most exact */
	for (i = 0; i < 5; i++) {
		int64_t m1 = clock_ns(CLOCK_MONOTONIC);
		int64_t rt = clock_ns(CLOCK_REALTIME);
		int64_t m2 = clock_ns(CLOCK_MONOTONIC);

		if (m2 - m1 < best) {
			best = m2 - m1;
			h->realtime_offset_ns = rt - (m1 + (m2 - m1) / 2);
		}
	}
	if (!uname(&u))
		copy_str(h->kernel, sizeof(h->kernel), u.release);
	copy_str(h->ccld_version, sizeof(h->ccld_version), CCLD_VERSION);
}

static void encode_header(uint8_t *p, const struct capture_header *h)
{
	memset(p, 0, FILE_HDR_LEN);
	memcpy(p, FILE_MAGIC, 8);
	put_le16(p + 8, FILE_VERSION);
	put_le16(p + 10, FILE_HDR_LEN);
	put_le16(p + 12, CCLD_EVENT_SIZE);
	p[14] = CCLD_ABI_VERSION;
	put_le64(p + 16, h->realtime_offset_ns);
	/* each field keeps at least one NUL at its end */
	memcpy(p + FH_HOST, h->host, strnlen(h->host, FH_HOST_LEN - 1));
	memcpy(p + FH_BOOT_ID, h->boot_id,
	       strnlen(h->boot_id, FH_BOOT_ID_LEN - 1));
	memcpy(p + FH_KERNEL, h->kernel, strnlen(h->kernel, sizeof(h->kernel) - 1));
	memcpy(p + FH_VERSION, h->ccld_version,
	       strnlen(h->ccld_version, FH_VERSION_LEN - 1));
	put_le32(p + FILE_HDR_LEN - 4, crc(p, FILE_HDR_LEN - 4));
}

/* A string field of the file into DST (size N): printable bytes only. */
static void decode_str(char *dst, size_t n, const uint8_t *src, size_t srclen)
{
	size_t i;

	for (i = 0; i + 1 < n && i < srclen && src[i]; i++)
		dst[i] = src[i] < 0x20 || src[i] == 0x7f ? '?' : (char)src[i];
	dst[i] = '\0';
}

/* ---- writer ------------------------------------------------------------ */

struct capture_writer {
	int fd;
	bool failed;		/* a write failed: the file ends in a partial block */
	bool closed;		/* capture_close failed once; W only holds ERR */
	char *path;
	uint64_t offset;	/* bytes written */
	uint32_t n;		/* buffered records */
	struct ccld_event *ev;
	uint8_t *out;		/* block header + compressed payload */
	size_t out_cap;
	char err[384];
};

static int write_all(struct capture_writer *w, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(w->fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? errno : EIO;

			snprintf(w->err, sizeof(w->err),
				 "write %s at offset %llu: %s", w->path,
				 (unsigned long long)w->offset, strerror(e));
			w->failed = true;
			errno = e;
			return -1;
		}
		p += k;
		n -= k;
		w->offset += k;
	}
	return 0;
}

static int write_block(struct capture_writer *w, uint16_t type, uint32_t count,
		       const void *raw, size_t raw_len)
{
	uLongf clen;
	size_t need;
	int ret;

	if (w->failed) {
		errno = EIO;
		return -1;
	}
	if (raw_len > BLOCK_RAW_MAX) {
		snprintf(w->err, sizeof(w->err),
			 "%s: block of %zu bytes exceeds the %u byte limit",
			 w->path, raw_len, BLOCK_RAW_MAX);
		errno = EFBIG;
		return -1;
	}
	need = BLOCK_HDR_LEN + compressBound(raw_len);
	if (need > w->out_cap) {
		uint8_t *p = realloc(w->out, need);

		if (!p) {
			snprintf(w->err, sizeof(w->err), "%s: out of memory",
				 w->path);
			errno = ENOMEM;
			return -1;
		}
		w->out = p;
		w->out_cap = need;
	}
	clen = need - BLOCK_HDR_LEN;
	ret = compress2(w->out + BLOCK_HDR_LEN, &clen, raw, raw_len, ZLIB_LEVEL);
	if (ret != Z_OK) {
		snprintf(w->err, sizeof(w->err), "%s: zlib compress: %s",
			 w->path, zError(ret));
		errno = EINVAL;
		return -1;
	}
	memcpy(w->out, BLOCK_MAGIC, 8);
	put_le16(w->out + 8, type);
	put_le16(w->out + 10, CODEC_ZLIB);
	put_le32(w->out + 12, count);
	put_le32(w->out + 16, clen);
	put_le32(w->out + 20, raw_len);
	put_le32(w->out + 24, crc(w->out + BLOCK_HDR_LEN, clen));
	put_le32(w->out + 28, crc(w->out, 28));
	return write_all(w, w->out, BLOCK_HDR_LEN + clen);
}

struct capture_writer *capture_create(const char *path,
				      const struct capture_header *h,
				      char *err, size_t errlen)
{
	struct capture_writer *w = calloc(1, sizeof(*w));
	uint8_t hdr[FILE_HDR_LEN];

	if (!w || !(w->path = strdup(path)) ||
	    !(w->ev = malloc(BLOCK_RECORDS * sizeof(*w->ev)))) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto err_free;
	}
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", path,
			 strerror(errno));
		goto err_free;
	}
	/* the header goes out now: even a tracer killed at once leaves a
	 * file that opens */
	encode_header(hdr, h);
	if (write_all(w, hdr, sizeof(hdr))) {
		snprintf(err, errlen, "%s", w->err);
		goto err_close;
	}
	return w;

err_close:
	close(w->fd);
err_free:
	if (w) {
		free(w->ev);
		free(w->path);
	}
	free(w);
	return NULL;
}

int capture_flush(struct capture_writer *w)
{
	int ret;

	if (!w->n)
		return w->failed ? -1 : 0;
	ret = write_block(w, BLOCK_EVENTS, w->n, w->ev,
			  (size_t)w->n * sizeof(*w->ev));
	/* on failure they are dropped: the file cannot take more anyway */
	w->n = 0;
	return ret;
}

int capture_write_event(struct capture_writer *w, const struct ccld_event *ev)
{
	if (w->failed) {
		errno = EIO;
		return -1;
	}
	w->ev[w->n++] = *ev;
	if (w->n == BLOCK_RECORDS)
		return capture_flush(w);
	return 0;
}

int capture_write_meta(struct capture_writer *w, const char *text)
{
	if (capture_flush(w))
		return -1;
	return write_block(w, BLOCK_META, 1, text, strlen(text));
}

/*
 * On failure W stays allocated so that capture_error(W) can tell why;
 * a second capture_close(W) releases it.
 */
int capture_close(struct capture_writer *w)
{
	int ret = 0;

	if (!w)
		return 0;
	if (w->closed)
		goto free_all;
	if (capture_flush(w))
		ret = -1;
	if (close(w->fd) && !ret) {
		snprintf(w->err, sizeof(w->err), "close %s: %s", w->path,
			 strerror(errno));
		ret = -1;
	}
	if (ret) {
		free(w->ev);
		free(w->out);
		w->ev = NULL;
		w->out = NULL;
		w->closed = true;
		return -1;
	}
free_all:
	free(w->ev);
	free(w->out);
	free(w->path);
	free(w);
	return 0;
}

const char *capture_error(const struct capture_writer *w)
{
	return w->err[0] ? w->err : "no error";
}

/* ---- reader ------------------------------------------------------------ */

struct capture_reader {
	int fd;			/* -1: reading from memory */
	const uint8_t *data;	/* window: data[0] is file offset BASE */
	size_t len;		/* valid bytes in data */
	size_t pos;		/* next unread byte in data */
	uint64_t base;
	bool eof;		/* nothing more will be read into the window */
	int read_errno;
	uint8_t *buf;		/* owned window of a file */
	size_t cap;

	uint8_t *raw;		/* the decoded block, NUL after a meta text */
	size_t raw_cap;
	uint32_t nrec, irec;
	bool meta_ready;
	bool done;
	char err[320];
};

static uint64_t offset_of(const struct capture_reader *r)
{
	return r->base + r->pos;
}

/*
 * Makes NEED bytes at data[pos] readable if the file has them; returns how
 * many are (less only at end of file or on a read error).  May move the
 * window: callers index from r->data + r->pos afterwards.
 */
static size_t peek(struct capture_reader *r, size_t need)
{
	size_t have = r->len - r->pos;

	if (have >= need || r->eof)
		return have < need ? have : need;
	if (r->pos) {
		memmove(r->buf, r->buf + r->pos, have);
		r->base += r->pos;
		r->len = have;
		r->pos = 0;
	}
	if (need > r->cap) {
		uint8_t *p = realloc(r->buf, need);

		if (!p) {
			r->read_errno = ENOMEM;
			r->eof = true;
			return have;
		}
		r->buf = p;
		r->data = p;
		r->cap = need;
	}
	while (r->len < need) {
		size_t room = r->cap - r->len;
		ssize_t k = read(r->fd, r->buf + r->len,
				 room < READ_CHUNK ? room : READ_CHUNK);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r->read_errno = k < 0 ? errno : 0;
			r->eof = true;
			break;
		}
		r->len += k;
	}
	have = r->len - r->pos;
	return have < need ? have : need;
}

/* Header fields, lengths in bounds, header CRC: lengths can be trusted. */
static bool block_header_ok(const uint8_t *p)
{
	uint16_t type = get_le16(p + 8);
	uint32_t count = get_le32(p + 12);
	uint32_t clen = get_le32(p + 16);
	uint32_t rlen = get_le32(p + 20);

	if (memcmp(p, BLOCK_MAGIC, 8) || !crc_ok(p, 28, get_le32(p + 28)))
		return false;
	if (get_le16(p + 10) != CODEC_ZLIB || rlen > BLOCK_RAW_MAX ||
	    !clen || clen > COMP_MAX(rlen))
		return false;
	if (type == BLOCK_EVENTS)
		return count && count <= BLOCK_RAW_MAX / CCLD_EVENT_SIZE &&
		       rlen == count * CCLD_EVENT_SIZE;
	return type == BLOCK_META && count == 1;
}

static size_t block_len(const uint8_t *p)
{
	return BLOCK_HDR_LEN + get_le32(p + 16);
}

/* Reports the end of readable data at OFF: a read error or a truncation. */
static int cut_short(struct capture_reader *r, uint64_t off, const char *what,
		     size_t have, size_t need)
{
	if (r->read_errno)
		snprintf(r->err, sizeof(r->err), "read error at offset %llu: %s",
			 (unsigned long long)(r->base + r->len),
			 strerror(r->read_errno));
	else
		snprintf(r->err, sizeof(r->err),
			 "truncated at offset %llu: %s (%zu of %zu bytes)",
			 (unsigned long long)off, what, have, need);
	r->done = true;
	return -1;
}

/*
 * The data at BAD is damaged (WHY): scans forward for the next block whose
 * header and payload CRCs match and reports the whole region once.
 */
static int resync(struct capture_reader *r, uint64_t bad, const char *why)
{
	const char *tail = NULL;
	uint64_t at;

	r->pos++;	/* BAD is at r->pos: always move on */
	for (;;) {
		size_t avail = peek(r, SCAN_WINDOW);
		const uint8_t *p, *hit;
		size_t need;

		if (avail < BLOCK_HDR_LEN) {
			r->pos += avail;
			tail = "no intact block after it";
			break;
		}
		p = r->data + r->pos;
		hit = memmem(p, avail, BLOCK_MAGIC, 8);
		if (!hit) {
			/* keep 7 bytes: a magic may straddle the window */
			r->pos += avail - 7;
			continue;
		}
		r->pos += hit - p;
		if (peek(r, BLOCK_HDR_LEN) < BLOCK_HDR_LEN) {
			r->pos = r->len;
			tail = "no intact block after it";
			break;
		}
		p = r->data + r->pos;
		if (!block_header_ok(p)) {
			r->pos++;
			continue;
		}
		need = block_len(p);
		if (peek(r, need) < need) {
			/* a valid header whose payload the file lacks */
			tail = "then the file is truncated there";
			r->pos = r->len;
			break;
		}
		p = r->data + r->pos;
		if (crc_ok(p + BLOCK_HDR_LEN, need - BLOCK_HDR_LEN,
			   get_le32(p + 24)))
			break;
		r->pos++;
	}
	at = offset_of(r);
	if (r->read_errno) {
		snprintf(r->err, sizeof(r->err),
			 "corrupt data at offset %llu (%s), then read error at offset %llu: %s",
			 (unsigned long long)bad, why, (unsigned long long)at,
			 strerror(r->read_errno));
		r->done = true;
	} else if (tail) {
		snprintf(r->err, sizeof(r->err),
			 "corrupt data at offset %llu (%s): %s, %llu bytes skipped",
			 (unsigned long long)bad, why, tail,
			 (unsigned long long)(at - bad));
		r->done = true;
	} else {
		snprintf(r->err, sizeof(r->err),
			 "corrupt data at offset %llu (%s): %llu bytes skipped, resuming at offset %llu",
			 (unsigned long long)bad, why,
			 (unsigned long long)(at - bad), (unsigned long long)at);
	}
	return -1;
}

/*
 * Type, version and function of a stored record (struct ccld_event).  The
 * type range follows bpf/ccld.h: unnamed values inside it are reserved
 * ones that consumers skip, values past it are garbage.
 */
static bool record_ok(const uint8_t *p)
{
	uint16_t type = get_le16(p);

	return p[2] == CCLD_ABI_VERSION && p[3] < CCLD_FN_MAX &&
	       type >= CCLD_EV_CALL && type < CCLD_EV_TYPE_MAX;
}

/* Keeps the valid records of the decoded block; reports the others once. */
static int check_records(struct capture_reader *r, uint64_t off, uint32_t count)
{
	uint32_t i, n = 0, bad = 0, first = 0;

	for (i = 0; i < count; i++) {
		const uint8_t *p = r->raw + (size_t)i * CCLD_EVENT_SIZE;

		if (!record_ok(p)) {
			if (!bad++)
				first = i;
			continue;
		}
		if (n != i)
			memcpy(r->raw + (size_t)n * CCLD_EVENT_SIZE, p,
			       CCLD_EVENT_SIZE);
		n++;
	}
	r->nrec = n;
	r->irec = 0;
	if (!bad)
		return 0;
	snprintf(r->err, sizeof(r->err),
		 "block at offset %llu: %u of %u records are invalid (first: record %u), skipped",
		 (unsigned long long)off, bad, count, first);
	return -1;
}

/* Reads the next block: 1 loaded, 0 end of file, -1 error (R->err). */
static int read_block(struct capture_reader *r)
{
	uint64_t off = offset_of(r);
	size_t have = peek(r, BLOCK_HDR_LEN), need;
	uLongf rlen;
	uLong clen;
	const uint8_t *p;
	uint32_t want;
	int ret;

	if (!have) {
		if (r->read_errno)
			return cut_short(r, off, "", 0, 0);
		r->done = true;
		return 0;
	}
	if (have < BLOCK_HDR_LEN)
		return cut_short(r, off, "incomplete block header", have,
				 BLOCK_HDR_LEN);
	p = r->data + r->pos;
	if (!block_header_ok(p))
		return resync(r, off, "bad block header");
	need = block_len(p);
	have = peek(r, need);
	if (have < need)
		return cut_short(r, off, "incomplete block", have, need);
	p = r->data + r->pos;
	if (!crc_ok(p + BLOCK_HDR_LEN, need - BLOCK_HDR_LEN, get_le32(p + 24)))
		return resync(r, off, "block CRC mismatch");

	want = get_le32(p + 20);
	if (want + 1 > r->raw_cap) {
		uint8_t *q = realloc(r->raw, want + 1);

		if (!q) {
			snprintf(r->err, sizeof(r->err),
				 "block at offset %llu: out of memory",
				 (unsigned long long)off);
			r->done = true;
			return -1;
		}
		r->raw = q;
		r->raw_cap = want + 1;
	}
	rlen = want;
	clen = need - BLOCK_HDR_LEN;
	ret = uncompress2(r->raw, &rlen, p + BLOCK_HDR_LEN, &clen);
	if (ret != Z_OK || rlen != want || clen != need - BLOCK_HDR_LEN) {
		/* CRC-valid but undecodable: only a forged block gets here */
		snprintf(r->err, sizeof(r->err),
			 "block at offset %llu: zlib payload does not decode to %u bytes (%s), skipped",
			 (unsigned long long)off, want,
			 ret != Z_OK ? zError(ret) : "wrong length");
		r->pos += need;
		return -1;
	}
	r->pos += need;
	if (get_le16(p + 8) == BLOCK_META) {
		r->raw[want] = '\0';
		r->meta_ready = true;
		return 1;
	}
	return check_records(r, off, get_le32(p + 12)) ? -1 : 1;
}

static struct capture_reader *open_common(struct capture_reader *r,
					  const char *name,
					  struct capture_header *h,
					  char *err, size_t errlen)
{
	size_t have = peek(r, 16);
	const uint8_t *p = r->data + r->pos;
	uint16_t version, hlen;

	if (r->read_errno) {
		snprintf(err, errlen, "%s: read error: %s", name,
			 strerror(r->read_errno));
		goto err;
	}
	if (!have) {
		snprintf(err, errlen, "%s: empty file, not a ccld capture", name);
		goto err;
	}
	if (have < 8 || memcmp(p, FILE_MAGIC, 8)) {
		snprintf(err, errlen,
			 "%s: not a ccld capture file (no CCLDCAP magic)", name);
		goto err;
	}
	if (have < 16) {
		snprintf(err, errlen,
			 "%s: truncated capture header (%zu bytes)", name, have);
		goto err;
	}
	version = get_le16(p + 8);
	hlen = get_le16(p + 10);
	if (version != FILE_VERSION) {
		snprintf(err, errlen,
			 "%s: capture format version %u, this ccld reads version %u",
			 name, version, FILE_VERSION);
		goto err;
	}
	if (hlen < FILE_HDR_LEN || hlen > FILE_HDR_MAX) {
		snprintf(err, errlen, "%s: corrupt capture header (length %u)",
			 name, hlen);
		goto err;
	}
	have = peek(r, hlen);
	p = r->data + r->pos;
	if (have < hlen) {
		snprintf(err, errlen,
			 "%s: truncated capture header (%zu of %u bytes)%s%s",
			 name, have, hlen, r->read_errno ? ": " : "",
			 r->read_errno ? strerror(r->read_errno) : "");
		goto err;
	}
	if (!crc_ok(p, hlen - 4, get_le32(p + hlen - 4))) {
		snprintf(err, errlen, "%s: corrupt capture header (CRC mismatch)",
			 name);
		goto err;
	}
	if (get_le16(p + 12) != CCLD_EVENT_SIZE || p[14] != CCLD_ABI_VERSION) {
		snprintf(err, errlen,
			 "%s: records are %u-byte ABI v%u, this ccld reads %u-byte v%u",
			 name, get_le16(p + 12), p[14], CCLD_EVENT_SIZE,
			 CCLD_ABI_VERSION);
		goto err;
	}
	if (h) {
		memset(h, 0, sizeof(*h));
		h->realtime_offset_ns = (int64_t)get_le64(p + 16);
		decode_str(h->host, sizeof(h->host), p + FH_HOST, FH_HOST_LEN);
		decode_str(h->boot_id, sizeof(h->boot_id), p + FH_BOOT_ID,
			   FH_BOOT_ID_LEN);
		decode_str(h->kernel, sizeof(h->kernel), p + FH_KERNEL,
			   FH_KERNEL_LEN);
		decode_str(h->ccld_version, sizeof(h->ccld_version),
			   p + FH_VERSION, FH_VERSION_LEN);
	}
	r->pos += hlen;
	return r;
err:
	capture_close_reader(r);
	return NULL;
}

struct capture_reader *capture_open(const char *path, struct capture_header *h,
				    char *err, size_t errlen)
{
	struct capture_reader *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path,
			 strerror(errno));
		free(r);
		return NULL;
	}
	r->cap = READ_CHUNK < FILE_HDR_MAX ? FILE_HDR_MAX : READ_CHUNK;
	r->buf = malloc(r->cap);
	if (!r->buf) {
		snprintf(err, errlen, "%s: out of memory", path);
		capture_close_reader(r);
		return NULL;
	}
	r->data = r->buf;
	return open_common(r, path, h, err, errlen);
}

struct capture_reader *capture_open_mem(const void *buf, size_t len,
					struct capture_header *h,
					char *err, size_t errlen)
{
	struct capture_reader *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "(memory): out of memory");
		return NULL;
	}
	r->fd = -1;
	r->data = buf;
	r->len = len;
	r->eof = true;
	return open_common(r, "(memory)", h, err, errlen);
}

enum capture_item capture_next(struct capture_reader *r, struct ccld_event *ev,
			       const char **meta)
{
	for (;;) {
		if (r->irec < r->nrec) {
			memcpy(ev, r->raw + (size_t)r->irec++ * CCLD_EVENT_SIZE,
			       sizeof(*ev));
			return CAPTURE_EVENT;
		}
		if (r->meta_ready) {
			r->meta_ready = false;
			*meta = (const char *)r->raw;
			return CAPTURE_META;
		}
		if (r->done)
			return CAPTURE_END;
		r->nrec = r->irec = 0;
		switch (read_block(r)) {
		case 0:
			return CAPTURE_END;
		case -1:
			return CAPTURE_ERROR;
		}
	}
}

const char *capture_reader_error(const struct capture_reader *r)
{
	return r->err[0] ? r->err : "no error";
}

void capture_close_reader(struct capture_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	free(r->raw);
	free(r);
}
