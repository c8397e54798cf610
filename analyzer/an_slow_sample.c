// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Step samples: step hooks on for a comm's processes for SAMPLE_NS at
 * least, then the verdict.  Communication is involved (S2, S3): its culprit
 * is the rank whose send steps spend the longest in the network, which only
 * step-level records show.  Sampled where the comm has tier C (its proxy
 * ops are seen); after an S1 verdict too, to find a slow link behind the
 * late rank; and where the CPUs run ahead of their GPUs, to see which GPU
 * reaches the ops last.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "an_slow_int.h"

/*
 * A rank's send steps spend at least twice as long in the network as the
 * others' (median): its link is slow, whatever P says.  Healthy links of one
 * comm differ far less (measured on the stand-in: within 20%).
 */
bool slow_net_outlier(double lat, double others)
{
	return isfinite(lat) && isfinite(others) && others > 0 && lat >= 2 * others;
}

/* the median of C's per-rank VALS but RANK's, NaN if none is known */
static double others_median(const struct an_comm *c, const double *vals, int32_t rank)
{
	double *v = malloc(2 * (size_t)c->nranks * sizeof(double)), med;
	size_t n = 0;
	int32_t k;

	if (!v)
		return NAN;
	for (k = 0; k < c->nranks; k++)
		if (k != rank && isfinite(vals[k]))
			v[n++] = vals[k];
	med = n ? sl_median(v, n, v + c->nranks) : NAN;
	free(v);
	return med;
}

/* the median of the typical steps of C's ranks but RANK, NaN if none known */
static double others_typical(const struct an_comm *c, int32_t rank)
{
	return others_median(c, c->slow->styp, rank);
}

/*
 * RANK's proxy thread waited for a CPU through much of the sample, far
 * more than the others' (RQ_STARVED of its time, and RQ_FACTOR times
 * their median): its slow steps are a busy host's, not its link's.
 */
static bool rq_starved(const struct an_comm *c, int32_t rank)
{
	const struct an_slow *s = c->slow;
	double mine = rank >= 0 && s->rq ? s->rq[rank] : NAN, med;

	if (!(mine >= RQ_STARVED))
		return false;
	med = others_median(c, s->rq, rank);
	return isfinite(med) && mine >= RQ_FACTOR * fmax(med, RQ_FLOOR);
}

/*
 * RANK's sampled send steps are an outlier (LAT against the others'
 * LAT_MED) and so is its typical step, the median of its completions
 * against the others' (where 4 or more were timed).  A slow link slows
 * every step; a proxy thread the host descheduled once lengthens the few
 * steps in flight then, which raises the mean alone: on a busy 2-core VM
 * a 2-rank comm's sample had one rank at 0.77 ms per step against 0.17
 * and gave a false S2 (test_hang_nofalse, docs/numbers.md).  Nor is a
 * rank whose proxy thread was starved alone (rq_starved).
 */
bool slow_link_outlier(const struct an_comm *c, int32_t rank, double lat, double lat_med)
{
	double typ = rank >= 0 ? c->slow->styp[rank] : NAN, others;

	if (!slow_net_outlier(lat, lat_med) || rq_starved(c, rank))
		return false;
	others = others_typical(c, rank);
	/* too few completions timed: the mean says it */
	return !isfinite(typ) || !isfinite(others) || slow_net_outlier(typ, others);
}

/*
 * What RANK's link adds to each of its send steps: its mean's excess over
 * the others', or its typical step's where that is less (the few long
 * steps of a descheduled proxy thread are not its link's)
 */
double slow_link_excess(const struct an_comm *c, int32_t rank, double lat, double lat_med)
{
	double typ = rank >= 0 ? c->slow->styp[rank] : NAN, others = others_typical(c, rank);
	double excess = lat - lat_med;

	if (isfinite(typ) && isfinite(others) && typ - others < excess)
		excess = typ - others;
	return excess;
}

/* the median of rank R's latest per-completion network times, NaN under 4 */
static double typical_step(const struct an_rank *r)
{
	double v[AN_NET_EST], scratch[AN_NET_EST];
	uint32_t n = r->net_nest < AN_NET_EST ? r->net_nest : AN_NET_EST, i;

	if (n < 4)
		return NAN;
	for (i = 0; i < n; i++)
		v[i] = r->net_est[i];
	return sl_median(v, n, scratch);
}

/* RANK's sampled send steps and typical step are an outlier among C's */
static bool steps_outlier(const struct an_comm *c, int32_t rank)
{
	return rank >= 0 &&
	       slow_link_outlier(c, rank, c->slow->slat[rank], others_median(c, c->slow->slat, rank));
}

