// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Slow diagnosis fed by the analyzer's own inputs (issue 5): per rank and
 * round, the duration from the call's entry to its GPU completion (tier B),
 * both on the rank's own host clock; rounds aligned by (comm, seq) and
 * handed, complete and in order, to one CCL-D detector per communicator
 * (slow_detect.c) with the iteration index from the comm's op-signature
 * period (slow_period.c).  Onset, updates and recovery become verdicts of
 * class S1/S2/S3; a culprit already slow in another comm makes this one a
 * cascade of it (the same slow rank slows every comm it is in).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_int.h"
#include "an_slow_int.h"
#include "slow.h"

static uint64_t sig_hash(const struct an_sig *s)
{
	uint64_t h = 1469598103934665603ull;

	h = (h ^ s->fn) * 1099511628211ull;
	h = (h ^ s->count) * 1099511628211ull;
	h = (h ^ s->dtype) * 1099511628211ull;
	return (h ^ (uint64_t)(uint32_t)s->root) * 1099511628211ull;
}

void an_slow_free(struct an_slow *s)
{
	int i;

	if (!s)
		return;
	sl_det_free(s->det);
	sl_iter_free(s->iter);
	sl_bocd_free(s->bocd);
	for (i = 0; i < AN_HIST; i++) {
		free(s->r[i].dur);
		free(s->r[i].dur_bound);
		free(s->r[i].rate);
		free(s->r[i].after_hold);
		free(s->r[i].hold);
	}
	slow_nohist_free(s);
	free(s->holder);
	free(s->net0);
	free(s->srate);
	free(s->wait);
	free(s->slat);
	free(s);
}

static struct sl_det *det_new(const struct an *an, int32_t nranks)
{
	struct sl_config cfg;

	sl_config_default(&cfg);
	if (an->cfg.slow_window_s > 0)
		cfg.window_ns = (uint64_t)(an->cfg.slow_window_s * 1e9);
	cfg.repeat = an->cfg.slow_min_iters;
	cfg.min_ns = (uint64_t)(an->cfg.slow_min_s * 1e9);
	return sl_det_new(&cfg, (uint32_t)nranks);
}

/* CCL-D's baseline of C learns again from the next rounds (kept if no memory) */
void slow_det_relearn(struct an *an, struct an_comm *c)
{
	struct sl_det *d = det_new(an, c->nranks);

	if (!d)
		return;
	sl_det_free(c->slow->det);
	c->slow->det = d;
	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 ": baseline learned again\n",
			c->hash);
}

static struct an_slow *slow_new(const struct an *an, int32_t nranks)
{
	struct an_slow *s = calloc(1, sizeof(*s));
	int i, k;

	if (!s)
		return NULL;
	s->det = det_new(an, nranks);
	s->iter = sl_iter_new(1024);
	{
		struct sl_bocd_config bc;

		sl_bocd_default(&bc);
		s->bocd = sl_bocd_new(&bc);
	}
	s->next = -1;
	s->holder = calloc((size_t)nranks, sizeof(*s->holder));
	s->net0 = calloc(3 * (size_t)nranks, sizeof(*s->net0));
	s->srate = calloc((size_t)nranks, sizeof(*s->srate));
	s->wait = malloc((size_t)nranks * sizeof(*s->wait));
	for (k = 0; s->wait && k < nranks; k++)
		s->wait[k] = NAN;
	s->slat = calloc((size_t)nranks, sizeof(*s->slat));
	s->last_iter = -1;
	for (i = 0; i < AN_HIST; i++) {
		s->r[i].seq = -1;
		s->r[i].dur = malloc((size_t)nranks * sizeof(double));
		s->r[i].dur_bound = malloc((size_t)nranks * sizeof(double));
		s->r[i].rate = malloc((size_t)nranks * sizeof(double));
		s->r[i].after_hold = malloc((size_t)nranks * sizeof(double));
		s->r[i].hold = calloc((size_t)nranks, sizeof(uint64_t));
		if (!s->r[i].dur || !s->r[i].dur_bound || !s->r[i].rate || !s->r[i].after_hold || !s->r[i].hold)
			break;
		for (k = 0; k < nranks; k++)
			s->r[i].dur[k] = s->r[i].dur_bound[k] = s->r[i].rate[k] =
				s->r[i].after_hold[k] = NAN;
	}
	if (!s->det || !s->iter || !s->bocd || !s->holder || !s->net0 || !s->srate || !s->wait ||
	    !s->slat || i < AN_HIST || !slow_nohist_new(s, an, nranks)) {
		an_slow_free(s);
		return NULL;
	}
	return s;
}

static const char *class_words(enum sl_class c)
{
	switch (c) {
	case SL_S1: return "computation";
	case SL_S2: return "communication";
	case SL_S3: return "computation and communication";
	case SL_NONE: break;
	}
	return "?";
}

void slow_add_culprit(const struct an *an, const struct an_comm *c, struct an_verdict *v,
		      int32_t rank)
{
	const struct an_proc *p;
	uint32_t i;

	if (rank < 0 || rank >= c->nranks || v->ncul >= AN_MAX_CULPRITS)
		return;
	for (i = 0; i < v->ncul; i++)
		if (v->cul[i].rank == rank)
			return;
	p = an_proc_of(an, &c->r[rank]);
	v->cul[v->ncul].rank = rank;
	v->cul[v->ncul].host = p ? p->host : 0;
	v->cul[v->ncul].pid = p ? p->pid : 0;
	v->ncul++;
	v->ncul_total = v->ncul;
}

