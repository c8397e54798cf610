// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Slow diagnosis that needs no healthy history (docs/slow.md), next to CCL-D's
 * detector (an_slow_ccld.c), on the same judged rounds:
 *
 *  - peer comparison: over rounds whose every start is known, one rank
 *    arriving last nearly every round, the others waiting for it a real
 *    share of the time: a persistent straggler (S1), even in a job that was
 *    already slow when ccld attached.  Opens incidents until CCL-D has its
 *    baseline, and after it for a straggler that came later and costs
 *    CCL-D's floor at least (a noisy baseline's threshold can be far
 *    above it); a baseline learned while a straggler was named is learned
 *    again once it recovered.
 *  - the network part of rounds (the shortest duration: last arrival to
 *    completion) against its own level: a rise that lasts and costs is
 *    sampled with step hooks, which say whose sends are slow in the network
 *    (S2) or whose GPU reaches the ops last (S1, where the CPU queues its
 *    calls ahead of its GPU and the call says nothing of the arrival).
 *
 * And the step sample's arrivals: per sampled round whose every start the
 * step hooks showed, who arrived last.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_slow_int.h"
#include <linux/types.h>
#include "ccld.h"

#define RISE_MIN_NS	1000000000ull	/* a rise lasts this long at least */
#define ARR_SHARE	0.75	/* the others' wait it caused, this share of it */
#define ARR_MIN_LAST	3	/* last in a third of the rounds at least */
/*
 * A rise's S1 from arrivals: a GPU slower at every step holds nearly all of
 * the others' wait; a rise a busy host makes has a last arriver by chance
 */
#define RISE_ARR_SHARE	0.9
/* rounds with every start known, the straggler not named: it recovered */
#define PEER_RECOVER	5

bool slow_nohist_new(struct an_slow *s, const struct an *an, int32_t nranks)
{
	struct sl_peer_config pc;
	struct sl_rise_config rc;
	int i;

	sl_peer_default(&pc);
	pc.min_iters = an->cfg.slow_min_iters;
	pc.min_ns = (uint64_t)(an->cfg.slow_min_s * 1e9);
	sl_rise_default(&rc);
	rc.min_iters = an->cfg.slow_min_iters;
	/* its verdict needs a step sample, which perturbs: never for less */
	rc.min_ns = pc.min_ns > RISE_MIN_NS ? pc.min_ns : RISE_MIN_NS;
	s->peer = sl_peer_new(&pc, (uint32_t)nranks);
	s->rise = sl_rise_new(&rc);
	s->arr_last = calloc((size_t)nranks, sizeof(*s->arr_last));
	s->arr_gap = calloc((size_t)nranks, sizeof(*s->arr_gap));
	s->arr_gmax = calloc((size_t)nranks, sizeof(*s->arr_gmax));
	s->arr_held = calloc((size_t)nranks, sizeof(*s->arr_held));
	s->arr_holder = calloc((size_t)nranks, sizeof(*s->arr_holder));
	s->arr_blk = calloc((size_t)nranks, sizeof(*s->arr_blk));
	s->arr_blk_gap = calloc((size_t)nranks, sizeof(*s->arr_blk_gap));
	s->arr_blk_holder = calloc((size_t)nranks, sizeof(*s->arr_blk_holder));
	s->blk_sort = calloc((size_t)nranks, sizeof(*s->blk_sort));
	s->part_wait = calloc((size_t)nranks, sizeof(*s->part_wait));
	s->part_waitn = calloc((size_t)nranks, sizeof(*s->part_waitn));
	s->part_blk = calloc((size_t)nranks, sizeof(*s->part_blk));
	s->arr_rank = s->rise_rank = -1;
	for (i = 0; i < PEER_UNDECIDED; i++)
		if (!(s->undec_dur[i] = malloc((size_t)nranks * sizeof(double))))
			return false;
	return s->peer && s->rise && s->arr_last && s->arr_gap && s->arr_gmax && s->arr_held &&
	       s->arr_holder && s->arr_blk && s->arr_blk_gap && s->arr_blk_holder && s->blk_sort &&
	       s->part_wait && s->part_waitn && s->part_blk;
}

size_t slow_nohist_bytes(const struct an_slow *s, int32_t nranks)
{
	return sl_peer_bytes(s->peer) + sl_rise_bytes(s->rise) +
	       (size_t)nranks * (sizeof(*s->arr_last) + sizeof(*s->arr_gap) +
				 sizeof(*s->arr_gmax) + sizeof(*s->arr_held) +
				 sizeof(*s->arr_holder) + sizeof(*s->arr_blk) +
				 sizeof(*s->arr_blk_gap) + sizeof(*s->arr_blk_holder) +
				 sizeof(*s->blk_sort) + sizeof(*s->part_wait) +
				 sizeof(*s->part_waitn) + sizeof(*s->part_blk) +
				 PEER_UNDECIDED * sizeof(double));
}

void slow_nohist_free(struct an_slow *s)
{
	int i;

	sl_peer_free(s->peer);
	for (i = 0; i < PEER_UNDECIDED; i++)
		free(s->undec_dur[i]);
	sl_rise_free(s->rise);
	free(s->arr_last);
	free(s->arr_gap);
	free(s->arr_gmax);
	free(s->arr_held);
	free(s->arr_holder);
	free(s->arr_blk);
	free(s->arr_blk_gap);
	free(s->arr_blk_holder);
	free(s->blk_sort);
	free(s->part_wait);
	free(s->part_waitn);
	free(s->part_blk);
}

/*
 * Fewer than a quarter of the newest judged rounds had every start known:
 * the CPUs queue their calls ahead of their GPUs (PyTorch), and a round's
 * shortest duration is no sign of who arrived last.
 */
bool slow_runahead(const struct an_slow *s)
{
	uint64_t n = s->njudged < 64 ? s->njudged : 64;
	uint64_t mask = n == 64 ? ~0ull : (1ull << n) - 1;

	if (n < RUNAHEAD_ROUNDS)
		return false;
	return (uint64_t)__builtin_popcountll(s->exact_bits & mask) * 4 < n;
}

/*
 * The rank with the shortest duration among those in mask (NULL: all), and
 * the gap to the next shortest. A masked rank that step hooks did not see
 * reach the op gives -1: its duration says nothing yet.
 */
static int32_t last_arriver_among(const struct an_comm *c, const struct slow_round *rd,
				  const bool *mask, double *gap)
{
	double lo = INFINITY, lo2 = INFINITY;
	int32_t k, last = -1;

	for (k = 0; k < c->nranks; k++) {
		if (mask && !mask[k])
			continue;
		if (mask && isnan(rd->after_hold[k]))
			return -1;
		if (rd->dur[k] < lo) {
			lo2 = lo;
			lo = rd->dur[k];
			last = k;
		} else if (rd->dur[k] < lo2) {
			lo2 = rd->dur[k];
		}
	}
	*gap = lo2 - lo;
	return isfinite(*gap) ? last : -1;
}

int32_t slow_last_arriver(const struct an_comm *c, const struct slow_round *rd, double *gap)
{
	return last_arriver_among(c, rd, NULL, gap);
}

uint64_t slow_late_from(const struct slow_round *rd, int32_t last, double gap)
{
	/*
	 * Its GPU came straight from an op of another comm (less than half
	 * its lead after that op ended): that op made it late, not its own
	 * work.
	 */
	return rd->hold[last] && rd->after_hold[last] < gap / 2 ? rd->hold[last] : 0;
}

