/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Slow diagnosis algorithms (docs/slow.md has the
 * formulas, defaults and where they deviate from the papers):
 *
 *  - sl_det:   CCL-D detector (eqs. 1-3) and locator (eq. 4, S1/S2/S3), one
 *              per communicator, fed one aligned round at a time;
 *  - sl_period / sl_iter: Greyhound's iteration period of the op-signature
 *              sequence (autocorrelation), iteration index and time series;
 *  - sl_bocd:  Bayesian online change points with Greyhound's 10% check;
 *  - sl_zscores / sl_group_*: Aegis z-scores within a communicator and
 *              Greyhound's comparable-group check across communicators.
 *
 * Pure library: no I/O, no global state, no clock of its own (all times are
 * the caller's monotonic ns).  Objects are single-threaded; distinct objects
 * may be used from distinct threads.  Times of two hosts are never
 * subtracted: a round's t_ns is from one clock per communicator and its
 * durations are each measured on their rank's own host.
 */
#ifndef CCLD_SLOW_H
#define CCLD_SLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- CCL-D detector and locator (slow_detect.c) ------------------------ */

enum sl_class {
	SL_NONE = 0,
	SL_S1 = 1,		/* computation: P > beta */
	SL_S2 = 2,		/* communication: P < alpha */
	SL_S3 = 3,		/* mixed: alpha <= P <= beta */
};

struct sl_config {
	double tbase_init_ns;	/* configured Tbase(init), <= 0 none (default 0) */
	uint32_t base_rounds;	/* baseline: at most this many first rounds (100) */
	uint64_t base_ns;	/* ... ending within this of the first round (120 s) */
	double r_floor;		/* thr = max(r_floor, k_cv * CV of baseline maxima): 0.5 */
	double k_cv;		/* 6 */
	uint64_t window_ns;	/* CCL-D detection window (60 s) */
	uint32_t repeat;	/* consecutive iterations with / without slow rounds (3) */
	uint64_t min_ns;	/* ... and the slow streak lasted this long (1 s) */
	double alpha;		/* P < alpha: S2 (0.4) */
	double beta;		/* P > beta: S1 (0.6) */
};

void sl_config_default(struct sl_config *c);

/* One round of the communicator (all ranks' records of one seq). */
struct sl_round {
	int64_t iter;		/* iteration index (sl_iter_push); < 0: each round
				 * counts as its own iteration */
	uint64_t t_ns;		/* end of the round, one monotonic clock per comm */
	const double *dur_ns;	/* [nranks] duration per rank, NaN unknown */
	const double *rate;	/* [nranks] bytes/s of the rank's slower direction
				 * (min of send, recv), NaN unknown; NULL: none */
	uint64_t sig;		/* op signature (fn, count, dtype...); 0 unknown */
	uint64_t unjudged_ns;	/* wall time since the comm's previous round that
				 * no judged round covers (rounds left out: a
				 * stall, hooks); not counted as a slowdown's */
};

/* The baseline (eq. 1) and the threshold on R derived from it. */
struct sl_base {
	bool known;		/* tbase usable: configured, or learned */
	bool learned;		/* the learning phase is over */
	bool configured;	/* tbase is tbase_init_ns (learning not over, or the
				 * learned value was itself slow: kept the configured) */
	uint32_t m;		/* rounds in the learned baseline */
	uint32_t trimmed;	/* hiccups left out of it (docs/slow.md) */
	uint32_t shifted;	/* rounds after a level shift left out of it */
	double learned_ns;	/* mean of their maxima (NaN until learned) */
	double cv;		/* coefficient of variation of those maxima */
	double tbase_ns;	/* Tbase in use, NaN if !known */
	double thr;		/* threshold on R in use */
};

/* A closed detection window: its round with the largest Tmax - Tmin (eq. 2). */
struct sl_window {
	uint64_t t_start, t_end;	/* [t_start, t_end) by round end times */
	uint32_t rounds;	/* rounds in the window */
	int64_t iter;		/* the located round's iteration */
	uint64_t t_ns;		/* ... and end time */
	double tmax_ns, tmin_ns;
	double r;		/* eq. 3 against the Tbase at close; NaN if none */
	bool slow;		/* r > thr */
};

/* A slow incident: from onset to recovery. */
struct sl_result {
	bool active;		/* onset reported, recovery not yet */
	bool at_start;		/* slow-at-start: onset during the baseline phase,
				 * judged against the configured Tbase */
	enum sl_class cls;
	double tbase_ns, thr;	/* at the located round */
	/* located round: slow round of the incident with the largest Tmax - Tmin */
	int64_t iter;
	uint64_t t_ns;
	double tmax_ns, tmin_ns;
	double r;		/* (Tmax - Tbase) / Tbase */
	double p;		/* sum of Tmax - Tmin / sum of Tmax - Tbase, over
				 * the slow rounds (docs/slow.md, eq. 4) */
	int32_t culprit;	/* S1, S3: s1_rank; S2: s2_rank; -1 unknown */
	/* S1 candidate: shortest duration in the located round (arrived last) */
	int32_t s1_rank;
	double s1_dur_ns;
	double s1_z;		/* z-score of its duration within that round */
	/* its share of the slow rounds' Tmax - Tmin, summed over those it was last in */
	double s1_share;
	/* S2 candidate: lowest mean rate over the incident's slow rounds */
	int32_t s2_rank;	/* -1: no rate known */
	double s2_rate;		/* its mean rate, bytes/s */
	double rate_median;	/* median of all ranks' mean rates */
	double s2_z;		/* z-score of its mean rate among the ranks */
	uint32_t slow_rounds;	/* slow rounds in the incident so far */
	double lost_ns;		/* sum over them of Tmax - Tbase: the time lost */
	double spread_ns;	/* sum over them of Tmax - Tmin: the time waited */
	uint32_t slow_iters;	/* iterations with a slow round in it so far */
	int64_t onset_iter;	/* first iteration of the slow streak */
	uint64_t onset_ns;	/* end of its first slow round */
	int64_t recover_iter;	/* first iteration of the clean streak, -1 */
	uint64_t recover_ns;	/* end of its first round, 0 */
};

/* sl_det_round() result bits */
#define SL_EV_SLOW_ROUND	0x01	/* this round's R > thr */
#define SL_EV_BASELINE		0x02	/* the learning phase ended (sl_det_base) */
#define SL_EV_WINDOW		0x04	/* a window closed (sl_det_window) */
#define SL_EV_ONSET		0x08	/* an incident started (sl_det_result) */
#define SL_EV_UPDATE		0x10	/* the active incident's class, culprit or
					 * located round changed */
#define SL_EV_RECOVERY		0x20	/* the incident ended */

struct sl_det;

/* NULL on bad arguments (nranks 0, alpha > beta, repeat 0) or no memory;
 * c NULL: defaults.  Memory: O(nranks + base_rounds), fixed. */
struct sl_det *sl_det_new(const struct sl_config *c, uint32_t nranks);
void sl_det_free(struct sl_det *d);
/* The bytes sl_det_new allocated for D (0 for NULL): its share of --mem-max. */
size_t sl_det_bytes(const struct sl_det *d);
/* Feed one round, in end-time order; O(nranks).  A round whose durations are
 * all NaN is ignored (0).  Returns SL_EV_* bits. */
int sl_det_round(struct sl_det *d, const struct sl_round *rd);
const struct sl_base *sl_det_base(const struct sl_det *d);
/* The floor of the threshold on R (r_floor): the least a slow round exceeds
 * its Tbase by, whatever the baseline's spread. */
double sl_det_r_floor(const struct sl_det *d);
/* The last closed window (rounds == 0 before the first). */
const struct sl_window *sl_det_window(const struct sl_det *d);
/* The active or last incident (onset_iter < 0 before the first). */
const struct sl_result *sl_det_result(const struct sl_det *d);
/* Slow iterations counted that are not an incident yet (nor dropped): the
 * end of the first one's slow round, else 0. */
uint64_t sl_det_pending(const struct sl_det *d);
/* Would a round of signature SIG with durations DUR[nranks] be slow (its
 * longest over the baseline's threshold)?  False before a baseline. */
bool sl_det_is_slow(const struct sl_det *d, uint64_t sig, const double *dur);
/* Tbase of a round of signature SIG (its own, else the comm's); NaN before
 * a baseline. */
double sl_det_tbase(const struct sl_det *d, uint64_t sig);
/* Per-rank mean rate over the current/last incident's slow rounds, [nranks],
 * NaN where none was known. */
const double *sl_det_rates(const struct sl_det *d);

/* ---- iteration period (slow_period.c) ---------------------------------- */

#define SL_PERIOD_MAX_N		(1u << 14)	/* longest sequence sl_period takes */
#define SL_PERIOD_MIN_SCORE	0.9
#define SL_PERIOD_TOL		0.02		/* relative to the best score */

/* Period of sig[0..n) (n <= SL_PERIOD_MAX_N): score(lag) = fraction of i with
 * sig[i] == sig[i + lag]; the smallest lag in 1..n/2 with score >= best *
 * (1 - SL_PERIOD_TOL) and >= SL_PERIOD_MIN_SCORE, else 0.  O(n^2 / 2).
 * *score (may be NULL) gets that lag's score (the best if 0). */
size_t sl_period(const uint64_t *sig, size_t n, double *score);

struct sl_iter;

/* Online: learns the period from the first ops (tries at 32, 64, ... up to
 * max_n signatures, 32 <= max_n <= SL_PERIOD_MAX_N), then follows the phase
 * op by op.  NULL on bad max_n or no memory. */
struct sl_iter *sl_iter_new(size_t max_n);
/* The bytes sl_iter_new allocated (0 for NULL). */
size_t sl_iter_bytes(const struct sl_iter *it);
void sl_iter_free(struct sl_iter *it);
/* Feed the next op (call order) and its time.  Returns its iteration index,
 * -1 while the period is unknown (learning, or relearning after the pattern
 * changed).  When this op starts an iteration and the previous start is known,
 * *iter_ns (may be NULL) gets the time between the two starts, else 0. */
int64_t sl_iter_push(struct sl_iter *it, uint64_t sig, uint64_t t_ns, uint64_t *iter_ns);
/* The period in ops, 0 while unknown. */
size_t sl_iter_period(const struct sl_iter *it);

/* ---- change points (slow_bocd.c) --------------------------------------- */

struct sl_bocd_config {
	double hazard_len;	/* expected run length 1/H (250) */
	uint32_t max_run;	/* run-length distribution truncated here (256) */
	double prior_rel;	/* prior sd of a segment's mean and spread,
				 * relative to the first sample (0.3) */
	uint32_t min_after;	/* samples after a candidate before verifying (3) */
	double min_change;	/* |after - before| > this * before (0.1) */
	uint32_t min_before;	/* samples before a candidate, since the last
				 * accepted change (3) */
};

void sl_bocd_default(struct sl_bocd_config *c);

struct sl_cp {
	uint64_t index;		/* first sample of the new segment (0-based) */
	uint64_t at;		/* the sample whose push reported it */
	double before;		/* mean of the segment before (at most max_run) */
	double after;		/* mean of index..at */
};

struct sl_bocd;

/* NULL on bad config or no memory; c NULL: defaults.  Memory O(max_run). */
struct sl_bocd *sl_bocd_new(const struct sl_bocd_config *c);
/* The bytes sl_bocd_new allocated (0 for NULL). */
size_t sl_bocd_bytes(const struct sl_bocd *b);
void sl_bocd_free(struct sl_bocd *b);
/* Push the next value (non-finite values are ignored); O(max_run).  True
 * when a verified change point is reported in *cp. */
bool sl_bocd_push(struct sl_bocd *b, double x, struct sl_cp *cp);
/* MAP run length after the last push (samples in the current run). */
uint32_t sl_bocd_map(const struct sl_bocd *b);

/* ---- z-scores and comparable groups (slow_stats.c) --------------------- */

/* z[i] = (x[i] - mean) / sd over the finite x (population sd); NaN stays
 * NaN; sd == 0 gives 0.  Returns the number of finite x. */
size_t sl_zscores(const double *x, size_t n, double *z);
/* Index of the finite x with the largest |z|, its z in *z (may be NULL);
 * -1 when fewer than 2 finite values or sd == 0. */
int64_t sl_outlier(const double *x, size_t n, double *z);
/* Median of the finite x (NaN if none); scratch holds n doubles. */
double sl_median(const double *x, size_t n, double *scratch);

#define SL_GROUP_K_MAD		3.0	/* robust sigmas (1.4826 MAD) */
#define SL_GROUP_MIN_REL	0.1	/* Greyhound: over the median by > 10% */

/* Comparable-group rule over per-comm medians x[0..n) of one shape:
 * flag[i] = x[i] > med + max(k_mad * 1.4826 * MAD, min_rel * med), one-sided
 * (slower only), needs n >= 3 finite values.  Returns the number flagged;
 * scratch holds n doubles. */
size_t sl_group_outliers(const double *x, size_t n, double k_mad, double min_rel,
			 bool *flag, double *scratch);

/* One communicator's summary for the cross-communicator check. */
struct sl_comm_stat {
	uint64_t comm;		/* in: commHash (not used by the rule) */
	uint64_t sig;		/* in: op signature (type, count, dtype...) */
	uint32_t nranks;	/* in */
	double median_ns;	/* in: median op duration, NaN unknown */
	uint32_t group_size;	/* out: comms with the same (nranks, sig) */
	double group_median_ns;	/* out: median of their medians */
	bool deviant;		/* out: flagged by sl_group_outliers */
};

/* Groups c[] by (nranks, sig) and applies sl_group_outliers with the SL_GROUP_*
 * defaults within each group; c keeps its order.  Returns the number of
 * deviant comms, -1 on no memory. */
long sl_group_check(struct sl_comm_stat *c, size_t n);

/* ---- peer comparison, network part of rounds (slow_peer.c) ------------- */

/*
 * A persistent straggler by peer comparison alone (no history): per round
 * whose every start is known, the rank with the shortest duration arrived
 * last, and the others waited for it the gap (second shortest - shortest).
 * Named when, over the newest rounds, one rank was last in a share of them
 * and their gaps cost a share of the wall time.
 */
struct sl_peer_config {
	uint32_t min_rounds;	/* rounds judged together, at least (3) */
	uint32_t min_iters;	/* ... spanning this many iterations (3) */
	uint64_t min_ns;	/* ... and this much wall time (1 s) */
	double share;		/* last in this share of them, > 0.5 (0.9) */
	double cost;		/* median gap over the mean round interval (0.1) */
	double big;		/* a gap this share of the interval is no chance:
				 * min_rounds suffice; else as many rounds as make
				 * one rank always last by chance unlikely (0.25) */
};

void sl_peer_default(struct sl_peer_config *c);

struct sl_peer_result {
	int32_t rank;		/* the straggler */
	uint32_t rounds;	/* rounds judged */
	uint32_t last;		/* ... in which it arrived last */
	uint32_t iters;		/* iterations they span */
	uint64_t t_first, t_last;	/* their end times */
	double lost_ns;		/* its gaps summed: the time the others waited */
	double gap_ns;		/* median gap */
	double interval_ns;	/* mean time between the rounds */
};

struct sl_peer;

/* NULL on bad arguments (nranks < 2, share <= 0.5, min_rounds 0) or no memory;
 * c NULL: defaults.  Memory O(nranks + 256). */
struct sl_peer *sl_peer_new(const struct sl_peer_config *c, uint32_t nranks);
/* The bytes sl_peer_new allocated (0 for NULL). */
size_t sl_peer_bytes(const struct sl_peer *p);
/*
 * The fewest rounds in which one of NRANKS ranks, each last with chance
 * 1/NRANKS, is last in SHARE of them at most CHANCE of the time; MAX where
 * more would be needed
 */
uint32_t sl_chance_rounds(uint32_t nranks, double share, double chance, uint32_t max);
/*
 * The chance that one of NRANKS ranks, each last with chance 1/NRANKS, is
 * last in K of M rounds or more: NRANKS x P(Binomial(M, 1/NRANKS) >= K)
 */
double sl_chance_last(uint32_t nranks, uint32_t m, uint32_t k);
void sl_peer_free(struct sl_peer *p);
/* One round whose every rank's start is known: durations [nranks] (NaN:
 * that round is skipped), its end, its iteration (non-decreasing).  True
 * while a straggler is named, in *res.  A tie (everyone arrived together:
 * a gap under 2% of the mean interval between rounds) is left out and
 * answers as the round before it. */
bool sl_peer_round(struct sl_peer *p, const double *dur_ns, uint64_t t_ns, int64_t iter,
		   struct sl_peer_result *res);
/* A round whose last arriver is not to be believed (its lateness may be
 * its step hooks'): it is no rank's, so it breaks every rank's run. */
void sl_peer_unknown(struct sl_peer *p, uint64_t t_ns, int64_t iter);

/*
 * The network part of a comm's rounds (last arrival to completion: the
 * shortest duration) against its own level: a rise that lasts and costs.
 */
struct sl_rise_config {
	uint32_t base_rounds;	/* the level: median of the first rounds, lowered
				 * by each later block's median (32) */
	uint32_t recent;	/* the median of the newest rounds is judged (8) */
	double factor;		/* risen: recent >= factor * level, > 1 (1.5) */
	double floor_ns;	/* ... and recent - level >= this (100 us) */
	double k_sd;		/* ... and >= this many robust sds of the rounds
				 * the level came from: beyond their noise (2) */
	uint32_t min_iters;	/* lasting this many iterations (3) */
	uint64_t min_ns;	/* ... and this wall time (1 s) */
	double cost;		/* the extra time over the wall time (0.05) */
};

void sl_rise_default(struct sl_rise_config *c);

struct sl_rise_result {
	bool active;		/* onset reported, recovery not yet */
	double base_ns;		/* the level before */
	double level_ns;	/* the recent median */
	uint64_t onset_round;	/* the first risen round (0-based count) */
	uint64_t t_onset;	/* its end */
	uint32_t iters;		/* iterations since */
	double lost_ns;		/* sum of (round - level) since */
};

#define SL_RISE_ONSET		0x01
#define SL_RISE_RECOVERY	0x02

struct sl_rise;

/* NULL on bad config or no memory; c NULL: defaults.  Memory O(base_rounds). */
struct sl_rise *sl_rise_new(const struct sl_rise_config *c);
/* The bytes sl_rise_new allocated (0 for NULL). */
size_t sl_rise_bytes(const struct sl_rise *r);
void sl_rise_free(struct sl_rise *r);
/* One round's network part (non-finite: ignored), its end and iteration.
 * Returns SL_RISE_* bits; *res (may be NULL) gets the state. */
int sl_rise_round(struct sl_rise *r, double x_ns, uint64_t t_ns, int64_t iter,
		  struct sl_rise_result *res);

#endif
