// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Prometheus registry rendered to text (no server): the exact output,
 * then every line checked against the exposition format 0.0.4 rules, label
 * escaping of '"', '\' and newline, and the inputs the registry refuses.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include "check.h"
#include "metrics.h"

static bool is_name_char(char c, bool first, bool metric)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return true;
	if (metric && c == ':')
		return true;
	return !first && c >= '0' && c <= '9';
}

/* Length of the metric or label name at S, 0 if none. */
static size_t name_len(const char *s, bool metric)
{
	size_t n = 0;

	while (s[n] && is_name_char(s[n], n == 0, metric))
		n++;
	return n;
}

static bool value_ok(const char *s)
{
	char *end;

	if (!strcmp(s, "+Inf") || !strcmp(s, "-Inf") || !strcmp(s, "NaN"))
		return true;
	if (!*s || strchr(s, 'i') || strchr(s, 'I') || strchr(s, 'n') ||
	    strchr(s, 'N') || strchr(s, 'x') || strchr(s, 'X'))
		return false;	/* no "inf"/"nan"/hex spellings */
	strtod(s, &end);
	return *end == '\0';
}

/* Label set "{...}" at *P: checks syntax and escapes, advances *P. */
static bool labels_ok(const char **p)
{
	const char *s = *p + 1;
	char names[32][64];
	int n = 0, i;

	while (*s != '}') {
		size_t l = name_len(s, false);

		if (!l || l >= 64 || s[l] != '=' || s[l + 1] != '"' || n == 32)
			return false;
		memcpy(names[n], s, l);
		names[n][l] = '\0';
		for (i = 0; i < n; i++)
			if (!strcmp(names[i], names[n]))
				return false;
		n++;
		s += l + 2;
		while (*s != '"') {
			if (!*s || *s == '\n')
				return false;
			if (*s == '\\') {
				if (s[1] != '\\' && s[1] != '"' && s[1] != 'n')
					return false;
				s++;
			}
			s++;
		}
		s++;
		if (*s == ',')
			s++;
		else if (*s != '}')
			return false;
	}
	*p = s + 1;
	return true;
}

/*
 * Every line of TEXT against the format; returns the number of samples or
 * -1 at the first violation (printed if LOUD).
 */
static int check_exposition(const char *text, bool loud)
{
	char fam[16][128], cur[128] = "";
	bool help[16] = { false }, type[16] = { false };
	int nfam = 0, samples = 0, lineno = 0, f = -1, i;
	const char *line = text;

	if (*text && text[strlen(text) - 1] != '\n') {
		if (loud)
			fprintf(stderr, "text does not end with a newline\n");
		return -1;
	}
	while (*line) {
		const char *nl = strchr(line, '\n'), *p;
		char buf[512];
		size_t len = nl - line, l;

		lineno++;
		if (len >= sizeof(buf))
			goto bad;
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = nl + 1;
		p = buf;
		if (!strncmp(p, "# HELP ", 7) || !strncmp(p, "# TYPE ", 7)) {
			bool is_help = p[2] == 'H';

			p += 7;
			l = name_len(p, true);
			if (!l || p[l] != ' ' || l >= sizeof(cur))
				goto bad;
			memcpy(cur, p, l);
			cur[l] = '\0';
			for (f = 0; f < nfam && strcmp(fam[f], cur); f++)
				;
			if (f == nfam) {
				if (nfam == 16)
					goto bad;
				strcpy(fam[nfam++], cur);
			} else if (f != nfam - 1) {
				goto bad;	/* family not contiguous */
			}
			if (is_help) {
				if (help[f])
					goto bad;
				help[f] = true;
				for (p += l + 1; *p; p++)
					if (*p == '\\' && p[1] != '\\' && p[1] != 'n')
						goto bad;
					else if (*p == '\\')
						p++;
			} else {
				if (type[f])
					goto bad;
				type[f] = true;
				p += l + 1;
				if (strcmp(p, "counter") && strcmp(p, "gauge"))
					goto bad;
			}
			continue;
		}
		if (*p == '#')
			goto bad;	/* no other comments expected here */
		l = name_len(p, true);
		/* a sample of the family just announced, after its TYPE */
		if (!l || f < 0 || strlen(fam[f]) != l || strncmp(p, fam[f], l) ||
		    !type[f] || !help[f])
			goto bad;
		p += l;
		if (*p == '{' && !labels_ok(&p))
			goto bad;
		if (*p != ' ' || !value_ok(p + 1))
			goto bad;
		samples++;
	}
	for (i = 0; i < nfam; i++)
		if (!help[i] || !type[i])
			return -1;
	return samples;
bad:
	if (loud)
		fprintf(stderr, "line %d breaks the exposition format\n", lineno);
	return -1;
}