void slow_sampled_round(struct an_comm *c, const struct slow_round *rd, int64_t iter)
{
	struct an_slow *s = c->slow;
	uint64_t held;
	int32_t last;
	double gap;

	s->samp_rounds++;
	if (rd->narr == (uint32_t)c->nranks || slow_sample_hooks_in(c))
		s->samp_rounds_in++;
	if (!rd->nshared) {
		if (iter < 0 || iter != s->samp_iter) {
			s->samp_iters++;
			s->samp_iter = iter;
			s->samp_iter_slow = false;
		}
		/* as CCL-D judges a round without hooks: by the starts they did not give */
		if (!s->samp_iter_slow && sl_det_is_slow(s->det, rd->sig, rd->dur_bound)) {
			s->samp_slow_iters++;
			s->samp_iter_slow = true;
		}
	}
	/* a part sample (samp_in) judges its hooked ranks' arrivals among themselves */
	if (!s->samp_in && rd->narr < (uint32_t)c->nranks)
		return;
	if ((last = last_arriver_among(c, rd, s->samp_in, &gap)) < 0)
		return;
	slow_note_block(s, rd, c->nranks);
	if (s->samp_in)
		slow_note_part_waits(s, rd, c->nranks);
	if (s->arr_rounds < ARR_LOG)
		s->arr_log[s->arr_rounds] = (struct arr_ent){ last, (float)gap };
	if (!s->arr_rounds++)
		s->arr_t0 = rd->t_end;
	s->arr_t1 = rd->t_end;
	held = slow_late_from(rd, last, gap);
	slow_tally_last(s->arr_last, s->arr_gap, s->arr_gmax, s->arr_held, s->arr_holder, last,
			gap, held);
}

void slow_tally_last(uint32_t *last, double *gap, double *gmax, uint32_t *heldn,
		     uint64_t *holder, int32_t k, double g, uint64_t held)
{
	last[k]++;
	gap[k] += g;
	if (g > gmax[k])
		gmax[k] = g;
	if (held) {
		heldn[k]++;
		holder[k] = held;
	}
}

bool slow_sample_over(const struct an_slow *s, uint32_t min_iters)
{
	return s->samp_iters >= min_iters && !s->samp_slow_iters;
}

bool slow_sample_turned(const struct an_slow *s, const struct slow_round *rd, int64_t iter,
			uint32_t min_iters)
{
	/* the iteration of RD, counted clean already if it is the latest */
	uint32_t clean = s->samp_iters - (iter >= 0 && iter == s->samp_iter ? 1 : 0);

	return !rd->nshared && !s->samp_slow_iters && clean >= min_iters &&
	       sl_det_is_slow(s->det, rd->sig, rd->dur_bound);
}

int32_t slow_arrival_pick(int32_t nranks, uint32_t rounds, const uint32_t *last,
			  const double *gap, const double *gmax, const uint32_t *heldn,
			  const uint64_t *holder, double *share, double *gap_ns, uint64_t *held)
{
	int32_t k, best = -1;
	double total = 0, trimmed = 0;

	*share = 0;
	*gap_ns = NAN;
	if (held)
		*held = 0;
	if (rounds < ARR_MIN_ROUNDS)
		return -1;
	/*
	 * Weighed by the lead: of two ops back to back (a reduce-scatter then
	 * an all-gather) only the first keeps the others waiting, and the
	 * second's last arriver is anyone, microseconds ahead.  The straggler
	 * is the rank whose lateness the others waited for, most of the time
	 * they waited, and in a third of the rounds at least (one descheduled
	 * process is not a straggler).
	 */
	for (k = 0; k < nranks; k++) {
		total += gap[k];
		if (best < 0 || gap[k] > gap[best])
			best = k;
	}
	if (!(total > 0))
		return -1;
	*share = gap[best] / total;
	*gap_ns = last[best] ? gap[best] / last[best] : NAN;
	if (held && 2 * heldn[best] > last[best])
		*held = holder[best];
	/*
	 * ... and without each rank's largest wait: one round a process was
	 * descheduled in is not its lateness (random job 87, before its
	 * fault: a TP comm of 2 under a busy host's hiccups, rank 0 last in 4
	 * of 8 rounds by 3.3, 18.3, 3.8 and 7.7 ms, rank 1 in 4 by 1.8-4.4:
	 * 76% of the wait, 71% without the 18.3 and the 4.4)
	 */
	for (k = 0; gmax && k < nranks; k++)
		trimmed += gap[k] - gmax[k];
	if (gmax && !((gap[best] - gmax[best]) >= ARR_SHARE * trimmed && trimmed > 0))
		return -1;
	return *share >= ARR_SHARE && ARR_MIN_LAST * last[best] >= rounds ? best : -1;
}

int32_t slow_arrival_culprit(const struct an_comm *c, double *share, double *gap_ns,
			     uint64_t *held)
{
	const struct an_slow *s = c->slow;

	return slow_arrival_pick(c->nranks, s->arr_rounds, s->arr_last, s->arr_gap, s->arr_gmax,
				 s->arr_held, s->arr_holder, share, gap_ns, held);
}

double slow_link_cost(const struct an_comm *c, int32_t *rank, double *lat, double *lat_med)
{
	const struct an_slow *s = c->slow;
	double steps;
	int32_t k;

	*rank = -1;
	*lat = *lat_med = NAN;
	if (s->have_srate)
		*rank = slow_sampled_outlier(c, lat, lat_med);
	if (*rank < 0)
		return NAN;
	k = *rank;
	steps = s->samp_rounds ?
		((double)c->r[k].net_steps - s->net0[3 * k + 2]) / s->samp_rounds : 0;
	return slow_link_excess(c, k, *lat, *lat_med) * steps;
}

/*
 * What C's step sample explains of a slowdown that added EXTRA_NS to its
 * rounds: a rank whose send steps spend twice the others' time in the
 * network, where that accounts for a quarter of the extra at least (S2:
 * *a, *b its and the others' ms per step); else a rank whose GPU reaches
 * the ops last (S1: *a its share of the others' wait, *b its mean lead);
 * else 0.
 */
bool slow_link_explains(double cost, double extra_ns)
{
	return !isnan(cost) && (!(extra_ns > 0) || cost >= 0.25 * extra_ns);
}

enum an_class slow_sample_decide(const struct an_comm *c, double extra_ns, int32_t *rank,
				 double *a, double *b, uint64_t *held)
{
	double lat, lat_med, cost = slow_link_cost(c, rank, &lat, &lat_med), share, lead;
	uint64_t hold = 0;

	if (slow_link_explains(cost, extra_ns)) {
		/*
		 * ... unless that rank's GPU also reaches the ops last, by 3/4
		 * of the extra time or more: a process busy computing slows its
		 * own proxy thread too, and its lateness alone explains the
		 * rounds (random job 87: rank 1's GPU 5.3x slower, its send
		 * steps 4.3 ms against 1.9, and last in 8 of 8 sampled rounds by
		 * 13.7 ms of 11.9 extra: S2 before).  Not its link's cost per
		 * round: pipelined steps overlap, their excesses do not add up.
		 * Not where its GPU came late from another comm's op: its slow
		 * link made that op late (random job 49, S1 for its S2).
		 */
		int32_t arr = slow_arrival_explains(c, extra_ns, &share, &lead, &hold);

		if (arr < 0 || arr != *rank || hold || !(extra_ns > 0 && lead >= 0.75 * extra_ns)) {
			*a = lat;
			*b = lat_med;
			return AN_S2;
		}
		*a = share;
		*b = lead;
		if (held)
			*held = hold;
		return AN_S1;
	}
	/*
	 * ... else the arrivals the hooks saw: the GPU's, where the rounds'
	 * starts are the calls (a CPU that runs ahead, or one whose wait for
	 * its GPU left a compute stream busy that the NCCL stream waits for)
	 */
	*rank = slow_arrival_explains(c, extra_ns, a, b, held);
	return *rank >= 0 ? AN_S1 : 0;
}

int32_t slow_arrival_explains(const struct an_comm *c, double extra_ns, double *share,
			      double *lead, uint64_t *held)
{
	int32_t rank = slow_arrival_culprit(c, share, lead, held);

	return rank >= 0 && extra_ns > 0 && !(*lead >= 0.25 * extra_ns) ? -1 : rank;
}

struct an_verdict *slow_nohist_frame(struct an *an, struct an_comm *c,
					 const struct slow_round *rd, uint64_t now,
					 enum an_class cls, int32_t rank, bool recovered,
					 uint64_t held, const struct an_comm **root)
{
	struct an_verdict *v = &an->tmp;

	slow_verdict_frame(an, c, v, recovered ? AN_V_RECOVERED : AN_V_NEW, cls, rd->seq, rd->fn,
			   rd->host, now, rank);
	*root = recovered ? NULL : slow_root_of(an, c, rank);
	if (recovered)
		held = 0;
	slow_cascade_of(an, v, *root, held);
	if (!recovered) {
		c->slow->cls = cls;
		c->slow->active = true;
		c->slow->root_cul = rank;
		c->slow->root_unseen = 0;
		c->slow_cascade = *root != NULL || held;
		if (!c->slow_cascade)
			c->slow_seq = rd->seq;
	} else {
		c->slow->active = false;
		c->slow_cascade = false;
	}
	return v;
}

