// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A comm slower than its comparable comms (Greyhound's groups, 4.3: the
 * comms of its size doing the same op) while no detector of its own sees
 * anything: attached after the onset, its baselines were learned slow, and
 * its ranks arrive together (a slow link slows every rank's round alike).
 * Every GROUP_SCAN_NS one scan groups every comm's recent median round by
 * (size, op signature); a comm deviant in GROUP_SCANS scans and for
 * GROUP_MIN_NS gets a step sample, which names the slow link (S2) or the
 * rank whose GPU arrives last (S1); back in line for GROUP_SCANS scans, it
 * recovers.  The excess also tells the peer comparison that a straggler
 * held by this comm's op is a cascade of it (peer_held_by).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_int.h"
#include "an_slow_int.h"

/*
 * What the scan found for C, whose entries are ST[0..N) (the comm's own,
 * in scan order) and LO[0..N) (their second shortest rounds): its worst
 * deviant signature, else none
 */
static void note_scan(struct an_comm *c, const struct sl_comm_stat *st,
		      const struct sl_comm_stat *lo, size_t n)
{
	struct an_slow *s = c->slow;
	double mine = NAN, med = NAN, lo_extra = NAN;
	uint32_t size = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!st[i].deviant || !(st[i].median_ns >= GROUP_RATIO * st[i].group_median_ns))
			continue;
		if (isnan(mine) || st[i].median_ns - st[i].group_median_ns > mine - med) {
			mine = st[i].median_ns;
			med = st[i].group_median_ns;
			size = st[i].group_size;
			lo_extra = lo[i].median_ns - lo[i].group_median_ns;
		}
	}
	s->grp_mine = mine;
	s->grp_med = med;
	s->grp_size = size;
	s->grp_lo_extra = lo_extra;
}

static int by_shape(const void *a, const void *b)
{
	const struct sl_comm_stat *x = *(const struct sl_comm_stat *const *)a;
	const struct sl_comm_stat *y = *(const struct sl_comm_stat *const *)b;

	if (x->nranks != y->nranks)
		return x->nranks < y->nranks ? -1 : 1;
	return x->sig < y->sig ? -1 : x->sig > y->sig;
}

/*
 * Greyhound's rule needs 3 comms of a shape; a job of TP 2 and DP 2 has two
 * TP comms.  Of two, the one GROUP_PAIR_RATIO times the other's median or
 * more is deviant (a comm is not abnormally fast), and its group's median
 * is the other's.  Returns -1 on no memory.
 */
static int pair_check(struct sl_comm_stat *st, size_t n)
{
	struct sl_comm_stat **p;
	size_t i, m = 0;

	for (i = 0; i < n; i++)
		m += st[i].group_size == 2;
	if (m < 2)
		return 0;
	p = malloc(m * sizeof(*p));
	if (!p)
		return -1;
	for (i = 0, m = 0; i < n; i++)
		if (st[i].group_size == 2)
			p[m++] = &st[i];
	qsort(p, m, sizeof(*p), by_shape);
	for (i = 0; i + 1 < m; i += 2) {
		struct sl_comm_stat *a = p[i], *b = p[i + 1];

		a->group_median_ns = b->median_ns;
		b->group_median_ns = a->median_ns;
		a->deviant = a->median_ns >= GROUP_PAIR_RATIO * b->median_ns;
		b->deviant = b->median_ns >= GROUP_PAIR_RATIO * a->median_ns;
	}
	free(p);
	return 0;
}

/* the second shortest of H's rounds: the fast mode of an op that is done twice a step */
static double low_round(const struct sig_hist *h)
{
	double x[GROUP_HIST];
	uint32_t i, j;

	memcpy(x, h->tmax, sizeof(x));
	for (i = 1; i < h->n; i++)
		for (j = i; j > 0 && x[j - 1] > x[j]; j--) {
			double t = x[j];

			x[j] = x[j - 1];
			x[j - 1] = t;
		}
	return x[1];
}

/*
 * Groups ST (every comm's medians per signature) and LO (their second
 * shortest rounds, in the same order) and keeps deviant in ST only where
 * the comm's second shortest round is also GROUP_RATIO times its group's
 * (of a group of two, GROUP_PAIR_RATIO) or more.  A comm that does one op
 * twice a step, once behind the step's compute on its GPU stream and once
 * not, has a median of 5 rounds that is the slow op's or the fast one's
 * by where the scan falls (random job 45: two pipeline stages' DP comms,
 * 11.2 against 3.0 ms, both alike); a slow link or GPU slows its fast
 * rounds too.  Returns -1 on no memory.
 */