/*
 * V is a cascade of ROOT (an open incident naming the same process) or, else,
 * of comm HELD (0 none: its GPU was busy in that comm's op, which ended
 * late): role and blocked_by set.  False: a root.
 */
bool slow_cascade_of(struct an *an, struct an_verdict *v, const struct an_comm *root,
		     uint64_t held)
{
	const struct an_comm *h;

	if (root) {
		v->role = AN_CASCADE;
		v->blocked_comm = root->hash;
		v->blocked_seq = root->slow_seq;
		return true;
	}
	if (!held)
		return false;
	h = an_comm_get(an, held, 0, false);
	v->role = AN_CASCADE;
	v->blocked_comm = held;
	v->blocked_seq = h && h->slow && h->slow->active ? h->slow_seq :
			 (h ? h->r[0].entered : -1);
	return true;
}

/* a comm whose open incident names the same culprit process, else NULL */
const struct an_comm *slow_root_of(struct an *an, const struct an_comm *c, int32_t rank)
{
	const struct an_proc *mine = an_proc_of(an, &c->r[rank]);
	struct hkey key;
	size_t it;
	void *v;

	if (!mine)
		return NULL;
	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;

		if (o == c || !o->slow || !o->slow->active || o->slow->root_cul < 0 ||
		    o->slow_cascade)
			continue;
		if (an_proc_of(an, &o->r[o->slow->root_cul]) == mine)
			return o;
	}
	return NULL;
}

/*
 * A rank's send steps spend at least twice as long in the network as the
 * others' (median): its link is slow, whatever P says.  Healthy links of one
 * comm differ far less (measured on the stand-in: within 20%).
 */
bool slow_net_outlier(double lat, double others)
{
	return isfinite(lat) && isfinite(others) && others > 0 && lat >= 2 * others;
}

/* each rank's wait for the last arriver in the round RD just completed */
static void note_waits(struct an_slow *s, const struct slow_round *rd, int32_t nranks)
{
	double tmin = INFINITY;
	int32_t k;

	for (k = 0; k < nranks; k++)
		if (rd->dur[k] < tmin)
			tmin = rd->dur[k];
	for (k = 0; k < nranks; k++)
		s->wait[k] = isfinite(tmin) ? rd->dur[k] - tmin : NAN;
}

static void note_round(struct an_slow *s, const struct slow_round *rd, int32_t nranks)
{
	struct sig_hist *h = NULL;
	double tmax = NAN;
	uint32_t i;
	int32_t k;

	for (k = 0; k < nranks; k++)
		if (isfinite(rd->dur[k]) && !(rd->dur[k] <= tmax))
			tmax = rd->dur[k];
	if (!isfinite(tmax))
		return;
	for (i = 0; i < GROUP_SIGS && !h; i++)
		if (s->gh[i].n && s->gh[i].sig == rd->sig)
			h = &s->gh[i];
	if (!h) {
		h = &s->gh[s->gh_next++ % GROUP_SIGS];
		memset(h, 0, sizeof(*h));
		h->sig = rd->sig;
	}
	h->tmax[h->pos++ % GROUP_HIST] = tmax;
	if (h->n < GROUP_HIST)
		h->n++;
}

/* median Tmax of C's recent judged rounds of signature SIG, NaN if none */
static double sig_median(const struct an_comm *c, uint64_t sig)
{
	double scratch[GROUP_HIST];
	uint32_t i;

	if (!c->slow)
		return NAN;
	for (i = 0; i < GROUP_SIGS; i++)
		if (c->slow->gh[i].n && c->slow->gh[i].sig == sig)
			return sl_median(c->slow->gh[i].tmax, c->slow->gh[i].n, scratch);
	return NAN;
}

/*
 * Greyhound's comparable groups (4.3): the comms of this one's size whose
 * recent rounds of the same op signature have a median; is this one slower
 * than its group (sl_group_check: over the median by 3 robust sigmas and
 * 10%)?  Returns the group's size (0: fewer than 3, no judgement).
 */
static uint32_t group_check(struct an *an, const struct an_comm *c, uint64_t sig,
			    double *mine, double *group, bool *deviant)
{
	struct sl_comm_stat *st = NULL, *n;
	uint32_t ns = 0, cap = 0, me = UINT32_MAX, size = 0;
	struct hkey key;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;
		double m;

		if (o->nranks != c->nranks || !isfinite(m = sig_median(o, sig)))
			continue;
		if (ns == cap) {
			cap = cap ? 2 * cap : 16;
			n = realloc(st, cap * sizeof(*st));
			if (!n) {
				free(st);
				return 0;
			}
			st = n;
		}
		memset(&st[ns], 0, sizeof(st[ns]));
		st[ns].comm = o->hash;
		st[ns].sig = sig;
		st[ns].nranks = (uint32_t)o->nranks;
		st[ns].median_ns = m;
		if (o == c)
			me = ns;
		ns++;
	}
	if (me != UINT32_MAX && ns >= 3 && sl_group_check(st, ns) >= 0) {
		*mine = st[me].median_ns;
		*group = st[me].group_median_ns;
		*deviant = st[me].deviant;
		size = st[me].group_size;
	}
	free(st);
	return size;
}

