// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Slow diagnosis fed by the analyzer's own inputs (docs/slow.md): per rank and
 * round, the duration from the call's entry to its GPU completion (tier B),
 * both on the rank's own host clock; rounds aligned by (comm, seq) and
 * handed, complete and in order, to one CCL-D detector per communicator
 * (slow_detect.c) with the iteration index from the comm's op-signature
 * period (slow_period.c), and to the detectors that need no history
 * (an_slow_nohist.c).  This file keeps the durations and the rounds; CCL-D's
 * events and verdicts: an_slow_ccld.c; step samples: an_slow_sample.c.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "an_int.h"
#include "an_slow_int.h"
#include "slow.h"

/*
 * A round's op signature: what the op is, and whether it opens a run of the
 * comm's ops in its process (SIG_AFTER): alike ops get an iteration then.
 */
static uint64_t sig_hash(const struct an_sig *s)
{
	uint64_t h = 1469598103934665603ull;

	h = (h ^ s->fn) * 1099511628211ull;
	h = (h ^ s->count) * 1099511628211ull;
	h = (h ^ s->dtype) * 1099511628211ull;
	h = (h ^ (uint64_t)(s->flags & SIG_AFTER)) * 1099511628211ull;
	return (h ^ (uint64_t)(uint32_t)s->root) * 1099511628211ull;
}

size_t an_slow_bytes(const struct an_slow *s)
{
	return s ? s->bytes : 0;
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
		free(s->r[i].synced);
	}
	slow_nohist_free(s);
	free(s->holder);
	free(s->samp_in);
	free(s->pend_hcomm);
	free(s->pend_hseq);
	free(s->dur_hooked);
	free(s->net0);
	free(s->srate);
	free(s->wait);
	free(s->slat);
	free(s->rq);
	free(s->styp);
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
	c->slow->base_t = 0;
	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 ": baseline learned again\n",
			c->hash);
}

/* the bytes S, of NRANKS ranks, holds (slow_new's allocations) */
static size_t slow_bytes(const struct an_slow *s, int32_t nranks)
{
	size_t per_rank = sizeof(*s->holder) + sizeof(*s->pend_hcomm) + sizeof(*s->pend_hseq) +
			  sizeof(*s->dur_hooked) + 3 * sizeof(*s->net0) + sizeof(*s->srate) +
			  sizeof(*s->wait) + sizeof(*s->slat) + sizeof(*s->styp) +
			  sizeof(*s->rq) +
			  AN_HIST * (sizeof(*s->r[0].dur) + sizeof(*s->r[0].dur_bound) +
				     sizeof(*s->r[0].rate) + sizeof(*s->r[0].after_hold) +
				     sizeof(*s->r[0].hold) + sizeof(*s->r[0].synced));

	return sizeof(*s) + (size_t)nranks * per_rank + sl_det_bytes(s->det) +
	       sl_iter_bytes(s->iter) + sl_bocd_bytes(s->bocd) + slow_nohist_bytes(s, nranks);
}

/*
 * A comm's slow-detection state, counted against --mem-max (48 KB a comm
 * and 664 bytes a rank, the largest part the iteration period's 1024
 * signatures: thousands of comms made hundreds of MB the budget did not
 * see); NULL on no memory or over the budget, and the comm is then judged
 * for hangs only
 */