/*
 * The S2 candidate from the step sample: the lowest send rate; where that
 * rank's steps are no outlier and the slowest steps' rank's are, that one.
 * A rank whose sends carry few bytes per step (latency-bound) has the
 * lowest rate with a healthy link: random job 1060 (16 ranks, PP 4 x TP 4,
 * rank 4's link 6.3x slower, attached late), a part of the world comm
 * sampled rank 4 at 12.5 ms per step against 2.9-3.6 (typical 11.1
 * against 1.9-3.6), and the lowest rate was rank 0's, 3.0 ms per step: no
 * slow link was found.
 */
void slow_sampled_s2(const struct an_comm *c, int32_t *rank, double *rate, double *med,
		     double *z, double *lat, double *lat_med)
{
	const struct an_slow *s = c->slow;
	double *scratch = malloc(2 * (size_t)c->nranks * sizeof(double));
	int32_t k, slowest = -1;

	*rank = -1;
	for (k = 0; k < c->nranks; k++) {
		if (isfinite(s->srate[k]) && (*rank < 0 || s->srate[k] < s->srate[*rank]))
			*rank = k;
		if (isfinite(s->srate[k]) && isfinite(s->slat[k]) &&
		    (slowest < 0 || s->slat[k] > s->slat[slowest]))
			slowest = k;
	}
	if (*rank < 0 || !scratch) {
		free(scratch);
		return;
	}
	if (slowest != *rank && !steps_outlier(c, *rank) && steps_outlier(c, slowest))
		*rank = slowest;
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

int32_t slow_sampled_outlier(const struct an_comm *c, double *lat, double *lat_med)
{
	double rate, med, z;
	int32_t rank;

	*lat = *lat_med = NAN;
	slow_sampled_s2(c, &rank, &rate, &med, &z, lat, lat_med);
	return rank >= 0 && slow_link_outlier(c, rank, *lat, *lat_med) ? rank : -1;
}

/* ---- a sample's processes beyond its comm's ------------------------------ */

/* has C's sample process PROC (nonzero): a rank's, or an extra one? */
static bool has_proc(const struct an_comm *c, uint32_t proc)
{
	uint32_t j;

	if (an_comm_has_proc(c, proc))
		return true;
	for (j = 0; j < c->nsamp_extra; j++)
		if (c->samp_extra[j] == proc)
			return true;
	return false;
}

/*
 * processes hooked per host were C sampled now, CAP of C's per host at most
 * (NULL: out of memory)
 */
static uint32_t *hooked_per_host(const struct an *an, const struct an_comm *c, uint32_t cap)
{
	uint32_t n = an->nhosts ? an->nhosts : 1, *local = calloc(2 * (size_t)n, sizeof(*local)), i;
	uint32_t *add = local + n;
	int32_t k;

	if (!local)
		return NULL;
	for (i = 0; i < an->nprocs; i++)
		if (an->procs[i].hooked && an->procs[i].host < an->nhosts)
			local[an->procs[i].host]++;
	for (k = 0; k < c->nranks; k++) {
		const struct an_proc *p = an_proc_of(an, &c->r[k]);

		if (p && p->host < an->nhosts && !p->hooked && add[p->host] < cap) {
			add[p->host]++;
			local[p->host]++;
		}
	}
	return local;
}

/*
 * H's processes that C's sample does not hook yet, into ADD (*NADD), and
 * LOCAL counting them, where all fit (SAMPLE_MAX_HOOKED hooked per host,
 * AN_SAMP_EXTRA beyond C's in all): a whole comm or none
 */
static bool fit_comm(const struct an *an, const struct an_comm *c, const struct an_comm *h,
		     uint32_t *local, uint32_t *add, uint32_t *nadd)
{
	uint32_t i;
	int32_t j;

	*nadd = 0;
	for (j = 0; j < h->nranks; j++) {
		uint32_t proc = h->r[j].proc;
		const struct an_proc *p = proc ? &an->procs[proc - 1] : NULL;

		if (!p || h->r[j].gone || has_proc(c, proc))
			continue;
		if (c->nsamp_extra + *nadd >= AN_SAMP_EXTRA ||
		    (!p->hooked && p->host < an->nhosts && local[p->host] >= SAMPLE_MAX_HOOKED))
			break;
		add[(*nadd)++] = proc;
		if (!p->hooked && p->host < an->nhosts)
			local[p->host]++;
	}
	if (j == h->nranks)
		return true;
	for (i = 0; i < *nadd; i++) {		/* none of it: undo the count */
		const struct an_proc *p = &an->procs[add[i] - 1];

		if (!p->hooked && p->host < an->nhosts)
			local[p->host]--;
	}
	*nadd = 0;
	return false;
}

/*
 * The parts of SAMPLE_MAX_LOCAL processes per host that C's sample needs
 * (1: it may be hooked whole, 0: out of memory); with IN, marks the ranks
 * of part PART there: each host's processes of C in rank order, the first
 * SAMPLE_MAX_LOCAL in part 0, the next in part 1...
 */
static uint32_t parts_of(const struct an *an, const struct an_comm *c, bool *in,
			 uint32_t part)
{
	uint32_t *own = calloc(an->nhosts ? an->nhosts : 1, sizeof(*own)), most = 0;
	int32_t k;

	if (!own)
		return 0;
	for (k = 0; k < c->nranks; k++) {
		const struct an_proc *p = an_proc_of(an, &c->r[k]);
		uint32_t i = p && p->host < an->nhosts ? own[p->host]++ : 0;

		if (p && p->host < an->nhosts && own[p->host] > most)
			most = own[p->host];
		if (in)
			in[k] = p && i / SAMPLE_MAX_LOCAL == part;
	}
	free(own);
	return most ? (most + SAMPLE_MAX_LOCAL - 1) / SAMPLE_MAX_LOCAL : 1;
}

static bool small_on_hosts(const struct an *an, const struct an_comm *c)
{
	return parts_of(an, c, NULL, 0) == 1;
}

bool an_slow_rank_sampled(const struct an_comm *c, int32_t k)
{
	return !c->slow || !c->slow->samp_in || c->slow->samp_in[k];
}

bool slow_sample_hooks_in(const struct an_comm *c)
{
	int32_t k;

	for (k = 0; k < c->nranks; k++)
		if (an_slow_rank_sampled(c, k) &&
		    (double)c->r[k].net_steps > c->slow->net0[3 * k + 2])
			return true;
	return false;
}

/*
 * The comm whose op holds C's rank K's GPU, where C's sample may add it:
 * no incident or sample of its own, and not too many processes on a host
 * (the world comm behind a pipeline's send/recv is not hooked whole)
 */
static const struct an_comm *holder_to_add(const struct an *an, const struct an_comm *c,
					   int32_t k)
{
	const struct an_comm *h = c->slow->holder[k] ?
				  an_comm_get((struct an *)an, c->slow->holder[k], 0, false) : NULL;

	return h && h != c && !h->sampling && h->slow && !h->slow->active &&
	       small_on_hosts(an, h) ? h : NULL;
}

/* O holds a rank of C, and C's sample could hook O's processes too */
static bool holder_fits(const struct an *an, const struct an_comm *c, const struct an_comm *o)
{
	uint32_t add[AN_SAMP_EXTRA], nadd, *local;
	bool fits = false;
	int32_t k;

	for (k = 0; k < c->nranks && !fits; k++)
		fits = holder_to_add(an, c, k) == o;
	if (!fits || !(local = hooked_per_host(an, c, UINT32_MAX)))
		return false;
	fits = fit_comm(an, c, o, local, add, &nadd);
	free(local);
	return fits;
}

static bool pending(const struct an_comm *o)
{
	return o->slow && (sl_det_pending(o->slow->det) || o->slow->samp_defer);
}

/*
 * The processes of the comms whose ops hold C's ranks' GPUs and that have
 * no incident of their own, where they fit (fit_comm): hooked with C's,
 * their rounds show every arrival there too.  Where the CPUs run ahead of
 * their GPUs, C may be slow because a straggler in such a comm made its
 * op end late (a DP comm behind its ranks' TP comms), and that comm's own
 * rounds hardly grow: its arrivals name the root (an_slow_chain.c).  First
 * those with slow iterations pending (C's sample would otherwise wait for
 * them), then the holder of the rank CCL-D's locator took for the last
 * arriver (the likeliest straggler or cascade), then the others' in order.
 */
static void choose_extras(struct an *an, struct an_comm *c)
{
	uint32_t *local = hooked_per_host(an, c, UINT32_MAX), i, add[AN_SAMP_EXTRA], nadd;
	int32_t n, k, first, pass;

	c->nsamp_extra = 0;
	if (!local)
		return;
	first = sl_det_result(c->slow->det)->s1_rank;
	if (first < 0 || first >= c->nranks)
		first = 0;
	for (pass = 0; pass < 2; pass++) {
		for (n = 0; n < c->nranks; n++) {
			const struct an_comm *h;

			k = (first + n) % c->nranks;
			h = holder_to_add(an, c, k);
			if (!h || (pass == 0 && !pending(h)) ||
			    !fit_comm(an, c, h, local, add, &nadd))
				continue;
			for (i = 0; i < nadd; i++)
				c->samp_extra[c->nsamp_extra++] = add[i];
		}
	}
	free(local);
}

/*
 * Another comm sharing a process with C has slow iterations, from before
 * C's slowdown began (SINCE), that are not an incident yet, or an onset
 * whose own sample waits.  C's step hooks would leave that comm's next
 * rounds unjudged, or its onset unsampled, and its incident, the likelier
 * cause of C's, would be lost: a TP comm behind a slow link, one of whose
 * slow steps was under its threshold, and its DP comms, which wait for it
 * and so are slower by far, three slow steps in a row before it.
 */
static bool blinds_pending(const struct an *an, const struct an_comm *c, uint64_t since)
{
	struct hkey key;
	size_t it;
	void *v;
	int32_t k;

	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *o = v;
		uint64_t t;

		if (o == c || !o->slow || o->sampling)
			continue;
		t = sl_det_pending(o->slow->det);
		/*
		 * An onset that waits is counted whenever it began, but not
		 * by another that waits: those wait for pending comms only,
		 * so two never wait for each other.
		 */
		if (!(t && t < since) && !(o->slow->samp_defer && !c->slow->samp_defer))
			continue;
		/* its processes hooked with C's: its rounds show who arrives last */
		if (holder_fits(an, c, o))
			continue;
		for (k = 0; k < o->nranks; k++)
			if (member_of(an, c, o, k) >= 0)
				return true;
	}
	return false;
}