/* the S2 candidate from the step sample: the lowest send rate */
void slow_sampled_s2(const struct an_comm *c, int32_t *rank, double *rate, double *med,
		     double *z, double *lat, double *lat_med)
{
	const struct an_slow *s = c->slow;
	double *scratch = malloc(2 * (size_t)c->nranks * sizeof(double));
	int32_t k;

	*rank = -1;
	for (k = 0; k < c->nranks; k++)
		if (isfinite(s->srate[k]) && (*rank < 0 || s->srate[k] < s->srate[*rank]))
			*rank = k;
	if (*rank < 0 || !scratch) {
		free(scratch);
		return;
	}
	*rate = s->srate[*rank];
	*lat = s->slat[*rank];
	*med = sl_median(s->srate, (size_t)c->nranks, scratch);
	/* the others' median: with 2 ranks the median would include the culprit */
	for (k = 0; k < c->nranks; k++)
		scratch[c->nranks + k] = k == *rank ? NAN : s->slat[k];
	*lat_med = sl_median(scratch + c->nranks, (size_t)c->nranks, scratch);
	sl_zscores(s->srate, (size_t)c->nranks, scratch + c->nranks);
	*z = scratch[c->nranks + *rank];
	free(scratch);
}

static void emit_slow(struct an *an, struct an_comm *c, const struct slow_round *rd,
		      int64_t iter, int ev)
{
	const struct sl_result *res = sl_det_result(c->slow->det);
	struct an_verdict *v = &an->tmp;
	const struct an_comm *root;
	/* who arrives last: the step sample's arrivals where starts are unknown */
	bool arrived = c->slow->arr_rank >= 0 && c->slow->arr_cls == AN_S1;
	int32_t s1_rank = arrived ? c->slow->arr_rank : res->s1_rank;
	int32_t s2_rank = res->s2_rank;
	double s2_rate = res->s2_rate, s2_med = res->rate_median, s2_z = res->s2_z;
	double s2_lat = NAN, lat_med = NAN;
	enum sl_class cls;
	double gmine = NAN, gmed = NAN;
	uint32_t gsize = 0, tcp_links = 0, tcp_retrans = 0;
	int32_t tcp_rank, net_rank;
	bool tcp_reclass;
	bool gdev = false;
	uint64_t held;
	size_t len;

	if (c->slow->have_srate)
		slow_sampled_s2(c, &s2_rank, &s2_rate, &s2_med, &s2_z, &s2_lat, &lat_med);
	memset(v, 0, sizeof(*v));
	v->kind = ev & SL_EV_RECOVERY ? AN_V_RECOVERED :
		  ev & SL_EV_ONSET ? AN_V_NEW : AN_V_UPDATE;
	cls = res->cls;
	/*
	 * CCL-D's P says which effect dominates the located round; a sampled
	 * network culprit that is another rank than the one arriving last is
	 * a second cause: both are reported (S3).
	 */
	/*
	 * A lossy link slows both its ends' sends: TCP names the end.  While
	 * one rank's link retransmits, which rank arrives last is an echo of
	 * the previous ops' delays: with enough retransmits (the kernel's own
	 * account, not an inference) the slowdown is the network's.
	 */
	tcp_rank = an_net_common_rank(an, c, &tcp_links, &tcp_retrans);
	tcp_reclass = tcp_rank >= 0 && tcp_retrans >= AN_NET_MIN_RETRANS &&
		      (cls == SL_S1 || cls == SL_S3);
	net_rank = tcp_rank >= 0 ? tcp_rank : s2_rank;
	if (c->slow->arr_rank >= 0) {
		/* the sample decided, P could not (durations include unseen GPU work) */
		cls = arrived ? SL_S1 : SL_S2;
		if (!arrived)
			net_rank = c->slow->arr_rank;
	} else if (tcp_reclass) {
		cls = SL_S2;
	}
	else if (cls == SL_S1 && !arrived && slow_net_outlier(s2_lat, lat_med) && s2_rank >= 0 &&
		 s2_rank != s1_rank)
		cls = SL_S3;
	v->cls = cls == SL_S2 ? AN_S2 : cls == SL_S3 ? AN_S3 : AN_S1;
	if (v->kind == AN_V_RECOVERED && c->slow->active)
		v->cls = c->slow->cls;	/* the class it was reported with */
	v->comm = c->hash;
	v->seq = rd->seq;
	v->fn = rd->fn;
	v->clock_host = rd->host;
	v->detected_ns = rd->t_end;
	v->onset_ns = res->onset_ns;
	v->role = AN_ROOT;
	if (cls == SL_S2)
		slow_add_culprit(an, c, v, net_rank);
	else
		slow_add_culprit(an, c, v, s1_rank);
	if (cls == SL_S3)
		slow_add_culprit(an, c, v, net_rank);
	if (v->kind == AN_V_RECOVERED) {
		snprintf(v->text, sizeof(v->text), "comm %016" PRIx64 " is back to"
			 " its baseline round time (%.1f ms) for %u iterations since"
			 " iteration %" PRId64, c->hash, res->tbase_ns / 1e6,
			 3u, res->recover_iter + c->slow->iter_skip);
		c->slow->have_srate = false;
		c->slow->active = false;
		c->slow_cascade = false;
	} else {
		c->slow->active = true;
		c->slow->cls = v->cls;
		c->slow->root_cul = v->ncul ? v->cul[0].rank : -1;
		root = v->ncul ? slow_root_of(an, c, v->cul[0].rank) : NULL;
		/* with arrivals sampled: only where it came straight from that op */
		held = cls == SL_S2 || s1_rank < 0 ? 0 :
		       arrived ? c->slow->arr_held_by : c->slow->holder[s1_rank];
		c->slow_cascade = root != NULL || held;
		if (!slow_cascade_of(an, v, root, held))
			c->slow_seq = rd->seq;
		len = (size_t)snprintf(v->text, sizeof(v->text),
			"comm %016" PRIx64 " is slower: round time %.1f ms against a"
			" baseline of %.1f ms (R = %.2f > %.2f) since iteration %" PRId64
			"; P = %.2f: %s (%s)", c->hash, res->tmax_ns / 1e6,
			res->tbase_ns / 1e6, res->r, res->thr,
			res->onset_iter + c->slow->iter_skip, res->p,
			class_words(cls), an_class_name(v->cls));
		if (cls != SL_S2 && arrived && len < sizeof(v->text)) {
			double share, gap;

			slow_arrival_culprit(c, &share, &gap, NULL);
			len += (size_t)snprintf(v->text + len, sizeof(v->text) - len,
				"; rank %d's GPU reaches the op last in %.0f%% of %u"
				" rounds sampled with step hooks, %.1f ms after the"
				" others (mean; its CPU queues its calls ahead of its"
				" GPU, so the call is not its arrival)", s1_rank,
				100 * share, c->slow->arr_rounds, gap / 1e6);
		} else if (cls != SL_S2 && s1_rank >= 0 && len < sizeof(v->text)) {
			len += (size_t)snprintf(v->text + len, sizeof(v->text) - len,
				"; rank %d arrives last (shortest duration %.1f ms,"
				" z %.1f)%s", s1_rank, res->s1_dur_ns / 1e6, res->s1_z,
				c->slow->blind ? " - not certain: the CPUs queue their"
				" calls ahead of their GPUs and no step-level record"
				" shows when each GPU reached the op" : "");
		}
		if (cls != SL_S1 && s2_rank >= 0 && len < sizeof(v->text) &&
		    c->slow->have_srate)
			len += (size_t)snprintf(v->text + len, sizeof(v->text) - len,
				"; rank %d has the lowest send rate: %.2f ms per step in"
				" the network, the others' median %.2f ms (%.0f B/s,"
				" z %.1f; step hooks sampled %.1f s)", s2_rank,
				s2_lat / 1e6, lat_med / 1e6, s2_rate, s2_z,
				SAMPLE_NS / 1e9);
		else if (cls != SL_S1 && s2_rank < 0 && len < sizeof(v->text))
			len += (size_t)snprintf(v->text + len, sizeof(v->text) - len,
				"; no rank's send rate is known (no step-level"
				" records came: step hooks unavailable)");
		else if (cls != SL_S1 && s2_rank >= 0 && len < sizeof(v->text))
			len += (size_t)snprintf(v->text + len, sizeof(v->text) - len,
				"; rank %d has the lowest rate (%.0f B/s, median %.0f;"
				" op-level: bytes over the op's time, step hooks"
				" unavailable)", s2_rank, s2_rate, s2_med);
		if (tcp_rank >= 0 && len < sizeof(v->text))
			len += (size_t)snprintf(v->text + len, sizeof(v->text) - len,
				"; rank %d is at one end of each of the %u connections"
				" with TCP retransmits (%u): its link%s", tcp_rank, tcp_links,
				tcp_retrans, tcp_reclass ? "; the rank arriving last is"
				" an echo of the earlier ops' network delays: network, not"
				" computation" : "");
		if (res->slow_iters && len < sizeof(v->text))
			len += (size_t)snprintf(v->text + len, sizeof(v->text) - len,
				"; %.2f s lost so far (%.1f ms per slow iteration over %u)",
				res->lost_ns / 1e9, res->lost_ns / 1e6 / res->slow_iters,
				res->slow_iters);
		gsize = group_check(an, c, rd->sig, &gmine, &gmed, &gdev);
		if (gsize && len < sizeof(v->text))
			len += (size_t)snprintf(v->text + len, sizeof(v->text) - len,
				"; %s its %u comparable comms (median round %.1f ms,"
				" group %.1f ms)", gdev ? "slower than" : "like",
				gsize, gmine / 1e6, gmed / 1e6);
		if (len < sizeof(v->text))
			snprintf(v->text + len, sizeof(v->text) - len,
				 "; durations from the GPU-side start (the call, or"
				 " the end of the process's earlier op in another comm)"
				 " to completion (proxy idle, tier C, else tier B),"
				 " each on its rank's clock%s",
				 root ? "; a cascade: the same rank slows a comm"
				 " already reported" :
				 held ? "; a cascade: that rank's GPU was held by"
				 " its op in another comm" : "");
	}
	an_verdict_val_f(v, "tbase_ms", res->tbase_ns / 1e6);
	an_verdict_val_f(v, "tmax_ms", res->tmax_ns / 1e6);
	an_verdict_val_f(v, "tmin_ms", res->tmin_ns / 1e6);
	an_verdict_val_f(v, "r", res->r);
	an_verdict_val_f(v, "thr", res->thr);
	an_verdict_val_f(v, "p", res->p);
	an_verdict_val_i(v, "onset_iter", res->onset_iter + c->slow->iter_skip);
	an_verdict_val_i(v, "iter", res->iter + c->slow->iter_skip);
	an_verdict_val_i(v, "at_iter", iter);	/* the iteration that gave this verdict */
	an_verdict_val_i(v, "nranks", c->nranks);
	an_verdict_val_f(v, "lost_s", res->lost_ns / 1e9);
	an_verdict_val_i(v, "slow_iters", res->slow_iters);
	if (s1_rank >= 0) {
		an_verdict_val_i(v, "s1_rank", s1_rank);
		an_verdict_val_f(v, "s1_dur_ms", res->s1_dur_ns / 1e6);
		an_verdict_val_f(v, "s1_z", res->s1_z);
	}
	if (s2_rank >= 0) {
		an_verdict_val_i(v, "s2_rank", s2_rank);
		an_verdict_val_f(v, "s2_rate", s2_rate);
		an_verdict_val_f(v, "s2_z", s2_z);
		an_verdict_val_f(v, "s2_step_ms", s2_lat / 1e6);
	}
	if (gsize) {
		an_verdict_val_i(v, "group_size", gsize);
		an_verdict_val_f(v, "group_median_ms", gmed / 1e6);
		an_verdict_val_i(v, "group_deviant", gdev);
	}
	if (v->kind == AN_V_RECOVERED)
		an_verdict_val_i(v, "recover_iter", res->recover_iter + c->slow->iter_skip);
	/* the iteration time before and after the latest change point */
	if (c->slow->have_cp && c->slow->niter - c->slow->cp.at <= 16) {
		an_verdict_val_f(v, "iter_ms_before", c->slow->cp.before / 1e6);
		an_verdict_val_f(v, "iter_ms_after", c->slow->cp.after / 1e6);
		len = strlen(v->text);
		if (len < sizeof(v->text))
			snprintf(v->text + len, sizeof(v->text) - len,
				 "; iteration time %.1f ms -> %.1f ms (change point)",
				 c->slow->cp.before / 1e6, c->slow->cp.after / 1e6);
	}
	if (tcp_rank >= 0)
		an_verdict_val_i(v, "tcp_rank", tcp_rank);
	if (v->kind != AN_V_RECOVERED) {
		an_hw_note(an, v);
		an_net_note(an, c, v);
	}
	an->stats.verdicts++;
	if (an->sink.verdict)
		an->sink.verdict(an->sink.ctx, v);
}

