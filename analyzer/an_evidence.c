// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Evidence: the one way every rule adds to a verdict's evidence, or to a
 * located comm's (struct an_status, which its verdicts copy): the sentence
 * is appended to, cut at AN_TEXT_MAX; named values are appended, at most
 * AN_MAX_EVIDENCE (the rest are dropped, as are floats that are not
 * finite).  an_int.h's an_text() and an_val_i/f/s() take either.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "an_int.h"

_Static_assert(sizeof(((struct an_verdict *)0)->text) == AN_TEXT_MAX,
	       "a verdict's sentence is AN_TEXT_MAX bytes");
_Static_assert(sizeof(((struct an_status *)0)->text) == AN_TEXT_MAX,
	       "a status's sentence is AN_TEXT_MAX bytes");

void an_ev_text(struct an_ev e, const char *fmt, ...)
{
	size_t n = strlen(e.text);
	va_list ap;

	if (n >= AN_TEXT_MAX - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(e.text + n, AN_TEXT_MAX - n, fmt, ap);
	va_end(ap);
}

static struct an_value *next_val(struct an_ev e, const char *key)
{
	struct an_value *x;

	if (*e.nval >= AN_MAX_EVIDENCE)
		return NULL;
	x = &e.val[(*e.nval)++];
	memset(x, 0, sizeof(*x));
	x->key = key;
	return x;
}

void an_ev_i(struct an_ev e, const char *key, int64_t i)
{
	struct an_value *x = next_val(e, key);

	if (x)
		x->i = i;
}

void an_ev_f(struct an_ev e, const char *key, double f)
{
	struct an_value *x = isfinite(f) ? next_val(e, key) : NULL;

	if (x) {
		x->is_float = true;
		x->f = f;
	}
}

void an_ev_s(struct an_ev e, const char *key, const char *s)
{
	struct an_value *x = next_val(e, key);

	if (x) {
		x->is_str = true;
		snprintf(x->s, sizeof(x->s), "%s", s);
	}
}

void an_ev_clear(struct an_ev e)
{
	e.text[0] = '\0';
	*e.nval = 0;
}

void an_ev_copy(struct an_ev to, const char *text, uint32_t nval, const struct an_value *val)
{
	uint32_t i;

	an_ev_text(to, "%s", text);
	for (i = 0; i < nval && *to.nval < AN_MAX_EVIDENCE; i++)
		to.val[(*to.nval)++] = val[i];
}

bool an_ev_has(struct an_ev e, const char *key)
{
	uint32_t i;

	for (i = 0; i < *e.nval; i++)
		if (!strcmp(e.val[i].key, key))
			return true;
	return false;
}
