// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Already slow where the CPU runs ahead (docs/slow.md, "A survey of a
 * job already slow"): attached to a PyTorch-like job whose straggler was
 * slow before ccld came, no round has known starts without step hooks,
 * so the peer comparison never runs, and CCL-D learns its baseline on the
 * slow job.  Once a comm that ran before ccld came is known to run ahead,
 * with no incident open, one step sample (a survey) shows its GPUs'
 * arrivals: a rank last in most of them, keeping the others waiting a
 * real share of the round, is a straggler with no healthy history needed.  While that incident is open,
 * a survey again every SURVEY_EVERY_NS tells whether it recovered.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include "an_slow_int.h"

#define SURVEY_ROUNDS	8	/* sampled rounds with every arrival, at least ... */
#define SURVEY_MAX_ROUNDS	128	/* ... at most (2 ranks need 59, 4 need 15) */
#define SURVEY_CHANCE	1e-4	/* ... so many that chance makes a rank last so often */
#define SURVEY_LAST	0.75	/* last in this share of them ... */
#define SURVEY_LEAD	0.25	/* ... by this share of the interval between rounds ... */
#define SURVEY_LEAD_MIN_NS	1000000.0	/* ... and this long at least */
#define SURVEY_LINK_COST	0.1	/* a slow link costs this share of the interval */
#define SURVEY_EVERY_NS	30000000000ull	/* an open incident surveyed again */
#define SURVEY_AGAIN_NS	1000000000ull	/* a late p2p stage asked about again */
#define SURVEY_FIRST_SEQ	16	/* the comm's rounds before the first seen, at least */
/*
 * A comm surveyed with no straggler found whose rounds come this much
 * further apart than when the survey began, for RESURVEY_HOLD_NS and
 * RESURVEY_ROUNDS judged rounds, is surveyed again (the level then is the
 * new one): attached shortly before a slowdown, CCL-D learns its baseline
 * on the slow job, and a comm whose rounds' ends are shared with later ops
 * has none at all.  Three seconds: CCL-D, the rise and the comparable
 * group answer a slowdown sooner, each with a sample of its own, which a
 * survey taking the hooks first would hold back (random jobs 228, 343
 * and 1065 replayed: their roots lost with one second).
 */
#define RESURVEY_RISE	1.5
#define RESURVEY_HOLD_NS	3000000000ull
#define RESURVEY_ROUNDS	8
#define IV_DECAY	(1.0 / 8)	/* the mean interval between rounds, exponentially */

/* C's rounds began before ccld came (its seqs count from the attach, or start late) */
static bool came_late(const struct an_comm *c)
{
	int32_t k;

	for (k = 0; k < c->nranks; k++)
		if (c->r[k].seq_from_attach)
			return true;
	return c->slow->first_seq >= SURVEY_FIRST_SEQ;
}

/* sampled rounds with every arrival a survey needs */
static uint32_t survey_rounds(int32_t nranks)
{
	uint32_t n = sl_chance_rounds((uint32_t)nranks, SURVEY_LAST, SURVEY_CHANCE,
				      SURVEY_MAX_ROUNDS);

	return n < SURVEY_ROUNDS ? SURVEY_ROUNDS : n;
}

bool slow_survey_rose(struct an_slow *s, int64_t seq, uint64_t t_end, bool sampling)
{
	/*
	 * the interval between consecutive judged rounds, kept as a mean; a
	 * rise holds only over rounds judged one after another
	 */
	if (s->iv_prev_t && seq == s->iv_prev_seq + 1 && t_end > s->iv_prev_t) {
		double d = (double)(t_end - s->iv_prev_t);

		s->iv_mean = s->iv_n ? s->iv_mean + IV_DECAY * (d - s->iv_mean) : d;
		s->iv_n++;
	} else {
		s->iv_high_t = 0;
	}
	s->iv_prev_seq = seq;
	s->iv_prev_t = t_end;
	/* surveyed with nothing found or asked, its rounds far further apart */
	if (!s->surveyed || s->survey_open || s->survey_p2p || s->survey_link || sampling ||
	    !(s->survey_iv > 0) || s->iv_n < RESURVEY_ROUNDS ||
	    !(s->iv_mean >= RESURVEY_RISE * s->survey_iv)) {
		s->iv_high_t = 0;
		return false;
	}
	if (!s->iv_high_t)
		s->iv_high_t = t_end;
	if (t_end - s->iv_high_t < RESURVEY_HOLD_NS)
		return false;
	s->iv_high_t = 0;
	s->resurvey_rise = s->iv_mean / s->survey_iv;
	s->resurvey_extra = s->iv_mean - s->survey_iv;
	return true;
}