static struct an_slow *slow_new(struct an *an, int32_t nranks)
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
	s->first_seq = -1;
	s->holder = calloc((size_t)nranks, sizeof(*s->holder));
	s->pend_hcomm = calloc((size_t)nranks, sizeof(*s->pend_hcomm));
	s->pend_hseq = calloc((size_t)nranks, sizeof(*s->pend_hseq));
	s->dur_hooked = calloc((size_t)nranks, sizeof(*s->dur_hooked));
	s->net0 = calloc(3 * (size_t)nranks, sizeof(*s->net0));
	s->srate = calloc((size_t)nranks, sizeof(*s->srate));
	s->wait = malloc((size_t)nranks * sizeof(*s->wait));
	for (k = 0; s->wait && k < nranks; k++)
		s->wait[k] = NAN;
	s->slat = calloc((size_t)nranks, sizeof(*s->slat));
	s->styp = calloc((size_t)nranks, sizeof(*s->styp));
	s->rq = malloc((size_t)nranks * sizeof(*s->rq));
	for (k = 0; s->rq && k < nranks; k++)
		s->rq[k] = NAN;
	s->last_iter = -1;
	s->grp_mine = s->grp_med = s->grp_lo_extra = NAN;
	s->newest.seq = -1;
	for (i = 0; i < AN_HIST; i++) {
		s->r[i].seq = -1;
		s->r[i].dur = malloc((size_t)nranks * sizeof(double));
		s->r[i].dur_bound = malloc((size_t)nranks * sizeof(double));
		s->r[i].rate = malloc((size_t)nranks * sizeof(double));
		s->r[i].after_hold = malloc((size_t)nranks * sizeof(double));
		s->r[i].hold = calloc((size_t)nranks, sizeof(uint64_t));
		s->r[i].synced = calloc((size_t)nranks, sizeof(uint64_t));
		if (!s->r[i].dur || !s->r[i].dur_bound || !s->r[i].rate || !s->r[i].after_hold ||
		    !s->r[i].hold || !s->r[i].synced)
			break;
		for (k = 0; k < nranks; k++)
			s->r[i].dur[k] = s->r[i].dur_bound[k] = s->r[i].rate[k] =
				s->r[i].after_hold[k] = NAN;
	}
	if (!s->det || !s->iter || !s->bocd || !s->holder || !s->pend_hcomm || !s->pend_hseq ||
	    !s->dur_hooked || !s->net0 ||
	    !s->srate || !s->wait || !s->slat || !s->styp || !s->rq || i < AN_HIST ||
	    !slow_nohist_new(s, an, nranks) || !an_mem_take(an, s->bytes = slow_bytes(s, nranks))) {
		an_slow_free(s);
		return NULL;
	}
	return s;
}

/* the latest round of signature SIG lasted TMIN after its last arrival */
static void note_tmin(struct an_slow *s, uint64_t sig, double tmin)
{
	uint32_t i;

	for (i = 0; i < s->nlast_tmin; i++)
		if (s->last_tmin[i].sig == sig)
			break;
	if (i == s->nlast_tmin) {
		if (s->nlast_tmin == SIG_TMINS)
			return;		/* a comm of many ops: the first kept */
		s->nlast_tmin++;
	}
	s->last_tmin[i].sig = sig;
	s->last_tmin[i].tmin = tmin;
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
	if (isfinite(tmin) && rd->sig)
		note_tmin(s, rd->sig, tmin);
}

/* round RD, judged with durations DUR: its S1 candidate and what held it */
static void note_hold(struct an_slow *s, const struct slow_round *rd, const double *dur,
		      int32_t nranks)
{
	struct round_hold *h = &s->rh[s->nrh++ % ROUND_HOLDS];
	double lo = INFINITY;
	int32_t k;

	h->t_end = rd->t_end;
	h->rank = -1;
	h->holder = 0;
	for (k = 0; k < nranks; k++)
		if (dur[k] < lo) {
			lo = dur[k];
			h->rank = k;
		}
	if (h->rank >= 0)
		h->holder = rd->hold[h->rank];
}

uint64_t slow_located_holder(const struct an_slow *s, uint64_t t_end, int32_t rank)
{
	uint32_t i, n = s->nrh < ROUND_HOLDS ? s->nrh : ROUND_HOLDS;

	for (i = 0; i < n; i++) {
		const struct round_hold *h = &s->rh[(s->nrh - 1 - i) % ROUND_HOLDS];

		if (h->t_end == t_end && h->rank == rank)
			return h->holder;
	}
	return s->holder[rank];		/* not kept: the latest round's */
}