static int group_both(struct sl_comm_stat *st, struct sl_comm_stat *lo, size_t n)
{
	size_t i;

	if (sl_group_check(st, n) < 0 || pair_check(st, n) < 0 ||
	    sl_group_check(lo, n) < 0 || pair_check(lo, n) < 0)
		return -1;
	for (i = 0; i < n; i++)
		st[i].deviant = st[i].deviant &&
				lo[i].median_ns >= (lo[i].group_size == 2 ? GROUP_PAIR_RATIO :
						    GROUP_RATIO) * lo[i].group_median_ns;
	return 0;
}

/*
 * every comm's medians per signature, grouped, and in *LOP their second
 * shortest rounds (same order), grouped; NULL on no memory or none
 */
static struct sl_comm_stat *scan(struct an *an, size_t *n, struct sl_comm_stat **lop)
{
	struct sl_comm_stat *st = NULL, *lo = NULL;
	double scratch[GROUP_HIST];
	size_t cap = 0, lcap = 0, nlo = 0;
	struct hkey key;
	size_t it;
	void *v;
	int i;

	*n = 0;
	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		const struct an_comm *c = v;

		for (i = 0; c->slow && i < GROUP_SIGS; i++) {
			const struct sig_hist *h = &c->slow->gh[i];

			if (h->n < GROUP_HIST)
				continue;
			if (!slow_stat_push(&st, n, &cap, c, h->sig,
					    sl_median(h->tmax, h->n, scratch)) ||
			    !slow_stat_push(&lo, &nlo, &lcap, c, h->sig, low_round(h))) {
				free(st);
				free(lo);
				return NULL;
			}
		}
	}
	if (st && group_both(st, lo, *n) < 0) {
		free(st);
		free(lo);
		return NULL;
	}
	*lop = lo;
	return st;
}

bool slow_covered(const struct an_comm *c)
{
	const struct an_slow *s = c->slow;

	return c->sampling || s->active || s->peer_active || s->rise_wait || s->rise_said ||
	       s->samp_defer || s->ccld_unsaid || sl_det_result(s->det)->active;
}

static void emit_group(struct an *an, struct an_comm *c, const struct slow_round *rd,
		       uint64_t now, enum an_class cls, int32_t rank, double a, double b,
		       bool recovered)
{
	struct an_slow *s = c->slow;
	const struct an_comm *root;
	enum an_class vcls = cls;
	int32_t cul = recovered ? rank : slow_sampled_culprit(an, c, &vcls, rank);
	struct an_verdict *v = slow_nohist_frame(an, c, rd, now, vcls, cul, recovered, 0, &root);

	v->onset_ns = s->grp_t0;
	if (recovered) {
		an_text(v, "comm %016" PRIx64 " is back in line with its comparable comms",
			c->hash);
	} else {
		an_text(v, "comm %016" PRIx64 " is slower than its %u comparable comms (its"
			" size, the same op): median round %.1f ms against the group's"
			" %.1f ms (%.1fx) for %.1f s, while its own rounds have no"
			" baseline from before (their slowness is all they know)", c->hash,
			s->grp_size, s->grp_mine / 1e6, s->grp_med / 1e6,
			s->grp_mine / s->grp_med, (double)(now - s->grp_t0) / 1e9);
		slow_sampled_cause(an, c, v, cls, rank, a, b, root);
		an_val_f(v, "group_median_ms", s->grp_med / 1e6);
		an_val_f(v, "median_ms", s->grp_mine / 1e6);
		an_val_i(v, "group_size", s->grp_size);
	}
	an_val_s(v, "detector", "comparable group");
	an_val_i(v, "nranks", c->nranks);
	s->grp_said = !recovered;
	s->grp_rank = cul;
	slow_send_verdict(an, v);
}

