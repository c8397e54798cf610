// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NCCL's warnings put back together from their records (ncclwarn.h): the
 * parts of one warning, parts lost, threads interleaved, and the check that
 * a message is its format's (NCCL's NOWARN leaves an older message behind).
 */
#include <stdlib.h>
#include "check.h"
#include "ncclwarn.h"

static struct ccld_event part(uint32_t pid, uint32_t tid, uint8_t i, uint8_t n, const char *text)
{
	struct ccld_event ev = { .type = CCLD_EV_NCCL_WARN, .pid = pid, .tid = tid,
				 .ts_ns = 1000 + i };

	ev.u.warn.line = 71;
	ev.u.warn.part = i;
	ev.u.warn.nparts = n;
	memcpy(ev.u.warn.text, text, strnlen(text, CCLD_WARN_CHUNK));
	return ev;
}

/* feeds the warning FILE/FMT/MSG of (PID, TID) as BPF sends it; the last result */
static enum warn_feed feed_all(struct warn_asm *a, uint32_t pid, uint32_t tid, const char *file,
			       const char *fmt, const char *msg, struct nccl_warning *out)
{
	size_t len = strlen(msg) + 1, nmsg = (len + CCLD_WARN_CHUNK - 1) / CCLD_WARN_CHUNK, i;
	uint8_t n = (uint8_t)(2 + nmsg);
	struct ccld_event ev;
	enum warn_feed r;

	ev = part(pid, tid, 0, n, file);
	r = warn_asm_feed(a, 0, &ev, out);
	ev = part(pid, tid, 1, n, fmt);
	r = warn_asm_feed(a, 0, &ev, out);
	for (i = 0; i < nmsg; i++) {
		char chunk[CCLD_WARN_CHUNK] = { 0 };

		memcpy(chunk, msg + i * CCLD_WARN_CHUNK,
		       len - i * CCLD_WARN_CHUNK < CCLD_WARN_CHUNK ? len - i * CCLD_WARN_CHUNK :
								     CCLD_WARN_CHUNK);
		ev = part(pid, tid, (uint8_t)(2 + i), n, "");
		memcpy(ev.u.warn.text, chunk, CCLD_WARN_CHUNK);
		r = warn_asm_feed(a, 0, &ev, out);
	}
	return r;
}

static void test_format_fit(void)
{
	CHECK(warn_fits_format("%s : comm argument is NULL", false,
			       "AllReduce : comm argument is NULL", false));
	CHECK(warn_fits_format("Invalid rank requested : %d/%d", false,
			       "Invalid rank requested : 9/4", false));
	CHECK(warn_fits_format("100%% of %s", false, "100% of it", false));
	CHECK(warn_fits_format("%-8.3lf|%5zu|%%", false, "1.000   |   12|%", false));
	/* a conversion may be empty, and may hold the text that follows it */
	CHECK(warn_fits_format("a%sb", false, "ab", false));
	CHECK(warn_fits_format("a%sb", false, "abbb", false));
	/* another WARN's message: not this one's */
	CHECK(!warn_fits_format("%s : comm argument is NULL", false,
				"Cuda failure 'no CUDA-capable device is detected'", false));
	CHECK(!warn_fits_format("Invalid rank requested : %d/%d", false, "Invalid rank", false));
	/* a format cut short (its first bytes): what follows is anything */
	CHECK(warn_fits_format("NET/IB : Got completion from peer %s with status=%d", true,
			       "NET/IB : Got completion from peer 10.0.0.7<4711> with status=12 "
			       "opcode=0 len=0 vendor err 129", false));
	CHECK(!warn_fits_format("NET/IB : Got completion", true, "NET/Socket : closed", false));
	/* a message cut short: it may stop anywhere in the format */
	CHECK(warn_fits_format("%s : comm argument is NULL", false, "AllReduce : comm a", true));
	CHECK(!warn_fits_format("%s : comm argument is NULL", false, "AllReduce : comm a", false));
	/* nothing read of the format: nothing to check against */
	CHECK(warn_fits_format("", false, "anything", false));
}