static void clear_round(struct slow_round *rd, int32_t nranks)
{
	int32_t k;

	rd->seq = -1;
	rd->n = rd->nexact = rd->narr = rd->nundec = 0;
	rd->t_end = 0;
	rd->any_rate = false;
	for (k = 0; k < nranks; k++) {
		rd->dur[k] = rd->dur_bound[k] = rd->rate[k] = rd->after_hold[k] = NAN;
		rd->hold[k] = 0;
	}
}

/*
 * Communication is involved (S2, S3): its culprit is the rank whose send
 * steps spend the longest in the network, which only step-level records
 * show.  Sampled where the comm has tier C (its proxy ops are seen); after
 * an S1 verdict too, to find a slow link behind the late rank.
 */
/*
 * A step sample of C is possible now: it has tier C, no sample of it is
 * cooling down, and no host would have more than SAMPLE_MAX_LOCAL processes
 * hooked (several samples run at once within that).
 */
bool slow_can_sample(const struct an *an, const struct an_comm *c, uint64_t now)
{
	uint32_t *local, i;
	bool tierc = false, ok = true;
	int32_t k;

	if (c->sampling || now < c->slow->samp_next)
		return false;
	for (k = 0; k < c->nranks; k++)
		tierc |= c->r[k].tierc;
	if (!tierc)
		return false;
	local = calloc(an->nhosts ? an->nhosts : 1, sizeof(*local));
	if (!local)
		return false;
	/* processes hooked already, and C's that are not */
	for (i = 0; i < an->nprocs; i++)
		if (an->procs[i].hooked && an->procs[i].host < an->nhosts)
			local[an->procs[i].host]++;
	for (k = 0; k < c->nranks && ok; k++) {
		const struct an_proc *p = an_proc_of(an, &c->r[k]);

		if (p && p->host < an->nhosts && !p->hooked)
			ok = ++local[p->host] <= SAMPLE_MAX_LOCAL;
	}
	free(local);
	return ok;
}