/* C's sample waits for a neighbour's pending incident (SAMPLE_DEFER_NS at most) */
bool slow_sample_waits(const struct an *an, struct an_comm *c, uint64_t now)
{
	struct an_slow *s = c->slow;
	const struct sl_result *res = sl_det_result(s->det);

	if (!blinds_pending(an, c, res->active ? res->onset_ns : now)) {
		s->defer_t0 = 0;
		return false;
	}
	if (!s->defer_t0)
		s->defer_t0 = now;
	return now < s->defer_t0 + SAMPLE_DEFER_NS;
}

/*
 * An incident of C whose sample named nobody (a CCL-D onset, a rise of the
 * network part) ended at NOW: the cooldown that sample set, which kept each
 * of its updates from hooking C again, ends with it, SAMPLE_GAP_NS later,
 * unless another such incident of C is still open.  The next incident is a
 * new slowdown and gets its own sample.
 */
void slow_unnamed_ended(struct an_comm *c, uint64_t now)
{
	struct an_slow *s = c->slow;

	if (s->rise_wait || (s->ccld_unsaid && sl_det_result(s->det)->active))
		return;
	if (s->samp_next > now + SAMPLE_GAP_NS)
		s->samp_next = now + SAMPLE_GAP_NS;
}

/*
 * Why a step sample of C is not possible now, NULL when it is: it needs
 * tier C, no sample of it running, cooling down or waiting for a
 * neighbour, SAMPLE_MAX_LOCAL processes on a host at most (or a sample of
 * a part, PART), and no host with more than SAMPLE_MAX_HOOKED processes
 * hooked (several samples run at once within that).
 */
