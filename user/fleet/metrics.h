/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Prometheus metrics: a small registry of counter and gauge families with
 * labelled samples, rendered in the text exposition format 0.0.4 and
 * served on GET /metrics by libmicrohttpd (its own thread).  All calls are
 * thread safe (one mutex per registry).  docs/fleet.md lists the endpoint.
 *
 *   struct metrics *m = metrics_new();
 *   metrics_declare(m, "ccld_collectives_total", METRIC_COUNTER,
 *                   "Collectives seen per communicator and rank.");
 *   metrics_add_l(m, "ccld_collectives_total", 1,
 *                 (const char *[]){ "comm", hash, "rank", "3", NULL });
 *   metrics_start(m, "127.0.0.1:9464", err, sizeof(err));
 *   ...
 *   metrics_free(m);
 *
 * A family is declared once (name, type, help) before its samples; its
 * samples are told apart by their label sets.  The output lists families
 * in declaration order, each with "# HELP" and "# TYPE" once, then its
 * samples in the order they were created.
 */
#ifndef CCLD_METRICS_H
#define CCLD_METRICS_H

#include <stddef.h>

enum metric_type { METRIC_COUNTER, METRIC_GAUGE };

struct metrics;

/* An empty registry, or NULL (out of memory). */
struct metrics *metrics_new(void);
/* Stops the server if it runs and frees everything. */
void metrics_free(struct metrics *m);

/*
 * Declares family NAME ([a-zA-Z_:][a-zA-Z0-9_:]*) with its type and help
 * text (any text; backslashes and newlines are escaped on output).
 * Declaring it again with the same type updates the help text.
 * 0, or -1 with errno EINVAL (bad name, other type) or ENOMEM.
 */
int metrics_declare(struct metrics *m, const char *name,
		    enum metric_type type, const char *help);

/* Declares N families from a table; 0, or -1 with ERR naming the one that failed. */
struct metric_family {
	const char *name;
	enum metric_type type;
	const char *help;
};
int metrics_declare_all(struct metrics *m, const struct metric_family *f, size_t n,
			char *err, size_t errlen);

/*
 * Sets (metrics_set) or increases (metrics_add) the sample of family NAME
 * with label set LABELS, creating it at 0 first if needed.  LABELS is in
 * the exposition syntax without braces, values already escaped:
 * `comm="0badc0ffee",rank="3"`, or NULL/"" for no labels; it is checked
 * (label names, quoting, escapes, no repeated names).  0, or -1 with errno
 * ENOENT (family not declared), EINVAL (bad labels; a negative increase of
 * a counter) or ENOMEM.
 */
int metrics_set(struct metrics *m, const char *name, const char *labels,
		double value);
int metrics_add(struct metrics *m, const char *name, const char *labels,
		double delta);
/*
 * The same with raw label values: KV is a NULL-terminated array of name,
 * value pairs ({"comm", hash, "rank", "3", NULL}); values may hold any
 * byte but NUL and are escaped here.  NULL KV: no labels.
 */
int metrics_set_l(struct metrics *m, const char *name, double value,
		  const char *const *kv);
int metrics_add_l(struct metrics *m, const char *name, double delta,
		  const char *const *kv);
/* Removes one sample (e.g. of a communicator that is gone): 0, or -1
 * (ENOENT: no such sample). */
int metrics_del(struct metrics *m, const char *name, const char *labels);

/*
 * The whole registry as exposition text: a malloc'ed NUL-terminated
 * string (*LEN bytes, without the NUL), or NULL (ENOMEM).
 */
char *metrics_render(struct metrics *m, size_t *len);

/*
 * Serves GET /metrics (404 elsewhere, 405 for other methods) on ADDR:
 * "HOST:PORT", ":PORT" (all addresses), "[V6ADDR]:PORT" or "PORT"; port 0
 * picks a free one (metrics_port tells which).  0, or -1 with ERR saying
 * what failed ("metrics: cannot listen on ADDR: why").
 */
int metrics_start(struct metrics *m, const char *addr, char *err,
		  size_t errlen);
/* The port served, 0 when not started. */
int metrics_port(struct metrics *m);
/* Stops serving (in-flight requests complete first).  Safe if stopped. */
void metrics_stop(struct metrics *m);

#endif
