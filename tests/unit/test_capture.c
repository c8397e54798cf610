// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Capture files: round trips, truncation at (nearly) every offset, damaged
 * blocks, foreign files, write errors, and a file written from the spec in
 * docs/formats.md by an independent encoder (tests/fuzz/gen_corpus.py).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include "capture.h"
#include "check.h"

#define HDR_LEN		240	/* docs/formats.md */
#define MAX_ITEMS	300000

static char dir[] = "/tmp/ccld-test-capture.XXXXXX";

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Record number I: valid type/version/fn, the rest derived from I. */
static void make_event(uint32_t i, struct ccld_event *ev)
{
	static const uint16_t types[] = {
		CCLD_EV_CALL, CCLD_EV_RET, CCLD_EV_GROUP, CCLD_EV_COMM,
		CCLD_EV_COMM_RET, CCLD_EV_ASYNC_ERR, CCLD_EV_CUDA,
		CCLD_EV_PROC_ATTACH, CCLD_EV_PROC_EXIT, CCLD_EV_LOST,
		CCLD_EV_TICK, CCLD_EV_PROC_STATE,
	};
	size_t k;

	memset(ev, 0, sizeof(*ev));
	ev->type = types[i % (sizeof(types) / sizeof(types[0]))];
	ev->version = CCLD_ABI_VERSION;
	ev->fn = i % CCLD_FN_MAX;
	ev->flags = i * 3;
	ev->pid = 1000 + i % 7;
	ev->tid = i;
	ev->ts_ns = 1700000000000000000ull + i * 1500ull;
	ev->id.comm = mix(i);
	ev->id.hash = mix(i / 64);
	ev->id.rank = i % 8;
	ev->id.nranks = 8;
	ev->id.nccl_seq = i / 8;
	/* half of the payload random: blocks that do not compress to nothing */
	for (k = 0; k < 32; k += 8) {
		uint64_t v = mix((uint64_t)i << 8 | k);

		memcpy(ev->u.raw + k, &v, 8);
	}
}

/* What a reader returned: events by number, metas by number, errors. */
enum { IT_EVENT, IT_META, IT_BAD };
struct item {
	int kind;
	uint32_t n;
};

struct result {
	struct item *it;
	size_t n;
	int errors;
	char err[512];		/* the first error */
};

static void read_all(struct capture_reader *r, struct result *res)
{
	struct ccld_event ev, want;
	const char *meta;
	enum capture_item k;
	size_t guard = 0;

	res->n = 0;
	res->errors = 0;
	res->err[0] = '\0';
	while ((k = capture_next(r, &ev, &meta)) != CAPTURE_END) {
		struct item *it = &res->it[res->n < MAX_ITEMS ? res->n : MAX_ITEMS - 1];
		unsigned int m;

		if (++guard > 2 * MAX_ITEMS) {
			fprintf(stderr, "reader does not end\n");
			res->errors = 1000;
			return;
		}
		if (k == CAPTURE_ERROR) {
			if (!res->errors++)
				snprintf(res->err, sizeof(res->err), "%s",
					 capture_reader_error(r));
			continue;
		}
		if (k == CAPTURE_EVENT) {
			make_event(ev.tid, &want);
			it->kind = memcmp(&ev, &want, sizeof(ev)) ? IT_BAD : IT_EVENT;
			it->n = ev.tid;
		} else {
			it->kind = sscanf(meta, "meta %u", &m) == 1 ? IT_META : IT_BAD;
			it->n = m;
		}
		res->n++;
	}
	/* END is sticky */
	CHECK_INT(capture_next(r, &ev, &meta), CAPTURE_END);
}

static int read_mem(const void *buf, size_t len, struct result *res)
{
	struct capture_reader *r;
	char err[256];

	r = capture_open_mem(buf, len, NULL, err, sizeof(err));
	if (!r) {
		snprintf(res->err, sizeof(res->err), "%s", err);
		return -1;
	}
	read_all(r, res);
	capture_close_reader(r);
	return 0;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "we");

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_INT(fwrite(buf, 1, len, f), len);
	fclose(f);
}

static int read_path(const char *path, struct result *res)
{
	struct capture_reader *r;
	char err[256];

	r = capture_open(path, NULL, err, sizeof(err));
	if (!r) {
		snprintf(res->err, sizeof(res->err), "%s", err);
		return -1;
	}
	read_all(r, res);
	capture_close_reader(r);
	return 0;
}

