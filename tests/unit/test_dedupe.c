// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Exactly-once filter of the fleet analyzer (user/fleet/dedupe.c). */
#include "check.h"
#include "dedupe.h"

static bool first(struct dedupe *d, const char *node, uint64_t inst, uint64_t seq)
{
	int err;
	bool ok = dedupe_first(d, node, inst, seq, &err);

	CHECK_INT(err, 0);
	return ok;
}

/* in order, then the same again (a redelivery): all refused */
static void test_redelivery(void)
{
	struct dedupe d;
	uint64_t s;
	int n = 0;

	dedupe_init(&d);
	for (s = 1; s <= 1000; s++)
		n += first(&d, "a", 7, s);
	CHECK_INT(n, 1000);
	for (s = 1; s <= 1000; s++)
		n -= !first(&d, "a", 7, s);
	CHECK_INT(n, 0);
	CHECK_INT(d.dups, 1000);
	CHECK_INT(d.gaps, 0);
	dedupe_free(&d);
}

/* out of order within the window; other producers are independent */
static void test_reorder_and_producers(void)
{
	struct dedupe d;
	uint64_t s;

	dedupe_init(&d);
	for (s = 2; s <= 400; s += 2)
		CHECK(first(&d, "a", 1, s));
	for (s = 1; s <= 400; s += 2)
		CHECK(first(&d, "a", 1, s));
	CHECK(!first(&d, "a", 1, 17));
	CHECK(first(&d, "a", 2, 17));		/* a restarted producer */
	CHECK(first(&d, "b", 1, 17));		/* another node */
	CHECK(first(&d, "ab", 1, 17));
	CHECK_INT(d.dups, 1);
	dedupe_free(&d);
}

/* a jump beyond the window: the skipped seqs are counted as gaps */
static void test_gap(void)
{
	struct dedupe d;

	dedupe_init(&d);
	CHECK(first(&d, "a", 1, 1));
	CHECK(first(&d, "a", 1, 3 + DEDUPE_WINDOW));
	CHECK_INT(d.gaps, 2);			/* seqs 2 and 3 */
	CHECK(!first(&d, "a", 1, 2));
	CHECK(!first(&d, "a", 1, 3));
	CHECK(first(&d, "a", 1, 4 + DEDUPE_WINDOW));
	CHECK(!first(&d, "a", 1, 3 + DEDUPE_WINDOW));
	dedupe_free(&d);
}

int main(void)
{
	test_redelivery();
	test_reorder_and_producers();
	test_gap();
	return check_finish("test_dedupe");
}
