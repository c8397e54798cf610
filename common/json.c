// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"

void json_init(struct json_buf *b)
{
	memset(b, 0, sizeof(*b));
	b->first[0] = true;
}

void json_free(struct json_buf *b)
{
	free(b->s);
	json_init(b);
}

void json_reset(struct json_buf *b)
{
	char *s = b->s;
	size_t cap = b->cap;

	json_init(b);
	b->s = s;
	b->cap = cap;
	if (s)
		s[0] = '\0';
}

const char *json_str(const struct json_buf *b)
{
	return b->s ? b->s : "";
}

static int reserve(struct json_buf *b, size_t n)
{
	size_t cap;
	char *s;

	if (b->err)
		return b->err;
	if (b->len + n + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	s = realloc(b->s, cap);
	if (!s)
		return b->err = -ENOMEM;
	b->s = s;
	b->cap = cap;
	return 0;
}

void json_raw(struct json_buf *b, const char *s, size_t n)
{
	if (reserve(b, n))
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void json_printf(struct json_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* a comma before every element but the first of its container */
static void sep(struct json_buf *b)
{
	if (b->after_key) {
		b->after_key = false;
		return;
	}
	if (!b->first[b->depth])
		json_raw(b, ",", 1);
	b->first[b->depth] = false;
}

static void open_(struct json_buf *b, char c)
{
	sep(b);
	if (b->depth + 1 >= JSON_MAX_DEPTH) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	json_raw(b, &c, 1);
	b->first[++b->depth] = true;
}

static void close_(struct json_buf *b, char c)
{
	if (b->depth == 0) {
		if (!b->err)
			b->err = -EINVAL;
		return;
	}
	b->depth--;
	json_raw(b, &c, 1);
}

void json_obj_open(struct json_buf *b)
{
	open_(b, '{');
}

void json_obj_close(struct json_buf *b)
{
	close_(b, '}');
}

void json_arr_open(struct json_buf *b)
{
	open_(b, '[');
}

void json_arr_close(struct json_buf *b)
{
	close_(b, ']');
}

void json_escape(struct json_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	json_raw(b, "\"", 1);
	for (; *p; p++) {
		switch (*p) {
		case '"':  json_raw(b, "\\\"", 2); break;
		case '\\': json_raw(b, "\\\\", 2); break;
		case '\n': json_raw(b, "\\n", 2); break;
		case '\r': json_raw(b, "\\r", 2); break;
		case '\t': json_raw(b, "\\t", 2); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				json_printf(b, "\\u%04x", *p);
			else
				json_raw(b, (const char *)p, 1);
		}
	}
	json_raw(b, "\"", 1);
}

void json_key(struct json_buf *b, const char *key)
{
	sep(b);
	json_escape(b, key);
	json_raw(b, ":", 1);
	b->after_key = true;
}

void json_v_str(struct json_buf *b, const char *s)
{
	sep(b);
	if (s)
		json_escape(b, s);
	else
		json_raw(b, "null", 4);
}

void json_v_i64(struct json_buf *b, int64_t v)
{
	sep(b);
	json_printf(b, "%" PRId64, v);
}

void json_v_u64(struct json_buf *b, uint64_t v)
{
	sep(b);
	json_printf(b, "%" PRIu64, v);
}

void json_v_f(struct json_buf *b, double v)
{
	sep(b);
	if (isfinite(v))
		json_printf(b, "%.6g", v);
	else
		json_raw(b, "null", 4);
}

void json_v_bool(struct json_buf *b, bool v)
{
	sep(b);
	json_printf(b, "%s", v ? "true" : "false");
}

void json_v_null(struct json_buf *b)
{
	sep(b);
	json_raw(b, "null", 4);
}

void json_v_hex16(struct json_buf *b, uint64_t v)
{
	sep(b);
	json_printf(b, "\"%016" PRIx64 "\"", v);
}

void json_kv_str(struct json_buf *b, const char *k, const char *v)
{
	json_key(b, k);
	json_v_str(b, v);
}

void json_kv_i64(struct json_buf *b, const char *k, int64_t v)
{
	json_key(b, k);
	json_v_i64(b, v);
}

void json_kv_u64(struct json_buf *b, const char *k, uint64_t v)
{
	json_key(b, k);
	json_v_u64(b, v);
}

void json_kv_f(struct json_buf *b, const char *k, double v)
{
	json_key(b, k);
	json_v_f(b, v);
}

void json_kv_bool(struct json_buf *b, const char *k, bool v)
{
	json_key(b, k);
	json_v_bool(b, v);
}

void json_kv_null(struct json_buf *b, const char *k)
{
	json_key(b, k);
	json_v_null(b);
}

void json_kv_hex16(struct json_buf *b, const char *k, uint64_t v)
{
	json_key(b, k);
	json_v_hex16(b, v);
}
