/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Minimal unit-test helpers (no framework dependency): CHECK* record a
 * failure and go on, the test's main returns check_finish().  Built with
 * ASan and UBSan by the Makefile.
 */
#ifndef CCLD_CHECK_H
#define CCLD_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond) do {						\
	check_count++;							\
	if (!(cond)) {							\
		check_failures++;					\
		fprintf(stderr, "%s:%d: CHECK(%s) failed\n",		\
			__FILE__, __LINE__, #cond);			\
	}								\
} while (0)

#define CHECK_INT(a, b) do {						\
	long long _a = (long long)(a), _b = (long long)(b);		\
	check_count++;							\
	if (_a != _b) {							\
		check_failures++;					\
		fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n",\
			__FILE__, __LINE__, #a, _a, #b, _b);		\
	}								\
} while (0)

#define CHECK_STR(a, b) do {						\
	const char *_a = (a), *_b = (b);				\
	check_count++;							\
	if (!_a || !_b || strcmp(_a, _b) != 0) {			\
		check_failures++;					\
		fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",\
			__FILE__, __LINE__, #a, _a ? _a : "(null)",	\
			_b ? _b : "(null)");				\
	}								\
} while (0)

static inline int check_finish(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
