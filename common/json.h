/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small growable string builder for JSON lines: keys and values are
 * separated automatically, strings are escaped (RFC 8259).  The first
 * allocation failure sticks in ->err and later calls do nothing.
 */
#ifndef CCLD_JSON_H
#define CCLD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 16

struct json_buf {
	char *s;		/* NUL terminated, NULL until the first write */
	size_t len;
	size_t cap;
	int err;		/* 0 or -ENOMEM / -EINVAL (nesting) */
	int depth;
	bool first[JSON_MAX_DEPTH];
	bool after_key;
};

void json_init(struct json_buf *b);
void json_free(struct json_buf *b);
/* Empties the buffer for the next line, keeping its memory. */
void json_reset(struct json_buf *b);
/* The text so far ("" when empty). */
const char *json_str(const struct json_buf *b);

void json_raw(struct json_buf *b, const char *s, size_t n);
void json_printf(struct json_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void json_obj_open(struct json_buf *b);
void json_obj_close(struct json_buf *b);
void json_arr_open(struct json_buf *b);
void json_arr_close(struct json_buf *b);
void json_key(struct json_buf *b, const char *key);

/* values (inside an array, or after json_key) */
void json_v_str(struct json_buf *b, const char *s);
void json_v_i64(struct json_buf *b, int64_t v);
void json_v_u64(struct json_buf *b, uint64_t v);
void json_v_f(struct json_buf *b, double v);	/* %.6g, null if not finite */
void json_v_bool(struct json_buf *b, bool v);
void json_v_null(struct json_buf *b);
void json_v_hex16(struct json_buf *b, uint64_t v);	/* "%016x" string */

/* key + value */
void json_kv_str(struct json_buf *b, const char *k, const char *v);
void json_kv_i64(struct json_buf *b, const char *k, int64_t v);
void json_kv_u64(struct json_buf *b, const char *k, uint64_t v);
void json_kv_f(struct json_buf *b, const char *k, double v);
void json_kv_bool(struct json_buf *b, const char *k, bool v);
void json_kv_null(struct json_buf *b, const char *k);
void json_kv_hex16(struct json_buf *b, const char *k, uint64_t v);

/* Appends S escaped, with quotes. */
void json_escape(struct json_buf *b, const char *s);

#endif