void slow_send_verdict(struct an *an, struct an_verdict *v)
{
	if (v->kind == AN_V_RECOVERED) {
		an->stats.recoveries++;
	} else {
		an_hw_note(an, v);
		an_warn_note(an, v);
		an_env_note(an, v);
		slow_shed_note(an_comm_get(an, v->comm, 0, false), v);
		an->stats.verdicts++;
	}
	if (an->sink.verdict)
		an->sink.verdict(an->sink.ctx, v);
	if (v->kind == AN_V_RECOVERED) {
		const struct an_comm *c = an_comm_get(an, v->comm, 0, false);

		if (c)
			slow_chain_back(an, c, v->detected_ns, v->clock_host);
	}
}

/* ---- peer comparison ---------------------------------------------------- */

/* a process of comm O is one of C's ranks: that rank, else -1 */
int32_t member_of(const struct an *an, const struct an_comm *c,
		  const struct an_comm *o, int32_t orank)
{
	const struct an_proc *p = an_proc_of(an, &o->r[orank]);
	int32_t k;

	for (k = 0; p && k < c->nranks; k++)
		if (an_proc_of(an, &c->r[k]) == p)
			return k;
	return -1;
}

/*
 * P entered its op at T_ENTER while its GPU was in an op of another comm
 * than H, or right after one ended (under LEAD_NS / 2 before), that lasted
 * LEAD_NS / 2 or more: its GPU reached H's op late from that wait (a TP
 * peer's straggler), not from its own work
 */
static bool entered_after_wait(const struct an_proc *p, uint64_t h, uint64_t t_enter,
			       double lead_ns)
{
	uint32_t i, n = p->ndone < AN_DONE_RING ? p->ndone : AN_DONE_RING;

	for (i = 0; i < n; i++) {
		const struct an_done *d = &p->done[i];

		if (d->comm != h && d->t_launch <= t_enter && d->t_done >= d->t_launch &&
		    (double)d->t_done + lead_ns / 2 > (double)t_enter &&
		    (double)(d->t_done - d->t_launch) >= lead_ns / 2)
			return true;
	}
	return false;
}

/*
 * A's peer's record of its ops toward rank X of H, where the peer is
 * another rank whose process (*PQ) is known and on ME's host (entries
 * compared on one clock); else NULL
 */
static const struct an_p2p *peer_side(const struct an *an, const struct an_comm *h,
				      int32_t x, const struct an_p2p *a,
				      const struct an_proc *me, const struct an_proc **pq)
{
	if (a->peer < 0 || a->peer >= h->nranks || a->peer == x)
		return NULL;
	*pq = an_proc_of(an, &h->r[a->peer]);
	if (!*pq || (*pq)->host != me->host)
		return NULL;
	return an_p2p_find(&h->r[a->peer], x);
}

/*
 * Which op of one side matches which of the other, per direction of the
 * side E: E's op k of direction d is the other's op k - off[d] (ok[d]:
 * known, an_p2p_align)
 */
struct p2p_match { int64_t off[2]; bool ok[2]; };

/* E is A, rank X's counter toward its peer (B: the peer's toward X) */
static void p2p_match_of(const struct an *an, const struct an_comm *h, int32_t x,
			 const struct an_p2p *a, const struct an_p2p *b, struct p2p_match *m)
{
	int d;

	for (d = 0; d < 2; d++)
		m->ok[d] = an_p2p_align(an, h, x, a, b, d, &m->off[d]);
}

/* the same pairs seen from the other side: E is B */
static void p2p_match_mirror(const struct p2p_match *m, struct p2p_match *mb)
{
	int d;

	for (d = 0; d < 2; d++) {
		mb->ok[!d] = m->ok[d];
		mb->off[!d] = -m->off[d];
	}
}

/*
 * Rank RANK of C in comm H, whose late op held its GPU: where H's ops are
 * p2p (H has no rounds to compare), did RANK's process enter its latest
 * send and receive there LEAD / 2 or more after each peer entered the
 * matching one (the peer had entered more: RANK was behind)?  Then RANK
 * made that op late, not the other way round: a pipeline stage whose
 * compute is slow keeps its partner waiting in their send/recv first, and
 * both then reach the next collective late (random job 35,
 * docs/simjob.md).  Not where it entered them from a third comm's long op
 * (entered_after_wait).  Entries on one host's clock only; unknown: false.
 */
bool slow_p2p_late(const struct an *an, const struct an_comm *h, const struct an_comm *c,
		   int32_t rank, double lead_ns)
{
	const struct an_proc *me = an_proc_of(an, &c->r[rank]);
	int32_t x = member_of(an, h, c, rank);
	const struct an_rank *rx;
	uint32_t i, nlate = 0;
	int d;

	if (x < 0 || !me || !(lead_ns > 0))
		return false;
	rx = &h->r[x];
	for (i = 0; i < rx->np2p; i++) {
		const struct an_p2p *a = &rx->p2p[i];
		const struct an_proc *pq;
		const struct an_p2p *b;
		struct p2p_match m;

		if (a->peer < 0 || a->peer >= h->nranks || a->peer == x)
			continue;
		if (!(b = peer_side(an, h, x, a, me, &pq)))
			return false;
		p2p_match_of(an, h, x, a, b, &m);
		for (d = 0; d < 2; d++) {
			/* the peer's count, in RANK's: how many of its ops it matched */
			int64_t theirs = b->n[!d] + m.off[d];

			if (!a->n[d])
				continue;
			if (!m.ok[d] || theirs < a->n[d] ||
			    (theirs == a->n[d] &&
			     (double)a->t_enter[d] < (double)b->t_enter[!d] + lead_ns / 2) ||
			    entered_after_wait(me, h->hash, a->t_enter[d], lead_ns))
				return false;
			nlate++;
		}
	}
	return nlate > 0;
}

/*
 * Their last matched ops (both directions, each op's own entry, on one
 * host's clock): in how many of the PAIRS did L enter its side THR_NS or
 * more after E entered its own (LATE, SUM_NS their lateness); LAST, FN: L's
 * latest such op, counted per peer and direction.  M says which of E's ops
 * is which of L's; a direction where that is not known is skipped.
 */
struct p2p_lag { uint32_t pairs, late; double sum_ns; int64_t last; int fn; };

static void p2p_lag(const struct an_p2p *l, const struct an_p2p *e,
		    const struct p2p_match *mt, double thr_ns, struct p2p_lag *g)
{
	int d;

	memset(g, 0, sizeof(*g));
	g->last = -1;
	/* E's sends first: of two ops as recent, L's receive is its latest */
	for (d = 0; d < 2; d++) {
		/* in E's count: L's ops are k - off */
		int64_t off = mt->off[d], nl = l->n[!d] + off;
		int64_t m = e->n[d] < nl ? e->n[d] : nl;
		int64_t hi = e->n[d] > nl ? e->n[d] : nl, k;

		if (!mt->ok[d])
			continue;
		k = hi - AN_P2P_HIST > 0 ? hi - AN_P2P_HIST : 0;
		for (k = k > off ? k : off; k < m; k++) {
			uint64_t te = e->t_hist[d][(uint64_t)k % AN_P2P_HIST];
			uint64_t tl = l->t_hist[!d][(uint64_t)(k - off) % AN_P2P_HIST];

			if (!tl || !te)
				continue;
			g->pairs++;
			if ((double)tl >= (double)te + thr_ns) {
				g->late++;
				g->sum_ns += (double)(tl - te);
			}
			if (k - off > g->last) {
				g->last = k - off;
				g->fn = d ? CCLD_FN_SEND : CCLD_FN_RECV;
			}
		}
	}
}