static const char *refusal(const struct an *an, struct an_comm *c, uint64_t now, bool part)
{
	const char *why = NULL;
	bool tierc = false;
	uint32_t *local;
	int32_t k;

	if (c->sampling)
		return "sampling";
	if (now < c->slow->samp_next)
		return "cooldown";
	if (slow_sample_waits(an, c, now))
		return "a neighbour's sample first";
	for (k = 0; k < c->nranks; k++)
		tierc |= c->r[k].tierc;
	if (!tierc)
		return "no proxy data";
	if (!part && !small_on_hosts(an, c))
		return "too many of its processes on a host to hook";
	if (!(local = hooked_per_host(an, c, part ? SAMPLE_MAX_LOCAL : UINT32_MAX)))
		return "out of memory";
	/* only the hosts where C adds a process to those hooked already */
	for (k = 0; k < c->nranks && !why; k++) {
		const struct an_proc *p = an_proc_of(an, &c->r[k]);

		if (p && p->host < an->nhosts && !p->hooked &&
		    local[p->host] > SAMPLE_MAX_HOOKED)
			why = "hooks busy";
	}
	free(local);
	return why;
}

const char *slow_sample_refusal(const struct an *an, struct an_comm *c, uint64_t now)
{
	return refusal(an, c, now, false);
}

bool slow_can_sample(const struct an *an, struct an_comm *c, uint64_t now)
{
	return !slow_sample_refusal(an, c, now);
}

/* the round the sample's verdict will be about */
void slow_sample_for(struct an *an, struct an_comm *c, const struct slow_round *rd,
		     int64_t iter, int ev)
{
	struct an_slow *s = c->slow;
	int32_t k;

	for (k = 0; k < c->nranks; k++) {
		const struct an_comm *h = s->holder[k] ?
					  an_comm_get(an, s->holder[k], 0, false) : NULL;

		s->pend_hcomm[k] = s->holder[k];
		s->pend_hseq[k] = h && h->slow ? h->slow->next : -1;
	}

	s->pend.seq = rd->seq;
	s->pend_onset = 0;
	s->pend.fn = rd->fn;
	s->pend.sig = rd->sig;
	s->pend_iter = iter;
	s->pend_ev = ev;
	s->samp_host = rd->host;
	s->pend.t_end = rd->t_end;
}