static void test_assemble(void)
{
	struct warn_asm *a = calloc(1, sizeof(*a));
	const char *lng = "socketProgress: Connection closed by remote peer "
			  "node-0017.cluster.example.com<36071>, and more words after it";
	struct nccl_warning w;

	CHECK_INT(feed_all(a, 10, 11, "misc/argcheck.cc", "%s : comm argument is NULL",
			   "AllReduce : comm argument is NULL", &w), WARN_DONE);
	CHECK_STR(w.msg, "AllReduce : comm argument is NULL");
	CHECK_STR(w.file, "misc/argcheck.cc");
	CHECK_INT(w.line, 71);
	CHECK_INT(w.pid, 10);
	CHECK(!w.truncated);
	/* a message over several parts, one of exactly a chunk's length */
	CHECK_INT(feed_all(a, 10, 11, "misc/socket.cc", "socketProgress: Connection closed by remote"
			   " peer %s", lng, &w), WARN_DONE);
	CHECK_STR(w.msg, lng);
	{
		char exact[CCLD_WARN_CHUNK + 1];

		memset(exact, 'x', CCLD_WARN_CHUNK);
		exact[CCLD_WARN_CHUNK] = '\0';
		CHECK_INT(feed_all(a, 10, 11, "f.cc", "%s", exact, &w), WARN_DONE);
		CHECK_STR(w.msg, exact);
		CHECK(!w.truncated);
	}
	/* NOWARN: the buffer still holds the warning before */
	CHECK_INT(feed_all(a, 10, 11, "transport/net.cc", "Could not connect to %s",
			   "AllReduce : comm argument is NULL", &w), WARN_DROPPED);
	CHECK_INT(a->not_this_warn, 1);
	free(a);
}

static void test_lost_and_interleaved(void)
{
	struct warn_asm *a = calloc(1, sizeof(*a));
	struct nccl_warning w;
	struct ccld_event ev;

	/* two threads' parts interleaved: each warning whole */
	ev = part(1, 2, 0, 3, "a.cc");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_MORE);
	ev = part(1, 3, 0, 3, "b.cc");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_MORE);
	ev = part(1, 2, 1, 3, "one %d");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_MORE);
	ev = part(1, 3, 1, 3, "two %d");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_MORE);
	ev = part(1, 3, 2, 3, "two 2");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_DONE);
	CHECK_STR(w.msg, "two 2");
	CHECK_STR(w.file, "b.cc");
	ev = part(1, 2, 2, 3, "one 1");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_DONE);
	CHECK_STR(w.msg, "one 1");
	/* a part lost: that warning is dropped, the next one is whole */
	ev = part(1, 2, 0, 4, "a.cc");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_MORE);
	ev = part(1, 2, 2, 4, "lost the format");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_MORE);
	ev = part(1, 2, 3, 4, "");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_DROPPED);
	CHECK_INT(feed_all(a, 1, 2, "c.cc", "three", "three", &w), WARN_DONE);
	CHECK_INT(a->incomplete, 1);
	/* a first part lost: its other parts are dropped, it counts once */
	ev = part(1, 4, 1, 3, "x");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_MORE);
	ev = part(1, 4, 2, 3, "x");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_DROPPED);
	CHECK_INT(a->incomplete, 2);
	/* a malformed count */
	ev = part(1, 4, 0, 200, "x");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_DROPPED);
	ev = part(1, 4, 0, 1, "x");
	CHECK_INT(warn_asm_feed(a, 0, &ev, &w), WARN_DROPPED);
	CHECK_INT(a->incomplete, 4);
	free(a);
}

int main(void)
{
	test_format_fit();
	test_assemble();
	test_lost_and_interleaved();
	return check_finish("test_ncclwarn");
}
