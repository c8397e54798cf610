// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probe-check's RDMA section (tier D): for each verbs function the
 * RDMA programs need, whether this kernel has it (kallsyms, module BTF) and
 * how ccld-trace would probe it.  Nothing is loaded: ccld-trace's startup
 * line says what really attached (fentry may still be refused, EPERM).
 */
#include <string.h>
#include "output.h"
#include "probe_check_rdma.h"

void pc_rdma_verdict(const struct rdma_plan *p, char *out, size_t len)
{
	enum rdma_method m = RDMA_M_NONE;
	bool mixed = false;
	int i;

	if (!p->usable) {
		snprintf(out, len, "not attached: %s", p->reason);
		return;
	}
	for (i = 0; i < RDMA_NTARGETS; i++) {
		if (p->t[i].method == RDMA_M_NONE)
			continue;
		mixed |= m != RDMA_M_NONE && m != p->t[i].method;
		m = p->t[i].method;
	}
	snprintf(out, len, "would attach %d of %d (%s)", p->usable, RDMA_NTARGETS,
		 mixed ? "kprobe and fentry" : rdma_method_name(m));
}

void pc_rdma_text(FILE *f, const struct rdma_plan *p)
{
	char v[256];
	int i;

	fprintf(f, "\nkernel: RDMA verbs control path (tier D)\n");
	fprintf(f, "  kprobes     %s\n", p->kprobes ? "yes" : "no");
	fprintf(f, "  ib_core     %s\n", p->ib_core ? "loaded" : "no");
	for (i = 0; i < RDMA_NTARGETS; i++) {
		const struct rdma_target *t = &p->t[i];

		fprintf(f, "  %-28s %-10s %-6s %s\n", t->func, t->module,
			rdma_method_name(t->method),
			t->method != RDMA_M_NONE ? t->what : t->why);
	}
	pc_rdma_verdict(p, v, sizeof(v));
	fprintf(f, "rdma: %s\n", v);
}

void pc_rdma_json(FILE *f, const struct rdma_plan *p)
{
	char v[256];
	int i;

	pc_rdma_verdict(p, v, sizeof(v));
	fprintf(f, ",\"rdma\":{\"kprobes\":%s,\"ib_core\":%s,\"usable\":%d,\"summary\":",
		p->kprobes ? "true" : "false", p->ib_core ? "true" : "false", p->usable);
	json_string(f, v);
	fprintf(f, ",\"reason\":");
	json_string(f, p->reason);
	fprintf(f, ",\"targets\":[");
	for (i = 0; i < RDMA_NTARGETS; i++) {
		const struct rdma_target *t = &p->t[i];

		fprintf(f, "%s{\"function\":\"%s\",\"module\":\"%s\",\"in_kallsyms\":%s,"
			"\"in_btf\":%s,\"method\":", i ? "," : "", t->func, t->module,
			t->in_kallsyms ? "true" : "false", t->in_btf ? "true" : "false");
		if (t->method == RDMA_M_NONE)
			fprintf(f, "null");
		else
			fprintf(f, "\"%s\"", rdma_method_name(t->method));
		fprintf(f, ",\"what\":");
		json_string(f, t->what);
		fprintf(f, ",\"why\":");
		json_string(f, t->why);
		fprintf(f, "}");
	}
	fprintf(f, "]}");
}
