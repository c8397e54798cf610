// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The JSON builder, and verdict lines parsed back by a small checker. */
#include "test_an_helpers.h"

/* --- a strict RFC 8259 syntax checker (enough to parse our lines back) --- */
static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *value(const char *p);

static const char *string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				int i;

				for (i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *number(const char *p)
{
	const char *s = p;

	if (*p == '-')
		p++;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p > s ? p : NULL;
}

static const char *container(const char *p, char close, bool obj)
{
	p = ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (obj) {
			p = string(ws(p));
			if (!p || *(p = ws(p)) != ':')
				return NULL;
			p++;
		}
		p = value(p);
		if (!p)
			return NULL;
		p = ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *value(const char *p)
{
	p = ws(p);
	switch (*p) {
	case '{': return container(p, '}', true);
	case '[': return container(p, ']', false);
	case '"': return string(p);
	case 't': return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f': return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n': return strncmp(p, "null", 4) ? NULL : p + 4;
	default: return number(p);
	}
}

static bool valid_json(const char *s)
{
	const char *e = value(s);

	return e && *ws(e) == '\0';
}

static void test_builder(void)
{
	struct json_buf b;

	json_init(&b);
	json_obj_open(&b);
	json_kv_str(&b, "a", "q\"b\\s\n\t\x01");
	json_kv_i64(&b, "n", -5);
	json_key(&b, "arr");
	json_arr_open(&b);
	json_v_u64(&b, 1);
	json_v_null(&b);
	json_obj_open(&b);
	json_kv_bool(&b, "t", true);
	json_obj_close(&b);
	json_v_f(&b, 0.5);
	json_arr_close(&b);
	json_kv_hex16(&b, "h", 0xabcull);
	json_kv_f(&b, "inf", 1.0 / 0.0);
	json_obj_close(&b);
	CHECK_INT(b.err, 0);
	CHECK_STR(json_str(&b), "{\"a\":\"q\\\"b\\\\s\\n\\t\\u0001\",\"n\":-5,"
		  "\"arr\":[1,null,{\"t\":true},0.5],\"h\":\"0000000000000abc\","
		  "\"inf\":null}");
	CHECK(valid_json(json_str(&b)));
	json_reset(&b);
	CHECK_STR(json_str(&b), "");
	json_obj_close(&b);	/* unbalanced: an error, not a crash */
	CHECK(b.err != 0);
	json_free(&b);
	CHECK(!valid_json("{\"a\":1,}"));
	CHECK(!valid_json("{\"a\":\"\x01\"}"));
}

/* a real verdict: the exact line, and it parses */
static void test_verdict_line(void)
{
	struct sim s;
	struct json_buf b;
	int r, i;

	sim_init(&s, 5, 300);
	an_host(s.an, "h0");	/* idempotent */
	sim_comm(&s, 0x00c0ffee00000001ull, 3, NULL);
	for (i = 0; i < 2; i++)
		sim_round(&s, 0x00c0ffee00000001ull, CCLD_FN_ALLREDUCE, 256, 7);
	for (r = 0; r < 2; r++)
		sim_call(&s, 0x00c0ffee00000001ull, r, CCLD_FN_ALLREDUCE, 256, 7);
	sim_tick(&s, 5.25);
	CHECK_INT(s.nv, 1);
	json_init(&b);
	CHECK_INT(an_verdict_json(s.an, &s.v[0], 0, &b), 0);
	printf("%s\n", json_str(&b));
	CHECK(valid_json(json_str(&b)));
	CHECK_STR(json_str(&b),
		  "{\"type\":\"verdict\",\"schema\":1,\"class\":\"H1\","
		  "\"role\":\"root\",\"comm\":\"00c0ffee00000001\","
		  "\"comm_info\":{\"nranks\":3,\"global_ranks_unknown\":3},\"seq\":2,"
		  "\"culprits\":[{\"rank\":2,\"host\":\"h0\",\"pid\":102}],"
		  "\"detected_ns\":3605250000000,\"onset_ns\":3600000020000,"
		  "\"op\":\"AllReduce\",\"evidence\":{\"text\":\"rank 2 never "
		  "entered AllReduce seq 2 of comm 00c0ffee00000001 (last entered "
		  "seq 1, 5.2 s ago; process running); 2 of 3 ranks wait in it\","
		  "\"stalled_s\":5.24998,\"nranks\":3,\"entered\":2,"
		  "\"culprit_seq\":1,\"evidence_tiers\":\"A,B\"}}");
	/* the realtime offset moves both times */
	json_reset(&b);
	an_verdict_json(s.an, &s.v[0], 1000, &b);
	CHECK(strstr(json_str(&b), "\"detected_ns\":3605250001000") != NULL);
	json_reset(&b);
	CHECK_INT(an_verdict_text(s.an, &s.v[0], &b), 0);
	printf("%s\n", json_str(&b));
	CHECK(strstr(json_str(&b), "HANG H1") != NULL);
	CHECK(strstr(json_str(&b), "rank 2 (h0 pid 102)") != NULL);
	/* the launcher's ranks (RANK, LOCAL_RANK), where its environment had them */
	an_proc_label(s.an, s.host_id[0], 102, AN_LABEL_RANK, "5");
	an_proc_label(s.an, s.host_id[0], 102, AN_LABEL_LOCAL_RANK, "1");
	an_proc_label(s.an, s.host_id[0], 102, AN_LABEL_RANK, "5x");	/* refused */
	json_reset(&b);
	an_verdict_json(s.an, &s.v[0], 0, &b);
	CHECK(strstr(json_str(&b), "\"culprits\":[{\"rank\":2,\"global_rank\":5,"
			       "\"local_rank\":1,\"host\":\"h0\",\"pid\":102}]") != NULL);
	json_reset(&b);
	an_verdict_text(s.an, &s.v[0], &b);
	CHECK(strstr(json_str(&b), "rank 2 (global rank 5, h0 pid 102)") != NULL);
	/* the comm as its user knows it: its size and its members' global ranks */
	CHECK(strstr(json_str(&b), "root comm 00c0ffee00000001 (3 ranks: global 5, others "
		     "unknown) AllReduce seq 2") != NULL);
	an_proc_label(s.an, s.host_id[0], 100, AN_LABEL_RANK, "4");
	an_proc_label(s.an, s.host_id[0], 101, AN_LABEL_RANK, "6");
	json_reset(&b);
	an_verdict_json(s.an, &s.v[0], 0, &b);
	CHECK(strstr(json_str(&b), "\"comm_info\":{\"nranks\":3,\"global_ranks\":\"4-6\"}")
	      != NULL);
	an_proc_label(s.an, s.host_id[0], 101, AN_LABEL_RANK, "9");
	json_reset(&b);
	an_verdict_text(s.an, &s.v[0], &b);
	CHECK(strstr(json_str(&b), "(3 ranks: global 4,5,9)") != NULL);
	/* its GPU, as its comm says (CUDA device, PCI address) */
	an_proc_label(s.an, s.host_id[0], 102, AN_LABEL_GPU, "3 0000:1a:00.0");
	json_reset(&b);
	an_verdict_json(s.an, &s.v[0], 0, &b);
	CHECK(strstr(json_str(&b), "\"pid\":102,\"cuda_dev\":3,\"gpu\":\"0000:1a:00.0\"}") != NULL);
	json_reset(&b);
	an_verdict_text(s.an, &s.v[0], &b);
	CHECK(strstr(json_str(&b), "rank 2 (global rank 5, h0 pid 102, GPU 3 0000:1a:00.0)") != NULL);
	/* the name its creation call's config gave it, and its split color */
	an_comm_origin(s.an, 0x00c0ffee00000001ull, 2, "tp\"2\n");
	json_reset(&b);
	an_verdict_json(s.an, &s.v[0], 0, &b);
	CHECK(valid_json(json_str(&b)));
	CHECK(strstr(json_str(&b), "\"global_ranks\":\"4,5,9\",\"split_color\":2,"
		     "\"name\":\"tp?2?\"}") != NULL);
	json_reset(&b);
	an_verdict_text(s.an, &s.v[0], &b);
	CHECK(strstr(json_str(&b), "root comm 00c0ffee00000001 \"tp?2?\" (3 ranks: global 4,5,9, "
		     "split color 2) AllReduce seq 2") != NULL);
	/* not a split (-1), no name (""): what it had stays */
	an_comm_origin(s.an, 0x00c0ffee00000001ull, -1, "");
	json_reset(&b);
	an_verdict_text(s.an, &s.v[0], &b);
	CHECK(strstr(json_str(&b), "\"tp?2?\" (3 ranks: global 4,5,9, split color 2)") != NULL);
	/* an unknown comm: nothing made */
	an_comm_origin(s.an, 0x1234, 1, "x");
	json_free(&b);
	sim_fini(&s);
}

/* a cascade's short line: the class, its comm and round, what blocks it */
static void test_cascade_line(void)
{
	struct an_verdict v;
	struct json_buf b;
	struct sim s;

	sim_init(&s, 5, 300);
	memset(&v, 0, sizeof(v));
	v.kind = AN_V_NEW;
	v.cls = AN_H1;
	v.role = AN_CASCADE;
	v.comm = 0x00c0ffee00000002ull;
	v.seq = 7;
	v.blocked_comm = 0x00c0ffee00000001ull;
	v.blocked_seq = 2;
	json_init(&b);
	CHECK_INT(an_cascade_text(s.an, &v, &b), 0);
	CHECK_STR(json_str(&b), "cascade: H1 in comm 00c0ffee00000002 seq 7 is blocked"
		  " by comm 00c0ffee00000001 seq 2");
	json_free(&b);
	/* what ccld-trace and ccld-analyzer print: the same line, indented */
	json_init(&b);
	CHECK_INT(an_verdict_line(s.an, &v, false, 0, &b), 0);
	CHECK_STR(json_str(&b), "  cascade: H1 in comm 00c0ffee00000002 seq 7 is blocked"
		  " by comm 00c0ffee00000001 seq 2");
	json_free(&b);
	/* a root: "VERDICT " and the sentence */
	v.role = AN_ROOT;
	json_init(&b);
	CHECK_INT(an_verdict_line(s.an, &v, false, 0, &b), 0);
	CHECK(!strncmp(json_str(&b), "VERDICT HANG H1", 15));
	json_free(&b);
	json_init(&b);
	CHECK_INT(an_verdict_line(s.an, &v, true, 0, &b), 0);
	CHECK(json_str(&b)[0] == '{');
	json_free(&b);
	sim_fini(&s);
}

int main(void)
{
	test_builder();
	test_verdict_line();
	test_cascade_line();
	return check_finish("test_an_json");
}
