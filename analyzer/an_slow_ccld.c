// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CCL-D's events on a comm (onset, update, recovery) and its verdicts of
 * class S1/S2/S3: the culprit rank, the comparable-group check (Greyhound
 * 4.3), the iteration time's change point, and a culprit already slow in
 * another comm making this one a cascade of it (the same slow rank slows
 * every comm it is in).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_slow_int.h"

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

void slow_verdict_frame(const struct an *an, const struct an_comm *c, struct an_verdict *v,
			enum an_vkind kind, enum an_class cls, int64_t seq, int fn,
			uint32_t host, uint64_t detected_ns, int32_t rank)
{
	memset(v, 0, sizeof(*v));
	v->kind = kind;
	v->cls = cls;
	v->role = AN_ROOT;
	v->comm = c->hash;
	v->seq = seq;
	v->fn = fn;
	v->clock_host = host;
	v->detected_ns = detected_ns;
	slow_add_culprit(an, c, v, rank);
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
	/* HELD's own straggler, where its rounds show it: a root there first */
	slow_hold_chain(an, v, held, false);
	h = an_comm_get(an, held, 0, false);
	v->role = AN_CASCADE;
	v->blocked_comm = held;
	v->blocked_seq = h && h->slow && h->slow->active ? h->slow_seq :
			 (h ? h->r[0].entered : -1);
	return true;
}

/*
 * a comm whose open incident names the same culprit process, or names any
 * rank of an intra-node comm holding it (root_unseen), else NULL
 */
const struct an_comm *slow_root_of(struct an *an, const struct an_comm *c, int32_t rank)
{
	const struct an_proc *mine = an_proc_of(an, &c->r[rank]);
	const struct an_comm *h;
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
		/* a straggler named as any rank of an intra-node comm, this one's too */
		if (o->slow->root_unseen && (h = an_comm_get(an, o->slow->root_unseen, 0, false)) &&
		    an_comm_has_proc(h, c->r[rank].proc))
			return o;
	}
	return NULL;
}

void slow_note_round(struct an_slow *s, const struct slow_round *rd, int32_t nranks)
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

bool slow_stat_push(struct sl_comm_stat **st, size_t *n, size_t *cap,
		    const struct an_comm *c, uint64_t sig, double median_ns)
{
	struct sl_comm_stat *m;

	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		m = realloc(*st, *cap * sizeof(**st));
		if (!m) {
			free(*st);
			*st = NULL;
			return false;
		}
		*st = m;
	}
	memset(&(*st)[*n], 0, sizeof((*st)[*n]));
	(*st)[*n].comm = c->hash;
	(*st)[*n].sig = sig;
	(*st)[*n].nranks = (uint32_t)c->nranks;
	(*st)[*n].median_ns = median_ns;
	(*n)++;
	return true;
}

/* C's recent judged rounds of signature SIG, NULL if none */
static const struct sig_hist *sig_hist_of(const struct an_comm *c, uint64_t sig)
{
	uint32_t i;

	for (i = 0; c->slow && i < GROUP_SIGS; i++)
		if (c->slow->gh[i].n && c->slow->gh[i].sig == sig)
			return &c->slow->gh[i];
	return NULL;
}

/* median Tmax of C's recent judged rounds of signature SIG, NaN if none */
static double sig_median(const struct an_comm *c, uint64_t sig)
{
	const struct sig_hist *h = sig_hist_of(c, sig);
	double scratch[GROUP_HIST];

	return h ? sl_median(h->tmax, h->n, scratch) : NAN;
}

/*
 * Greyhound's comparable groups (4.3): the comms of this one's size whose
 * recent rounds of the same op signature have a median; is this one slower
 * than its group (sl_group_check: over the median by 3 robust sigmas and
 * 10%)?  OTHERS_SLOWER (NULL: not wanted) counts the others GROUP_RATIO
 * times the group's median or more.  Returns the group's size (0: fewer
 * than 3, no judgement).
 */
static uint32_t group_check(struct an *an, const struct an_comm *c, uint64_t sig,
			    double *mine, double *group, bool *deviant, uint32_t *others_slower)
{
	struct sl_comm_stat *st = NULL;
	size_t ns = 0, cap = 0, me = SIZE_MAX;
	uint32_t size = 0;
	struct hkey key;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;
		double m;

		if (o->nranks != c->nranks || !isfinite(m = sig_median(o, sig)))
			continue;
		if (o == c)
			me = ns;
		if (!slow_stat_push(&st, &ns, &cap, o, sig, m))
			return 0;
	}
	if (me != SIZE_MAX && ns >= 3 && sl_group_check(st, ns) >= 0) {
		size_t k;

		*mine = st[me].median_ns;
		*group = st[me].group_median_ns;
		*deviant = st[me].deviant;
		size = st[me].group_size;
		for (k = 0; others_slower && k < ns; k++)
			*others_slower += k != me &&
					  st[k].median_ns >= GROUP_RATIO * st[me].group_median_ns;
	}
	free(st);
	return size;
}