static void clear_round(struct slow_round *rd, int32_t nranks)
{
	int32_t k;

	rd->seq = -1;
	rd->n = rd->nexact = rd->narr = rd->nundec = rd->nshared = 0;
	rd->t_end = 0;
	rd->any_rate = false;
	for (k = 0; k < nranks; k++) {
		rd->dur[k] = rd->dur_bound[k] = rd->rate[k] = rd->after_hold[k] = NAN;
		rd->hold[k] = rd->synced[k] = 0;
	}
}

bool slow_proc_hooked(const struct an_proc *p, uint32_t host, uint64_t t_ns)
{
	return (p->hooked && (p->host != host || t_ns >= p->hooked_since)) ||
	       t_ns < p->perturbed_until;
}

/*
 * Step hooks were on in a process of C (a suspected or sampled comm's) when
 * its round ended at T_NS on HOST's clock, or until less than AN_PERTURB_NS
 * before: the round is perturbed.  A round that ended before they went on
 * is not, though its records came after (a process on another host: its
 * clock is not compared, hooked is perturbed).
 */
static bool comm_hooked(const struct an *an, const struct an_comm *c, uint32_t host,
			uint64_t t_ns)
{
	int32_t k;

	for (k = 0; k < c->nranks; k++) {
		const struct an_proc *p = an_proc_of(an, &c->r[k]);

		if (p && slow_proc_hooked(p, host, t_ns))
			return true;
	}
	return false;
}

/*
 * The share of C's round that ended at T_END (HOST's clock) that step hooks
 * can have added: per process of C with step records around then, their
 * rate times AN_HOOK_DELAY_NS, summed over its ranks (each rank's delays
 * can be on the round's path).  *COVERED: how many processes had hooks on
 * by then (a round that ended before the first step record of a process
 * on its host was not touched by it).  -1 where a hooked process's rate is
 * not known yet (under AN_HOOK_RATE_NS of records): not judged.
 */
static double hook_share(const struct an *an, const struct an_comm *c, uint32_t host,
			 uint64_t t_end, uint32_t *covered)
{
	double share = 0;
	int32_t k;

	*covered = 0;
	for (k = 0; k < c->nranks; k++) {
		const struct an_proc *p = an_proc_of(an, &c->r[k]);
		uint64_t now;

		if (!p)
			continue;
		now = p->host < an->nhosts ? an->hosts[p->host].now : 0;
		if (p->hook_t0 && (now > t_end ? now : t_end) <= p->hook_t1 + AN_PERTURB_NS) {
			if (p->host == host && t_end < p->hook_t0)
				continue;	/* it ended before these hooks */
			(*covered)++;
			if (p->hook_t1 - p->hook_t0 < AN_HOOK_RATE_NS)
				return -1;
			share += (double)p->hook_n * AN_HOOK_DELAY_NS /
				 (double)(p->hook_t1 - p->hook_t0);
		} else if (p->hooked) {
			(*covered)++;
			return -1;	/* on, no step record yet */
		}
	}
	return share;
}

/*
 * A round under hooks, its durations less the hooks' SHARE into
 * s->dur_hooked, says something when it is slow even so, or not slow even
 * as measured.  Slow only as measured, it is left out: as a clean round it
 * would end the slow iterations of a comm whose rounds the hooks may have
 * only seemed to shorten (a TP comm in CI: no root).
 */
static bool hooked_judgeable(struct an_slow *s, const struct slow_round *rd, int32_t nranks,
			     double share)
{
	int32_t k;

	for (k = 0; k < nranks; k++)
		s->dur_hooked[k] = rd->dur_bound[k] * (1 - share);
	return !sl_det_is_slow(s->det, rd->sig, rd->dur_bound) ||
	       sl_det_is_slow(s->det, rd->sig, s->dur_hooked);
}