static const char expected[] =
	"# HELP ccld_collectives_total Collectives seen.\\nPer comm \\\\ rank.\n"
	"# TYPE ccld_collectives_total counter\n"
	"ccld_collectives_total{comm=\"a\\\"b\\\\c\\nd\",rank=\"3\"} 7\n"
	"ccld_collectives_total{comm=\"0badc0ffee\",rank=\"0\"} 1\n"
	"# HELP ccld_lag_records Records not yet read.\n"
	"# TYPE ccld_lag_records gauge\n"
	"ccld_lag_records 1.5\n"
	"ccld_lag_records{shard=\"1\"} 0.1\n"
	"ccld_lag_records{shard=\"2\"} +Inf\n"
	"ccld_lag_records{shard=\"3\"} -Inf\n"
	"ccld_lag_records{shard=\"4\"} NaN\n"
	"ccld_lag_records{shard=\"5\"} 1e+20\n"
	"ccld_lag_records{shard=\"6\"} 123456789012\n"
	"ccld_lag_records{shard=\"7\"} -2.5e-07\n"
	"# HELP ccld_empty A family without samples.\n"
	"# TYPE ccld_empty gauge\n";

int main(void)
{
	struct metrics *m = metrics_new();
	const char *bad_labels[] = {
		"rank=3", "rank=\"3", "rank=\"a\\q\"", "a=\"1\",a=\"2\"",
		"__x=\"1\"", "a=\"1\",", "a=\"x\ny\"", "9a=\"1\"", "a-b=\"1\"",
		"a=\"1\" ", ",a=\"1\"", "a =\"1\"",
	};
	char *text, *again;
	size_t len, i;

	CHECK(m != NULL);
	if (!m)
		return check_finish("test_metrics_format");

	text = metrics_render(m, &len);
	CHECK(text && len == 0 && !strcmp(text, ""));
	free(text);

	CHECK_INT(metrics_declare(m, "ccld_collectives_total", METRIC_COUNTER,
				  "Collectives seen.\nPer comm \\ rank."), 0);
	CHECK_INT(metrics_declare(m, "ccld_lag_records", METRIC_GAUGE,
				  "Records not yet read."), 0);
	CHECK_INT(metrics_declare(m, "ccld_empty", METRIC_GAUGE,
				  "A family without samples."), 0);

	/* raw values with '"', '\' and a newline are escaped on output */
	CHECK_INT(metrics_add_l(m, "ccld_collectives_total", 5,
				(const char *[]){ "rank", "3", "comm", "a\"b\\c\nd",
						  NULL }), 0);
	/* the same sample in exposition syntax, other label order */
	CHECK_INT(metrics_add(m, "ccld_collectives_total",
			      "rank=\"3\",comm=\"a\\\"b\\\\c\\nd\"", 2), 0);
	CHECK_INT(metrics_set(m, "ccld_collectives_total",
			      "comm=\"0badc0ffee\",rank=\"0\"", 1), 0);
	CHECK_INT(metrics_set(m, "ccld_lag_records", NULL, 1.5), 0);
	CHECK_INT(metrics_set(m, "ccld_lag_records", "shard=\"1\"", 0.1), 0);
	CHECK_INT(metrics_set(m, "ccld_lag_records", "shard=\"2\"", INFINITY), 0);
	CHECK_INT(metrics_set(m, "ccld_lag_records", "shard=\"3\"", -INFINITY), 0);
	CHECK_INT(metrics_set(m, "ccld_lag_records", "shard=\"4\"", NAN), 0);
	CHECK_INT(metrics_set(m, "ccld_lag_records", "shard=\"5\"", 1e20), 0);
	CHECK_INT(metrics_set(m, "ccld_lag_records", "shard=\"6\"", 123456789012.0), 0);
	CHECK_INT(metrics_set_l(m, "ccld_lag_records", -2.5e-7,
				(const char *[]){ "shard", "7", NULL }), 0);
	/* a sample that goes away */
	CHECK_INT(metrics_set(m, "ccld_lag_records", "shard=\"9\"", 9), 0);
	CHECK_INT(metrics_del(m, "ccld_lag_records", "shard=\"9\""), 0);
	CHECK_INT(metrics_del(m, "ccld_lag_records", "shard=\"9\""), -1);
	CHECK_INT(errno, ENOENT);

	text = metrics_render(m, &len);
	CHECK(text != NULL);
	if (text) {
		CHECK_INT(len, strlen(text));
		CHECK_STR(text, expected);
		CHECK_INT(check_exposition(text, true), 10);
	}
	CHECK_INT(check_exposition(expected, true), 10);
	/* the checker itself rejects what it must */
	CHECK_INT(check_exposition("x 1\n", false), -1);
	CHECK_INT(check_exposition("# TYPE x gauge\n# HELP x h\nx{a=\"\\q\"} 1\n", false), -1);
	CHECK_INT(check_exposition("# TYPE x gauge\n# HELP x h\nx inf\n", false), -1);
	CHECK_INT(check_exposition("# TYPE x gauge\n# HELP x h\nx 1", false), -1);

	/* refused inputs leave the registry as it was */
	CHECK_INT(metrics_declare(m, "9abc", METRIC_GAUGE, "x"), -1);
	CHECK_INT(errno, EINVAL);
	CHECK_INT(metrics_declare(m, "a-b", METRIC_GAUGE, "x"), -1);
	CHECK_INT(metrics_declare(m, "", METRIC_GAUGE, "x"), -1);
	CHECK_INT(metrics_declare(m, "ccld_lag_records", METRIC_COUNTER, "x"), -1);
	CHECK_INT(errno, EINVAL);
	CHECK_INT(metrics_set(m, "ccld_unknown", NULL, 1), -1);
	CHECK_INT(errno, ENOENT);
	CHECK_INT(metrics_add(m, "ccld_collectives_total", NULL, -1), -1);
	CHECK_INT(errno, EINVAL);
	for (i = 0; i < sizeof(bad_labels) / sizeof(bad_labels[0]); i++) {
		errno = 0;
		CHECK_INT(metrics_set(m, "ccld_lag_records", bad_labels[i], 1), -1);
		CHECK_INT(errno, EINVAL);
	}
	CHECK_INT(metrics_set_l(m, "ccld_lag_records", 1,
				(const char *[]){ "bad-name", "1", NULL }), -1);
	CHECK_INT(metrics_set_l(m, "ccld_lag_records", 1,
				(const char *[]){ "odd", NULL }), -1);
	again = metrics_render(m, &len);
	CHECK(again && text && !strcmp(again, text));
	free(again);
	free(text);

	/* a gauge may go down; a counter only by set */
	CHECK_INT(metrics_add(m, "ccld_lag_records", NULL, -0.5), 0);
	CHECK_INT(metrics_declare(m, "ccld_lag_records", METRIC_GAUGE, "New help."), 0);
	text = metrics_render(m, &len);
	CHECK(text && strstr(text, "\nccld_lag_records 1\n"));
	CHECK(text && strstr(text, "# HELP ccld_lag_records New help.\n"));
	CHECK(text && check_exposition(text, true) == 10);
	free(text);

	CHECK_INT(metrics_port(m), 0);
	metrics_stop(m);	/* not started: harmless */
	metrics_free(m);
	return check_finish("test_metrics_format");
}