/* the sample's counters from now */
static void sample_reset(struct an *an, struct an_comm *c)
{
	struct an_slow *s = c->slow;
	int32_t k;

	s->samp_t0 = s->samp_host < an->nhosts && an->hosts[s->samp_host].now > s->pend.t_end ?
		     an->hosts[s->samp_host].now : s->pend.t_end;
	s->samp_defer = false;
	s->defer_t0 = 0;
	s->samp_shed0 = an->steps_shed;
	s->arr_rounds = s->samp_rounds = s->samp_rounds_in = 0;
	s->arr_t0 = s->arr_t1 = 0;
	s->samp_iters = s->samp_slow_iters = 0;
	s->samp_iter = -1;
	s->samp_iter_slow = false;
	s->arr_rank = -1;
	memset(&s->arr_p2p, 0, sizeof(s->arr_p2p));
	s->blk_rounds = s->blk_n = 0;
	s->blk_parts = false;
	for (k = 0; k < c->nranks; k++) {
		s->arr_last[k] = s->arr_held[k] = 0;
		s->arr_blk[k] = 0;
		s->arr_blk_gap[k] = 0;
		s->arr_blk_holder[k] = 0;
		s->arr_holder[k] = 0;
		s->arr_gap[k] = 0;
		s->arr_gmax[k] = 0;
		s->net0[3 * k] = c->r[k].net_ns;
		s->net0[3 * k + 1] = c->r[k].net_bytes;
		s->net0[3 * k + 2] = (double)c->r[k].net_steps;
		c->r[k].net_nest = 0;
	}
}

/* step hooks on for C's processes, counters from now */
static void sample_go(struct an *an, struct an_comm *c)
{
	struct an_slow *s = c->slow;

	sample_reset(an, c);
	if (s->samp_in)
		c->nsamp_extra = 0;	/* a part: as few hooks as can be */
	else
		choose_extras(an, c);
	if (an->debug && s->samp_in)
		fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
			": sampling step hooks on part %u of %u (%d processes per host"
			" at most)\n", c->hash, s->pend.seq, s->samp_part + 1,
			s->samp_nparts, SAMPLE_MAX_LOCAL);
	else if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 " seq %" PRId64
			": sampling step hooks (and %u processes of comms holding its"
			" ranks)\n", c->hash, s->pend.seq, c->nsamp_extra);
	an_suspect_comm(an, c, true, true, s->samp_host, s->samp_t0);
}

void slow_start_sample(struct an *an, struct an_comm *c, const struct slow_round *rd,
		       int64_t iter, int ev)
{
	slow_sample_for(an, c, rd, iter, ev);
	sample_go(an, c);
}

/*
 * A comm with more processes on a host than may be hooked at once
 * (SAMPLE_MAX_LOCAL) is sampled a part at a time, each part's GPUs'
 * arrivals compared among themselves: the straggler, where it is in the
 * part, reaches the op last by about the time every other rank waits in
 * it (the share of the wait its lead explains); where it is not, whoever
 * of the part comes last leads the others by jitter, a share of nothing,
 * and the next part is sampled.  Hooking all 8 ranks of a node's comm at
 * once floods the ring buffer with their step records.
 */
bool slow_parts_left(const struct an_slow *s)
{
	return s->samp_in && s->samp_part + 1 < s->samp_nparts;
}

bool slow_can_part_sample(const struct an *an, struct an_comm *c, uint64_t now)
{
	return !refusal(an, c, now, true) && parts_of(an, c, NULL, 0) >= 2;
}

bool slow_start_part_sample(struct an *an, struct an_comm *c, const struct slow_round *rd,
			    int64_t iter, int ev)
{
	struct an_slow *s = c->slow;
	uint32_t n;

	if (refusal(an, c, rd->t_end, true) || (n = parts_of(an, c, NULL, 0)) < 2)
		return false;
	if (!s->samp_in && !(s->samp_in = calloc((size_t)c->nranks, sizeof(*s->samp_in))))
		return false;
	s->samp_nparts = n;
	s->samp_part = 0;
	parts_of(an, c, s->samp_in, 0);
	slow_parts_reset(s, c->nranks);
	slow_sample_for(an, c, rd, iter, ev);
	sample_go(an, c);
	return true;
}

/* the part sample is over: the whole comm again */
static void parts_done(struct an_slow *s)
{
	free(s->samp_in);
	s->samp_in = NULL;
	s->samp_part = s->samp_nparts = 0;
}

void slow_sample_reanchor(struct an *an, struct an_comm *c, const struct slow_round *rd,
			  int64_t iter)
{
	struct an_slow *s = c->slow;
	int64_t was = s->pend.seq;

	/*
	 * The hooks stay on; what the sample saw before RD was the end of
	 * another slowdown (a hiccup whose sample ran on into this one), so
	 * its arrivals, steps and clock start again here.
	 */
	slow_sample_for(an, c, rd, iter, s->pend_ev);
	s->pend_onset = rd->t_end;
	sample_reset(an, c);
	if (s->samp_in)
		slow_part_restart(s, c->nranks);
	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 " sample: clean iterations after"
			" the onset at seq %" PRId64 ", slow again at seq %" PRId64
			": the sample is about this one\n", c->hash, was, rd->seq);
}