/*
 * C's last HOSTWIDE_ROUNDS rounds of signature SIG over its baseline for
 * them: the smallest, median and largest ratio; false if fewer or no
 * baseline
 */
static bool recent_ratios(const struct an_comm *c, uint64_t sig, double *min, double *med,
			  double *max)
{
	double tb, r[HOSTWIDE_ROUNDS], scratch[HOSTWIDE_ROUNDS];
	const struct sig_hist *h = sig_hist_of(c, sig);
	uint32_t i;

	if (!h || h->n < HOSTWIDE_ROUNDS || !((tb = sl_det_tbase(c->slow->det, sig)) > 0))
		return false;
	*min = INFINITY;
	*max = 0;
	for (i = 0; i < HOSTWIDE_ROUNDS; i++) {
		r[i] = h->tmax[(h->pos - 1 - i) % GROUP_HIST] / tb;
		*min = fmin(*min, r[i]);
		*max = fmax(*max, r[i]);
	}
	*med = sl_median(r, HOSTWIDE_ROUNDS, scratch);
	return true;
}

/*
 * Did O's rounds, in 2 of its last HOSTWIDE_ROUNDS, wait for a rank whose
 * GPU came late from its op in a comm holding process PROC?  Then O is
 * slow because of what C's candidate does or waits for, not the host.
 */
static bool held_alike(struct an *an, const struct an_comm *o, uint32_t proc)
{
	const struct an_slow *s = o->slow;
	uint32_t i, n = s->nrh < HOSTWIDE_ROUNDS ? s->nrh : HOSTWIDE_ROUNDS, alike = 0;
	const struct an_comm *hc;

	for (i = 0; proc && i < n; i++) {
		const struct round_hold *h = &s->rh[(s->nrh - 1 - i) % ROUND_HOLDS];

		if (h->holder && (hc = an_comm_get(an, h->holder, 0, false)) &&
		    an_comm_has_proc(hc, proc))
			alike++;
	}
	return 2 * alike > HOSTWIDE_ROUNDS;
}

/*
 * A noisy neighbour, or any contention of the whole host, slows every
 * comm's rounds: in each, a rank waits for another whose CPU was taken.
 * C's slowdown is the host's where the comparable comms (its size, op
 * signature SIG; none holding the process of CAND, the candidate culprit,
 * whose own slowness would reach them), HOSTWIDE_MIN_OTHERS of them at
 * least, were slow too in their last HOSTWIDE_ROUNDS rounds: the median
 * of their slowest, each over its own baseline, HOSTWIDE_RATIO or more;
 * and C's rounds (their median) were not GROUP_RATIO times slower than
 * that: no rank of C is the cause.  A straggler slows its own comms, not
 * the comparable ones; rounds rather than medians over GROUP_HIST: at the
 * first comm's onset the others' latest slow round may not have ended.
 * Nor do comparable comms count whose rounds waited for a rank held by an
 * op of a comm holding CAND's process: a straggler in a TP comm of 4 makes
 * every DP comm of 2 alike slow, each waiting for a rank late from that TP
 * op (cascades of it), or for the straggler itself.
 */
static bool slow_hostwide(struct an *an, const struct an_comm *c, uint64_t sig,
			  int32_t cand)
{
	double slowest[HOSTWIDE_MAX], scratch[HOSTWIDE_MAX], mine, lo, hi, others;
	uint32_t proc = cand >= 0 && cand < c->nranks ? c->r[cand].proc : 0;
	size_t n = 0, it;
	struct hkey key;
	void *v;

	if (!recent_ratios(c, sig, &lo, &mine, &hi))
		return false;
	for (it = 0; n < HOSTWIDE_MAX && hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;

		if (o != c && o->nranks == c->nranks && !an_comm_has_proc(o, proc) &&
		    recent_ratios(o, sig, &lo, &hi, &slowest[n]) && !held_alike(an, o, proc))
			n++;
	}
	if (n < HOSTWIDE_MIN_OTHERS)
		return false;
	others = sl_median(slowest, n, scratch);
	return others >= HOSTWIDE_RATIO && mine < GROUP_RATIO * others;
}

