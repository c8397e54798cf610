/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reproducible test randomness: splitmix64, the same sequence on every machine. */
#ifndef CCLD_TEST_SPLITMIX_H
#define CCLD_TEST_SPLITMIX_H

#include <stdint.h>

/* Uniform in [0, 1); *S is the state. */
static inline double u01(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

#endif