static uint8_t *load(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) || !(buf = malloc(st.st_size + 1))) {
		fclose(f);
		return NULL;
	}
	*len = fread(buf, 1, st.st_size, f);
	fclose(f);
	return buf;
}

static void tmp_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

/* Where the blocks of a well-formed file start, and their item counts. */
struct blocks {
	size_t n;
	size_t off[4096];
	size_t end[4096];
	size_t items[4096];
};

static void index_blocks(const uint8_t *buf, size_t len, struct blocks *b)
{
	size_t off = HDR_LEN;

	b->n = 0;
	while (off + 32 <= len && b->n < 4096) {
		uint32_t clen, count;

		memcpy(&count, buf + off + 12, 4);
		memcpy(&clen, buf + off + 16, 4);
		b->off[b->n] = off;
		b->end[b->n] = off + 32 + clen;
		b->items[b->n] = count;	/* a meta block's count is 1 */
		off = b->end[b->n++];
	}
	CHECK_INT(off, len);
}

/*
 * The sample file: events and metadata in irregular runs, with explicit
 * flushes, full 4096-record blocks and an empty metadata text.
 */
static size_t write_sample(const char *path, struct item *want, uint32_t nev)
{
	struct capture_header h = { .realtime_offset_ns = 42 };
	struct capture_writer *w;
	struct ccld_event ev;
	char err[256], text[64];
	uint32_t i, metas = 0;
	size_t n = 0;

	snprintf(h.host, sizeof(h.host), "node-a");
	w = capture_create(path, &h, err, sizeof(err));
	CHECK(w != NULL);
	if (!w) {
		fprintf(stderr, "%s\n", err);
		return 0;
	}
	for (i = 0; i < nev; i++) {
		make_event(i, &ev);
		CHECK_INT(capture_write_event(w, &ev), 0);
		want[n++] = (struct item){ IT_EVENT, i };
		if (i % 997 == 13 || i == 5) {
			snprintf(text, sizeof(text), "meta %u\nkey=value x=%u",
				 metas, i);
			CHECK_INT(capture_write_meta(w, text), 0);
			want[n++] = (struct item){ IT_META, metas++ };
		}
		if (i % 1500 == 700)
			CHECK_INT(capture_flush(w), 0);
	}
	CHECK_INT(capture_flush(w), 0);
	CHECK_INT(capture_flush(w), 0);		/* nothing pending: no block */
	/* small blocks at the end: truncation is tried at each of their bytes */
	for (i = nev; i < nev + 6; i++) {
		make_event(i, &ev);
		CHECK_INT(capture_write_event(w, &ev), 0);
		want[n++] = (struct item){ IT_EVENT, i };
		if (i % 2)
			CHECK_INT(capture_flush(w), 0);
	}
	snprintf(text, sizeof(text), "meta %u", metas);
	CHECK_INT(capture_write_meta(w, text), 0);
	want[n++] = (struct item){ IT_META, metas++ };
	CHECK_INT(capture_close(w), 0);
	return n;
}

static bool same_items(const struct result *res, const struct item *want,
		       size_t n)
{
	size_t i;

	if (res->n != n)
		return false;
	for (i = 0; i < n; i++)
		if (res->it[i].kind != want[i].kind || res->it[i].n != want[i].n)
			return false;
	return true;
}

static void test_round_trip(struct item *want, struct result *res)
{
	char path[256];
	size_t n;
	struct capture_reader *r;
	struct capture_header h;
	struct ccld_event ev;
	const char *meta;
	char err[256];

	tmp_path(path, sizeof(path), "round.ccld");
	n = write_sample(path, want, 20000);
	CHECK_INT(read_path(path, res), 0);
	CHECK(same_items(res, want, n));
	CHECK_INT(res->errors, 0);

	/* an empty metadata text and a file without events */
	tmp_path(path, sizeof(path), "empty-meta.ccld");
	memset(&h, 0, sizeof(h));
	{
		struct capture_writer *w = capture_create(path, &h, err,
							  sizeof(err));

		CHECK(w != NULL);
		if (w) {
			CHECK_INT(capture_write_meta(w, ""), 0);
			CHECK_INT(capture_close(w), 0);
		}
	}
	r = capture_open(path, &h, err, sizeof(err));
	CHECK(r != NULL);
	if (r) {
		CHECK_INT(capture_next(r, &ev, &meta), CAPTURE_META);
		CHECK_STR(meta, "");
		CHECK_INT(capture_next(r, &ev, &meta), CAPTURE_END);
		capture_close_reader(r);
	}
}

