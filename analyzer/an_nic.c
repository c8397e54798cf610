// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NIC evidence (tier D): the RDMA verbs control path of a traced
 * process's NIC.  A QP moved to error, a QP or CQ async error, a port down
 * or a fatal device error gives an "HW" verdict naming the NIC and port for
 * the process's rank; the H3 and slow verdicts that name the process cite
 * it.  A port coming back (port active) is remembered, not reported.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "an_int.h"

/* enum ccld_rdma_src (bpf/ccld.h); the analyzer does not include it */
enum { SRC_MODIFY_QP = 1, SRC_DEV_EVENT, SRC_QP_EVENT, SRC_CQ_EVENT };

/* enum ib_event_type (include/rdma/ib_verbs.h), stable since 2.6 */
static const char *const ib_events[] = {
	"CQ error", "QP fatal error", "QP request error", "QP access error",
	"communication established", "send queue drained", "path migrated",
	"path migration error", "device fatal error", "port active",
	"port error", "LID change", "P_Key change", "SM change", "SRQ error",
	"SRQ limit reached", "QP last WQE reached", "client reregister",
	"GID change", "WQ fatal error",
};

/* the ones that are trouble: CQ_ERR, QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR,
 * PATH_MIG_ERR, DEVICE_FATAL, PORT_ERR, SRQ_ERR, WQ_FATAL */
#define ERROR_EVENTS	((1u << 0) | (1u << 1) | (1u << 2) | (1u << 3) | \
			 (1u << 7) | (1u << 8) | (1u << 10) | (1u << 14) | (1u << 19))
#define EV_PORT_ACTIVE	9
#define QPS_SQE		5
#define QPS_ERR		6

const char *an_nic_event_name(const struct an_nic_event *e)
{
	if (e->source == SRC_MODIFY_QP)
		return e->new_state == QPS_SQE ? "QP moved to send queue error" :
		       "QP moved to error";
	if (e->event < sizeof(ib_events) / sizeof(ib_events[0]))
		return ib_events[e->event];
	return "unknown event";
}

bool an_nic_event_is_error(const struct an_nic_event *e)
{
	if (e->source == SRC_MODIFY_QP)
		return e->new_state == QPS_ERR || e->new_state == QPS_SQE;
	return e->event < 32 && (ERROR_EVENTS >> e->event) & 1;
}

/* "mlx5_0 port 1" (or "mlx5_0" when the port is unknown) */
static void nic_name(const struct an_nic_event *e, char *out, size_t n)
{
	if (e->port)
		snprintf(out, n, "%.31s port %u", e->dev, e->port);
	else
		snprintf(out, n, "%.31s", e->dev);
}

/* ", QP 0x1a2" or "" */
static void qp_words(const struct an_nic_event *e, char *out, size_t n)
{
	if (e->qp_num)
		snprintf(out, n, ", QP 0x%x", e->qp_num);
	else
		out[0] = '\0';
}

static void nic_values(struct an_verdict *v, const struct an_nic_event *e)
{
	an_val_s(v, "nic", e->dev);
	if (e->port)
		an_val_i(v, "port", e->port);
	if (e->qp_num)
		an_val_i(v, "qp", e->qp_num);
	an_val_s(v, "nic_event", an_nic_event_name(e));
}

void an_nic_note(const struct an *an, struct an_verdict *v)
{
	char nic[48], qp[24];
	uint32_t i;

	for (i = 0; i < v->ncul; i++) {
		const struct an_proc *p = an_proc_find(an, v->cul[i].host, v->cul[i].pid);

		if (!p || !p->nic.source)
			continue;
		nic_name(&p->nic, nic, sizeof(nic));
		qp_words(&p->nic, qp, sizeof(qp));
		an_text(v, "; the NIC %s of rank %d reported %s%s%s", nic,
			v->cul[i].rank, an_nic_event_name(&p->nic), qp,
			p->nic_up_again ? " (the port is active again)" : "");
		nic_values(v, &p->nic);
		return;		/* the first culprit's: one NIC error per verdict */
	}
}

static bool same_trouble(const struct an_nic_event *a, const struct an_nic_event *b)
{
	return a->source == b->source && a->event == b->event &&
	       a->port == b->port && a->qp_num == b->qp_num &&
	       a->new_state == b->new_state && !strncmp(a->dev, b->dev, sizeof(a->dev));
}

void an_nic_error(struct an *an, uint32_t host, uint32_t pid,
		  const struct an_nic_event *e, uint64_t t_ns)
{
	const struct an_proc *p = an_proc_find(an, host, pid);
	struct an_verdict *v = &an->tmp;
	char nic[48], qp[24];
	struct an_proc *mp;

	an->stats.records++;
	if (!p || !e->source || !e->dev[0]) {
		an->stats.rejected++;
		return;
	}
	mp = &an->procs[p - an->procs];
	if (!an_nic_event_is_error(e)) {
		/* the port of the last error is back: noted with that error */
		if (e->event == EV_PORT_ACTIVE && mp->nic.source &&
		    mp->nic.port == e->port && !strncmp(mp->nic.dev, e->dev, sizeof(e->dev)))
			mp->nic_up_again = true;
		return;
	}
	/* the same trouble again (a port error per QP, ...): reported once */
	if (mp->nic.source && !mp->nic_up_again && same_trouble(&mp->nic, e))
		return;
	mp->nic = *e;
	mp->nic.dev[sizeof(mp->nic.dev) - 1] = '\0';
	mp->nic_t = t_ns;
	mp->nic_up_again = false;
	if (!an_hw_verdict(an, host, pid, t_ns, v))
		return;
	nic_name(&mp->nic, nic, sizeof(nic));
	qp_words(&mp->nic, qp, sizeof(qp));
	an_text(v, "the NIC %s of rank %d (pid %u) reported %s%s",
		nic, v->cul[0].rank, pid, an_nic_event_name(&mp->nic), qp);
	nic_values(v, &mp->nic);
	an_emit(an, v);
}