/* the round the sample's verdict will be about */
static void sample_for(struct an_comm *c, const struct slow_round *rd, int64_t iter, int ev)
{
	struct an_slow *s = c->slow;

	s->pend.seq = rd->seq;
	s->pend.fn = rd->fn;
	s->pend.sig = rd->sig;
	s->pend_iter = iter;
	s->pend_ev = ev;
	s->samp_host = rd->host;
	s->pend.t_end = rd->t_end;
}

/* step hooks on for C's processes, counters from now */
static void sample_go(struct an *an, struct an_comm *c)
{
	struct an_slow *s = c->slow;
	int32_t k;

	s->samp_t0 = s->samp_host < an->nhosts && an->hosts[s->samp_host].now > s->pend.t_end ?
		     an->hosts[s->samp_host].now : s->pend.t_end;
	s->arr_rounds = s->samp_rounds = 0;
	s->arr_rank = -1;
	for (k = 0; k < c->nranks; k++) {
		s->arr_last[k] = s->arr_held[k] = 0;
		s->arr_holder[k] = 0;
		s->arr_gap[k] = 0;
		s->net0[3 * k] = c->r[k].net_ns;
		s->net0[3 * k + 1] = c->r[k].net_bytes;
		s->net0[3 * k + 2] = (double)c->r[k].net_steps;
	}
	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
			": sampling step hooks\n", c->hash, s->pend.seq);
	an_suspect_comm(an, c, true, true);
}