/*
 * A level shift cut C's baseline short (slow_detect.c shift_cut: a
 * slowdown that began while it was learned), but the rounds after the
 * "shift" are what its comparable comms (its size, op signature SIG, a
 * baseline of their own with no shift) learned as normal: the rounds
 * before it were a fast start, not C's health.  Random job 175 (healthy,
 * 16 ranks on this VM, traced from the start): a TP comm of 2 kept 11
 * rounds of its first op, 0.5 ms, and left 89 out; its 8 comparable
 * comms learned 4.1-5.9 ms; its rounds of 4.4 ms were then S3, R 8.6.
 * Its baseline is HOSTWIDE_RATIO times below the others' median at least,
 * and its latest rounds (their median) not GROUP_RATIO times over it.
 */
static bool shift_below_peers(struct an *an, const struct an_comm *c, uint64_t sig)
{
	double tb[HOSTWIDE_MAX], scratch[HOSTWIDE_MAX], mine, peers, lo, med, hi;
	size_t n = 0, it;
	struct hkey key;
	void *v;

	if (!sl_det_base(c->slow->det)->shifted || !((mine = sl_det_tbase(c->slow->det, sig)) > 0) ||
	    !recent_ratios(c, sig, &lo, &med, &hi))
		return false;
	for (it = 0; n < HOSTWIDE_MAX && hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;
		const struct sl_base *b;

		if (o == c || o->nranks != c->nranks || !o->slow || !sig_hist_of(o, sig))
			continue;
		b = sl_det_base(o->slow->det);
		if (b->learned && !b->shifted && (tb[n] = sl_det_tbase(o->slow->det, sig)) > 0)
			n++;
	}
	if (n < HOSTWIDE_MIN_OTHERS)
		return false;
	peers = sl_median(tb, n, scratch);
	return mine * HOSTWIDE_RATIO < peers && med * mine < GROUP_RATIO * peers;
}

bool slow_echo(struct an *an, const struct an_comm *c, uint64_t sig)
{
	double mine = NAN, group = NAN;
	uint32_t others = 0;
	bool deviant = false;

	return group_check(an, c, sig, &mine, &group, &deviant, &others) && !deviant &&
	       mine < GROUP_RATIO * group && others > 0;
}

/* is each of C's last HOSTWIDE_ROUNDS rounds of SIG HOSTWIDE_RATIO x its baseline? */
static bool slow_alone(const struct an_comm *c, uint64_t sig)
{
	double min, med, max;

	return recent_ratios(c, sig, &min, &med, &max) && min >= HOSTWIDE_RATIO;
}

/* a part sample's verdict: which part of the comm's processes named it */
void slow_part_evidence(const struct an_comm *c, struct an_verdict *v)
{
	if (!c->slow->samp_in)
		return;
	if (c->slow->blk_parts)
		an_text(v, "; the comm has more processes on a host than may be"
			" hooked at once: sampled %d per host at a time, its %u parts"
			" together named them", SAMPLE_MAX_LOCAL, c->slow->samp_nparts);
	else
		an_text(v, "; the comm has more processes on a host than may be"
			" hooked at once: sampled %d per host at a time, part %u of %u"
			" named %s", SAMPLE_MAX_LOCAL, c->slow->samp_part + 1,
			c->slow->samp_nparts, c->slow->blk_n ? "them" : "it");
	an_val_i(v, "sample_part", c->slow->samp_part + 1);
	an_val_i(v, "sample_parts", c->slow->samp_nparts);
}