/* late in 3 of 4 of their last matched ops at least (one late op is chance) */
#define P2P_BEHIND_MIN	4
static bool p2p_lag_holds(const struct p2p_lag *g)
{
	return g->pairs >= P2P_BEHIND_MIN && 4 * g->late >= 3 * g->pairs;
}

/*
 * The mirror of slow_p2p_late: C's straggler RANK came late from its p2p
 * ops in H; the peer that made them late is the one that entered its side
 * LEAD_NS / 2 or more after RANK's process entered its own, in most of
 * their last matched ops (p2p_lag_holds), on one host's clock.  Its rank
 * in H (OP, FN: its latest such op), else -1.  Entries are CPU times:
 * where the CPUs run ahead of their GPUs they say nothing of the GPUs, and
 * the rule stays silent.
 */
int32_t slow_p2p_behind(const struct an *an, const struct an_comm *h, const struct an_comm *c,
			int32_t rank, double lead_ns, double *late_ns, int64_t *op, int *fn)
{
	const struct an_proc *me = an_proc_of(an, &c->r[rank]);
	int32_t x = member_of(an, h, c, rank);
	const struct an_rank *rx;
	uint32_t i;

	*late_ns = NAN;
	if (x < 0 || !me || !(lead_ns > 0))
		return -1;
	rx = &h->r[x];
	for (i = 0; i < rx->np2p; i++) {
		const struct an_p2p *a = &rx->p2p[i];
		const struct an_proc *pq;
		const struct an_p2p *b;
		struct p2p_match m;
		struct p2p_lag g;

		if (!(b = peer_side(an, h, x, a, me, &pq)))
			continue;
		p2p_match_of(an, h, x, a, b, &m);
		p2p_lag(b, a, &m, lead_ns / 2, &g);
		if (p2p_lag_holds(&g)) {
			*late_ns = g.sum_ns / g.late;
			*op = g.last;
			*fn = g.fn;
			return a->peer;
		}
	}
	return -1;
}

/*
 * Rank X of H keeps its p2p peers there waiting: it entered its side
 * THR_NS or more after a peer entered its own in most of their last matched
 * ops, was never early that way toward another peer, and did not come to
 * its latest op from a long op of another comm (entered_after_wait: a
 * cascade).  Its mean lateness (G: toward the peer it kept waiting most),
 * else NAN.
 */
static double p2p_keeps_waiting(const struct an *an, const struct an_comm *h, int32_t x,
				double thr_ns, int32_t *peer, struct p2p_lag *best)
{
	const struct an_proc *me = an_proc_of(an, &h->r[x]);
	const struct an_rank *rx = &h->r[x];
	double late = NAN;
	uint64_t latest = 0;
	uint32_t i;
	int d;

	if (!me)
		return NAN;
	for (i = 0; i < rx->np2p; i++) {
		const struct an_p2p *a = &rx->p2p[i];
		const struct an_proc *pq;
		const struct an_p2p *b;
		struct p2p_match m, mb;
		struct p2p_lag g;

		if (!(b = peer_side(an, h, x, a, me, &pq)) || pq == me)
			continue;
		p2p_match_of(an, h, x, a, b, &m);
		p2p_match_mirror(&m, &mb);
		p2p_lag(b, a, &m, thr_ns, &g);
		if (p2p_lag_holds(&g))
			return NAN;	/* that peer keeps it waiting */
		p2p_lag(a, b, &mb, thr_ns, &g);
		if (p2p_lag_holds(&g) && !(g.sum_ns / g.late <= late)) {
			late = g.sum_ns / g.late;
			*peer = a->peer;
			*best = g;
		}
		for (d = 0; d < 2; d++)
			if (a->t_enter[d] > latest)
				latest = a->t_enter[d];
	}
	if (!isnan(late) && entered_after_wait(me, h->hash, latest, 2 * thr_ns))
		return NAN;
	return late;
}

/* the mirror of slow_p2p_behind: p2p_keeps_waiting at LEAD_NS / 2 */
double slow_p2p_self_late(const struct an *an, const struct an_comm *h, int32_t x,
			  double lead_ns, int32_t *peer)
{
	struct p2p_lag g;

	if (x < 0 || !(lead_ns > 0))
		return NAN;
	return p2p_keeps_waiting(an, h, x, lead_ns / 2, peer, &g);
}

void slow_p2p_evidence(struct an_verdict *v, int32_t rank, const struct slow_p2p_found *f)
{
	char hex[24];

	an_text(v, "; every rank's GPU reaches the op about together (step hooks),"
		" the time goes before it: rank %d enters its side of its send/recv"
		" with rank %d of comm %016" PRIx64 " %.1f ms after that rank entered"
		" its own (mean, in %u of their last %u ops), so their transfers wait"
		" for it: a pipeline stage behind its neighbours", rank, f->peer,
		f->comm, f->late_ns / 1e6, f->late_pairs, f->pairs);
	snprintf(hex, sizeof(hex), "%016" PRIx64, f->comm);
	an_val_s(v, "p2p_comm", hex);
	an_val_i(v, "p2p_rank", f->rank);
	an_val_i(v, "p2p_peer", f->peer);
	an_val_f(v, "p2p_late_ms", f->late_ns / 1e6);
}

int32_t slow_p2p_straggler(const struct an *an, const struct an_comm *c, double extra_ns,
			   struct slow_p2p_found *f)
{
	struct hkey key;
	size_t it;
	void *v;
	int32_t found = -1;

	memset(f, 0, sizeof(*f));
	if (!(extra_ns > 0))
		return -1;
	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *h = v;
		int32_t k;

		for (k = 0; k < c->nranks; k++) {
			int32_t x = h == c ? k : member_of(an, h, c, k), peer = -1;
			struct p2p_lag g = { 0 };
			double late;

			if (x < 0 || !h->r[x].np2p)
				continue;
			late = p2p_keeps_waiting(an, h, x, extra_ns / 2, &peer, &g);
			if (isnan(late))
				continue;
			/* two processes each keep a peer waiting: not one straggler */
			if (found >= 0 && an_proc_of(an, &c->r[found]) != an_proc_of(an, &c->r[k]))
				return -1;
			if (found < 0 || late > f->late_ns) {
				found = k;
				f->comm = h->hash;
				f->rank = x;
				f->peer = peer;
				f->late_ns = late;
				f->pairs = g.pairs;
				f->late_pairs = g.late;
				f->op = g.last;
				f->fn = g.fn;
			}
		}
	}
	return found;
}

/*
 * The comm whose op held rank K's GPU when it reached RD's op, or whose end
 * its CPU waited for before it called (a stream sync per op), 0
 */
static uint64_t holder_of(const struct an_comm *c, const struct slow_round *rd, int32_t k)
{
	uint64_t held = !isnan(rd->after_hold[k]) ? rd->hold[k] : c->slow->holder[k];

	return held ? held : rd->synced[k];
}

/*
 * RANK's ops in comm H, which held it, took GAP / 2 longer than those of
 * the comms that held the others (per op signature, its latest round's
 * time after its last arrival against theirs (median), summed): it reached
 * C's op late because its ops there took longer, where nobody waited (a
 * slow link: every rank arrives together, the op is long).  Random job 16
 * (TP 2 x DP 4, rank 5's link 6.1x slower, attached late): rank 5 arrived
 * last in its DP comm by 26.4 ms, straight from its TP comm with rank 4,
 * whose two ops took 26.0 and 12.1 ms after their last arrival against
 * 8.2-11.2 and 2.4-4.4 in the other TP comms; it was named an S1 root
 * before the TP comm's comparable-group sample found its slow link (S2).
 */