void slow_start_sample(struct an *an, struct an_comm *c, const struct slow_round *rd,
		       int64_t iter, int ev)
{
	sample_for(c, rd, iter, ev);
	sample_go(an, c);
}

/* the sample is long enough (or timed out): rates, then the verdict */
static void end_sample(struct an *an, struct an_comm *c, uint64_t now)
{
	struct an_slow *s = c->slow;
	uint32_t timed = 0, ready = 0;
	int32_t k;

	for (k = 0; k < c->nranks; k++) {
		const struct an_rank *r = &c->r[k];
		double ns = r->net_ns - s->net0[3 * k];
		double bytes = r->net_bytes - s->net0[3 * k + 1];
		double steps = (double)r->net_steps - s->net0[3 * k + 2];

		s->srate[k] = s->slat[k] = NAN;
		if (steps >= 1 && ns > 0) {
			s->slat[k] = ns / steps;
			s->srate[k] = bytes * 1e9 / ns;
			timed++;
			ready += steps >= SAMPLE_STEPS;
		}
	}
	if (ready < (uint32_t)c->nranks && now - s->samp_t0 < SAMPLE_MAX_NS)
		return;
	s->have_srate = timed >= 2;
	an_suspect_comm(an, c, false, true);
	s->pend.t_end = now;
	s->pend.host = s->samp_host;
	if (s->pend_ev & PEND_RISE) {
		slow_rise_sampled(an, c, now);
	} else if (s->pend_ev & PEND_ARRIVE) {
		const struct sl_result *res = sl_det_result(s->det);
		double a, b;

		/* CCL-D's onset where starts are unknown: the sample says who, and why */
		s->arr_cls = slow_sample_decide(c, res->tmax_ns - res->tbase_ns, &s->arr_rank,
						&a, &b, &s->arr_held_by);
		if (s->arr_cls) {
			emit_slow(an, c, &s->pend, s->pend_iter, s->pend_ev & ~PEND_ARRIVE);
		} else {
			s->ccld_unsaid = true;
			s->samp_next = now + SAMPLE_COOLDOWN_NS;
			if (an->debug)
				fprintf(stderr, "an: slow comm %016" PRIx64 " sample: no slow"
					" link, no rank arriving last in most of %u rounds: no"
					" verdict yet\n", c->hash, s->arr_rounds);
		}
		s->arr_rank = -1;
	} else if (s->pend_ev) {
		emit_slow(an, c, &s->pend, s->pend_iter, s->pend_ev);
	} else if (s->have_srate && sl_det_result(s->det)->active) {
		/* after an S1 verdict: an update only if a link is slow too */
		int32_t rank;
		double rate, med, z, lat, lat_med;

		slow_sampled_s2(c, &rank, &rate, &med, &z, &lat, &lat_med);
		if (rank >= 0 && slow_net_outlier(lat, lat_med) &&
		    rank != sl_det_result(s->det)->s1_rank)
			emit_slow(an, c, &s->pend, s->pend_iter, SL_EV_UPDATE);
	}
	if (an->debug) {
		fprintf(stderr, "an: slow comm %016" PRIx64 " sample: ms/step", c->hash);
		for (k = 0; k < c->nranks; k++)
			fprintf(stderr, " %.2f", s->slat[k] / 1e6);
		fprintf(stderr, "\n");
	}
}

void an_slow_clock(struct an *an, uint32_t host, uint64_t now_ns)
{
	struct hkey key;
	size_t it;
	void *v;

	if (!an->nsuspected)
		return;
	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		struct an_comm *c = v;

		if (c->sampling && c->slow && c->slow->samp_host == host &&
		    now_ns >= c->slow->samp_t0 + SAMPLE_NS)
			end_sample(an, c, now_ns);
	}
}

/*
 * CCL-D's events on comm C: verdicts, or first a step sample: for S2/S3
 * (the culprit is the slow link), and for S1 where the rounds' starts are
 * unknown (the CPU runs ahead of its GPU: the sample shows who arrives
 * last).  An onset whose sample named nobody is tried again at the next
 * update of the incident.
 */