void slow_survey_round(struct an *an, struct an_comm *c, const struct slow_round *rd)
{
	struct an_slow *s = c->slow;
	bool whole, base;

	if (slow_survey_rose(s, rd->seq, rd->t_end, c->sampling)) {
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 ": rounds"
				" %.2f ms apart against %.2f ms when its survey began:"
				" surveyed again\n", c->hash, rd->seq, s->iv_mean / 1e6,
				s->survey_iv / 1e6);
		s->surveyed = false;
	}
	if (s->surveyed && !s->survey_open && !s->survey_p2p && !s->survey_link)
		return;		/* once per comm: the common case, first */
	/*
	 * Only where the job ran before ccld came: traced from its start, the
	 * baseline is the job's start, and a survey's hooks would only delay
	 * the baselines of every comm of its processes
	 */
	if (!came_late(c) || s->njudged < RUNAHEAD_ROUNDS)
		return;
	if (s->survey_open) {
		/* another detector's incident took over: it speaks, and ends it */
		if (!s->active || s->root_cul != s->survey_rank || s->peer_active ||
		    s->rise_said || sl_det_result(s->det)->active) {
			s->survey_open = false;
			return;
		}
		if (c->sampling || rd->t_end < s->survey_next)
			return;
	} else if ((s->survey_p2p || s->survey_link) &&
		   (c->sampling || rd->t_end < s->survey_next)) {
		return;
	} else if (slow_covered(c)) {
		return;
	}
	/*
	 * A survey of known starts or by parts waits for the comm's baseline:
	 * its hooks perturb the rounds of every comm of its processes, which
	 * are not learned from, and attached mid run a healthy job's world
	 * comm of 8, surveyed by parts, learned its baseline only after rank
	 * 5's link slowed, so the rise of its network part never showed
	 * (random job 118 in a CI run; rise from 3.4 to 33.6 ms found with the
	 * baseline learned first).  A run-ahead comm hooked whole is surveyed
	 * at once, as before: its straggler is named from arrivals alone.
	 */
	base = s->survey_open || s->survey_link || sl_det_base(s->det)->learned;
	if (!base && !slow_runahead(s))
		return;
	whole = slow_can_sample(an, c, rd->t_end);
	/*
	 * by parts only with the baseline learned, and not to ask about a GPU
	 * arriving last again (a part's arrivals say nothing of it); hooks
	 * busy: a later round
	 */
	if (!whole && (!base || (s->survey_open && !s->survey_recheck_parts) ||
		       !slow_can_part_sample(an, c, rd->t_end)))
		return;
	if (an->debug && (s->survey_p2p || s->survey_link))
		fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 ": surveyed again"
			" (rank %d's %s)\n", c->hash, rd->seq,
			(s->survey_p2p ? s->survey_p2p : s->survey_link) - 1,
			s->survey_p2p ? "p2p entries were late" : "send steps were slow");
	s->surveyed = true;
	/* the level a later rise is measured against (a fresh one from now) */
	if (!s->survey_open && !s->survey_p2p && !s->survey_link) {
		s->survey_iv = s->iv_n >= RESURVEY_ROUNDS ? s->iv_mean : 0;
		s->iv_n = 0;
	}
	/*
	 * Where the rounds' starts are known the peer comparison finds a
	 * straggler with no history; a slow link shows only in step hooks'
	 * network time (random job 1281: a TP comm of 4 attached after rank
	 * 3's link slowed, every rank waiting alike, silent).  By parts
	 * (more of its processes on a host than hooked at once) a part's
	 * arrivals are compared among its own ranks, and one that waits for
	 * a straggler in another part (a pipeline stage's neighbour) can
	 * come last in it: no GPU arriving last is named, but its send
	 * steps show a slow link it holds (random job 1242: 8 ranks on one
	 * machine, rank 1's link 7x slower in the world comm, the only comm
	 * that crosses hosts), and the pipeline rule needs the CPUs' entries
	 * only: where a hybrid job's TP and DP comms sit on one host (no
	 * proxy data to sample them), the world comm is the one surveyed
	 */
	s->survey_link_only = !slow_runahead(s);
	s->survey_next = rd->t_end + SURVEY_EVERY_NS;
	s->survey_need = survey_rounds(c->nranks);
	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 ": %s (%s)\n",
			c->hash, rd->seq, s->survey_open ? "surveyed again" : "survey",
			s->survey_link_only ? "its rounds' starts are known: a slow link only" :
			!whole ? "its rounds' starts are unknown; by parts: no GPU arriving last" :
			"its rounds' starts are unknown");
	if (whole)
		slow_start_sample(an, c, rd, -1, PEND_SURVEY);
	else
		slow_start_part_sample(an, c, rd, -1, PEND_SURVEY);
}

