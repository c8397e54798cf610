// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-trace probe-check: reads a library the way attach does (symbols,
 * build-id, DWARF layouts) and says which hooks and struct fields resolve
 * and what that turns on or off.  Needs no privileges and no process.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cmd.h"
#include "dwarf_layout.h"
#include "elfsym.h"
#include "hooks.h"
#include "layout_table.h"
#include "nccl_fns.h"
#include "output.h"
#include "probe_check_rdma.h"

#define MAX_FEATURES	64

static const char usage[] =
"Usage: ccld-trace probe-check [--json] LIBRARY\n"
"\n"
"Check an NCCL library (libnccl.so*, or a library NCCL is linked into):\n"
"NCCL version, build-id, each hook symbol ccld attaches to, each struct\n"
"field read from its DWARF (or separate debuginfo, or ccld's table for its\n"
"NCCL version), and the features that turns on or off.\n"
"\n"
"  -j, --json   one JSON object (\"type\":\"probe_check\")\n"
"  -h, --help   this text\n"
"\n"
"Exit status: 0 every required tier A hook resolves, 1 some do not (or\n"
"LIBRARY cannot be read), 2 bad usage.\n";

struct feature {
	const char *name;
	bool on;
	char detail[512];
};

struct check {
	const char *path;
	struct elf_syms *es;
	struct nccl_layouts l;
	bool dwarf_error;
	char dwarf_err[256];
	double dwarf_s;
	long *offs;		/* per nccl_hooks[] row, -1 missing */
	const char **syms;	/* per row: the symbol found (mangled for C++) */
	struct progress_fn progress[MAX_PROGRESS_FNS];
	int nprogress;
	int req_missing;
	struct feature feat[MAX_FEATURES];
	int nfeat;
	struct rdma_plan rdma;	/* this kernel's RDMA verbs functions (tier D) */
};

static const char *const transport_feature_names[NCCL_TR_MAX] = {
	[NCCL_TR_NET] = "tier C on the NET transport",
	[NCCL_TR_COLLNET] = "tier C on the COLLNET transport",
	[NCCL_TR_P2P] = "tier C on the P2P transport",
	[NCCL_TR_SHM] = "tier C on the SHM transport",
	[NCCL_TR_NVLS] = "tier C on the NVLS transport",
};

static struct feature *add_feature(struct check *c, const char *name, bool on)
{
	struct feature *f = &c->feat[c->nfeat < MAX_FEATURES ? c->nfeat++ :
				     MAX_FEATURES - 1];

	f->name = name;
	f->on = on;
	f->detail[0] = '\0';
	return f;
}

/* NCCL's warnings: ncclDebugLog hooked, ncclLastError read (attach.c) */
static void warn_feature(struct check *c)
{
	unsigned long vaddr, size;
	bool fn = false, buf;
	struct feature *f;
	int i;

	for (i = 0; i < nccl_hooks_n; i++)
		if (nccl_hooks[i].tier == HOOK_TIER_W && c->offs[i] >= 0)
			fn = true;
	buf = elfsym_object(c->es, "ncclLastError", &vaddr, &size) && size >= 2;
	f = add_feature(c, "NCCL's warnings (WARN, whatever NCCL_DEBUG says)", fn && buf);
	if (!fn || !buf)
		snprintf(f->detail, sizeof(f->detail), "no %s",
			 !fn ? "ncclDebugLog" : "ncclLastError");
}

static long hook_off(const struct check *c, const char *symbol)
{
	int i;

	for (i = 0; i < nccl_hooks_n; i++) {
		if (strcmp(nccl_hooks[i].symbol, symbol) == 0)
			return c->offs[i];
	}
	return -1;
}

/* appends ", NAME" (or "NAME") to BUF */
static void list_add(char *buf, size_t len, const char *name)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "%s%s", n ? ", " : "", name);
}

static void missing_fields(const struct nccl_layouts *l, const char *strct,
			   const char *const *names, char *buf, size_t len)
{
	int i, j;

	buf[0] = '\0';
	for (i = 0; names[i]; i++) {
		for (j = 0; j < layout_fields_n; j++) {
			const struct layout_field *f = &layout_fields[j];

			if (strcmp(f->struct_name, strct) == 0 &&
			    strcmp(f->member, names[i]) == 0 &&
			    layout_field_get(l, f) < 0)
				list_add(buf, len, names[i]);
		}
	}
}

static const char fallback_msg[] =
	"falls back to init-argument capture; attach after init cannot "
	"identify communicators";