/* hands the gathered rounds, complete and in order, to the detector */
static void feed(struct an *an, struct an_comm *c)
{
	struct an_slow *s = c->slow;

	for (;;) {
		struct slow_round *rd = &s->r[(uint64_t)s->next % AN_HIST];
		struct sl_round in;
		uint64_t iter_ns;
		bool learned, perturbed, lost, recovery_only = false, hooked = false;
		double share = 0;
		uint32_t covered = 0;
		int ev, k;

		if (rd->seq != s->next || rd->n < (uint32_t)c->nranks)
			return;
		if (an->debug) {
			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64 " dur_ms",
				c->hash, rd->seq);
			for (k = 0; k < c->nranks; k++)
				fprintf(stderr, " %.1f", rd->dur[k] / 1e6);
			fprintf(stderr, " (starts known %u, seen %u, ends shared %u) end %.3f s\n",
				rd->nexact, rd->narr, rd->nshared,
				(double)(rd->t_end % 1000000000000ull) / 1e9);
		}
		in.iter = sl_iter_push(s->iter, rd->sig, rd->t_end, &iter_ns);
		note_waits(s, rd, c->nranks);
		slow_note_arrivals(c, rd);
		if (c->sampling) {
			if (s->pend_ev && !(s->pend_ev & (PEND_RISE | PEND_GROUP | PEND_SURVEY)) &&
			    slow_sample_turned(s, rd, in.iter, an->cfg.slow_min_iters))
				slow_sample_reanchor(an, c, rd, in.iter);
			slow_sampled_round(c, rd, in.iter);
		}
		perturbed = (an->sink.suspect && comm_hooked(an, c, rd->host, rd->t_end)) ||
			    (rd->host < an->nhosts &&
			     rd->t_end < an->hosts[rd->host].perturbed_until);
		/* near a loss of records: a lost completion makes a round long */
		lost = an_lost_round(an, c, rd->host, rd->t_end);
		/*
		 * Step hooks only make rounds longer, by at most a hook's
		 * delay per step record: a comm already slow is judged under
		 * them for its recovery only, by the starts known without
		 * hooks (the arrivals they give would shorten its rounds);
		 * another is judged by those starts less what the hooks can
		 * have added, so that a sample of one comm does not blind
		 * the others of its processes (a slow TP comm, whose DP
		 * comms were sampled first, named 27 steps late or never).
		 * The sampled comm's own rounds feed its sample, and its
		 * recovery where its verdict was said before the sample (a
		 * slow link looked for behind an S1): a hiccup's incident
		 * ends when the hiccup does, not after the sample.
		 */
		if (perturbed && !lost && (!c->sampling || !s->pend_ev) &&
		    sl_det_result(s->det)->active)
			recovery_only = true;
		else if (perturbed && !lost && !c->sampling && sl_det_base(s->det)->learned &&
			 (share = hook_share(an, c, rd->host, rd->t_end, &covered)) >= 0 &&
			 share < AN_HOOK_SHARE_MAX && hooked_judgeable(s, rd, c->nranks, share))
			hooked = covered > 0;	/* else untouched: judged as usual */
		else if (perturbed || lost) {
			if (!lost && !c->sampling)
				slow_nohist_hooked_round(an, c, rd, sl_det_base(s->det)->learned);
			/* not judged; its iteration is not counted (the phase is kept) */
			if (an->debug)
				fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
					": not judged (%u comms suspected%s, hooks' share %.3f)\n",
					c->hash, rd->seq, an->nsuspected,
					lost ? ", records lost" : "", share);
			s->skipped = true;
			s->skipped_t = rd->t_end;
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
			if (after_skip || hooked)
				iter_ns = 0;	/* it spans perturbed rounds */
		}
		in.t_ns = rd->t_end;
		/* the time since the last judged round that skipped rounds cover */
		in.unjudged_ns = s->skipped_t > s->judged_t && s->judged_t ?
				 s->skipped_t - s->judged_t : 0;
		s->skipped_t = 0;
		s->judged_t = rd->t_end;
		/* recovery under hooks: by the starts known without them */
		in.dur_ns = recovery_only ? rd->dur_bound : rd->dur;
		if (hooked) {
			if (an->debug)
				fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
					": judged under step hooks, less their share %.3f\n",
					c->hash, rd->seq, share);
			in.dur_ns = s->dur_hooked;	/* hooked_judgeable's */
		}
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
		/*
		 * A round whose end is, on some rank, a completion shared with
		 * that process's later op in another comm is as long as that op
		 * made it: CCL-D does not judge it (the other comm's own rounds
		 * show the lateness); who arrived last is still known.
		 */
		if (!rd->nshared && !hooked)
			slow_note_round(s, rd, c->nranks);
		learned = sl_det_base(s->det)->learned;
		if (!rd->nshared)
			note_hold(s, rd, in.dur_ns, c->nranks);
		ev = rd->nshared ? 0 : sl_det_round(s->det, &in);
		if (recovery_only)
			ev &= SL_EV_RECOVERY;
		if (!learned && sl_det_base(s->det)->learned)
			s->base_t = rd->t_end;
		if (an->debug && !learned && sl_det_base(s->det)->learned) {
			const struct sl_base *b = sl_det_base(s->det);

			fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
				": baseline of %u rounds (%u hiccups, %u after a level shift"
				" left out): %.2f ms, cv %.3f, thr %.2f%s\n",
				c->hash, rd->seq, b->m, b->trimmed, b->shifted, b->learned_ns / 1e6,
				b->cv, b->thr,
				b->configured ? " (configured kept)" : "");
		}
		slow_ccld_event(an, c, rd, in.iter, ev);
		slow_deferred_sample(an, c, rd->t_end);
		if (!recovery_only && !hooked)
			slow_nohist_round(an, c, rd, learned);
		if (!rd->nshared && !hooked) {
			s->newest.seq = rd->seq;
			s->newest.fn = rd->fn;
			s->newest.sig = rd->sig;
			s->newest.host = rd->host;
			s->newest.t_end = rd->t_end;
		}
		clear_round(rd, c->nranks);
		s->next++;
	}
}