void slow_emit(struct an *an, struct an_comm *c, const struct slow_round *rd,
	       int64_t iter, int ev)
{
	const struct sl_result *res = sl_det_result(c->slow->det);
	struct an_verdict *v = &an->tmp;
	const struct an_comm *root;
	/*
	 * who keeps the others waiting in p2p ops before the rounds, where
	 * every rank arrives together (the sample found it, or the incident's
	 * onset did: its updates keep that culprit)
	 */
	const struct slow_p2p_found *p2p =
		c->slow->arr_rank >= 0 && c->slow->arr_p2p.comm ? &c->slow->arr_p2p :
		c->slow->arr_rank < 0 && (ev & SL_EV_UPDATE) && c->slow->said_p2p.comm ?
		&c->slow->said_p2p : NULL;
	/* who arrives last: the step sample's arrivals where starts are unknown */
	bool arrived = (c->slow->arr_rank >= 0 && c->slow->arr_cls == AN_S1) || p2p;
	int32_t s1_rank = c->slow->arr_rank >= 0 ? c->slow->arr_rank :
			  p2p ? c->slow->said_p2p_rank : res->s1_rank;
	int32_t s2_rank = res->s2_rank;
	double s2_rate = res->s2_rate, s2_med = res->rate_median, s2_z = res->s2_z;
	double s2_lat = NAN, lat_med = NAN;
	enum sl_class cls;
	double gmine = NAN, gmed = NAN;
	uint32_t gsize = 0, tcp_links = 0, tcp_retrans = 0, tcp_mine = 0;
	int32_t tcp_rank, net_rank;
	bool tcp_reclass;
	bool gdev = false;
	uint64_t held, unseen;
	/* the sampled arrivals' culprit's share of the wait and mean lead */
	double arr_share = 0, arr_lead = NAN;
	bool own_p2p = false;
	/* a sample that started afresh for a later slowdown (slow_sample_reanchor) */
	bool anew = rd == &c->slow->pend && c->slow->pend_onset;
	uint64_t onset_ns = anew ? c->slow->pend_onset : res->onset_ns;
	int64_t onset_iter = anew ? iter : res->onset_iter + c->slow->iter_skip;

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
	tcp_rank = an_net_common_rank(an, c, &tcp_links, &tcp_retrans, &tcp_mine);
	tcp_reclass = tcp_rank >= 0 && tcp_mine >= AN_NET_MIN_RETRANS &&
		      (cls == SL_S1 || cls == SL_S3);
	net_rank = tcp_rank >= 0 ? tcp_rank : s2_rank;
	if (c->slow->arr_rank >= 0) {
		/* the sample decided, P could not (durations include unseen GPU work) */
		cls = arrived ? SL_S1 : SL_S2;
		if (!arrived)	/* the sampled sender, or the lossy link's end (slow_net_end) */
			net_rank = tcp_rank >= 0 && tcp_mine >= AN_NET_MIN_RETRANS ? tcp_rank :
				   c->slow->arr_rank;
	} else if (tcp_reclass) {
		cls = SL_S2;
	}
	else if (cls == SL_S1 && !arrived && s2_rank >= 0 && s2_rank != s1_rank &&
		 slow_link_outlier(c, s2_rank, s2_lat, lat_med))
		cls = SL_S3;
	v->cls = cls == SL_S2 ? AN_S2 : cls == SL_S3 ? AN_S3 : AN_S1;
	if (v->kind == AN_V_RECOVERED && c->slow->active)
		v->cls = c->slow->cls;	/* the class it was reported with */
	v->comm = c->hash;
	v->seq = rd->seq;
	v->fn = rd->fn;
	v->clock_host = rd->host;
	v->detected_ns = rd->t_end;
	v->onset_ns = onset_ns;
	v->role = AN_ROOT;
	if (cls == SL_S2)
		slow_add_culprit(an, c, v, net_rank);
	else
		slow_add_culprit(an, c, v, s1_rank);
	if (cls == SL_S3)
		slow_add_culprit(an, c, v, net_rank);
	if (v->kind == AN_V_RECOVERED) {
		an_text(v, "comm %016" PRIx64 " is back to"
			" its baseline round time (%.1f ms) for %u iterations since"
			" iteration %" PRId64, c->hash, res->tbase_ns / 1e6,
			3u, res->recover_iter + c->slow->iter_skip);
		c->slow->have_srate = false;
		c->slow->active = false;
		c->slow_cascade = false;
		memset(&c->slow->said_p2p, 0, sizeof(c->slow->said_p2p));
		c->slow->said_arrived = false;
	} else {
		c->slow->active = true;
		c->slow->cls = v->cls;
		c->slow->root_cul = v->ncul ? v->cul[0].rank : -1;
		c->slow->root_unseen = 0;
		root = v->ncul ? slow_root_of(an, c, v->cul[0].rank) : NULL;
		if (arrived && !p2p)
			slow_arrival_culprit(c, &arr_share, &arr_lead, NULL);
		if (p2p && v->kind == AN_V_NEW) {
			c->slow->said_p2p = *p2p;
			c->slow->said_p2p_rank = s1_rank;
		}
		if (v->kind == AN_V_NEW)
			c->slow->said_arrived = arrived && !p2p;
		/* with arrivals sampled: only where it came straight from that op */
		held = cls == SL_S2 || s1_rank < 0 ? 0 :
		       p2p ? 0 : arrived ? c->slow->arr_held_by :
		       slow_located_holder(c->slow, res->t_ns, s1_rank);
		/*
		 * ... or where it waited in another comm for another rank
		 * (random job 1168, TP 2 x DP 2, rank 2 computing slower:
		 * rank 3 waits for it in their TP comm, then reaches its DP
		 * comm last after its own work, and was named there)
		 */
		if (!held && arrived && !p2p && cls != SL_S2 && s1_rank >= 0)
			held = slow_waited_elsewhere(an, c, s1_rank);
		if (held && arrived) {
			const struct an_comm *h = an_comm_get(an, held, 0, false);

			if (h && slow_p2p_late(an, h, c, s1_rank, arr_lead)) {
				held = 0;	/* its own pipeline op: the straggler */
				own_p2p = true;
			}
		}
		c->slow_cascade = root != NULL || held;
		if (!slow_cascade_of(an, v, root, held))
			c->slow_seq = rd->seq;
		an_text(v, "comm %016" PRIx64 " is slower: round time %.1f ms against a"
			" baseline of %.1f ms (R = %.2f > %.2f) since iteration %" PRId64
			"; P = %.2f: %s (%s)", c->hash, res->tmax_ns / 1e6,
			res->tbase_ns / 1e6, res->r, res->thr, onset_iter, res->p,
			class_words(cls), an_class_name(v->cls));
		if (cls != SL_S2 && p2p) {
			slow_p2p_evidence(v, s1_rank, p2p);
		} else if (cls != SL_S2 && arrived && c->slow->blk_n) {
			slow_block_evidence(an, c, v, SAMPLE_NS / 1e9);
			slow_part_evidence(c, v);
		} else if (cls != SL_S2 && arrived) {
			an_text(v, "; rank %d's GPU reaches the op last in %u of %u"
				" rounds sampled with step hooks, %.1f ms after the"
				" others (mean; %.0f%% of their wait; its CPU queues"
				" its calls ahead of its GPU, so the call is not its"
				" arrival)", s1_rank, c->slow->arr_last[s1_rank],
				c->slow->arr_rounds, arr_lead / 1e6, 100 * arr_share);

			/*
			 * What decided root or cascade, for a live sample that a
			 * replay cannot redo: the rounds it came straight from
			 * another comm's op, and that comm
			 */
			an_val_i(v, "arrive_last_held", c->slow->arr_held[s1_rank]);
			if (c->slow->arr_holder[s1_rank]) {
				char hex[24];

				snprintf(hex, sizeof(hex), "%016" PRIx64,
					 c->slow->arr_holder[s1_rank]);
				an_val_s(v, "arrive_holder", hex);
			}
			if (own_p2p)
				an_val_i(v, "late_in_own_p2p", 1);
			if (!held && !root && (unseen = slow_unseen_holder(an, c, s1_rank)))
				slow_unseen_evidence(an, c, v, unseen);
			slow_part_evidence(c, v);
		} else if (cls != SL_S2 && s1_rank >= 0) {
			an_text(v, "; rank %d arrives last (shortest duration %.1f ms,"
				" z %.1f)%s", s1_rank, res->s1_dur_ns / 1e6, res->s1_z,
				c->slow->blind ? " - not certain: the CPUs queue their"
				" calls ahead of their GPUs and no step-level record"
				" shows when each GPU reached the op" : "");
		}
		if (cls != SL_S1 && s2_rank >= 0 && c->slow->have_srate)
			an_text(v, "; rank %d has the lowest send rate: %.2f ms per step in"
				" the network, the others' median %.2f ms (%.0f B/s,"
				" z %.1f; step hooks sampled %.1f s)", s2_rank,
				s2_lat / 1e6, lat_med / 1e6, s2_rate, s2_z,
				SAMPLE_NS / 1e9);
		else if (cls != SL_S1 && s2_rank < 0)
			an_text(v, "; no rank's send rate is known (no step-level"
				" records came: step hooks unavailable)");
		else if (cls != SL_S1 && s2_rank >= 0)
			an_text(v, "; rank %d has the lowest rate (%.0f B/s, median %.0f;"
				" op-level: bytes over the op's time, step hooks"
				" unavailable)", s2_rank, s2_rate, s2_med);
		if (cls == SL_S2 && res->cls == SL_S1 && c->slow->arr_rank >= 0)
			an_text(v, "; its link alone costs the round's whole extra (%.1f ms):"
				" the uneven durations are its echo, not a late arrival",
				(res->tmax_ns - res->tbase_ns) / 1e6);
		if (tcp_rank >= 0)
			an_text(v, "; rank %d is at one end of the connections with %u of"
				" the %u TCP retransmits on %u connections of the comm: its"
				" link%s", tcp_rank, tcp_mine, tcp_retrans, tcp_links,
				tcp_reclass ? "; the rank arriving last is"
				" an echo of the earlier ops' network delays: network, not"
				" computation" : "");
		if (res->slow_iters)
			an_text(v, "; %.2f s lost so far (%.1f ms per slow iteration over %u)",
				res->lost_ns / 1e9, res->lost_ns / 1e6 / res->slow_iters,
				res->slow_iters);
		gsize = group_check(an, c, rd->sig, &gmine, &gmed, &gdev, NULL);
		if (gsize)
			an_text(v, "; %s its %u comparable comms (median round %.1f ms,"
				" group %.1f ms)", gdev ? "slower than" : "like",
				gsize, gmine / 1e6, gmed / 1e6);
		an_text(v, "; durations from the GPU-side start (the call, or"
			" the end of the process's earlier op in another comm)"
			" to completion (proxy idle, tier C, else tier B),"
			" each on its rank's clock%s",
			root ? "; a cascade: the same rank slows a comm"
			" already reported" :
			held ? "; a cascade: that rank's GPU was held by"
			" its op in another comm" : "");
	}
	an_val_f(v, "tbase_ms", res->tbase_ns / 1e6);
	an_val_f(v, "tmax_ms", res->tmax_ns / 1e6);
	an_val_f(v, "tmin_ms", res->tmin_ns / 1e6);
	an_val_f(v, "r", res->r);
	an_val_f(v, "thr", res->thr);
	an_val_f(v, "p", res->p);
	an_val_i(v, "onset_iter", onset_iter);
	an_val_i(v, "iter", res->iter + c->slow->iter_skip);
	an_val_i(v, "at_iter", iter);	/* the iteration that gave this verdict */
	an_val_i(v, "nranks", c->nranks);
	an_val_f(v, "lost_s", res->lost_ns / 1e9);
	an_val_i(v, "slow_iters", res->slow_iters);
	if (s1_rank >= 0) {
		an_val_i(v, "s1_rank", s1_rank);
		an_val_f(v, "s1_dur_ms", res->s1_dur_ns / 1e6);
		an_val_f(v, "s1_z", res->s1_z);
		if (s1_rank == res->s1_rank && isfinite(res->s1_share))
			an_val_f(v, "s1_share", res->s1_share);
	}
	if (s2_rank >= 0) {
		an_val_i(v, "s2_rank", s2_rank);
		an_val_f(v, "s2_rate", s2_rate);
		an_val_f(v, "s2_z", s2_z);
		an_val_f(v, "s2_step_ms", s2_lat / 1e6);
	}
	if (gsize) {
		an_val_i(v, "group_size", gsize);
		an_val_f(v, "group_median_ms", gmed / 1e6);
		an_val_i(v, "group_deviant", gdev);
	}
	if (v->kind == AN_V_RECOVERED)
		an_val_i(v, "recover_iter", res->recover_iter + c->slow->iter_skip);
	/* the iteration time before and after the latest change point */
	if (c->slow->have_cp && c->slow->niter - c->slow->cp.at <= 16) {
		an_val_f(v, "iter_ms_before", c->slow->cp.before / 1e6);
		an_val_f(v, "iter_ms_after", c->slow->cp.after / 1e6);
		an_text(v, "; iteration time %.1f ms -> %.1f ms (change point)",
			c->slow->cp.before / 1e6, c->slow->cp.after / 1e6);
	}
	if (tcp_rank >= 0)
		an_val_i(v, "tcp_rank", tcp_rank);
	if (v->kind != AN_V_RECOVERED) {
		an_hw_note(an, v);
		an_warn_note(an, v);
		an_env_note(an, v);
		an_net_note(an, c, v);
		slow_shed_note(c, v);
	}
	an->stats.verdicts++;
	if (an->sink.verdict)
		an->sink.verdict(an->sink.ctx, v);
	if (v->kind == AN_V_RECOVERED)
		slow_chain_back(an, c, v->detected_ns, v->clock_host);
}