/*
 * A verdict that rests on who arrives last (CCL-D's onset where the CPUs
 * run ahead, a comparable group's deviant, a rise's sample with no slow
 * link) needs ARR_MIN_ROUNDS sampled rounds with every arrival.  Where the
 * comm's rounds come slower than that many per SAMPLE_NS (a job slowed to a
 * few steps a second), the sample holds on until so many rounds ended,
 * SAMPLE_MAX_NS at most, unless its send steps already show a slow link
 * (random job 297: a group sample of a 4-rank comm ended after 2 rounds,
 * none with every arrival: no verdict).  Rounds that end and lack arrivals
 * (a rank the hooks cannot time) do not hold it once a rank's hooks gave a
 * step record; before that the hooks were not in yet, and such rounds do
 * not count (random job 46: no step record until 0.4 s into a
 * rise's sample, which ended with 2 rounds seen and named nobody).  Nor do
 * they in a part's sample: a later part's hooks go in at the tracer's next
 * tick and take a few hundred ms, and its first rounds show only the last
 * part's ranks, whose hooks are coming off (random job 61: part 2 of a
 * world comm of 8 ended after 12 rounds, 2 with every hooked arrival).  A
 * part's rounds count once every hooked rank arrived in them.  A part's
 * send steps decide nothing (end_sample): a slow link there does not end it
 * early (random job 160: part 2 of 4 ended with 2 such rounds, part 3 with
 * 3, a rank's steps 2x the others').
 */
static bool few_rounds(const struct an_comm *c, uint64_t now)
{
	const struct an_slow *s = c->slow;
	uint32_t rounds = s->samp_in ? s->arr_rounds : s->samp_rounds_in;
	double lat, lat_med;

	if (!(s->pend_ev & (PEND_ARRIVE | PEND_GROUP | PEND_RISE)) ||
	    rounds >= ARR_MIN_ROUNDS || now - s->samp_t0 >= SAMPLE_MAX_NS)
		return false;
	return s->samp_in || slow_sampled_outlier(c, &lat, &lat_med) < 0;
}

/*
 * Each rank's proxy thread's wait for a CPU over the sample: on its own
 * host's clock, the sample's length up to that host's now
 */
static void sample_run_wait(const struct an *an, struct an_comm *c, uint64_t now)
{
	struct an_slow *s = c->slow;
	uint64_t len = now > s->samp_t0 ? now - s->samp_t0 : 0;
	int32_t k;

	for (k = 0; k < c->nranks; k++) {
		const struct an_proc *p = an_proc_of(an, &c->r[k]);
		uint64_t t1 = !p ? 0 : p->host == s->samp_host ? now :
			      p->host < an->nhosts ? an->hosts[p->host].now : 0;

		s->rq[k] = p && t1 > len ? an_proc_run_wait(p, t1 - len, t1) : NAN;
	}
}