bool slow_survey_short(const struct an_slow *s, uint64_t now)
{
	return (s->pend_ev & PEND_SURVEY) && s->arr_rounds < s->survey_need &&
	       now - s->samp_t0 < SAMPLE_MAX_NS;
}

/*
 * A slow link in a survey's sample: a rank whose send steps spend twice the
 * others' time in the network (mean and typical step, slow_link_outlier),
 * costing its rounds a tenth of the interval between them at least (a job
 * a tenth slower is slowed; a straggler's lead needs a quarter, since one
 * rank arriving last by chance is common, while twice the others' median
 * step, found again by a second survey, is not chance: random job 1038, 4
 * ranks, rank 3's link 4.6x slower, attached late, its steps 5.7 ms
 * against 1.2-1.4, typical 4.9 against 1.1, cost 5.0 ms of a round every
 * 24.0 ms, was silent with a quarter).  It comes first, as in an incident's sample (slow_sample_decide): the GPUs
 * that wait for its data reach their next op late, and one of them may
 * look like a straggler.  Random job 234 (a link 7.6x slower, attached
 * late): rank 2's steps 12.1 ms against 2.8-3.1, a round every 33.9 ms;
 * the survey found no straggler, and nothing else had a history to judge.
 */
int32_t slow_survey_link(const struct an_comm *c, double iv, double *lat, double *lat_med)
{
	int32_t rank;
	double cost = slow_link_cost(c, &rank, lat, lat_med);

	return !isnan(cost) && iv > 0 && cost >= SURVEY_LINK_COST * iv ? rank : -1;
}

/* the mean time between the sample's rounds with every arrival, NAN */
double slow_sample_interval(const struct an_slow *s)
{
	return s->arr_rounds > 1 && s->arr_t1 > s->arr_t0 ?
	       (double)(s->arr_t1 - s->arr_t0) / (s->arr_rounds - 1) : NAN;
}

/*
 * RANK last in the sample's rounds that kept the others waiting THR or
 * more, in SURVEY_LAST of them and so many that chance makes one rank last
 * so often at most SURVEY_CHANCE of the time.  Of a step's ops back to back
 * only the first waits for the straggler, and the next ones' last arriver
 * is anyone, microseconds ahead: random job 1224 (8 ranks, PyTorch-like,
 * PP 2 x DP 4, rank 2's compute 4.6x, attached after the fault), its DP
 * comm's survey saw rank 2 last in 12 of 20 rounds, 99% of the wait,
 * 19.5 ms ahead with a round every 20.7 ms, and said nothing.
 */