static bool held_ops_longer(struct an *an, const struct an_comm *c,
			    const struct slow_round *rd, int32_t rank,
			    const struct an_comm *h, double gap)
{
	double *v, excess = 0;
	uint32_t i, j;
	bool any = false;
	int32_t k;

	if (!h || !h->slow || !h->slow->nlast_tmin)
		return false;
	v = malloc(2 * (size_t)c->nranks * sizeof(*v));
	if (!v)
		return false;
	for (i = 0; i < h->slow->nlast_tmin; i++) {
		size_t n = 0;

		for (k = 0; k < c->nranks; k++) {
			uint64_t o = k == rank ? 0 : holder_of(c, rd, k);
			const struct an_comm *oh = o && o != h->hash && o != c->hash ?
						   an_comm_get(an, o, 0, false) : NULL;

			for (j = 0; oh && oh->slow && j < oh->slow->nlast_tmin; j++)
				if (oh->slow->last_tmin[j].sig == h->slow->last_tmin[i].sig)
					v[n++] = oh->slow->last_tmin[j].tmin;
		}
		if (n) {
			excess += h->slow->last_tmin[i].tmin - sl_median(v, n, v + c->nranks);
			any = true;
		}
	}
	free(v);
	return any && excess >= gap / 2;
}

/*
 * The comm whose op held RANK's GPU when it reached this op (its earlier op
 * there ended after the call; or its CPU waited for that op, then called
 * here at once), where the rank waited in that op for about
 * as long as the others wait for it here (half of GAP at least), or where
 * its wait there is unknown, or where that comm's rounds are longer than
 * its comparable comms' by half of GAP at least (its op itself is slow: a
 * slow link makes every rank's round longer, none waits), or where its
 * ops there took longer than those that held the others: it is late
 * because that op ended late, a cascade.  0: not held, or it did not wait
 * there (it was that op's last arriver too: the straggler itself).
 */
static uint64_t peer_held_by(struct an *an, const struct an_comm *c,
			     const struct slow_round *rd, int32_t rank, double gap)
{
	uint64_t held = holder_of(c, rd, rank);
	const struct an_comm *h;
	int32_t hk;

	if (!held)
		return 0;
	h = an_comm_get(an, held, 0, false);
	if (h && slow_p2p_late(an, h, c, rank, gap))
		return 0;
	hk = h && h->slow ? member_of(an, h, c, rank) : -1;
	/* no round of it known (p2p ops): held, as far as is known */
	return hk < 0 || isnan(h->slow->wait[hk]) || h->slow->wait[hk] >= gap / 2 ||
	       h->slow->grp_mine - h->slow->grp_med >= gap / 2 ||
	       held_ops_longer(an, c, rd, rank, h, gap) ? held : 0;
}


static void emit_peer(struct an *an, struct an_comm *c, const struct slow_round *rd,
		      bool recovered)
{
	const struct sl_peer_result *p = &c->slow->pres;
	const struct an_comm *root;
	uint64_t held = peer_held_by(an, c, rd, p->rank, p->gap_ns);
	struct an_verdict *v = slow_nohist_frame(an, c, rd, rd->t_end, AN_S1, p->rank,
					      recovered, held, &root);
	double span = (double)(p->t_last - p->t_first) / 1e9;

	v->onset_ns = p->t_first;
	if (recovered) {
		an_text(v, "comm %016" PRIx64 " is back: rank %d"
			" no longer arrives last (%u rounds with every start known"
			" since it was)", c->hash, p->rank, c->slow->peer_clean);
	} else {
		an_text(v, "comm %016" PRIx64 " has a straggler:"
			" rank %d arrives last in %u of its %u latest rounds whose"
			" every start is known (%u iterations, %.1f s), the others"
			" waiting %.1f ms for it each time (median) of %.1f ms between"
			" rounds; found by comparing the ranks, no healthy history"
			" needed: computation (S1); %.2f s lost in those rounds (%.1f ms"
			" per iteration)%s%s", c->hash, p->rank, p->last, p->rounds,
			p->iters, span, p->gap_ns / 1e6, p->interval_ns / 1e6,
			p->lost_ns / 1e9, p->lost_ns / 1e6 / (p->iters ? p->iters : 1),
			c->slow->peer_after_base ? "; after CCL-D's baseline, whose"
			" threshold these rounds did not cross for long enough" : "",
			root ? "; a cascade: the same rank slows a comm already"
			" reported" : v->role == AN_CASCADE ? "; a cascade: it reaches"
			" these ops late because its earlier op in another comm ends"
			" late" : "");
	}
	an_val_s(v, "detector", "peer");
	if (c->slow->peer_after_base)
		an_val_i(v, "after_baseline", 1);
	an_val_i(v, "s1_rank", p->rank);
	an_val_i(v, "rounds", p->rounds);
	an_val_i(v, "last_rounds", p->last);
	an_val_i(v, "slow_iters", p->iters);
	an_val_f(v, "gap_ms", p->gap_ns / 1e6);
	an_val_f(v, "interval_ms", p->interval_ns / 1e6);
	an_val_f(v, "lost_s", p->lost_ns / 1e9);
	an_val_i(v, "nranks", c->nranks);
	slow_send_verdict(an, v);
}

/* the iterations of C's rounds: those of its first op signature */
static void count_iter(struct an_slow *s, const struct slow_round *rd)
{
	/*
	 * The first signature whose SIG_AFTER is known: a process's first call
	 * since the attach has no call before it, and its signature would not
	 * come again
	 */
	if (!s->have_sig0 && rd->sig_known) {
		s->sig0 = rd->sig;
		s->have_sig0 = true;
	}
	if (s->have_sig0 && rd->sig == s->sig0)
		s->sig0_iters++;
}

/* the rounds kept until their processes were judged, now that they are */
static void peer_undecided(struct an_comm *c)
{
	struct an_slow *s = c->slow;
	struct sl_peer_result res;
	uint32_t i;

	for (i = 0; i < s->nundec; i++)
		sl_peer_round(s->peer, s->undec_dur[i], s->undec_t[i], s->undec_iter[i], &res);
	s->nundec = 0;
}

/*
 * Once CCL-D has its baseline, the peer comparison still names a straggler
 * that CCL-D leaves unsaid: one that came after the baseline (the run of
 * rounds naming it began once the baseline was complete: not a rank the
 * baseline already waited for), keeps the others waiting half a healthy
 * round at least (r_floor x Tbase: what CCL-D calls slow with a steady
 * baseline), and has done so for twice the minimum a slowdown must last
 * (iterations and wall time) with no slow iteration of CCL-D's pending:
 * had its rounds crossed CCL-D's threshold, CCL-D would have spoken by
 * then, with its own evidence.  That threshold, 6 CVs of a baseline
 * learned on a busy host, can sit far above the straggler's rounds (random
 * job 457: cv 0.63, R 3.76; a 3x slower GPU kept the others waiting 8 ms a
 * round, R about 2.5, never 3 slow iterations in a row).  One rank last in
 * 90% of the rounds whose every start is known is not the noise that
 * inflated that threshold: noise makes rounds long for everyone, not the
 * same rank late.
 */
static bool peer_after_base(const struct an *an, const struct an_comm *c,
			    const struct slow_round *rd, const struct sl_peer_result *res)
{
	const struct an_slow *s = c->slow;
	double tbase = sl_det_base(s->det)->tbase_ns;
	uint64_t since = s->base_t;

	/* nor rounds of an incident CCL-D reported: they were said */
	if (sl_det_result(s->det)->recover_ns > since)
		since = sl_det_result(s->det)->recover_ns;
	/* this round named it (a tie answers as the round before it) */
	return s->base_t && res->t_last == rd->t_end && res->t_first > since &&
	       !sl_det_pending(s->det) &&
	       res->gap_ns >= sl_det_r_floor(s->det) * tbase &&
	       res->iters >= 2 * an->cfg.slow_min_iters &&
	       (double)(res->t_last - res->t_first) >= 2e9 * an->cfg.slow_min_s;
}