/* the sample is long enough (or timed out): rates, then the verdict */
static void end_sample(struct an *an, struct an_comm *c, uint64_t now)
{
	struct an_slow *s = c->slow;
	uint32_t timed = 0, ready = 0, want = 0;
	bool next_part = false;
	int32_t k;

	for (k = 0; k < c->nranks; k++) {
		const struct an_rank *r = &c->r[k];
		double ns = r->net_ns - s->net0[3 * k];
		double bytes = r->net_bytes - s->net0[3 * k + 1];
		double steps = (double)r->net_steps - s->net0[3 * k + 2];

		s->srate[k] = s->slat[k] = NAN;
		s->styp[k] = typical_step(r);
		if (steps >= 1 && ns > 0) {
			s->slat[k] = ns / steps;
			s->srate[k] = bytes * 1e9 / ns;
			timed++;
			ready += steps >= SAMPLE_STEPS && an_slow_rank_sampled(c, k);
		}
		want += an_slow_rank_sampled(c, k);
	}
	if ((ready < want && now - s->samp_t0 < SAMPLE_MAX_NS) ||
	    slow_survey_short(s, now) || few_rounds(c, now))
		return;
	s->have_srate = timed >= 2;
	s->samp_shed = an->steps_shed - s->samp_shed0;
	sample_run_wait(an, c, now);
	if (an->debug && s->samp_shed)
		fprintf(stderr, "an: slow comm %016" PRIx64 " sample: %" PRIu64 " step records"
			" shed while it ran\n", c->hash, s->samp_shed);
	an_suspect_comm(an, c, false, true, UINT32_MAX, 0);
	s->pend.t_end = now;
	s->pend.host = s->samp_host;
	if (s->pend_ev & PEND_SURVEY) {
		next_part = slow_survey_sampled(an, c, now);
	} else if (s->pend_ev & PEND_RISE) {
		next_part = slow_rise_sampled(an, c, now);
	} else if (s->pend_ev & PEND_GROUP) {
		slow_group_sampled(an, c, now);
	} else if (s->pend_ev && slow_sample_over(s, an->cfg.slow_min_iters)) {
		/*
		 * CCL-D's onset, and not one of the sample's rounds was slow
		 * (a hiccup of a few rounds, a slowdown that ended): who was
		 * last or slowest in normal rounds is jitter, not its cause.
		 * Nothing is said; the incident's end then says nothing either.
		 */
		s->ccld_unsaid = true;
		if (an->debug)
			fprintf(stderr, "an: slow comm %016" PRIx64 " sample: none of its %u"
				" iterations was slow: the slowdown was over, no verdict\n",
				c->hash, s->samp_iters);
	} else if (s->pend_ev & PEND_ARRIVE) {
		const struct sl_result *res = sl_det_result(s->det);
		double a, b;

		/* CCL-D's onset where starts are unknown: the sample says who, and why */
		if (s->samp_in) {
			/*
			 * a part: its few ranks' send steps against each other
			 * say little of the comm's links, and a rank that
			 * computes slower sends slower too (random job 287:
			 * rank 4's GPU 4.4x slower, its steps 2.81 ms against
			 * 1.04, named S2): its arrivals only
			 */
			s->arr_rank = slow_arrival_explains(c, res->tmax_ns - res->tbase_ns,
							    &a, &b, &s->arr_held_by);
			s->arr_cls = s->arr_rank >= 0 ? AN_S1 : 0;
		} else {
			s->arr_cls = slow_sample_decide(c, res->tmax_ns - res->tbase_ns,
							&s->arr_rank, &a, &b, &s->arr_held_by);
		}
		/*
		 * ... its GPU's lead weighed against the interval between
		 * rounds, as a survey does: a round's duration runs from its
		 * call here, and counts the GPU work queued before the op, so
		 * one rank's lead of L lengthens a step's later rounds by the
		 * sum of the leads before them, not by L (the stand-in's GPU
		 * acceptance, rank 1's compute 3x: last in 67 of 72 rounds,
		 * 95% of the wait, 2.53 ms ahead, the rounds 12.33 ms longer)
		 */
		if (!s->arr_cls) {
			int32_t r = slow_arrival_culprit(c, &a, &b, &s->arr_held_by);

			if (slow_survey_names(c, r, b, slow_sample_interval(s))) {
				s->arr_rank = r;
				s->arr_cls = AN_S1;
			}
		}
		/*
		 * Every rank reaches this op about together: the time went in
		 * p2p ops before it, where one pipeline stage keeps its
		 * neighbours waiting (its send/recv entered late)
		 */
		if (!s->arr_cls &&
		    (s->arr_rank = slow_p2p_straggler(an, c, res->tmax_ns - res->tbase_ns,
						      &s->arr_p2p)) >= 0) {
			s->arr_cls = AN_S1;
			s->arr_held_by = 0;
		}
		/*
		 * ... or a block of them arrives last together: one of it, in
		 * this part, or, the last part over, across the parts
		 */
		if (s->samp_in)
			slow_part_done(s);
		if (!s->arr_cls &&
		    ((s->blk_n = slow_arrival_block(c, res->tmax_ns - res->tbase_ns,
						    &s->blk_lead)) ||
		     (s->blk_n = slow_parts_block(c, res->tmax_ns - res->tbase_ns,
						  &s->blk_lead)))) {
			s->arr_cls = AN_S1;
			s->arr_held_by = 0;
			s->arr_rank = slow_block_first(c);
		}
		if (s->arr_cls == AN_S1 && slow_echo(an, c, s->pend.sig)) {
			/* held as a host-wide onset is: said once this comm alone is slow */
			s->ccld_hostwide = true;
			if (an->debug)
				fprintf(stderr, "an: slow comm %016" PRIx64 " sample: like"
					" its comparable comms, one of which is slower: held\n",
					c->hash);
		} else if (s->arr_cls) {
			slow_emit(an, c, &s->pend, s->pend_iter, s->pend_ev & ~PEND_ARRIVE);
		} else if (slow_parts_left(s)) {
			next_part = true;	/* the straggler is not in this part */
		} else {
			s->ccld_unsaid = true;
			s->samp_next = now + SAMPLE_COOLDOWN_NS;
			if (an->debug)
				fprintf(stderr, "an: slow comm %016" PRIx64 " sample: no slow"
					" link, no rank arriving last in most of %u rounds (the"
					" likeliest: share %.2f of the wait, lead %.2f ms for an"
					" extra %.2f ms): no verdict yet\n", c->hash, s->arr_rounds,
					a, b / 1e6, (res->tmax_ns - res->tbase_ns) / 1e6);
		}
		s->arr_rank = -1;
		s->blk_n = 0;
		s->blk_parts = false;
		memset(&s->arr_p2p, 0, sizeof(s->arr_p2p));
	} else if (s->pend_ev) {
		const struct sl_result *res = sl_det_result(s->det);
		double extra = res->tmax_ns - res->tbase_ns, lat, lat_med, cost, share, lead;
		int32_t rank;

		cost = slow_link_cost(c, &rank, &lat, &lat_med);
		if (res->cls == SL_S1 && cost >= extra) {
			/* an S1 with P near its bound: a slow link that costs the whole extra is it */
			s->arr_rank = rank;
			s->arr_cls = AN_S2;
		} else if (res->cls != SL_S1 && !slow_link_explains(cost, extra) &&
			   (rank = slow_arrival_explains(c, extra, &share, &lead,
							 &s->arr_held_by)) >= 0) {
			/*
			 * P said the network (every rank's round grew), but no
			 * link is slow and the hooks saw one rank's GPU reach
			 * the ops last: the starts the rounds took were its
			 * calls, not its GPU's (a compute stream the NCCL
			 * stream waits for by an event).  The GPU's arrivals
			 * decide: computation.
			 */
			s->arr_rank = rank;
			s->arr_cls = AN_S1;
		}
		slow_emit(an, c, &s->pend, s->pend_iter, s->pend_ev);
		s->arr_rank = -1;
	} else if (s->have_srate && sl_det_result(s->det)->active) {
		/* after an S1 verdict: an update only if a link is slow too */
		double lat, lat_med;
		int32_t rank = slow_sampled_outlier(c, &lat, &lat_med);

		if (rank >= 0 && rank != sl_det_result(s->det)->s1_rank)
			slow_emit(an, c, &s->pend, s->pend_iter, SL_EV_UPDATE);
	}
	if (an->debug) {
		fprintf(stderr, "an: slow comm %016" PRIx64 " sample: ms/step", c->hash);
		for (k = 0; k < c->nranks; k++)
			fprintf(stderr, " %.2f", s->slat[k] / 1e6);
		fprintf(stderr, ", typical");
		for (k = 0; k < c->nranks; k++)
			fprintf(stderr, " %.2f", s->styp[k] / 1e6);
		fprintf(stderr, ", proxy threads' run-queue wait");
		for (k = 0; k < c->nranks; k++)
			fprintf(stderr, " %.2f", s->rq[k]);
		fprintf(stderr, "; %u of %u rounds with every arrival, last:", s->arr_rounds,
			s->samp_rounds);
		for (k = 0; k < c->nranks; k++)
			fprintf(stderr, " %u", s->arr_last[k]);
		fprintf(stderr, "; in the block arriving last (of %u):", s->blk_rounds);
		for (k = 0; k < c->nranks; k++)
			fprintf(stderr, " %u", s->arr_blk[k]);
		if (s->samp_in) {
			fprintf(stderr, "; parts' mean wait (ms):");
			for (k = 0; k < c->nranks; k++)
				fprintf(stderr, " %.2f", s->part_waitn[k] ?
					s->part_wait[k] / s->part_waitn[k] / 1e6 : NAN);
			fprintf(stderr, ", %u of %u iterations slow, parts slow %u",
				s->samp_slow_iters, s->samp_iters, s->parts_slow);
		}
		fprintf(stderr, "\n");
	}
	s->samp_shed = 0;	/* its verdicts are out */
	if (next_part) {
		parts_of(an, c, s->samp_in, ++s->samp_part);
		sample_go(an, c);
	} else if (s->samp_in) {
		parts_done(s);
	}
}