/*
 * Did R's process call into another comm than C after T0 and by T1?  A tier
 * B completion at T1 (one CUDA event after the step's ops, or a watchdog's
 * query of an op's event) then completed that later op too: the end of C's
 * op is only bounded by T1, and a late op of that other comm makes C's
 * round look slow.
 */
static bool called_elsewhere(const struct an *an, const struct an_comm *c,
			     const struct an_rank *r, uint64_t t0, uint64_t t1)
{
	const struct an_proc *p = an_proc_of(an, r);
	uint32_t i, n;

	if (!p)
		return false;
	n = p->nsw < AN_SWITCH_RING ? p->nsw : AN_SWITCH_RING;
	for (i = 0; i < n; i++)
		if (p->sw[i].comm != c->hash && p->sw[i].t > t0 && p->sw[i].t <= t1)
			return true;
	return false;
}

/*
 * Does rank R's process wait for its GPU before it calls?  Each judged call
 * tells whether it was made on a GPU idle for IDLE_MIN_NS at least (its
 * earlier ops done, the call the start): a process that never does queues
 * its calls, and its compute kernels, ahead of its GPU (PyTorch), and the
 * start of a round is no more than a bound there.  One that does at least
 * now and then (the first op of a step) has no unseen GPU work between its
 * ops: the end of its earlier op is the start.  1 it waits, 0 it does not,
 * -1 not known yet (fewer than PROC_CALLS_MIN calls judged, and fewer than
 * PROC_IDLE_EARLY of them on an idle GPU: a process that runs ahead all but
 * never calls on one, so two such calls decide it a step sooner after an
 * attach).
 */
static int proc_waits_for_gpu(struct an *an, const struct an_rank *r,
			      const struct an_sig *sg, uint64_t t0, uint64_t idle_since)
{
	struct an_proc *p = r->proc ? &an->procs[r->proc - 1] : NULL;
	uint32_t n, idle;

	if (!p)
		return 0;
	if (idle_since) {
		bool idle = t0 == sg->t_enter && (sg->flags & SIG_IDLE) &&
			    sg->t_enter - idle_since >= IDLE_MIN_NS;

		p->idle_calls = p->idle_calls << 1 | idle;
		p->ncalls++;
	}
	n = p->ncalls < 64 ? p->ncalls : 64;
	idle = (uint32_t)__builtin_popcountll(p->idle_calls & (n == 64 ? ~0ull : (1ull << n) - 1));
	if (n < PROC_CALLS_MIN)
		return idle >= PROC_IDLE_EARLY ? 1 : -1;
	return idle * 10 >= n;
}