int32_t slow_tcp_end(const struct an *an, const struct an_comm *c)
{
	uint32_t links, retrans, mine;
	int32_t r = an_net_common_rank(an, c, &links, &retrans, &mine);

	return r >= 0 && mine >= AN_NET_MIN_RETRANS ? r : -1;
}

/*
 * A sender is slow when its sends cross a lossy link, which is its peer's
 * link as often as its own: where the kernel's retransmits name one link,
 * its rank is the culprit, not the slowest sender the step sample found
 * (test_trace_tcp_loss: rank 0's steps to rank 2, whose link lost
 * packets, 3.56 ms against the others' 1.43).  None found: SAMPLED.
 */
int32_t slow_net_end(const struct an *an, const struct an_comm *c, int32_t sampled)
{
	int32_t end = sampled >= 0 ? slow_tcp_end(an, c) : -1;

	return end >= 0 ? end : sampled;
}

/*
 * While one rank's link loses packets, which GPU reaches an op last is an
 * echo of the earlier ops' network delays: where the kernel's TCP
 * retransmits name one link (slow_tcp_end), a step sample's straggler is
 * that link's slowdown (S2), as CCL-D's own onset reclasses (slow_emit's
 * tcp_reclass).  Not a block of ranks or a p2p straggler: their evidence is
 * not who arrives last.  (test_trace_tcp_loss, CI: the network part's rise
 * sampled rank 2, the lossy link's end, last in 76% of its rounds: S1.)
 */