static void ccld_event(struct an *an, struct an_comm *c, const struct slow_round *rd,
		       int64_t iter, int ev)
{
	struct an_slow *s = c->slow;
	bool s1 = sl_det_result(s->det)->cls == SL_S1;
	bool runahead = slow_runahead(s);
	bool tierc = false;
	int32_t k;

	for (k = 0; k < c->nranks; k++)
		tierc |= c->r[k].tierc;
	/* an incident of the other detectors is open here: it speaks */
	if ((ev & SL_EV_ONSET) && (s->rise_said || s->peer_active))
		s->ccld_quiet = true;
	if (s->ccld_quiet) {
		if (ev & SL_EV_RECOVERY)
			s->ccld_quiet = false;
		return;
	}
	if (s->ccld_unsaid) {
		if (ev & SL_EV_RECOVERY) {
			/* it ended before anyone was named: nothing to recover */
			s->ccld_unsaid = false;
			ev &= ~SL_EV_RECOVERY;
		} else if (ev & SL_EV_UPDATE) {
			ev = (ev & ~SL_EV_UPDATE) | SL_EV_ONSET;
		}
	}
	/*
	 * Where the CPUs run ahead, a round's durations include GPU work ccld
	 * does not see: neither who arrived last nor P is known from them,
	 * the sample decides both.
	 */
	if ((ev & SL_EV_ONSET) && (!s1 || (runahead && tierc))) {
		s->ccld_unsaid = false;
		if (slow_can_sample(an, c, rd->t_end))
			/* the verdict waits for the sample: its culprit is there */
			slow_start_sample(an, c, rd, iter, ev | (runahead ? PEND_ARRIVE : 0));
		else if (!runahead)
			emit_slow(an, c, rd, iter, ev);	/* as known without one */
		else {
			s->ccld_unsaid = true;		/* later: a sample, or a cascade */
			if (an->debug)
				fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
					": onset waits for a sample (%s)\n", c->hash, rd->seq,
					c->sampling ? "sampling" :
					rd->t_end < s->samp_next ? "cooldown" : "hooks busy");
		}
	} else if (ev & (SL_EV_ONSET | SL_EV_UPDATE | SL_EV_RECOVERY)) {
		s->blind = runahead && (ev & SL_EV_ONSET);
		emit_slow(an, c, rd, iter, ev);
		/*
		 * computation: a sample then tells whether a link is slow too
		 * (not for a cascade: its cause is elsewhere)
		 */
		if ((ev & SL_EV_ONSET) && !c->slow_cascade && slow_can_sample(an, c, rd->t_end))
			slow_start_sample(an, c, rd, iter, 0);
	}
}

/*
 * Step hooks are on in a process of C (a suspected or sampled comm's), or
 * were until less than AN_PERTURB_NS before T_NS: its rounds are perturbed.
 */
static bool comm_hooked(const struct an *an, const struct an_comm *c, uint64_t t_ns)
{
	int32_t k;

	for (k = 0; k < c->nranks; k++) {
		const struct an_proc *p = an_proc_of(an, &c->r[k]);

		if (p && (p->hooked || t_ns < p->perturbed_until))
			return true;
	}
	return false;
}

/* hands the gathered rounds, complete and in order, to the detector */
static void feed(struct an *an, struct an_comm *c)
{
	struct an_slow *s = c->slow;

	for (;;) {
		struct slow_round *rd = &s->r[(uint64_t)s->next % AN_HIST];
		struct sl_round in;
		uint64_t iter_ns;
		bool learned, perturbed, recovery_only = false;
		int ev, k;

		if (rd->seq != s->next || rd->n < (uint32_t)c->nranks)
			return;
		if (an->debug) {
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 " dur_ms",
				c->hash, rd->seq);
			for (k = 0; k < c->nranks; k++)
				fprintf(stderr, " %.1f", rd->dur[k] / 1e6);
			fprintf(stderr, " (starts known %u, seen %u) end %.3f s\n", rd->nexact,
				rd->narr, (double)(rd->t_end % 1000000000000ull) / 1e9);
		}
		in.iter = sl_iter_push(s->iter, rd->sig, rd->t_end, &iter_ns);
		note_waits(s, rd, c->nranks);
		if (c->sampling)
			slow_sampled_round(c, rd);
		perturbed = (an->sink.suspect && comm_hooked(an, c, rd->t_end)) ||
			    (rd->host < an->nhosts &&
			     rd->t_end < an->hosts[rd->host].perturbed_until);
		/*
		 * Step hooks only make rounds longer: a comm already slow is
		 * still judged under them, for its recovery only, by the
		 * starts known without hooks (the arrivals they give would
		 * shorten its rounds); its other events wait for unperturbed
		 * rounds.
		 */
		if (perturbed && !c->sampling && sl_det_result(s->det)->active)
			recovery_only = true;
		else if (perturbed) {
			/* not judged; its iteration is not counted (the phase is kept) */
			if (an->debug)
				fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
					": not judged (%u comms suspected)\n", c->hash,
					rd->seq, an->nsuspected);
			s->skipped = true;
			clear_round(rd, c->nranks);
			s->next++;
			continue;
		}
		if (in.iter >= 0) {
			bool after_skip = s->skipped;

			if (s->skipped && s->last_iter >= 0 && in.iter > s->last_iter + 1)
				s->iter_skip += in.iter - s->last_iter - 1;
			s->skipped = false;
			s->last_iter = in.iter;
			in.iter -= s->iter_skip;
			if (after_skip)
				iter_ns = 0;	/* it spans perturbed rounds */
		}
		in.t_ns = rd->t_end;
		/* recovery under hooks: by the starts known without them */
		in.dur_ns = recovery_only ? rd->dur_bound : rd->dur;
		in.rate = rd->any_rate ? rd->rate : NULL;
		in.sig = rd->sig;
		/* Greyhound: change points of the iteration time, 10% checked */
		if (iter_ns) {
			struct sl_cp cp;

			s->niter++;
			if (sl_bocd_push(s->bocd, (double)iter_ns, &cp)) {
				s->cp = cp;
				s->have_cp = true;
			}
		}
		note_round(s, rd, c->nranks);
		learned = sl_det_base(s->det)->learned;
		ev = sl_det_round(s->det, &in);
		if (recovery_only)
			ev &= SL_EV_RECOVERY;
		if (an->debug && !learned && sl_det_base(s->det)->learned) {
			const struct sl_base *b = sl_det_base(s->det);

			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
				": baseline of %u rounds (%u hiccups left out): %.2f ms,"
				" cv %.3f, thr %.2f%s\n",
				c->hash, rd->seq, b->m, b->trimmed, b->learned_ns / 1e6, b->cv, b->thr,
				b->configured ? " (configured kept)" : "");
		}
		ccld_event(an, c, rd, in.iter, ev);
		if (!recovery_only)
			slow_nohist_round(an, c, rd, learned);
		clear_round(rd, c->nranks);
		s->next++;
	}
}