static void peer_round(struct an *an, struct an_comm *c, const struct slow_round *rd,
		       bool learned)
{
	struct an_slow *s = c->slow;
	struct sl_peer_result res;
	bool named = sl_peer_round(s->peer, rd->dur, rd->t_end, s->sig0_iters, &res);

	if (s->peer_active) {
		double gap;
		int32_t last = slow_last_arriver(c, rd, &gap);

		/*
		 * Still late by a quarter of what it was when named, judged on
		 * this round: the run's older rounds would keep it named while
		 * chance makes it last again (every other round with 2 ranks),
		 * and a run reaching back over rounds long past (ties left out)
		 * has an interval its gaps no longer cost.  A tie (everyone
		 * together) is a clean round: between slow ones it changes
		 * nothing, they start the count again.  A quarter, not half: a
		 * straggler whose gap a sample's step hooks shrank to about
		 * half its named gap (8.4 ms named, 3.6-4.3 ms under the hooks)
		 * recovered and was named again 3 times in 250 rounds (random
		 * job 106).
		 */
		if (last == s->pres.rank && gap >= s->pres.gap_ns / 4) {
			s->peer_clean = 0;
			if (named && res.rank == s->pres.rank)
				s->pres = res;
			return;
		}
		if (++s->peer_clean < PEER_RECOVER)
			return;
		s->peer_active = false;
		s->peer_back_t = rd->t_end;
		emit_peer(an, c, rd, true);
		/* its baseline, if learned meanwhile, was the straggler's */
		if (learned && !s->peer_after_base)
			slow_det_relearn(an, c);
		return;
	}
	/*
	 * An incident is open: it speaks.  Rounds of the incident that just
	 * recovered do not name it again (a tie answers as the round before)
	 */
	if (!named || s->active || sl_det_result(s->det)->active ||
	    res.t_first <= s->peer_back_t)
		return;
	/* CCL-D has its baseline: only what CCL-D leaves unsaid */
	if (learned && !peer_after_base(an, c, rd, &res))
		return;
	s->pres = res;
	s->peer_active = true;
	s->peer_after_base = learned;
	s->peer_clean = 0;
	emit_peer(an, c, rd, false);
}

/*
 * A sample of other comms hooks some of C's processes: C's rounds are not
 * judged, and a straggler among its other processes went unnamed until the
 * hooks were off and a second more (test_intranode compute on a busy VM:
 * three DP comms sampled for rises of their network part as rank 2's
 * compute slowed; its TP comm's peer comparison named it 23 steps late).
 * Hooks only delay the processes they are on, so a round whose last
 * arriver has none says who arrives last as well as without them.  One
 * whose last arriver has hooks names nobody, but breaks the others' runs
 * as that rank's round would (left out, it let a rank last by 1-9 ms in
 * the rounds in between make a long run of small gaps, which named the
 * straggler 14 steps late on another capture).  Allowing a hooked rank
 * its lateness beyond what its hooks' share of its time explains named a
 * rank that waited for its TP peer a root in its DP comm
 * (test_attach_slow pytorch, a fresh-clone CI run): not done.  Only to
 * name: a named straggler's recovery is judged on unhooked rounds alone
 * (one hooked would leave out its own late rounds and keep the others').
 */
void slow_nohist_hooked_round(struct an *an, struct an_comm *c, const struct slow_round *rd,
			      bool learned)
{
	struct an_slow *s = c->slow;
	const struct an_proc *p;
	struct slow_round bound;
	int32_t last, k;
	double gap;

	count_iter(s, rd);	/* its iterations go on: the peer comparison counts them */
	if (s->peer_active || rd->nexact != (uint32_t)c->nranks || rd->host >= an->nhosts)
		return;
	/*
	 * The starts known without the hooks only: the GPU arrivals the hooks
	 * show where the CPU runs ahead are not what the comparison is made
	 * of (a rank that waited for its TP peer there was named a root in
	 * its DP comm: test_attach_slow pytorch)
	 */
	for (k = 0; k < c->nranks; k++)
		if (!isfinite(rd->dur_bound[k]))
			return;
	bound = *rd;
	bound.dur = rd->dur_bound;
	last = slow_last_arriver(c, &bound, &gap);
	p = last >= 0 ? an_proc_of(an, &c->r[last]) : NULL;
	peer_undecided(c);
	if (p && !slow_proc_hooked(p, rd->host, rd->t_end)) {
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 ": rank %d,"
				" without hooks, last by %.1f ms: heard by the peer"
				" comparison\n", c->hash, rd->seq, last, gap / 1e6);
		peer_round(an, c, &bound, learned);
	} else {
		sl_peer_unknown(s->peer, rd->t_end, s->sig0_iters);
	}
}

/* ---- the network part of rounds ---------------------------------------- */


/* a smaller comm sharing a process with C whose network part rose too */
static bool smaller_rise(const struct an *an, const struct an_comm *c)
{
	struct hkey key;
	size_t it;
	void *v;
	int32_t k;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;

		if (o == c || !o->slow || o->nranks >= c->nranks ||
		    !(o->slow->rise_wait || (o->sampling && (o->slow->pend_ev & PEND_RISE))))
			continue;
		for (k = 0; k < o->nranks; k++)
			if (member_of(an, c, o, k) >= 0)
				return true;
	}
	return false;
}

/* an open root incident elsewhere whose culprit is one of C's ranks */
static const struct an_comm *named_member(const struct an *an, const struct an_comm *c,
					  int32_t *rank)
{
	struct hkey key;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;

		if (o == c || !o->slow || !o->slow->active || o->slow->root_cul < 0 ||
		    o->slow_cascade)
			continue;
		if ((*rank = member_of(an, c, o, o->slow->root_cul)) >= 0)
			return o;
	}
	return NULL;
}

void slow_sampled_cause(struct an *an, struct an_comm *c, struct an_verdict *v,
			enum an_class cls, int32_t rank, double a, double b,
			const struct an_comm *root)
{
	struct an_slow *s = c->slow;
	/* the sample ends with this verdict: a survey's runs past SAMPLE_NS */
	double secs = v->clock_host == s->samp_host && v->detected_ns > s->samp_t0 &&
		      v->detected_ns - s->samp_t0 <= 2 * SAMPLE_MAX_NS ?
		      (double)(v->detected_ns - s->samp_t0) / 1e9 : SAMPLE_NS / 1e9;
	uint64_t unseen;

	if (cls == AN_S1 && s->blk_n) {
		slow_block_evidence(an, c, v, secs);
		if (root)
			an_text(v, "; a cascade: the same rank slows a comm already reported");
		return;
	}
	if (cls == AN_S1 && s->arr_p2p.comm) {
		slow_p2p_evidence(v, rank, &s->arr_p2p);
		if (root)
			an_text(v, "; a cascade: the same rank slows a comm already reported");
		an_val_i(v, "s1_rank", rank);
		return;
	}
	if (cls == AN_S2 && rank < 0) {
		/* the sample showed nothing: TCP's lossy link alone (slow_rise_sampled) */
		uint32_t links, retrans, mine;
		int32_t end = an_net_common_rank(an, c, &links, &retrans, &mine);

		an_text(v, "; step hooks sampled %.1f s: no rank's sends stand out and no"
			" rank's GPU reaches the op last in most rounds (%u sampled), while"
			" rank %d is at one end of the connections with %u of the %u TCP"
			" retransmits on %u connections of the comm: its link loses packets,"
			" and the network part grew with it (communication, S2)", secs,
			s->arr_rounds, end, mine, retrans, links);
		an_val_i(v, "tcp_rank", end);
	} else if (cls == AN_S2) {
		uint32_t links, retrans, mine;
		int32_t end = an_net_common_rank(an, c, &links, &retrans, &mine);

		an_text(v, "; step hooks sampled %.1f s: rank %d's send steps spend %.2f ms"
			" each in the network, the others' median %.2f ms: a network"
			" straggler (communication, S2)", secs, rank, a / 1e6, b / 1e6);
		/* the culprit is the lossy link's end, not this sender (slow_net_end) */
		if (rank >= 0 && end >= 0 && end != rank && mine >= AN_NET_MIN_RETRANS) {
			an_text(v, "; rank %d is at one end of the connections with %u of the"
				" %u TCP retransmits on %u connections of the comm: its link"
				" loses packets, and rank %d's slow sends are its echo",
				end, mine, retrans, links, rank);
			an_val_i(v, "tcp_rank", end);
		}
	} else if (v->cls == AN_S2) {
		uint32_t links, retrans, mine;
		int32_t end = an_net_common_rank(an, c, &links, &retrans, &mine);

		an_text(v, "; step hooks sampled %.1f s: rank %d's GPU reaches the op last in"
			" %.0f%% of %u rounds, %.1f ms after the others (mean), while rank %d"
			" is at one end of the connections with %u of the %u TCP"
			" retransmits on %u connections of the comm: its link loses"
			" packets, and which GPU comes last is an echo of the earlier ops'"
			" network delays (communication, S2)", secs, rank, 100 * a,
			s->arr_rounds, b / 1e6, end, mine, retrans, links);
		an_val_i(v, "tcp_rank", end);
	} else {
		an_text(v, "; step hooks sampled %.1f s: rank %d's GPU reaches the op last in"
			" %.0f%% of %u rounds, %.1f ms after the others (mean), and no"
			" rank's sends are slow in the network: computation (S1; its CPU"
			" queues its calls ahead of its GPU, so the call is not its"
			" arrival)", secs, rank, 100 * a, s->arr_rounds, b / 1e6);
	}
	if (root) {
		an_text(v, "; a cascade: the same rank slows a comm already reported");
	} else if (cls == AN_S1 && v->cls == AN_S1 && !s->arr_held_by &&
		   (unseen = slow_unseen_holder(an, c, rank))) {
		slow_unseen_evidence(an, c, v, unseen);
	} else if (cls == AN_S1 && v->cls != AN_S2 && s->arr_held_by &&
		   /* its root first, if shown; a root itself where it made those ops late */
		   !slow_hold_chain(an, v, s->arr_held_by, true)) {
		/* its GPU came late from an op of another comm that ended late */
		const struct an_comm *h;

		h = an_comm_get(an, s->arr_held_by, 0, false);

		v->role = AN_CASCADE;
		v->blocked_comm = s->arr_held_by;
		v->blocked_seq = h && h->slow && h->slow->active ? h->slow_seq :
				 (h ? h->r[0].entered : -1);
		c->slow_cascade = true;
		an_text(v, "; a cascade: its GPU"
			" came straight from its op in comm %016" PRIx64 ", which"
			" ended late", s->arr_held_by);
	}
	if (cls == AN_S2 && rank >= 0) {
		an_val_i(v, "s2_rank", rank);
		an_val_f(v, "s2_step_ms", a / 1e6);
		an_val_f(v, "s2_step_median_ms", b / 1e6);
	} else if (cls != AN_S2) {
		an_val_i(v, "s1_rank", rank);
		an_val_f(v, "arrive_last_wait_share", a);
		an_val_f(v, "arrive_gap_ms", b / 1e6);
	}
}