void slow_group_sampled(struct an *an, struct an_comm *c, uint64_t now)
{
	struct an_slow *s = c->slow;
	enum an_class cls;
	double a, b, extra;
	int32_t rank;

	if (isnan(s->grp_mine))
		return;		/* back in line while sampled */
	/*
	 * The extra a straggler's lead must be a quarter of: the median's,
	 * or the fast mode's where that is less.  Where the CPU runs ahead
	 * and syncs every other step, one op's rounds, timed from the calls,
	 * are long or short by the step's parity (the queue before the op on
	 * the GPU), and the median of a few of them falls on either mode:
	 * random job 485, rank 6's GPU 3x slower, its DP comm's median 35.9
	 * ms against its comparable comm's 4.8 (their modes out of phase),
	 * while the fast modes, 10.5 against 4.2 ms, differ by rank 6's
	 * 6.8 ms lead.  (A deviant comm's fast rounds are deviant too,
	 * group_both: that excess is positive.)
	 */
	extra = s->grp_mine - s->grp_med;
	if (s->grp_lo_extra > 0 && s->grp_lo_extra < extra)
		extra = s->grp_lo_extra;
	cls = slow_sample_decide(c, extra, &rank, &a, &b, &s->arr_held_by);
	if (cls) {
		emit_group(an, c, &s->pend, now, cls, rank, a, b, false);
		return;
	}
	s->samp_next = now + SAMPLE_COOLDOWN_NS;
	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 ": %.1f ms rounds against its"
			" group's %.1f ms, the sample shows no slow link and no rank"
			" arriving last: no verdict\n", c->hash, s->grp_mine / 1e6,
			s->grp_med / 1e6);
}

/* C's newest judged round (seq, fn, sig, host, end), NULL none */
static const struct slow_round *newest_round(const struct an_comm *c)
{
	return c->slow->newest.seq >= 0 ? &c->slow->newest : NULL;
}

/* after a scan: C deviant long enough gets a sample, C back in line recovers */
static void group_step(struct an *an, struct an_comm *c)
{
	struct an_slow *s = c->slow;
	const struct slow_round *rd = newest_round(c);
	bool deviant = !isnan(s->grp_mine);
	uint64_t now;

	if (!rd || rd->host >= an->nhosts)
		return;
	now = an->hosts[rd->host].now;		/* the clock of its rounds */
	if (s->grp_said) {
		s->grp_scans = deviant ? 0 : s->grp_scans + 1;
		if (s->grp_scans >= GROUP_SCANS) {
			emit_group(an, c, rd, now, s->cls, s->grp_rank, NAN, NAN, true);
			s->grp_scans = 0;
		}
		return;
	}
	if (!deviant || slow_covered(c)) {
		s->grp_scans = 0;
		return;
	}
	/*
	 * No round ended since the last scan (judged or not): its medians
	 * are the same rounds', the comm stalled or idle, not slow for
	 * longer (a 2.5 s stop of another rank counted as 2 s of deviance,
	 * then a sample named a rank of its catch-up).  The time does not
	 * count.
	 */
	if (s->grp_scans && s->next == s->grp_seq) {
		s->grp_t0 += now - s->grp_scan_t;
		s->grp_scan_t = now;
		return;
	}
	s->grp_seq = s->next;
	s->grp_scan_t = now;
	if (!s->grp_scans++)
		s->grp_t0 = now;
	if (s->grp_scans < GROUP_SCANS || now - s->grp_t0 < GROUP_MIN_NS ||
	    !slow_can_sample(an, c, now))
		return;
	if (an->debug)
		fprintf(stderr, "an: slow comm %016" PRIx64 ": %.1f ms rounds against its"
			" group's %.1f ms (%u comms): sampling\n", c->hash, s->grp_mine / 1e6,
			s->grp_med / 1e6, s->grp_size);
	slow_start_sample(an, c, rd, -1, PEND_GROUP);
}

void an_slow_group_clock(struct an *an, uint32_t host, uint64_t now_ns)
{
	struct sl_comm_stat *st, *lo = NULL;
	struct hkey key;
	size_t it, n, j = 0;
	void *v;

	/* one clock paces the scans: the first host's that ticked */
	if (!an->grp_have) {
		an->grp_have = true;
		an->grp_host = host;
		an->grp_next = now_ns + GROUP_SCAN_NS;
		return;
	}
	if (host != an->grp_host || now_ns < an->grp_next)
		return;
	an->grp_next = now_ns + GROUP_SCAN_NS;
	st = scan(an, &n, &lo);
	if (!st)
		n = 0;
	/* the same order as the scan's: each comm's entries follow each other */
	for (it = 0; hmap_next(&an->comms, &it, &key, &v);) {
		struct an_comm *c = v;
		size_t j0 = j;

		while (j < n && st[j].comm == c->hash)
			j++;
		if (!c->slow)
			continue;
		note_scan(c, st ? st + j0 : NULL, lo ? lo + j0 : NULL, j - j0);
		group_step(an, c);
	}
	free(st);
	free(lo);
}