/*
 * Does rank R's process wait for its GPU before it calls?  Each judged call
 * tells whether it was made on a GPU idle for IDLE_MIN_NS at least (its
 * earlier ops done, the call the start): a process that never does queues
 * its calls, and its compute kernels, ahead of its GPU (PyTorch), and the
 * start of a round is no more than a bound there.  One that does at least
 * now and then (the first op of a step) has no unseen GPU work between its
 * ops: the end of its earlier op is the start.  1 it waits, 0 it does not,
 * -1 not known yet (fewer than PROC_CALLS_MIN calls judged).
 */
static int proc_waits_for_gpu(struct an *an, const struct an_rank *r,
			      const struct an_sig *sg, uint64_t t0, uint64_t idle_since)
{
	struct an_proc *p = r->proc ? &an->procs[r->proc - 1] : NULL;
	uint32_t n;

	if (!p)
		return 0;
	if (idle_since) {
		bool idle = t0 == sg->t_enter && (sg->flags & SIG_IDLE) &&
			    sg->t_enter - idle_since >= IDLE_MIN_NS;

		p->idle_calls = p->idle_calls << 1 | idle;
		p->ncalls++;
	}
	n = p->ncalls < 64 ? p->ncalls : 64;
	if (n < PROC_CALLS_MIN)
		return -1;
	return (uint32_t)__builtin_popcountll(p->idle_calls & (n == 64 ? ~0ull : (1ull << n) - 1)) *
	       10 >= n;
}

void an_slow_duration(struct an *an, struct an_comm *c, int32_t rank,
		      const struct an_sig *sg, uint64_t t_done, uint32_t host)
{
	struct an_slow *s;
	struct slow_round *rd;

	if (!c || c->nranks < 2 || rank < 0 || rank >= c->nranks ||
	    !sg->t_enter || t_done < sg->t_enter)
		return;
	if (!c->slow && !(c->slow = slow_new(an, c->nranks)))
		return;
	s = c->slow;
	if (s->next < 0)
		s->next = sg->seq;
	if (sg->seq < s->next)
		return;		/* that round was handed over, or skipped */
	/* a round that cannot complete any more (a rank never reported it) */
	while (sg->seq >= s->next + AN_HIST) {
		rd = &s->r[(uint64_t)s->next % AN_HIST];
		if (rd->seq == s->next)
			clear_round(rd, c->nranks);
		s->next++;
		feed(an, c);
	}
	rd = &s->r[(uint64_t)sg->seq % AN_HIST];
	if (rd->seq != sg->seq) {
		clear_round(rd, c->nranks);
		rd->seq = sg->seq;
		rd->sig = sig_hash(sg);
		rd->fn = sg->fn;
	}
	if (isnan(rd->dur[rank])) {
		const struct an_op_done *a = &c->r[rank].op_arr[(uint64_t)sg->seq % AN_HIST];
		uint64_t idle_since;
		uint64_t t0 = an_gpu_start(an, c->hash, &c->r[rank], sg, t_done,
					   &c->slow->holder[rank], &idle_since);

		/*
		 * The start is known where step hooks saw the GPU reach the op,
		 * or where the process waits for its GPU before it calls (then
		 * the GPU has no work ccld does not see queued): else t0 is only
		 * a bound, the GPU may have computed after it.
		 */
		rd->dur_bound[rank] = (double)(t_done - t0);
		if (a->seq == sg->seq && a->t >= sg->t_enter && a->t <= t_done) {
			rd->hold[rank] = c->slow->holder[rank];
			rd->after_hold[rank] = a->t >= t0 ? (double)(a->t - t0) : 0;
			t0 = a->t;
			rd->narr++;
			rd->nexact++;
		} else {
			int waits = proc_waits_for_gpu(an, &c->r[rank], sg, t0, idle_since);

			rd->nexact += waits > 0;
			rd->nundec += waits < 0;
		}
		rd->dur[rank] = (double)(t_done - t0);
		rd->n++;
		/* the rank's send rate of its latest proxy op in this comm */
		if (c->r[rank].send_rate > 0) {
			rd->rate[rank] = c->r[rank].send_rate;
			rd->any_rate = true;
		}
	}
	/* the round's end on one clock per comm: its rank 0's */
	if (rank == 0 || !rd->t_end) {
		rd->t_end = t_done;
		rd->host = host;
	}
	feed(an, c);
}