static bool has_layout(const struct check *c)
{
	return c->l.source != LAYOUT_NONE;
}

/* why a layout-dependent feature is off, or how it is on */
static void layout_note(const struct check *c, struct feature *f, const char *what)
{
	if (!has_layout(c))
		snprintf(f->detail, sizeof(f->detail), "no DWARF, no table entry");
	else if (!f->on)
		snprintf(f->detail, sizeof(f->detail), "%s", what);
	else if (c->l.source == LAYOUT_TABLE)
		snprintf(f->detail, sizeof(f->detail), "ccld's table for NCCL %.40s: once a "
			 "live communicator confirms it at attach", c->l.origin);
}

static struct feature *dwarf_feature(struct check *c, const char *name,
				     const char *const *fields)
{
	char miss[200], what[sizeof(miss) + 16];
	struct feature *f;

	missing_fields(&c->l, "ncclComm", fields, miss, sizeof(miss));
	f = add_feature(c, name, c->l.comm.valid && !miss[0]);
	if (!c->l.comm.valid)
		snprintf(what, sizeof(what), "no struct ncclComm in the DWARF");
	else
		snprintf(what, sizeof(what), "missing %s", miss);
	layout_note(c, f, what);
	return f;
}

/* bit 0: a send progress function of T is known, bit 1: a recv one */
static int transport_dirs(const struct check *c, enum nccl_transport t)
{
	int i, m = 0;

	for (i = 0; i < c->nprogress; i++)
		if (c->progress[i].transport == t)
			m |= c->progress[i].dir == PROGRESS_SEND ? 1 :
			     c->progress[i].dir == PROGRESS_RECV ? 2 : 0;
	return m;
}

/* what tier C sees of each transport, one feature line per transport */
static void transport_features(struct check *c, bool hooks_on)
{
	static const enum nccl_transport order[] = {
		NCCL_TR_NET, NCCL_TR_COLLNET, NCCL_TR_P2P, NCCL_TR_SHM, NCCL_TR_NVLS,
	};
	size_t i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		enum nccl_transport t = order[i];
		int m = transport_dirs(c, t);
		struct feature *f;
		const char *how = nccl_transport_proxied(t) ? "" :
			t == NCCL_TR_NVLS ? "; NCCL runs no proxy op on it" :
			"; NCCL's proxy runs only in its copy-engine mode, "
			"otherwise tiers A/B only";

		/* NCCL's P2P receiver has no progress function: any one counts */
		f = add_feature(c, nccl_transport_name(t), hooks_on && m);
		f->name = transport_feature_names[t];
		snprintf(f->detail, sizeof(f->detail), "%s progress function%s%s",
			 m == 3 ? "send and recv" : m == 1 ? "send only" :
			 m == 2 ? "recv only" : "no",
			 m == 1 || m == 2 ? "" : "s", how);
	}
}

static void proxy_feature(struct check *c, const char *name,
			  const char *const *syms)
{
	char miss[200] = "";
	struct feature *f;
	int i;

	for (i = 0; syms[i]; i++) {
		if (hook_off(c, syms[i]) < 0)
			list_add(miss, sizeof(miss), syms[i]);
	}
	f = add_feature(c, name, c->l.proxy.valid && !miss[0] &&
			transport_dirs(c, NCCL_TR_NET) == 3);
	if (miss[0])
		snprintf(f->detail, sizeof(f->detail), "no %s", miss);
	else if (transport_dirs(c, NCCL_TR_NET) != 3)
		snprintf(f->detail, sizeof(f->detail), "no send and recv progress "
			 "function of the NET transport: records would have no direction");
	else
		layout_note(c, f, "no ncclProxyArgs/ncclProxySubArgs layout in the DWARF");
}