struct an_slow *slow_state(struct an *an, struct an_comm *c)
{
	if (!c->slow)
		c->slow = slow_new(an, c->nranks);
	return c->slow;
}

void an_slow_duration(struct an *an, struct an_comm *c, int32_t rank,
		      const struct an_sig *sg, uint64_t t_done, bool end_exact,
		      uint32_t host)
{
	struct an_slow *s;
	struct slow_round *rd;
	bool fresh = false;
	int64_t from;

	if (!c || c->nranks < 2 || rank < 0 || rank >= c->nranks ||
	    !sg->t_enter || t_done < sg->t_enter)
		return;
	if (!c->slow && !(c->slow = slow_new(an, c->nranks)))
		return;
	s = c->slow;
	if (s->next < 0)
		s->next = s->first_seq = sg->seq;
	if (sg->seq < s->next)
		return;		/* that round was handed over, or skipped */
	/* a round that cannot complete any more (a rank never reported it) */
	from = s->next;
	while (sg->seq >= s->next + AN_HIST) {
		/*
		 * Every round the ring held is judged or dropped by now; the
		 * rest were never held: skip them at once (a seq far ahead,
		 * from a rank's jump or hostile input, is not a loop of 2^40)
		 */
		if (s->next - from >= AN_HIST) {
			s->next = sg->seq - AN_HIST + 1;
			break;
		}
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
		rd->fn = sg->fn;
		fresh = true;
	}
	/* rank 0's, whichever rank reported first (SIG_AFTER may differ) */
	if (fresh || rank == 0) {
		rd->sig = sig_hash(sg);
		rd->sig_known = sg->flags & SIG_AFTER_KNOWN;
	}
	if (isnan(rd->dur[rank])) {
		const struct an_op_done *a = &c->r[rank].op_arr[(uint64_t)sg->seq % AN_HIST];
		uint64_t idle_since, idle_comm;
		uint64_t t0 = an_gpu_start(an, c->hash, &c->r[rank], sg, t_done,
					   &c->slow->holder[rank], &idle_since, &idle_comm);
		bool shared = !end_exact &&
			      called_elsewhere(an, c, &c->r[rank], sg->t_enter, t_done);

		/*
		 * The start is known where step hooks saw the GPU reach the op,
		 * or where the process waits for its GPU before it calls (then
		 * the GPU has no work ccld does not see queued): else t0 is only
		 * a bound, the GPU may have computed after it.
		 */
		rd->dur_bound[rank] = (double)(t_done - t0);
		rd->hold[rank] = c->slow->holder[rank];
		/* its CPU waited for that op's end, then called at once */
		rd->synced[rank] = idle_comm != c->hash && idle_since &&
				   sg->t_enter - idle_since < IDLE_MIN_NS ? idle_comm : 0;
		if (a->seq == sg->seq && a->t >= sg->t_enter && a->t <= t_done) {
			rd->after_hold[rank] = a->t >= t0 ? (double)(a->t - t0) : 0;
			t0 = a->t;
			rd->narr++;
			rd->nexact++;
		} else {
			int waits = proc_waits_for_gpu(an, &c->r[rank], sg, t0, idle_since);

			/*
			 * An end shared with a later op: the earlier ops' ends
			 * came with it, so the call is the start only where
			 * the comm's earlier op was done before it (a step's
			 * second all-reduce is called while its first runs:
			 * counted, each step would be two alike rounds)
			 */
			if (shared && !(sg->flags & SIG_IDLE))
				waits = 0;
			rd->nexact += waits > 0;
			rd->nundec += waits < 0;
		}
		rd->dur[rank] = (double)(t_done - t0);
		rd->n++;
		rd->nshared += shared;
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