static void test_header(void)
{
	struct capture_header h, got, local;
	struct capture_writer *w;
	struct capture_reader *r;
	struct timespec rt, mono;
	struct utsname u;
	char path[256], err[256], host[64] = "";
	int64_t now_off;

	memset(&h, 0, sizeof(h));
	memset(h.host, 'h', sizeof(h.host) - 1);	/* longest there is */
	snprintf(h.boot_id, sizeof(h.boot_id),
		 "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
	h.realtime_offset_ns = -1234567890123456789ll;
	memset(h.kernel, 'k', sizeof(h.kernel) - 1);
	snprintf(h.ccld_version, sizeof(h.ccld_version), "v1.2-3-gabcdef-dirty");
	tmp_path(path, sizeof(path), "header.ccld");
	w = capture_create(path, &h, err, sizeof(err));
	CHECK(w != NULL);
	if (!w)
		return;
	CHECK_INT(capture_close(w), 0);
	memset(&got, 0x55, sizeof(got));
	r = capture_open(path, &got, err, sizeof(err));
	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_STR(got.host, h.host);
	CHECK_STR(got.boot_id, h.boot_id);
	CHECK_INT(got.realtime_offset_ns, h.realtime_offset_ns);
	CHECK_STR(got.kernel, h.kernel);
	CHECK_STR(got.ccld_version, h.ccld_version);
	capture_close_reader(r);

	/* this machine's facts */
	capture_header_local(&local);
	gethostname(host, sizeof(host) - 1);
	CHECK_STR(local.host, host);
	CHECK_INT(strlen(local.boot_id), 36);
	CHECK(uname(&u) == 0);
	CHECK_STR(local.kernel, u.release);
	/* the field holds 31 bytes of the Makefile's version */
	CHECK(strncmp(local.ccld_version, CCLD_VERSION,
		      sizeof(local.ccld_version) - 1) == 0);
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	now_off = (rt.tv_sec - mono.tv_sec) * 1000000000ll +
		  (rt.tv_nsec - mono.tv_nsec);
	CHECK(llabs(now_off - local.realtime_offset_ns) < 50000000);
}

/*
 * Truncated at offset L, a file gives the items of the blocks that end at
 * or before L, then exactly one "truncated at offset" error unless L is a
 * block boundary.  Every offset of the last four blocks, about 500 offsets
 * elsewhere; memory and file readers both.
 */
static void test_truncation(struct item *want, struct result *res)
{
	char path[256], trunc[256], msg[64];
	struct blocks *b = calloc(1, sizeof(*b));
	size_t len, L, n, j, nitems = 0, bad = 0, checked = 0, stride;
	uint8_t *buf;

	tmp_path(path, sizeof(path), "trunc-src.ccld");
	tmp_path(trunc, sizeof(trunc), "trunc.ccld");
	n = write_sample(path, want, 3000);
	buf = load(path, &len);
	CHECK(buf != NULL && b != NULL);
	if (!buf || !b)
		goto out;
	index_blocks(buf, len, b);
	CHECK(b->n >= 8);
	stride = len / 500 | 1;
	for (L = 0; L <= len; L++) {
		bool dense = b->n >= 4 && L >= b->off[b->n - 4];
		bool boundary = false;
		int ret;

		if (!dense && L % stride && L > HDR_LEN + 40)
			continue;
		nitems = 0;
		for (j = 0; j < b->n && b->end[j] <= L; j++)
			nitems += b->items[j];
		if (L == HDR_LEN || (j && b->end[j - 1] == L))
			boundary = true;
		if (L % 5 == 0) {
			write_file(trunc, buf, L);
			ret = read_path(trunc, res);
		} else {
			ret = read_mem(buf, L, res);
		}
		checked++;
		if (L < HDR_LEN) {
			if (ret != -1 || !strstr(res->err, L < 8 ?
				(L ? "not a ccld capture" : "empty file") :
				"truncated capture header")) {
				fprintf(stderr, "L=%zu: %s\n", L, res->err);
				bad++;
			}
			continue;
		}
		snprintf(msg, sizeof(msg), "truncated at offset %zu",
			 j < b->n ? b->off[j] : 0);
		if (ret || !same_items(res, want, nitems) ||
		    res->errors != (boundary ? 0 : 1) ||
		    (!boundary && !strstr(res->err, msg))) {
			if (bad++ < 5)
				fprintf(stderr, "L=%zu: %zu items (want %zu), %d errors: %s\n",
					L, res->n, nitems, res->errors, res->err);
		}
	}
	CHECK_INT(bad, 0);
	CHECK(checked > 700);
	CHECK(n == nitems);
out:
	free(buf);
	free(b);
}

/* The items of a sample file without those of blocks FROM..TO. */
static size_t without(const struct item *want, const struct blocks *b,
		      size_t from, size_t to, struct item *out)
{
	size_t j, k, i = 0, n = 0;

	for (j = 0; j < b->n; j++)
		for (k = 0; k < b->items[j]; k++, i++)
			if (j < from || j > to)
				out[n++] = want[i];
	return n;
}

static void expect_one_error(struct result *res, const struct item *want,
			     size_t n, size_t bad_off, const char *what)
{
	char msg[64];

	snprintf(msg, sizeof(msg), "corrupt data at offset %zu ", bad_off);
	if (!same_items(res, want, n) || res->errors != 1 ||
	    !strstr(res->err, msg)) {
		fprintf(stderr, "%s: %zu items (want %zu), %d errors: %s\n",
			what, res->n, n, res->errors, res->err);
		CHECK(0);
	}
}

/*
 * Damage inside one block loses that block only; the error names its
 * offset.  Also garbage between blocks and over several blocks.
 */
static void test_damage(struct item *want, struct result *res)
{
	struct blocks *b = calloc(1, sizeof(*b));
	struct item *other = malloc(MAX_ITEMS * sizeof(*other));
	char path[256], what[96];
	size_t len, j, n, pos, k;
	uint8_t *buf, *copy, *big;

	tmp_path(path, sizeof(path), "damage.ccld");
	write_sample(path, want, 9000);
	buf = load(path, &len);
	copy = malloc(len + 4096);
	CHECK(buf && copy && b && other);
	if (!buf || !copy || !b || !other)
		goto out;
	index_blocks(buf, len, b);
	for (j = 0; j < b->n; j++) {
		size_t blen = b->end[j] - b->off[j];
		/* every header byte, then payload bytes spread over the block */
		size_t probes[] = { 0, 3, 7, 8, 10, 12, 16, 20, 24, 28, 31,
				    32, 33, blen / 2, blen - 1 };

		n = without(want, b, j, j, other);
		for (k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
			pos = b->off[j] + probes[k];
			memcpy(copy, buf, len);
			copy[pos] ^= 0x5a;
			snprintf(what, sizeof(what), "block %zu byte %zu", j,
				 probes[k]);
			CHECK_INT(read_mem(copy, len, res), 0);
			expect_one_error(res, other, n, b->off[j], what);
		}
	}
	/* the same through the file reader, for the middle block */
	j = b->n / 2;
	memcpy(copy, buf, len);
	copy[b->off[j] + 40] ^= 1;
	tmp_path(path, sizeof(path), "damage-file.ccld");
	write_file(path, copy, len);
	CHECK_INT(read_path(path, res), 0);
	expect_one_error(res, other, without(want, b, j, j, other), b->off[j],
			 "file reader");

	/* 1000 zero bytes inserted between blocks 2 and 3: nothing lost */
	memcpy(copy, buf, b->end[2]);
	memset(copy + b->end[2], 0, 1000);
	memcpy(copy + b->end[2] + 1000, buf + b->end[2], len - b->end[2]);
	CHECK_INT(read_mem(copy, len + 1000, res), 0);
	expect_one_error(res, want, without(want, b, 1, 0, other), b->end[2],
			 "inserted garbage");

	/*
	 * 64 KiB - 2 bytes of garbage: the scan's first window, starting one
	 * byte after the damage, ends 3 bytes into the next block magic.
	 */
	k = (64 << 10) - 2;
	big = malloc(len + k);
	CHECK(big != NULL);
	if (big) {
		memcpy(big, buf, b->end[2]);
		memset(big + b->end[2], 0xab, k);
		memcpy(big + b->end[2] + k, buf + b->end[2], len - b->end[2]);
		CHECK_INT(read_mem(big, len + k, res), 0);
		expect_one_error(res, want, without(want, b, 1, 0, other),
				 b->end[2], "magic across the scan window");
		tmp_path(path, sizeof(path), "damage-window.ccld");
		write_file(path, big, len + k);
		CHECK_INT(read_path(path, res), 0);
		expect_one_error(res, want, without(want, b, 1, 0, other),
				 b->end[2], "magic across the scan window (file)");
		free(big);
	}

	/* one overwritten region over blocks 3..5 */
	memcpy(copy, buf, len);
	memset(copy + b->off[3] + 20, 0xee, b->off[5] + 10 - b->off[3] - 20);
	CHECK_INT(read_mem(copy, len, res), 0);
	expect_one_error(res, other, without(want, b, 3, 5, other), b->off[3],
			 "region over blocks 3..5");

	/* the last block damaged: the error says nothing follows */
	memcpy(copy, buf, len);
	copy[b->off[b->n - 1] + 35] ^= 0x80;
	CHECK_INT(read_mem(copy, len, res), 0);
	CHECK(strstr(res->err, "no intact block after it") != NULL);
out:
	free(buf);
	free(copy);
	free(b);
	free(other);
}

/* Records with a foreign version or type in an intact block are dropped. */
static void test_bad_records(struct result *res)
{
	struct capture_header h = { .realtime_offset_ns = 0 };
	struct capture_writer *w;
	struct ccld_event ev;
	char path[256], err[256];
	uint32_t i;

	tmp_path(path, sizeof(path), "records.ccld");
	w = capture_create(path, &h, err, sizeof(err));
	CHECK(w != NULL);
	if (!w)
		return;
	for (i = 0; i < 10; i++) {
		make_event(i, &ev);
		if (i == 3)
			ev.version = CCLD_ABI_VERSION + 1;
		if (i == 6)
			ev.type = CCLD_EV_TYPE_MAX;
		if (i == 7)
			ev.fn = CCLD_FN_MAX;
		CHECK_INT(capture_write_event(w, &ev), 0);
	}
	CHECK_INT(capture_close(w), 0);
	CHECK_INT(read_path(path, res), 0);
	CHECK_INT(res->n, 7);
	CHECK_INT(res->errors, 1);
	CHECK(strstr(res->err, "3 of 10 records are invalid (first: record 3)"));
	CHECK(res->n == 7 && res->it[3].n == 4 && res->it[6].n == 9);
}

static void expect_refused(const char *path, const char *msg)
{
	struct capture_header h;
	char err[256] = "";
	struct capture_reader *r = capture_open(path, &h, err, sizeof(err));

	CHECK(r == NULL);
	capture_close_reader(r);
	if (!strstr(err, msg)) {
		fprintf(stderr, "%s: \"%s\" does not say \"%s\"\n", path, err,
			msg);
		CHECK(0);
	}
}

static void test_foreign(void)
{
	struct capture_header h = { .realtime_offset_ns = 0 };
	char path[256], err[256];
	struct capture_writer *w;
	uint8_t *buf;
	size_t len;

	if (access("/etc/passwd", R_OK) == 0)
		expect_refused("/etc/passwd", "not a ccld capture file");
	tmp_path(path, sizeof(path), "empty");
	write_file(path, "", 0);
	expect_refused(path, "empty file");
	tmp_path(path, sizeof(path), "magic-only");
	write_file(path, "CCLDCAP", 8);
	expect_refused(path, "truncated capture header (8 bytes)");
	tmp_path(path, sizeof(path), "missing");
	expect_refused(path, "No such file or directory");
	expect_refused(dir, "read error");	/* a directory */

	/* a real header with one byte changed, or a future version */
	tmp_path(path, sizeof(path), "hdr.ccld");
	w = capture_create(path, &h, err, sizeof(err));
	CHECK(w != NULL);
	if (!w)
		return;
	CHECK_INT(capture_close(w), 0);
	buf = load(path, &len);
	CHECK(buf != NULL && len == HDR_LEN);
	if (!buf)
		return;
	buf[30] ^= 1;
	write_file(path, buf, len);
	expect_refused(path, "corrupt capture header (CRC mismatch)");
	buf[30] ^= 1;
	buf[8] = 2;
	write_file(path, buf, len);
	expect_refused(path, "capture format version 2, this ccld reads version 1");
	free(buf);
}

/* Write errors: a full disk, and a file size limit hit mid-block. */
static void test_write_errors(struct result *res)
{
	struct capture_header h = { .realtime_offset_ns = 0 };
	struct capture_writer *w;
	struct rlimit old, lim;
	struct ccld_event ev;
	char path[256], err[256];
	int ret = 0;
	uint32_t i;

	if (access("/dev/full", W_OK) == 0) {
		w = capture_create("/dev/full", &h, err, sizeof(err));
		CHECK(w == NULL);
		CHECK(strstr(err, "No space left on device") != NULL);
	}
	w = capture_create("/nonexistent-dir/x.ccld", &h, err, sizeof(err));
	CHECK(w == NULL);
	CHECK(strstr(err, "cannot create /nonexistent-dir/x.ccld") != NULL);

	/* 100 KiB: the first blocks fit, a later one is cut by a short write */
	tmp_path(path, sizeof(path), "fsize.ccld");
	CHECK_INT(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 100 << 10;
	signal(SIGXFSZ, SIG_IGN);
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &lim), 0);
	w = capture_create(path, &h, err, sizeof(err));
	CHECK(w != NULL);
	for (i = 0; w && i < 5000 && !ret; i++) {
		make_event(i, &ev);
		ret = capture_write_event(w, &ev);
		if (i % 100 == 99 && !ret)
			ret = capture_flush(w);
	}
	CHECK_INT(ret, -1);
	if (w) {
		CHECK(strstr(capture_error(w), "File too large") != NULL);
		CHECK_INT(capture_write_event(w, &ev), -1);	/* sticky */
		CHECK_INT(capture_close(w), -1);
		CHECK(strstr(capture_error(w), "File too large") != NULL);
		CHECK_INT(capture_close(w), 0);
	}
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	/* what reached the disk reads back, ending in one truncation */
	CHECK_INT(read_path(path, res), 0);
	CHECK(res->n > 0 && res->n % 100 == 0);
	CHECK_INT(res->errors, 1);
	CHECK(strstr(res->err, "truncated at offset") != NULL);
}