static void compute_features(struct check *c)
{
	static const char *const ident[] = { "commHash", "rank", "nRanks", NULL };
	static const char *const magic[] = { "startMagic", "endMagic", NULL };
	static const char *const seq[] = { "seqNumber", NULL };
	static const char *const dev[] = { "cudaDev", "busId", NULL };
	static const char *const op_hooks[] = {
		"ncclProfilerStartProxyOpEvent", "ncclProfilerStopProxyOpEvent",
		NULL,
	};
	static const char *const step_hooks[] = {
		"ncclProfilerStartSendProxyStepEvent",
		"ncclProfilerStartRecvProxyStepEvent",
		"ncclProfilerRecordProxyStepEventState",
		"ncclProfilerStopProxyStepEvent", NULL,
	};
	char miss[256] = "";
	struct feature *f;
	int i;

	for (i = 0; i < nccl_hooks_n; i++) {
		if (nccl_hooks[i].tier == HOOK_TIER_A && nccl_hooks[i].required &&
		    c->offs[i] < 0)
			list_add(miss, sizeof(miss), nccl_hooks[i].symbol);
	}
	f = add_feature(c, "NCCL API calls (tier A)", !miss[0]);
	if (miss[0])
		snprintf(f->detail, sizeof(f->detail), "missing required %s",
			 miss);
	for (i = 0; i < nccl_hooks_n; i++) {
		const struct hook_def *h = &nccl_hooks[i];

		if (h->tier != HOOK_TIER_A || h->required || c->offs[i] >= 0)
			continue;
		f = add_feature(c, h->feature, false);
		snprintf(f->detail, sizeof(f->detail), "no %s", h->symbol);
	}

	warn_feature(c);
	dwarf_feature(c, "identity from memory (commHash/rank/nRanks)", ident);
	if (!has_layout(c) || !c->l.comm.valid || c->l.source == LAYOUT_TABLE) {
		f = add_feature(c, "identity from init arguments", true);
		snprintf(f->detail, sizeof(f->detail), "%s: %s",
			 c->l.source == LAYOUT_TABLE ? "until a live communicator "
			 "confirms the table entry, or if it does not fit" :
			 has_layout(c) ? "no ncclComm layout" : "without DWARF",
			 fallback_msg);
	}
	f = dwarf_feature(c, "comm pointer check (startMagic/endMagic)", magic);
	if (!f->on && c->l.comm.valid && c->l.comm.comm_hash >= 0)
		snprintf(f->detail, sizeof(f->detail),
			 "fields read unchecked (pre-2.21 layout)");
	f = dwarf_feature(c, "NCCL sequence numbers (seqNumber[])", seq);
	if (f->on)
		snprintf(f->detail, sizeof(f->detail), "%u elements summed",
			 c->l.comm.seq_number_n);
	else
		list_add(f->detail, sizeof(f->detail),
			 "ccld counts its own sequence numbers");
	dwarf_feature(c, "device of each rank (cudaDev/busId)", dev);
	proxy_feature(c, "proxy progress (tier C)", op_hooks);
	proxy_feature(c, "proxy step progress (tier C)", step_hooks);
	transport_features(c, c->feat[c->nfeat - 2].on);
	f = add_feature(c, "RDMA verbs control path (tier D, this kernel)",
			c->rdma.usable > 0);
	pc_rdma_verdict(&c->rdma, f->detail, sizeof(f->detail));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *dir_name(enum progress_dir d)
{
	return d == PROGRESS_SEND ? "send" : d == PROGRESS_RECV ? "recv" : "-";
}

static const char *hook_status(const struct check *c, int i)
{
	if (c->offs[i] >= 0)
		return "found";
	return nccl_hooks[i].required ? "MISSING (required)" : "missing";
}

static void print_text(const struct check *c)
{
	const char *version = elfsym_nccl_version(c->es);
	const char *bid = elfsym_build_id(c->es);
	const char *last = "";
	int i;

	printf("library     %s\n", c->path);
	printf("NCCL        %s\n", version[0] ? version : "unknown (no \"NCCL version\" string)");
	printf("build-id    %s\n", bid[0] ? bid : "none");
	printf("NCCL API    %s\n", elfsym_defines_nccl(c->es) ?
	       "defined here" : "not defined here");
	if (c->dwarf_error)
		printf("DWARF       unreadable: %s\n", c->dwarf_err);
	else if (c->l.source != LAYOUT_DWARF && c->l.source != LAYOUT_DEBUGINFO)
		printf("DWARF       none (nor separate debuginfo for build-id %s)\n",
		       bid[0] ? bid : "none");
	else if (c->l.from_cache)
		printf("DWARF       yes (layout from the build-id cache)\n");
	else
		printf("DWARF       yes (read in %.2f s)\n", c->dwarf_s);
	if (c->l.source == LAYOUT_DEBUGINFO)
		printf("layout      debuginfo %s\n", c->l.origin);
	else if (c->l.source == LAYOUT_TABLE)
		printf("layout      table: ccld's entry for NCCL %s, used once a live "
		       "communicator confirms it at attach\n", c->l.origin);
	else if (c->l.source == LAYOUT_NONE)
		printf("layout      none: identity from init arguments only\n");
	else
		printf("layout      dwarf\n");

	printf("\ntier  %-38s %10s  %s\n", "hook symbol", "offset", "status");
	for (i = 0; i < nccl_hooks_n; i++) {
		const struct hook_def *h = &nccl_hooks[i];
		char off[24] = "-";

		if (c->offs[i] >= 0)
			snprintf(off, sizeof(off), "0x%lx", c->offs[i]);
		printf("  %c   %-38s %10s  %s", h->tier, h->symbol, off,
		       hook_status(c, i));
		if (c->offs[i] >= 0 && strcmp(c->syms[i], h->symbol) != 0)
			printf(" as %s", c->syms[i]);
		else if (c->offs[i] < 0 && h->params)
			printf(" (with parameters %s)", h->params);
		printf("\n");
	}

	printf("\nproxy progress functions (transport, direction, symbol)\n");
	for (i = 0; i < c->nprogress; i++)
		printf("  %-8s %-4s 0x%-8lx %s\n", nccl_transport_name(c->progress[i].transport),
		       dir_name(c->progress[i].dir), c->progress[i].off,
		       c->progress[i].symbol);
	if (!c->nprogress)
		printf("  none\n");

	for (i = 0; i < layout_fields_n; i++) {
		const struct layout_field *f = &layout_fields[i];
		__s32 v = layout_field_get(&c->l, f);

		if (strcmp(f->struct_name, last) != 0) {
			last = f->struct_name;
			printf("\nstruct %s", last);
			if (!strcmp(last, "ncclComm") && c->l.comm_size >= 0)
				printf(" (%ld bytes)", c->l.comm_size);
			if (!strcmp(last, "ncclProxySubArgs") &&
			    c->l.proxy.sub_size >= 0)
				printf(" (%d bytes)", c->l.proxy.sub_size);
			printf("\n");
		}
		if (v < 0) {
			printf("  %-14s missing\n", f->member);
			continue;
		}
		printf("  %-14s %d", f->member, v);
		if (!strcmp(f->member, "seqNumber"))
			printf(" (%u elements)", c->l.comm.seq_number_n);
		printf("\n");
	}

	pc_rdma_text(stdout, &c->rdma);
	printf("\nfeatures\n");
	for (i = 0; i < c->nfeat; i++) {
		printf("  %s: %s", c->feat[i].name, c->feat[i].on ? "on" : "off");
		if (c->feat[i].detail[0])
			printf(" (%s)", c->feat[i].detail);
		printf("\n");
	}
	printf("\nresult: %s\n", c->req_missing ?
	       "required tier A hooks are missing: ccld cannot trace this library" :
	       "every required tier A hook resolves");
}

static void print_json(const struct check *c)
{
	const char *last = "";
	int i;

	printf("{\"schema\":%d,\"type\":\"probe_check\",\"library\":", CCLD_SCHEMA);
	json_string(stdout, c->path);
	printf(",\"nccl_version\":");
	json_string(stdout, elfsym_nccl_version(c->es));
	printf(",\"build_id\":");
	json_string(stdout, elfsym_build_id(c->es));
	printf(",\"defines_nccl\":%s", elfsym_defines_nccl(c->es) ? "true" : "false");
	printf(",\"dwarf\":{\"present\":%s,\"from_cache\":%s,\"read_s\":%.3f",
	       c->l.source == LAYOUT_DWARF || c->l.source == LAYOUT_DEBUGINFO ?
	       "true" : "false", c->l.from_cache ? "true" : "false", c->dwarf_s);
	if (c->dwarf_error) {
		printf(",\"error\":");
		json_string(stdout, c->dwarf_err);
	}
	printf("},\"layout\":{\"source\":\"%s\",\"debuginfo\":",
	       layout_source_name(c->l.source));
	if (c->l.source == LAYOUT_DEBUGINFO)
		json_string(stdout, c->l.origin);
	else
		printf("null");
	printf(",\"table_version\":");
	if (c->l.source == LAYOUT_TABLE)
		json_string(stdout, c->l.origin);
	else
		printf("null");
	printf("},\"hooks\":[");
	for (i = 0; i < nccl_hooks_n; i++) {
		const struct hook_def *h = &nccl_hooks[i];

		printf("%s{\"symbol\":\"%s\",\"tier\":\"%c\",\"required\":%s,"
		       "\"found\":%s", i ? "," : "", h->symbol, h->tier,
		       h->required ? "true" : "false",
		       c->offs[i] >= 0 ? "true" : "false");
		if (c->offs[i] >= 0) {
			printf(",\"offset\":%ld,\"elf_symbol\":", c->offs[i]);
			json_string(stdout, c->syms[i]);
		} else {
			printf(",\"offset\":null,\"elf_symbol\":null");
		}
		printf(",\"params\":");
		if (h->params)
			json_string(stdout, h->params);
		else
			printf("null");
		printf(",\"feature\":");
		json_string(stdout, h->feature);
		printf("}");
	}
	printf("],\"progress\":[");
	for (i = 0; i < c->nprogress; i++) {
		printf("%s{\"name\":\"%s\",\"transport\":\"%s\",\"dir\":\"%s\","
		       "\"offset\":%ld,\"elf_symbol\":", i ? "," : "", c->progress[i].name,
		       nccl_transport_name(c->progress[i].transport),
		       dir_name(c->progress[i].dir), c->progress[i].off);
		json_string(stdout, c->progress[i].symbol);
		printf("}");
	}
	printf("],\"structs\":{");
	for (i = 0; i < layout_fields_n; i++) {
		const struct layout_field *f = &layout_fields[i];
		__s32 v = layout_field_get(&c->l, f);

		if (strcmp(f->struct_name, last) != 0) {
			printf("%s\"%s\":{", last[0] ? "}," : "", f->struct_name);
			last = f->struct_name;
		} else {
			printf(",");
		}
		if (v < 0)
			printf("\"%s\":null", f->member);
		else
			printf("\"%s\":%d", f->member, v);
	}
	printf("%s}", last[0] ? "}" : "");
	printf(",\"comm_size\":%ld,\"seq_number_n\":%u,\"sub_size\":%d,\"peer_size\":%d",
	       c->l.comm_size, c->l.comm.seq_number_n, c->l.proxy.sub_size, c->l.peer.size);
	pc_rdma_json(stdout, &c->rdma);
	printf(",\"features\":[");
	for (i = 0; i < c->nfeat; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_string(stdout, c->feat[i].name);
		printf(",\"on\":%s,\"detail\":", c->feat[i].on ? "true" : "false");
		json_string(stdout, c->feat[i].detail);
		printf("}");
	}
	printf("],\"ok\":%s}\n", c->req_missing ? "false" : "true");
}

static const struct option long_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

int cmd_probe_check(int argc, char **argv)
{
	struct check c;
	char err[256];
	bool json = false;
	double t0;
	int i, opt;

	optind = 0;	/* main may have used getopt already: full reset */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "jh", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "ccld-trace: probe-check: unknown option "
				"'%s'\nTry 'ccld-trace probe-check --help'.\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "ccld-trace: probe-check needs one LIBRARY\n"
			"Try 'ccld-trace probe-check --help'.\n");
		return 2;
	}
	memset(&c, 0, sizeof(c));
	c.path = argv[optind];
	c.es = elfsym_open(c.path, err, sizeof(err));
	if (!c.es) {
		fprintf(stderr, "ccld-trace: cannot open %s: %s\n", c.path, err);
		return 1;
	}
	c.offs = calloc(nccl_hooks_n, sizeof(*c.offs));
	c.syms = calloc(nccl_hooks_n, sizeof(*c.syms));
	if (!c.offs || !c.syms) {
		fprintf(stderr, "ccld-trace: out of memory\n");
		free(c.offs);
		free(c.syms);
		elfsym_close(c.es);
		return 1;
	}
	c.nprogress = progress_fns_find(c.es, c.progress, MAX_PROGRESS_FNS);
	for (i = 0; i < nccl_hooks_n; i++) {
		c.offs[i] = hook_resolve(c.es, &nccl_hooks[i], &c.syms[i]);
		if (c.offs[i] < 0 && nccl_hooks[i].tier == HOOK_TIER_A &&
		    nccl_hooks[i].required)
			c.req_missing++;
	}
	t0 = now_s();
	if (dwarf_layout_read(c.path, elfsym_build_id(c.es), &c.l,
			      c.dwarf_err, sizeof(c.dwarf_err))) {
		c.dwarf_error = true;
		dwarf_layout_clear(&c.l);
	}
	c.dwarf_s = now_s() - t0;
	/* as attach does: no DWARF at all, then the table's candidate */
	if (c.l.source == LAYOUT_NONE && !c.dwarf_error) {
		const struct layout_table_entry *e =
			layout_table_find(elfsym_nccl_version(c.es));

		if (e)
			layout_table_fill(e, &c.l);
	}
	rdma_plan_make(&c.rdma, "");
	compute_features(&c);
	if (json)
		print_json(&c);
	else
		print_text(&c);
	free(c.offs);
	free(c.syms);
	elfsym_close(c.es);
	return c.req_missing ? 1 : 0;
}