void slow_shed_note(const struct an_comm *c, struct an_verdict *v)
{
	if (!c || !c->slow || !c->slow->samp_shed)
		return;
	an_text(v, "; %" PRIu64 " step records were shed while the step hooks sampled"
		" (the ring buffer was 3/4 full; calls kept their room): the sample's"
		" step times and arrivals are incomplete", c->slow->samp_shed);
	an_val_i(v, "steps_shed", (int64_t)c->slow->samp_shed);
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
 * A CCL-D onset whose sample waited for a neighbour (the round it is about
 * in pend): the sample once hooks may go on, or as without one once the
 * wait is over and hooks are still busy.
 */
void slow_deferred_sample(struct an *an, struct an_comm *c, uint64_t now)
{
	struct an_slow *s = c->slow;

	if (!s->samp_defer)
		return;
	if (!sl_det_result(s->det)->active) {
		s->samp_defer = false;		/* it recovered meanwhile */
		return;
	}
	if (slow_can_sample(an, c, now)) {
		sample_go(an, c);
	} else if (!slow_sample_waits(an, c, now)) {
		s->samp_defer = false;
		if (s->pend_ev & PEND_ARRIVE)
			s->ccld_unsaid = true;	/* later: a sample, or a cascade */
		else
			slow_emit(an, c, &s->pend, s->pend_iter, s->pend_ev);
	}
}