int32_t slow_tcp_echo(const struct an *an, const struct an_comm *c, enum an_class cls)
{
	const struct an_slow *s = c->slow;

	if (cls != AN_S1 || !s || s->blk_n || s->arr_p2p.comm)
		return -1;
	return slow_tcp_end(an, c);
}

int32_t slow_sampled_culprit(const struct an *an, const struct an_comm *c, enum an_class *cls,
			     int32_t rank)
{
	int32_t echo = slow_tcp_echo(an, c, *cls);

	if (echo >= 0) {
		*cls = AN_S2;
		return echo;
	}
	if (*cls != AN_S2)
		return rank;
	return rank >= 0 ? slow_net_end(an, c, rank) : slow_tcp_end(an, c);
}

/*
 * CCL-D's events on comm C: verdicts, or first a step sample: for S2/S3
 * (the culprit is the slow link), for S1 where the rounds' starts are
 * unknown (the CPU runs ahead of its GPU: the sample shows who arrives
 * last), and for S1 with P near its bound (P_S1_SAMPLE).  An onset whose
 * sample named nobody is tried again at the next update of the incident.
 */
void slow_ccld_event(struct an *an, struct an_comm *c, const struct slow_round *rd,
		     int64_t iter, int ev)
{
	struct an_slow *s = c->slow;
	const struct sl_result *res = sl_det_result(s->det);
	bool s1 = res->cls == SL_S1;
	bool runahead = slow_runahead(s);
	bool tierc = false, border;
	int32_t k;

	for (k = 0; k < c->nranks; k++)
		tierc |= c->r[k].tierc;
	border = s1 && tierc && res->p < P_S1_SAMPLE;
	if (an->debug && (ev & SL_EV_ONSET))
		fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 ": CCL-D onset, P %.2f,"
			" located rank %d last in %.0f%% of the slow rounds' wait%s\n", c->hash,
			rd->seq, res->p, res->s1_rank, 100 * res->s1_share,
			runahead ? " (the CPUs run ahead)" : "");
	/* its baseline a fast start that its comparable comms never had: again */
	if ((ev & SL_EV_ONSET) && shift_below_peers(an, c, rd->sig)) {
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 ": its"
				" baseline, cut short by a level shift, is far below its"
				" comparable comms' and its rounds are in line with theirs:"
				" onset dropped\n", c->hash, rd->seq);
		slow_det_relearn(an, c);
		return;
	}
	/* an incident of the other detectors is open here: it speaks */
	if ((ev & SL_EV_ONSET) && (s->rise_said || s->peer_active || (s->active && s->chain_of)))
		s->ccld_quiet = true;
	if (s->ccld_quiet) {
		if (ev & SL_EV_RECOVERY)
			s->ccld_quiet = false;
		return;
	}
	/*
	 * An onset while the whole host is slow names nobody; said once this
	 * comm alone stays slow, forgotten if it recovers first
	 */
	if (s->ccld_hostwide) {
		if (ev & SL_EV_RECOVERY) {
			s->ccld_hostwide = false;
			return;
		}
		if (slow_hostwide(an, c, rd->sig, res->s1_rank) || slow_echo(an, c, rd->sig) ||
		    !slow_alone(c, rd->sig))
			return;
		s->ccld_hostwide = false;
		ev = (ev & ~SL_EV_UPDATE) | SL_EV_ONSET;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
				": slower than its comparable comms now: its onset"
				" is said\n", c->hash, rd->seq);
	} else if ((ev & SL_EV_ONSET) && slow_hostwide(an, c, rd->sig, res->s1_rank)) {
		s->ccld_hostwide = true;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
				": its comparable comms are as slow (the host, not a"
				" rank): onset held\n", c->hash, rd->seq);
		return;
	} else if ((ev & SL_EV_ONSET) && slow_echo(an, c, rd->sig)) {
		s->ccld_hostwide = true;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
				": like its comparable comms, one of which is slower"
				" (its echo, not a rank of its own): onset held\n",
				c->hash, rd->seq);
		return;
	}
	/*
	 * Where the starts are known, CCL-D's locator names the rank that
	 * arrived last in one round, the slow round of largest spread.  A
	 * straggler is last in the rounds that waited most; a busy host
	 * deschedules one process, then another, and the slow rounds wait for
	 * different ranks.  An S1 onset whose located rank was last in under
	 * S1_SHARE of the slow rounds' wait is held, said once it is (while
	 * the incident lasts), forgotten if it recovers first.  A lossy link
	 * makes each of its ends late in turn as well: where the kernel counts
	 * enough TCP retransmits on the comm's connections, all with one rank
	 * at an end, the split is that link's echo and the onset is said
	 * (slow_emit names the network).
	 */
	if (s->ccld_split) {
		if (ev & SL_EV_RECOVERY) {
			s->ccld_split = false;
			return;
		}
		if (!(res->s1_share >= S1_SHARE) && slow_tcp_end(an, c) < 0)
			return;
		s->ccld_split = false;
		ev = (ev & ~SL_EV_UPDATE) | SL_EV_ONSET;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 ": rank %d now"
				" last in %.0f%% of the slow rounds' wait%s: its onset is said\n",
				c->hash, rd->seq, res->s1_rank, 100 * res->s1_share,
				res->s1_share >= S1_SHARE ? "" : ", TCP retransmits at one rank's link");
	} else if ((ev & SL_EV_ONSET) && s1 && !runahead && res->s1_share < S1_SHARE &&
		   slow_tcp_end(an, c) < 0) {
		s->ccld_split = true;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 ": rank %d last"
				" in %.0f%% of the slow rounds' wait only (others were late in"
				" the rest): onset held\n", c->hash, rd->seq, res->s1_rank,
				100 * res->s1_share);
		return;
	}
	if (s->ccld_unsaid) {
		if (ev & SL_EV_RECOVERY) {
			/* it ended before anyone was named: nothing to recover */
			s->ccld_unsaid = false;
			ev &= ~SL_EV_RECOVERY;
			slow_unnamed_ended(c, rd->t_end);
		} else if (ev & SL_EV_UPDATE) {
			ev = (ev & ~SL_EV_UPDATE) | SL_EV_ONSET;
		}
	}
	/* an onset whose sample waits: nothing said yet, nothing to update */
	if (s->samp_defer) {
		if (ev & SL_EV_RECOVERY)
			s->samp_defer = false;
		ev &= ~(SL_EV_UPDATE | SL_EV_RECOVERY);
	}
	/*
	 * ... or whose sample runs: its verdict comes at the sample's end, from
	 * the detector's result then; an update now would come before it
	 */
	if (c->sampling && (s->pend_ev & SL_EV_ONSET))
		ev &= ~SL_EV_UPDATE;
	/*
	 * ... or whose culprit the sampled GPU arrivals named where the CPUs
	 * run ahead: the rounds' durations that move CCL-D's locator include
	 * GPU work ccld does not see, and would name another rank
	 */
	if (s->said_arrived && runahead)
		ev &= ~SL_EV_UPDATE;
	/*
	 * Where the CPUs run ahead, a round's durations include GPU work ccld
	 * does not see: neither who arrived last nor P is known from them,
	 * the sample decides both.
	 */
	if ((ev & SL_EV_ONSET) && (!s1 || (runahead && tierc) || border)) {
		s->ccld_unsaid = false;
		if (slow_can_sample(an, c, rd->t_end)) {
			/* the verdict waits for the sample: its culprit is there */
			slow_start_sample(an, c, rd, iter, ev | (runahead ? PEND_ARRIVE : 0));
		} else if (tierc && slow_sample_waits(an, c, rd->t_end)) {
			/* ... which waits for a neighbour: tried again each round */
			slow_sample_for(an, c, rd, iter, ev | (runahead ? PEND_ARRIVE : 0));
			s->samp_defer = true;
			if (an->debug)
				fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
					": onset waits for a sample (a neighbour's slow"
					" iterations)\n", c->hash, rd->seq);
		} else if (!runahead) {
			slow_emit(an, c, rd, iter, ev);	/* as known without one */
		} else if (tierc && slow_start_part_sample(an, c, rd, iter, ev | PEND_ARRIVE)) {
			/* too wide to hook whole: a part of it at a time */
		} else {
			s->ccld_unsaid = true;		/* later: a sample, or a cascade */
			if (an->debug)
				fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
					": onset waits for a sample (%s)\n", c->hash, rd->seq,
					slow_sample_refusal(an, c, rd->t_end));
		}
	} else if (ev & (SL_EV_ONSET | SL_EV_UPDATE | SL_EV_RECOVERY)) {
		s->blind = runahead && (ev & SL_EV_ONSET);
		slow_emit(an, c, rd, iter, ev);
		/*
		 * computation: a sample then tells whether a link is slow too
		 * (not for a cascade: its cause is elsewhere)
		 */
		if ((ev & SL_EV_ONSET) && !c->slow_cascade && slow_can_sample(an, c, rd->t_end))
			slow_start_sample(an, c, rd, iter, 0);
	}
}