static void emit_rise(struct an *an, struct an_comm *c, const struct slow_round *rd,
		      uint64_t now, enum an_class cls, int32_t rank, double a, double b,
		      const struct an_comm *named)
{
	struct an_slow *s = c->slow;
	const struct sl_rise_result *r = &s->rres;
	const struct an_comm *root;
	enum an_class vcls = cls;
	int32_t cul = named ? rank : slow_sampled_culprit(an, c, &vcls, rank);
	struct an_verdict *v = slow_nohist_frame(an, c, rd, now, vcls, cul, false, 0, &root);

	v->onset_ns = r->t_onset;
	an_text(v, "comm %016" PRIx64 " is slower:"
		" the network part of its rounds (last arrival to completion) rose from"
		" %.2f ms to %.2f ms (%.1fx) and stayed there for %u iterations, %.1f s",
		c->hash, r->base_ns / 1e6, r->level_ns / 1e6, r->level_ns / r->base_ns,
		r->iters, (double)(now - r->t_onset) / 1e9);
	if (named)
		an_text(v, "; its rank %d is the culprit already named in comm %016" PRIx64
			" (%s): a cascade", rank, named->hash, an_class_name(cls));
	an_text(v, "; %.2f s lost so far (%.1f ms per iteration)", r->lost_ns / 1e9,
		r->lost_ns / 1e6 / (r->iters ? r->iters : 1));
	if (named) {
		v->role = AN_CASCADE;
		v->blocked_comm = named->hash;
		v->blocked_seq = named->slow_seq;
		c->slow_cascade = true;
	} else {
		slow_sampled_cause(an, c, v, cls, rank, a, b, root);
	}
	an_val_s(v, "detector", "network part");
	an_val_f(v, "net_part_ms_before", r->base_ns / 1e6);
	an_val_f(v, "net_part_ms_after", r->level_ns / 1e6);
	an_val_i(v, "slow_iters", r->iters);
	an_val_f(v, "lost_s", r->lost_ns / 1e9);
	an_val_i(v, "nranks", c->nranks);
	if (v->cls == AN_S2)
		an_net_note(an, c, v);
	s->rise_wait = false;
	s->rise_said = true;
	s->rise_rank = cul;
	slow_send_verdict(an, v);
}

static void emit_rise_back(struct an *an, struct an_comm *c, const struct slow_round *rd)
{
	struct an_slow *s = c->slow;
	const struct an_comm *root;
	struct an_verdict *v = slow_nohist_frame(an, c, rd, rd->t_end,
					      s->cls, s->rise_rank,
					      true, 0, &root);

	v->onset_ns = s->rres.t_onset;
	an_text(v, "comm %016" PRIx64 " is back: the network part"
		" of its rounds fell to %.2f ms (its level before: %.2f ms)", c->hash,
		s->rres.level_ns / 1e6, s->rres.base_ns / 1e6);
	an_val_s(v, "detector", "network part");
	an_val_f(v, "net_part_ms", s->rres.level_ns / 1e6);
	s->rise_said = false;
	slow_send_verdict(an, v);
}

bool slow_rise_sampled(struct an *an, struct an_comm *c, uint64_t now)
{
	struct an_slow *s = c->slow;
	double a, b, extra = s->rres.level_ns - s->rres.base_ns;
	enum an_class cls;
	int32_t rank;

	if (!s->rise_wait)
		return false;	/* it fell back while sampled */
	/*
	 * A part (too many of its processes on a host to hook at once) is
	 * judged as a whole comm is, its ranks' send steps and arrivals among
	 * themselves: a risen network part asks first for a slow link, which
	 * a part shows where it holds the link's rank (random job 118: rank
	 * 5's steps 10.9 ms against 1.9, its stage peer last in the op; named
	 * S1 on arrivals alone).  The rise lasting through a part makes the
	 * part one of the slow ones (slow_parts_block).
	 */
	cls = slow_sample_decide(c, extra, &rank, &a, &b, &s->arr_held_by);
	/*
	 * The rise of a network part is no-history evidence that a busy host
	 * makes in a healthy job: the arrivals must then show one rank that
	 * held nearly all of the others' wait (random job 759, healthy: a
	 * rise of 13.6 -> 24.0 ms for 71 iterations and rank 0 last in 2 of
	 * 4 sampled rounds, 80% of the wait, named S1).  The S1 roots of kept
	 * random jobs' rises had 94-100%.
	 */
	if (cls == AN_S1 && a < RISE_ARR_SHARE) {
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 ": rank %d last with %.0f%%"
				" of the wait only (%u rounds): no S1 from a rise\n", c->hash,
				rank, 100 * a, s->arr_rounds);
		cls = 0;
		s->arr_held_by = 0;
	}
	if (s->samp_in)
		s->parts_slow++;
	/*
	 * Every rank reaches the op together: the time went in p2p ops
	 * before it, where one pipeline stage keeps its neighbours waiting
	 * (random job 12 on a busy VM: CCL-D's threshold out of reach, the
	 * rise of the world comm's network part the only onset).  Only where
	 * the CPU runs ahead of its GPU: the "network part" then begins at
	 * the call and holds the GPU's wait in the p2p ops queued before the
	 * op.  Where the CPU waits for its GPU it is the network's own, which
	 * no late p2p entry lengthens (test_intranode compute: a DP comm's
	 * rise after the fault ended, a healthy pipeline's 6.4 ms of jitter
	 * in its p2p entries named).
	 */
	if (!cls && slow_runahead(s) &&
	    (rank = slow_p2p_straggler(an, c, extra, &s->arr_p2p)) >= 0) {
		cls = AN_S1;
		s->arr_held_by = 0;
	}
	/*
	 * No one rank: a block of them arriving last together, one of it.
	 * By parts, only across them all (slow_parts_block): a part compares
	 * its own ranks' send steps only, so a slow link in another part is
	 * not seen from it, and its block may be a pipeline stage that waits
	 * in its p2p ops for that link (random job 118, rank 5's link 6x
	 * slower: ranks 2 and 3, its stage's neighbours on the other host,
	 * last in part 1 of 2, were named S1).
	 */
	if (!cls && ((!s->samp_in && (s->blk_n = slow_arrival_block(c, extra, &s->blk_lead))) ||
		     (s->blk_n = slow_parts_block(c, extra, &s->blk_lead)))) {
		cls = AN_S1;
		s->arr_held_by = 0;
		rank = slow_block_first(c);
	}
	/*
	 * Nothing the sample shows, while the kernel's retransmits name one
	 * rank's link: the network part grew with that link's losses (in a
	 * run of test_trace_tcp_loss under tests/noise.py: no sender stood
	 * out, the last arrivals split 3/10/7 between the ranks, 1,000
	 * retransmits at rank 2's link, and no verdict came)
	 */
	if (!cls && slow_tcp_end(an, c) >= 0) {
		cls = AN_S2;
		s->arr_held_by = 0;
		rank = -1;
	}
	if (cls) {
		emit_rise(an, c, &s->pend, now, cls, rank, a, b, NULL);
		s->blk_n = 0;
		s->blk_parts = false;
		memset(&s->arr_p2p, 0, sizeof(s->arr_p2p));
	} else if (slow_parts_left(s)) {
		return true;	/* the straggler is not in this part: the next one */
	} else {
		/* nothing explains it: tried again after the cooldown */
		s->samp_next = now + SAMPLE_COOLDOWN_NS;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 ": network part %.2f ->"
				" %.2f ms, the sample shows no slow link and no rank"
				" arriving last (%u rounds; the likeliest: share %.2f of the"
				" wait, lead %.2f ms): no verdict\n", c->hash,
				s->rres.base_ns / 1e6, s->rres.level_ns / 1e6, s->arr_rounds,
				a, b / 1e6);
	}
	return false;
}