static bool last_when_waited(const struct an_slow *s, int32_t nranks, int32_t rank, double thr)
{
	uint32_t i, n = s->arr_rounds < ARR_LOG ? s->arr_rounds : ARR_LOG, m = 0, k = 0;

	for (i = 0; i < n; i++) {
		if (s->arr_log[i].gap_ns < thr)
			continue;
		m++;
		k += s->arr_log[i].last == rank;
	}
	return m && k >= SURVEY_LAST * m &&
	       sl_chance_last((uint32_t)nranks, m, k) <= SURVEY_CHANCE;
}

bool slow_survey_names(const struct an_comm *c, int32_t rank, double lead, double iv)
{
	const struct an_slow *s = c->slow;

	return rank >= 0 && s->arr_rounds >= survey_rounds(c->nranks) &&
	       lead >= SURVEY_LEAD * iv && lead >= SURVEY_LEAD_MIN_NS &&
	       (s->arr_last[rank] >= SURVEY_LAST * s->arr_rounds ||
		last_when_waited(s, c->nranks, rank, fmax(SURVEY_LEAD * iv, SURVEY_LEAD_MIN_NS)));
}

bool slow_survey_sampled(struct an *an, struct an_comm *c, uint64_t now)
{
	struct an_slow *s = c->slow;
	double iv = slow_sample_interval(s), share, lead;
	double lat = NAN, lat_med = NAN;
	const struct an_comm *root;
	struct an_verdict *v;
	uint64_t held;
	int32_t rank = slow_arrival_culprit(c, &share, &lead, &held);
	int32_t link = s->arr_rounds >= s->survey_need ? slow_survey_link(c, iv, &lat, &lat_med) : -1;
	int32_t end = slow_net_end(an, c, link);	/* the sender, or the lossy link's end */
	/*
	 * Not a rank that shares its GPU with another of the comm: the GPU
	 * runs their kernels in turns, so one of them reaches each op last
	 * however fast it is.  The real-GPU acceptance (two ranks on one
	 * H200, the same work), healthy: rank 0 last in 56 of 74 rounds,
	 * 2.36 ms behind, a round every 6.57 ms, named S1.  Without a
	 * history, a slow rank among them cannot be told from the turns.
	 */
	bool shared = rank >= 0 && an_gpu_shared(an, c, rank);
	bool named = !s->survey_link_only && !s->samp_in &&
		     slow_survey_names(c, rank, lead, iv) && !shared;
	enum an_class cls = AN_S1;

	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 " survey: %u rounds with every"
			" arrival (%u wanted), likeliest straggler %d (last in %u, %.0f%% of"
			" the wait, %.2f ms ahead, a round every %.2f ms%s%s): %s; slow link:"
			" %d\n", c->hash,
			s->arr_rounds, s->survey_need, rank, rank >= 0 ? s->arr_last[rank] : 0,
			100 * share, lead / 1e6, iv / 1e6,
			held ? ", its GPU late from another comm's op" : "",
			shared ? ", its GPU shared with another rank of the comm" : "",
			named && !held ? "a straggler" : "none", link);
	struct slow_p2p_found f;
	char again[96] = "";
	uint32_t blk = 0;	/* ranks in a block arriving last, 0 none */
	int32_t p2p = -1, asked = s->survey_p2p - 1;	/* the rank asked about again */
	int32_t asked_link = s->survey_link - 1;
	bool more;
	enum an_class vcls;
	int32_t cul;

	s->survey_p2p = s->survey_link = 0;
	/* by parts: the link may be in a later part */
	more = slow_parts_left(s);

	/*
	 * A slow link found is asked about again: on a machine with more
	 * processes than cores a proxy thread waits for a CPU through much of
	 * its steps, while a slow link stays slow.  Random job 323 (healthy,
	 * 16 ranks on 2 cores): a part of its world comm showed rank 1's
	 * steps at 1.80 ms against 0.66-1.09, every proxy thread's run-queue
	 * wait alike; random job 349 (rank 13's GPU 4.9x slower, 16 ranks):
	 * a TP comm's survey found rank 11's steps at 3.41 ms against 1.50,
	 * another run's rank 2's.  Only the same rank found again is named,
	 * its onset the first survey's start; found once, the arrivals
	 * decide as if no link were slow.
	 */
	if (link >= 0 && !s->survey_open && end != asked_link) {
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " survey: rank %d's link %s\n",
				c->hash, end, asked_link < 0 ? "asked about again" :
				"not the one found before: none");
		if (asked_link < 0) {
			s->survey_link = end + 1;
			s->survey_next = now + SURVEY_AGAIN_NS;
			s->survey_onset = s->samp_t0;
			return false;
		}
		link = end = -1;
	}

	/* every GPU reaches the op about together: a pipeline stage behind its neighbours? */
	if (link < 0 && (!named || held) && !s->survey_link_only &&
	    s->arr_rounds >= s->survey_need && iv > 0) {
		double thr = fmax(SURVEY_LEAD * iv, SURVEY_LEAD_MIN_NS);

		p2p = slow_p2p_straggler(an, c, 2 * thr, &f);
		if (an->debug && p2p >= 0)
			fprintf(stderr, "an: slow comm %016" PRIx64 " survey: rank %d enters its"
				" p2p ops with rank %d of comm %016" PRIx64 " %.2f ms after"
				" it (%u of %u ops late), a round every %.2f ms\n", c->hash,
				p2p, f.peer, f.comm, f.late_ns / 1e6, f.late_pairs, f.pairs,
				iv / 1e6);
	}
	/*
	 * Surveyed again because its rounds came far further apart, and no one
	 * rank stands out: a block of ranks arriving last together, by the
	 * survey's lead (random job 324: ranks 0 and 1, one host's, whose
	 * comm with each other is intra-node, last in 20 of 20 rounds of the
	 * world comm after rank 1's compute slowed; none in 32 before)
	 */
	if (link < 0 && (!named || held) && p2p < 0 && s->resurvey_rise > 0 && !s->samp_in &&
	    s->arr_rounds >= s->survey_need && iv > 0) {
		/* its lead explains a quarter of the rise at least, as a rise sample's must */
		double extra = s->resurvey_extra;

		blk = extra > 0 ? slow_arrival_block(c, extra, &s->blk_lead) : 0;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " survey: a block of %u"
				" ranks arriving last together, %.2f ms ahead (the rise %.2f ms)\n",
				c->hash, blk, blk ? s->blk_lead / 1e6 : 0, extra / 1e6);
		if (blk && !(s->blk_lead >= SURVEY_LEAD_MIN_NS))
			blk = 0;
	}
	if (s->survey_open) {
		if (s->survey_cls == AN_S2 ?
		    end == s->survey_rank ||
		    (named && !held && slow_tcp_echo(an, c, AN_S1) == s->survey_rank) :
		    s->survey_block ? blk && slow_block_first(c) == s->survey_rank :
		    (named && !held ? rank : p2p) == s->survey_rank)
			return false;		/* still slow: the incident stays open */
		if (more)
			return true;
		s->survey_open = false;
		v = slow_nohist_frame(an, c, &s->pend, now, s->survey_cls, s->survey_rank, true,
				      0, &root);
		v->onset_ns = s->survey_onset;
		an_text(v, "comm %016" PRIx64 " is back: a survey with step hooks no longer"
			" finds rank %d %s (%u rounds with every arrival)", c->hash,
			s->survey_rank, s->survey_cls == AN_S2 ? "sending slowly" : "arriving last",
			s->arr_rounds);
		an_val_s(v, "detector", "survey");
		slow_send_verdict(an, v);
		/* its baseline was learned on the slow job */
		slow_det_relearn(an, c);
		return false;
	}
	/*
	 * Its GPU came late from another comm's op (a pipeline stage's
	 * send/recv, a TP op): with no history, an imbalance built into the
	 * job (the stage that computes the loss) looks the same; that comm's
	 * own survey names its straggler, if it has one
	 */
	if (link >= 0) {
		cls = AN_S2;
		rank = end;
		p2p = -1;
	} else if (named && !held) {
		p2p = -1;	/* its GPU arrives last: that says it */
	} else if (blk) {
		rank = slow_block_first(c);	/* one of them: undetermined */
	} else if (p2p < 0 || (asked >= 0 && p2p != asked)) {
		if (more) {
			/* the next part's sample is the same survey: what it asks, too */
			s->survey_p2p = asked + 1;
			s->survey_link = asked_link + 1;
		}
		return more;
	} else if (asked < 0) {
		/*
		 * Late CPU entries in one window are also a burst of load, or
		 * the attach's own work competing with the ranks for the CPUs
		 * (the stand-in's GPU acceptance, healthy: rank 1 entered its
		 * send/recv 2.4 ms after rank 0 in 28 of 32 ops in the first
		 * 0.6 s after the attach, 0.1 ms after (median) from then on).
		 * A stage behind its neighbours stays behind: asked again
		 * SURVEY_AGAIN_NS later, it is named if found again.
		 */
		s->survey_p2p = p2p + 1;
		s->survey_next = now + SURVEY_AGAIN_NS;
		s->survey_onset = s->samp_t0;
		return false;
	} else {
		rank = p2p;
	}
	/* a p2p straggler's evidence is not who arrives last: no echo there */
	vcls = cls;
	cul = p2p < 0 && !blk ? slow_sampled_culprit(an, c, &vcls, rank) : rank;
	v = slow_nohist_frame(an, c, &s->pend, now, vcls, cul, false, 0, &root);
	s->survey_open = true;
	s->survey_block = blk > 0;
	s->survey_cls = v->cls;
	s->survey_rank = cul;
	s->survey_recheck_parts = v->cls == AN_S2 || p2p >= 0;
	if (asked < 0 && asked_link < 0)
		s->survey_onset = s->samp_t0;
	v->onset_ns = s->survey_onset;	/* the slowdown began before: unknown */
	if (s->resurvey_rise > 0)
		snprintf(again, sizeof(again), ", asked for when its rounds came %.1fx"
			 " further apart than at its survey before", s->resurvey_rise);
	else
		snprintf(again, sizeof(again), ", and a baseline learned on the job as"
			 " it is shows no slowdown that began before");
	an_text(v, "comm %016" PRIx64 " has a %s, found by a survey of %u of its"
		" rounds with step hooks (one every %.2f ms): %s%s",
		c->hash, cls == AN_S2 ? "slow link" : "straggler", s->arr_rounds, iv / 1e6,
		s->survey_link_only ?
		"only step hooks show how long its sends spend in the network" :
		"its CPUs queue their calls ahead of their GPUs, so no round shows who"
		" arrives last without them", again);
	if (s->resurvey_rise > 0)
		an_val_f(v, "resurvey_rise", s->resurvey_rise);
	s->arr_held_by = 0;
	if (p2p >= 0) {
		slow_p2p_evidence(v, rank, &f);
		an_val_i(v, "s1_rank", rank);
	} else if (blk) {
		s->blk_parts = false;
		slow_block_evidence(an, c, v, (double)(now - s->samp_t0) / 1e9);
	} else if (cls == AN_S2) {
		slow_sampled_cause(an, c, v, AN_S2, link, lat, lat_med, root);
		an_net_note(an, c, v);
	} else {
		slow_sampled_cause(an, c, v, AN_S1, rank, share, lead, root);
	}
	an_val_s(v, "detector", "survey");
	an_val_i(v, "rounds", s->arr_rounds);
	an_val_i(v, "last_rounds", s->arr_last[rank]);
	an_val_f(v, "interval_ms", iv / 1e6);
	an_val_i(v, "nranks", c->nranks);
	slow_part_evidence(c, v);
	slow_send_verdict(an, v);
	return false;
}