/* A file written by tests/fuzz/gen_corpus.py straight from the spec. */
static void test_spec_file(struct result *res)
{
	const char *path = "tests/fuzz/corpus/spec-example.ccld";
	struct capture_reader *r;
	struct capture_header h;
	struct ccld_event ev;
	const char *meta;
	char err[256];

	if (access(path, R_OK)) {
		fprintf(stderr, "%s: not found (run from the top directory)\n",
			path);
		CHECK(0);
		return;
	}
	r = capture_open(path, &h, err, sizeof(err));
	CHECK(r != NULL);
	if (!r) {
		fprintf(stderr, "%s\n", err);
		return;
	}
	CHECK_STR(h.host, "spec-host");
	CHECK_STR(h.boot_id, "00112233-4455-6677-8899-aabbccddeeff");
	CHECK_INT(h.realtime_offset_ns, 1700000000123456789ll);
	CHECK_STR(h.kernel, "6.1.0-spec");
	CHECK_STR(h.ccld_version, "spec-1");
	CHECK_INT(capture_next(r, &ev, &meta), CAPTURE_META);
	CHECK_STR(meta, "host=spec-host\npid=4242 comm=train.py");
	CHECK_INT(capture_next(r, &ev, &meta), CAPTURE_EVENT);
	CHECK_INT(ev.type, CCLD_EV_CALL);
	CHECK_INT(ev.fn, CCLD_FN_ALLREDUCE);
	CHECK_INT(ev.pid, 4242);
	CHECK_INT(ev.tid, 4243);
	CHECK_INT(ev.ts_ns, 5000000000ull);
	CHECK_INT(ev.id.hash, 0x1122334455667788ull);
	CHECK_INT(ev.id.rank, 3);
	CHECK_INT(ev.id.nranks, 8);
	CHECK_INT(ev.u.call.count, 1048576);
	CHECK_INT(ev.u.call.dtype, 7);
	CHECK_INT(capture_next(r, &ev, &meta), CAPTURE_EVENT);
	CHECK_INT(ev.type, CCLD_EV_RET);
	CHECK_INT(ev.u.ret.ret, 0);
	CHECK_INT(ev.u.ret.entry_ns, 5000000000ull);
	CHECK_INT(ev.ts_ns, 5000250000ull);
	CHECK_INT(capture_next(r, &ev, &meta), CAPTURE_EVENT);
	CHECK_INT(ev.type, CCLD_EV_TICK);
	CHECK_INT(capture_next(r, &ev, &meta), CAPTURE_END);
	capture_close_reader(r);
	(void)res;
}

int main(void)
{
	struct item *want = malloc(MAX_ITEMS * sizeof(*want));
	struct result res = { .it = malloc(MAX_ITEMS * sizeof(*res.it)) };
	char cmd[300];

	if (!want || !res.it || !mkdtemp(dir)) {
		perror("test_capture setup");
		return 1;
	}
	test_header();
	test_round_trip(want, &res);
	test_truncation(want, &res);
	test_damage(want, &res);
	test_bad_records(&res);
	test_foreign();
	test_write_errors(&res);
	test_spec_file(&res);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
	free(want);
	free(res.it);
	return check_finish("test_capture");
}