static void rise_round(struct an *an, struct an_comm *c, const struct slow_round *rd)
{
	struct an_slow *s = c->slow;
	double tmin = INFINITY;
	const struct an_comm *o;
	int32_t k, rank;
	bool covered;
	int ev;

	/* its shortest duration runs to another comm's later op: not its network part */
	if (rd->nshared)
		return;
	for (k = 0; k < c->nranks; k++)
		if (rd->dur[k] < tmin)
			tmin = rd->dur[k];
	/*
	 * A duration of 0: the rank's end came with its earlier op's (one
	 * completion seen for both, its GPU start bound by that end), which
	 * measures nothing.  Taken as the round's network part, a comm whose
	 * step has such a round and a long one has a level that jumps
	 * between the two with their mix (random job 133: the world comm's
	 * level 6 -> 17 ms at the fault, then "back" at 0 ms mid-slowdown).
	 */
	if (!(tmin > 0))
		return;
	ev = sl_rise_round(s->rise, tmin, rd->t_end, s->sig0_iters, &s->rres);
	/* CCL-D's or the peer comparison's incident on this comm speaks for it */
	covered = s->peer_active || (sl_det_result(s->det)->active && !s->ccld_unsaid) ||
		  (s->active && s->chain_of);
	if (covered && !s->rise_said)
		s->rise_wait = false;
	if ((ev & SL_RISE_ONSET) && !covered) {
		s->rise_wait = true;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 ": network part %.2f ->"
				" %.2f ms for %u iterations\n", c->hash, s->rres.base_ns / 1e6,
				s->rres.level_ns / 1e6, s->rres.iters);
	}
	if (ev & SL_RISE_RECOVERY) {
		s->rise_wait = false;
		if (s->rise_said)
			emit_rise_back(an, c, rd);
		else
			slow_unnamed_ended(c, rd->t_end);
	}
	if (!s->rise_wait || c->sampling)
		return;
	if ((o = named_member(an, c, &rank)) != NULL) {
		emit_rise(an, c, rd, rd->t_end, o->slow->cls, rank, NAN, NAN, o);
		return;
	}
	/* a smaller comm of the same processes is sampled first: fewer hooks */
	if (smaller_rise(an, c))
		return;
	if (slow_can_sample(an, c, rd->t_end))
		slow_start_sample(an, c, rd, -1, PEND_RISE);
	else	/* more of its processes on a host than hooked at once: by parts */
		slow_start_part_sample(an, c, rd, -1, PEND_RISE);
}

/*
 * A CCL-D onset waits (no sample possible or none explained it): once a
 * comm sharing one of its ranks names that rank, it is a cascade of it.
 */
static void unsaid_round(struct an *an, struct an_comm *c, const struct slow_round *rd)
{
	struct an_slow *s = c->slow;
	const struct sl_result *res = sl_det_result(s->det);
	const struct an_comm *o, *root;
	struct an_verdict *v;
	int32_t rank;

	if (!s->ccld_unsaid || !res->active || c->sampling ||
	    !(o = named_member(an, c, &rank)))
		return;
	s->ccld_unsaid = false;
	v = slow_nohist_frame(an, c, rd, rd->t_end, o->slow->cls, rank, false, 0, &root);
	v->onset_ns = res->onset_ns;
	v->role = AN_CASCADE;
	v->blocked_comm = o->hash;
	v->blocked_seq = o->slow_seq;
	c->slow_cascade = true;
	an_text(v, "comm %016" PRIx64 " is slower: round time"
		" %.1f ms against a baseline of %.1f ms (R = %.2f > %.2f) since"
		" iteration %" PRId64 "; its CPUs queue their calls ahead of their"
		" GPUs, so its rounds do not say who arrives last; its rank %d is the"
		" culprit already named in comm %016" PRIx64 " (%s): a cascade",
		c->hash, res->tmax_ns / 1e6, res->tbase_ns / 1e6, res->r, res->thr,
		res->onset_iter + s->iter_skip, rank, o->hash, an_class_name(o->slow->cls));
	an_val_f(v, "tbase_ms", res->tbase_ns / 1e6);
	an_val_f(v, "tmax_ms", res->tmax_ns / 1e6);
	an_val_f(v, "r", res->r);
	an_val_i(v, "onset_iter", res->onset_iter + s->iter_skip);
	an_val_f(v, "lost_s", res->lost_ns / 1e9);
	an_val_i(v, "slow_iters", res->slow_iters);
	an_val_i(v, "nranks", c->nranks);
	slow_send_verdict(an, v);
}

void slow_nohist_round(struct an *an, struct an_comm *c, const struct slow_round *rd,
		       bool learned)
{
	struct an_slow *s = c->slow;
	bool exact = rd->nexact == (uint32_t)c->nranks;
	bool was = slow_runahead(s);

	count_iter(s, rd);
	s->njudged++;
	s->exact_bits = s->exact_bits << 1 | exact;
	if (an->debug && was != slow_runahead(s))
		fprintf(stderr, "an: slow comm %016" PRIx64 ": %s\n", c->hash,
			was ? "rounds' starts known (the CPU waits for its GPU)" :
			"rounds' starts unknown (the CPU runs ahead of its GPU)");
	unsaid_round(an, c, rd);
	rise_round(an, c, rd);
	slow_survey_round(an, c, rd);
	if (exact) {
		peer_undecided(c);
		peer_round(an, c, rd, learned);
	} else if (rd->nundec && rd->nexact + rd->nundec == (uint32_t)c->nranks) {
		/* every start known once its process is judged: kept till then */
		uint32_t i = s->nundec;

		if (i == PEER_UNDECIDED) {	/* full: the oldest goes */
			double *d = s->undec_dur[0];

			i--;
			memmove(s->undec_dur, s->undec_dur + 1, i * sizeof(*s->undec_dur));
			memmove(s->undec_t, s->undec_t + 1, i * sizeof(*s->undec_t));
			memmove(s->undec_iter, s->undec_iter + 1, i * sizeof(*s->undec_iter));
			s->undec_dur[i] = d;
		} else {
			s->nundec++;
		}
		memcpy(s->undec_dur[i], rd->dur, (size_t)c->nranks * sizeof(double));
		s->undec_t[i] = rd->t_end;
		s->undec_iter[i] = s->sig0_iters;
	} else {
		s->nundec = 0;	/* a process runs ahead: they were bounds only */
	}
}
