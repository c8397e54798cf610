/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Slow diagnosis inside the analyzer: the per-comm state shared by the
 * rounds (an_slow.c), CCL-D's events and verdicts (an_slow_ccld.c), the
 * step samples (an_slow_sample.c) and the detectors that need no history
 * (an_slow_nohist.c).
 */
#ifndef CCLD_AN_SLOW_INT_H
#define CCLD_AN_SLOW_INT_H

#include "an_int.h"
#include "slow.h"

/* one round being gathered: per-rank durations until every rank reported */
#define PEER_UNDECIDED	8	/* such rounds kept, the newest */

struct slow_round {
	int64_t seq;		/* -1: free */
	uint32_t n;		/* durations known */
	uint32_t host;		/* the host of t_end */
	uint64_t t_end;		/* latest completion */
	uint64_t sig;		/* op signature, for the iteration period */
	bool sig_known;		/* ... with SIG_AFTER known */
	int fn;
	uint32_t nexact;	/* ranks whose start is known: the GPU reached the
				 * op then (step hooks), or was idle at the call */
	uint32_t narr;		/* ranks whose start is the GPU's (step hooks) */
	uint32_t nundec;	/* ranks whose process is not judged yet (too few
				 * calls to tell whether it waits for its GPU) */
	uint32_t nshared;	/* ranks whose end is a tier B completion that
				 * came after the process called into another
				 * comm: a bound shared with that later op */
	double *dur;		/* [nranks] ns, NaN unknown */
	double *dur_bound;	/* [nranks] ns, from the start known without
				 * step hooks' arrivals (a bound where the CPU
				 * runs ahead) */
	double *rate;		/* [nranks] send bytes/s (tier C), NaN unknown */
	/*
	 * [nranks] where the GPU's arrival is known (step hooks): how long
	 * after its earlier op of another comm (HOLD, 0 none) was done, NaN
	 */
	double *after_hold;
	uint64_t *hold;
	/*
	 * [nranks] the comm whose op ended right before the call (under
	 * IDLE_MIN_NS: the CPU waited for it, a stream sync), 0 none
	 */
	uint64_t *synced;
	bool any_rate;
};

/* a round whose every arrival step hooks showed: who arrived last */
#define ARR_NOTES	32
struct arr_note {
	int64_t seq;
	int fn;
	uint32_t host;		/* the host of t_end */
	uint64_t t_end;
	int32_t last;		/* the rank that arrived last */
	double gap;		/* ns the others waited for it (the next arrival's lead) */
	uint64_t holder;	/* its GPU came straight from this comm's op, 0 */
};

#define ARR_MIN_ROUNDS	4	/* sampled rounds with every start seen */

/* a rank's duration in a sampled round, sorted to find the block arriving last */
struct blk_ent {
	double dur;
	int32_t rank;
};

/* recent judged rounds per op signature, for the comparable-group check */
#define GROUP_SIGS	4
#define GROUP_HIST	5	/* at the onset 3 of them are slow: the median too */
struct sig_hist {
	uint64_t sig;
	double tmax[GROUP_HIST];	/* ns */
	uint32_t n;			/* filled, <= GROUP_HIST */
	uint32_t pos;
};

/*
 * A judged round's rank with the shortest duration (CCL-D's S1 candidate,
 * had the round been located) and the comm whose op held its GPU then
 */
struct round_hold {
	uint64_t t_end;
	int32_t rank;
	uint64_t holder;
};
#define ROUND_HOLDS	32

/* what slow_p2p_straggler found */
struct slow_p2p_found {
	uint64_t comm;		/* the p2p comm where it keeps its peer waiting */
	int32_t rank, peer;	/* its rank there, and that peer's */
	double late_ns;		/* mean lateness of its entries behind the peer's */
	uint32_t pairs, late_pairs;	/* matched ops looked at, and late */
	int64_t op;		/* its latest such op, counted per peer and direction */
	int fn;
};
#define SIG_TMINS	4	/* an_slow.last_tmin: op signatures kept */

#define ARR_LOG		128	/* a sample's rounds kept one by one */

struct an_slow {
	size_t bytes;		/* all it holds: its share of --mem-max */
	struct sl_det *det;
	struct sl_iter *iter;
	struct sl_bocd *bocd;	/* change points of the iteration time */
	struct sl_cp cp;	/* the latest one */
	bool have_cp;
	uint64_t niter;		/* iteration times seen */
	int64_t next;		/* the next round for the detector, -1 none yet */
	bool active;		/* an incident is open */
	int32_t root_cul;	/* its culprit rank */
	uint64_t root_unseen;	/* ... or any rank of this comm (slow_unseen_evidence) */
	enum an_class cls;	/* its class */
	double *dur_hooked;	/* [nranks] scratch: a hooked round's durations */
	uint64_t *holder;	/* [nranks] the comm whose op held the rank's GPU
				 * last (its latest round started after it), 0 */
	/*
	 * ... in the newest judged rounds, for their S1 candidates: a verdict
	 * is about its located round, which later rounds' holders do not say
	 */
	struct round_hold rh[ROUND_HOLDS];
	uint32_t nrh;
	/* iterations while step hooks were on: not judged, not counted */
	int64_t iter_skip;	/* iterations removed so far */
	int64_t last_iter;	/* sl_iter index of the last judged round, -1 */
	bool skipped;		/* rounds were skipped since it */
	uint64_t judged_t;	/* end of the last round not skipped, 0 none */
	uint64_t skipped_t;	/* end of the last skipped round */
	/*
	 * Step sample (S2/S3): the onset's verdict waits until every rank's
	 * send steps were timed for SAMPLE_NS with step hooks on.
	 */
	struct slow_round pend;	/* the round that opened the incident */
	/*
	 * [nranks] when it ended: holder[k], and that comm's round then in
	 * progress (-1 unknown): a root found there is about that round
	 */
	uint64_t *pend_hcomm;
	int64_t *pend_hseq;
	int64_t pend_iter;
	uint64_t pend_onset;	/* the slowdown's onset where not the detector's, 0 */
	int pend_ev;
	uint32_t samp_host;
	uint64_t samp_t0;
	/*
	 * step records BPF shed (the ring 3/4 full) over every host: the
	 * count when the sample began, and how many the sample that just
	 * ended missed (0 outside its verdicts)
	 */
	uint64_t samp_shed0, samp_shed;
	double *net0;		/* [3 * nranks] ns, bytes, steps at the start */
	double *wait;		/* [nranks] in the latest complete round: how long
				 * the rank waited for the last arriver, NaN */
	/* per op signature, its latest complete round's shortest duration
	 * (the op's own time after the last arrival) */
	struct { uint64_t sig; double tmin; } last_tmin[SIG_TMINS];
	uint32_t nlast_tmin;
	double *srate;		/* [nranks] bytes/s over the sample, NaN */
	double *slat;		/* [nranks] ns per send step over the sample */
	double *styp;		/* [nranks] ... the median of its completions, NaN */
	/*
	 * [nranks] the share of the sample its process's busiest proxy
	 * thread spent waiting for a CPU (an_proc_run_wait), NaN unknown
	 */
	double *rq;
	bool have_srate;
	struct sig_hist gh[GROUP_SIGS];
	uint32_t gh_next;	/* the slot a new signature replaces */
	/* sampled arrivals: rounds whose every start the step hooks showed */
	uint32_t samp_rounds;	/* rounds completed while sampled */
	uint32_t samp_rounds_in;	/* ... with every arrival, or once a
				 * sampled rank gave a step record */
	/*
	 * ... the iterations among them CCL-D could judge (no end shared with
	 * another comm's op), and those with a round slow by the starts
	 * known without hooks: none slow, the slowdown was over
	 */
	uint32_t samp_iters;
	uint32_t samp_slow_iters;
	int64_t samp_iter;	/* the latest of them, -1 */
	bool samp_iter_slow;	/* ... one of its rounds was slow */
	uint32_t arr_rounds;
	uint64_t arr_t0, arr_t1;	/* the first's and the latest's end */
	/* the first ARR_LOG of them: who arrived last, by how much (an_slow_survey.c) */
	struct arr_ent {
		int32_t last;
		float gap_ns;
	} arr_log[ARR_LOG];
	uint32_t *arr_last;	/* [nranks] rounds in which the rank arrived last */
	double *arr_gmax;	/* [nranks] the largest wait it caused in one */
	double *arr_gap;	/* [nranks] ... the others' wait for it, summed */
	uint32_t *arr_held;	/* [nranks] ... its GPU coming straight from an op of
				 * another comm that ended late (a cascade of it) */
	uint64_t *arr_holder;	/* [nranks] ... that comm, the latest */
	/*
	 * The block arriving last (an_slow_block.c): the ranks before the
	 * largest gap in a round's arrival order, rounds with every arrival
	 */
	uint32_t blk_rounds;
	uint32_t *arr_blk;	/* [nranks] rounds in which the rank was in it */
	double *arr_blk_gap;	/* [nranks] ... the block's lead, summed */
	uint64_t *arr_blk_holder;	/* [nranks] ... the comm its GPU came from */
	struct blk_ent *blk_sort;	/* [nranks] scratch */
	uint32_t blk_n;		/* the sample's verdict names a block of this many */
	double blk_lead;	/* ... arriving this long after the others (ns) */
	/*
	 * A part sample's parts together (an_slow_block.c): each hooked
	 * rank's wait in the op, from its GPU's arrival to the op's end,
	 * summed over its part's rounds with every hooked arrival; the parts
	 * whose iterations were slow in the main; the block they name
	 */
	double *part_wait;	/* [nranks] ns */
	uint32_t *part_waitn;	/* [nranks] rounds */
	bool *part_blk;		/* [nranks] */
	uint32_t parts_slow;
	bool blk_parts;		/* the verdict's block is part_blk's */
	uint64_t samp_next;	/* no sample of this comm before (host clock) */
	/*
	 * A comm with more than SAMPLE_MAX_LOCAL processes on a host is
	 * sampled a part at a time (an_slow_sample.c): samp_in[k] marks the
	 * ranks hooked now, SAMPLE_MAX_LOCAL per host at most; NULL: the whole
	 * comm.  Part samp_part of samp_nparts.
	 */
	bool *samp_in;
	uint32_t samp_part, samp_nparts;
	uint64_t defer_t0;	/* a sample waits for a neighbour since, 0 */
	bool samp_defer;	/* ... a CCL-D onset's, for the round in pend */
	/* no history needed (an_slow_nohist.c, slow_peer.c) */
	struct sl_peer *peer;	/* rounds with known starts: who arrives last */
	/*
	 * Rounds before every process was judged (the first calls after the
	 * attach), given to the peer comparison once they are, if each waits
	 * for its GPU: the start rule is the process's, not the round's.
	 */
	double *undec_dur[PEER_UNDECIDED];
	uint64_t undec_t[PEER_UNDECIDED];
	int64_t undec_iter[PEER_UNDECIDED];
	uint32_t nundec;
	struct sl_rise *rise;	/* the network part of every round */
	uint64_t exact_bits;	/* newest judged rounds with known starts, bit 0 newest */
	uint64_t njudged;	/* judged rounds */
	uint64_t sig0;		/* the comm's first op signature ... */
	bool have_sig0;
	int64_t sig0_iters;	/* ... and its rounds: iterations for these two */
	bool peer_active;	/* an S1 incident opened by peer comparison */
	bool peer_after_base;	/* ... after CCL-D's baseline: not the baseline's */
	uint64_t base_t;	/* end of the round that completed CCL-D's baseline, 0 before */
	uint32_t peer_clean;	/* rounds with known starts since it was named */
	uint64_t peer_back_t;	/* end of the round it recovered in, 0 never */
	struct sl_peer_result pres;	/* its latest naming */
	bool rise_wait;		/* a rise lasted: a sample is due */
	bool rise_said;		/* ... and a verdict was given */
	bool rise_cascade;
	int32_t rise_rank;
	struct sl_rise_result rres;
	bool ccld_unsaid;	/* a CCL-D onset waited for arrivals and got none */
	bool ccld_quiet;	/* a CCL-D incident while another detector's was open */
	bool ccld_hostwide;	/* a CCL-D onset held: its comparable comms as slow */
	bool ccld_split;	/* ... its located rank last in few slow rounds */
	bool blind;		/* its S1 verdict: starts unknown, no step records */
	int32_t arr_rank;	/* the culprit of the sample, -1 none ... */
	enum an_class arr_cls;	/* ... and its class (S1: arrives last, S2: slow link) */
	uint64_t arr_held_by;	/* ... late because its op in this comm ended late, 0 */
	struct slow_p2p_found arr_p2p;	/* ... found by its p2p entries (comm != 0) */
	/* a survey of its arrivals (an_slow_survey.c): done, and what it found */
	int64_t first_seq;	/* the first round reported: > 0 where ccld came late */
	bool surveyed;
	uint32_t survey_need;	/* rounds with every arrival it waits for */
	bool survey_open;	/* its incident is open ... */
	enum an_class survey_cls;	/* ... of this class (S1, S2) ... */
	int32_t survey_rank;	/* ... naming this rank (the first of a block) ... */
	bool survey_block;	/* ... of a block arriving last together ... */
	uint64_t survey_onset;	/* ... since this survey began ... */
	uint64_t survey_next;	/* ... and is surveyed again from then */
	int32_t survey_p2p;	/* 1 + the rank a survey found late in p2p ops, 0 */
	bool survey_link_only;	/* its rounds' starts are known: a slow link only */
	bool survey_recheck_parts;	/* its open incident may be asked about by parts */
	int32_t survey_link;	/* 1 + the rank such a survey found slow, asked about again; 0 */
	/*
	 * ns between its judged rounds (consecutive seqs), exponentially, the
	 * level when its latest survey began (0 unknown), and since when the
	 * rounds have come RESURVEY_RISE times further apart than that (0)
	 */
	double iv_mean;
	uint32_t iv_n;
	int64_t iv_prev_seq;
	uint64_t iv_prev_t;
	double survey_iv;
	uint64_t iv_high_t;
	double resurvey_rise;	/* the rise that asked for this survey, 0 none ... */
	double resurvey_extra;	/* ... ns more between rounds than before it */
	/* the open CCL-D incident's culprit was found so (its updates say it too) */
	struct slow_p2p_found said_p2p;
	int32_t said_p2p_rank;
	/* ... or by the sampled GPU arrivals (a rank, or a block arriving last) */
	bool said_arrived;
	/*
	 * The newest rounds whose every arrival step hooks showed, sampled or
	 * not (another comm's sample hooks its processes too): for following
	 * a cascade to its root (an_slow_chain.c)
	 */
	struct arr_note notes[ARR_NOTES];
	uint32_t nnotes;	/* noted so far; notes[nnotes % ARR_NOTES] next */
	uint64_t chain_of;	/* its open incident was named following comm
				 * CHAIN_OF's cascade: it ends with that one's */
	uint64_t chain_onset;	/* ... its onset, on host CHAIN_HOST's clock */
	uint32_t chain_host;
	/* slower than its comparable comms, by the latest scan (an_slow_group.c) */
	struct slow_round newest;	/* the newest judged round: seq, fn, sig,
					 * host, t_end (no durations) */
	double grp_mine;	/* ns: its median round, NaN in line */
	double grp_med;		/* ns: its group's */
	double grp_lo_extra;	/* ns: its second shortest round over its group's */
	uint32_t grp_size;	/* comms in its group */
	uint32_t grp_scans;	/* scans in a row deviant (once said: in line) */
	uint64_t grp_t0;	/* the first of them, on its rounds' clock (moved
				 * on by the scans that saw no new round) */
	int64_t grp_seq;	/* next (its rounds fed) at the last scan */
	uint64_t grp_scan_t;	/* that scan's time */
	bool grp_said;		/* a verdict was given */
	int32_t grp_rank;	/* ... naming this rank */
	struct slow_round r[AN_HIST];
};

/*
 * CCL-D's S1 with P under this (its bound, beta, is 0.6) waits for a step
 * sample where one is possible: a slow link gives uneven durations too
 * (who comes after it in the ring waits less), and a rank whose link alone
 * costs the round's whole extra is the culprit (S2), not the rank with the
 * shortest duration (random job 25: P 0.65, a link 6x slower, S1 named
 * the rank two places after it)
 */
#define P_S1_SAMPLE	0.8
/* an S1 onset's located rank, last in this share of its slow rounds' wait */
#define S1_SHARE	0.75
#define SAMPLE_NS	500000000ull	/* step hooks on at least this long */
#define SAMPLE_MAX_NS	5000000000ull	/* then the verdict comes anyway */
#define SAMPLE_STEPS	8		/* send steps timed per rank */
/*
 * A sampled slow sender is a busy host's where its proxy thread waited for
 * a CPU RQ_STARVED of the sample or more, and RQ_FACTOR times the others'
 * median wait (RQ_FLOOR at least): an_slow_sample.c rq_starved
 */
#define RQ_STARVED	0.2
#define RQ_FACTOR	2.0
#define RQ_FLOOR	0.02
#define SAMPLE_COOLDOWN_NS	30000000000ull	/* after a sample that explained nothing */
#define SAMPLE_GAP_NS	1000000000ull	/* ... once that incident ended */
#define SAMPLE_DEFER_NS	2000000000ull	/* a sample waits for a neighbour this long at most */
/*
 * Step hooks fire for every comm of a hooked process: a comm with more
 * processes than this on one host is not sampled (8 on one machine flood
 * the ring buffer; real jobs have a few ranks of a comm per node, more only
 * in intra-node comms, which have no proxy steps to sample).  Measured
 * again 2026-12-02 with 8: the world comms of 8 ranks on one VM sampled
 * whole, test_attach_midrun's PyTorch job lost 2,614 records (calls among
 * them) and two slow scenarios came late or early (docs/numbers.md).
 */
#define SAMPLE_MAX_LOCAL	4
/*
 * Processes hooked on one host by all samples at once, the processes a
 * sample adds beyond its comm's included (an_slow_sample.c): two stages of
 * a pipeline sampled together, each with the TP comms behind its DP comm
 */
#define SAMPLE_MAX_HOOKED	8

/*
 * A call this long after its process's earlier ops were done found its GPU
 * idle: the CPU worked meanwhile (a CPU computing, or waiting for its GPU's
 * compute) rather than queueing GPU work ccld does not see.
 */
#define IDLE_MIN_NS	1000000ull
#define PROC_CALLS_MIN	8	/* judged calls of a process before it is known */
#define PROC_IDLE_EARLY	2	/* ... or this many of them on an idle GPU */

/* what a step sample was started for (an_slow.pend_ev beyond SL_EV_*) */
#define PEND_RISE	0x1000	/* the network part rose: class and culprit from it */
#define PEND_ARRIVE	0x2000	/* CCL-D's S1 where starts are unknown: who arrives last */
#define PEND_GROUP	0x4000	/* slower than its comparable comms: class and culprit */
#define RUNAHEAD_ROUNDS	16	/* judged rounds before slow_runahead knows */
#define PEND_SURVEY	0x8000	/* a run-ahead comm already slow? (an_slow_survey.c) */

/*
 * The comparable-group check (an_slow_group.c): a scan of every comm's
 * recent median rounds per op signature each GROUP_SCAN_NS (of the first
 * host's clock); a comm deviant (Greyhound's rule) and GROUP_RATIO times
 * its group's median or more, in GROUP_SCANS scans in a row and for
 * GROUP_MIN_NS, is sampled; in line again for GROUP_SCANS scans, it
 * recovers.  1.5x: the sample's hooks cost a comm's rounds up to a few
 * tens of percent on a busy host (docs/numbers.md), and a deviant comm
 * is sampled only where no detector of its own spoke.
 */
#define GROUP_SCAN_NS	500000000ull
#define GROUP_SCANS	2
#define GROUP_MIN_NS	1000000000ull
#define GROUP_RATIO	1.5
#define GROUP_PAIR_RATIO	2.0	/* of a group of two comms (an_slow_group.c) */

/*
 * A host-wide slowdown (an_slow_ccld.c): HOSTWIDE_MIN_OTHERS comparable
 * comms or more, whose slowest of their last HOSTWIDE_ROUNDS rounds is
 * HOSTWIDE_RATIO times their own baselines or more (the median of them),
 * and this comm not GROUP_RATIO times slower than they are.  At most
 * HOSTWIDE_MAX of them are looked at.
 */
#define HOSTWIDE_RATIO	1.5
#define HOSTWIDE_ROUNDS	3	/* <= GROUP_HIST; CCL-D's 3 iterations */
#define HOSTWIDE_MIN_OTHERS	2
#define HOSTWIDE_MAX	64

/* an_slow.c: durations and rounds */
void slow_det_relearn(struct an *an, struct an_comm *c);

/* an_slow_ccld.c: CCL-D's events and verdicts */
void slow_add_culprit(const struct an *an, const struct an_comm *c, struct an_verdict *v,
		      int32_t rank);
bool slow_cascade_of(struct an *an, struct an_verdict *v, const struct an_comm *root,
		     uint64_t held);
const struct an_comm *slow_root_of(struct an *an, const struct an_comm *c, int32_t rank);
/* a judged round's Tmax, kept per op signature for the comparable-group check */
void slow_note_round(struct an_slow *s, const struct slow_round *rd, int32_t nranks);
/* CCL-D's events EV (SL_EV_*) on round RD: a verdict, or first a step sample */
void slow_ccld_event(struct an *an, struct an_comm *c, const struct slow_round *rd,
		     int64_t iter, int ev);
/* CCL-D's verdict about round RD for the events EV (SL_EV_*) */
void slow_emit(struct an *an, struct an_comm *c, const struct slow_round *rd,
	       int64_t iter, int ev);
/* a verdict from a step sample that missed step records says so */
void slow_shed_note(const struct an_comm *c, struct an_verdict *v);
/* the rank whose link the kernel's TCP retransmits on C's connections name, -1 none */
int32_t slow_tcp_end(const struct an *an, const struct an_comm *c);
/* the culprit of a network slowdown whose step sample found SAMPLED the slowest sender */
int32_t slow_net_end(const struct an *an, const struct an_comm *c, int32_t sampled);
/*
 * A step sample's straggler (CLS S1, arrivals) while TCP names one rank's
 * link: that rank, whose link makes the slowdown (S2); else -1
 */
int32_t slow_tcp_echo(const struct an *an, const struct an_comm *c, enum an_class cls);
/*
 * The culprit of a verdict resting on a step sample, of class *CLS and
 * naming RANK (-1: none): a straggler that a lossy link explains is that
 * link's end (slow_tcp_echo; *CLS becomes S2), a slow sender or none the
 * lossy link's end where TCP names one (slow_net_end), else RANK
 */
int32_t slow_sampled_culprit(const struct an *an, const struct an_comm *c, enum an_class *cls,
			     int32_t rank);

/* an_slow_sample.c: step samples */
bool slow_net_outlier(double lat, double others);
bool slow_link_outlier(const struct an_comm *c, int32_t rank, double lat, double lat_med);
/*
 * C's step sample: the rank whose link is an outlier (*RANK, -1 none; its
 * and the others' ms per send step in *LAT, *LAT_MED) and what that link
 * added to each sampled round (ns: its excess per step times its steps per
 * round), NaN where no link is
 */
double slow_link_cost(const struct an_comm *c, int32_t *rank, double *lat, double *lat_med);
double slow_link_excess(const struct an_comm *c, int32_t rank, double lat, double lat_med);
void slow_sampled_s2(const struct an_comm *c, int32_t *rank, double *rate, double *med,
		     double *z, double *lat, double *lat_med);
/* slow_sampled_s2's rank where its link is an outlier (slow_link_outlier), else -1 */
int32_t slow_sampled_outlier(const struct an_comm *c, double *lat, double *lat_med);
bool slow_can_sample(const struct an *an, struct an_comm *c, uint64_t now);
const char *slow_sample_refusal(const struct an *an, struct an_comm *c, uint64_t now);
void slow_start_sample(struct an *an, struct an_comm *c, const struct slow_round *rd,
		       int64_t iter, int ev);
/*
 * A comm too wide to hook whole: a sample of its GPUs' arrivals a part
 * at a time, where nothing else stops one (false: none started)
 */
bool slow_start_part_sample(struct an *an, struct an_comm *c, const struct slow_round *rd,
			    int64_t iter, int ev);
/* a part sample's verdict V: which part of C's processes named it (none: not by parts) */
void slow_part_evidence(const struct an_comm *c, struct an_verdict *v);
/* S is sampling a part, and a later part is due after it */
bool slow_parts_left(const struct an_slow *s);
/* C may be sampled a part at a time now (slow_start_part_sample would start) */
bool slow_can_part_sample(const struct an *an, struct an_comm *c, uint64_t now);
/*
 * C is like its comparable comms (the same size and op) while one of them
 * is slower than they are: C's slowdown is that comm's echo (the stages of
 * a pipeline wait for the slowest one's data), no straggler of its own
 */
bool slow_echo(struct an *an, const struct an_comm *c, uint64_t sig);
/* an incident of C whose sample named nobody ended: its cooldown ends too */
void slow_unnamed_ended(struct an_comm *c, uint64_t now);
/* C's sample waits for a neighbour's pending incident (SAMPLE_DEFER_NS at most) */
bool slow_sample_waits(const struct an *an, struct an_comm *c, uint64_t now);
/* the round the sample's verdict will be about */
void slow_sample_for(struct an *an, struct an_comm *c, const struct slow_round *rd,
		     int64_t iter, int ev);
/* a CCL-D onset whose sample waited for a neighbour: the sample, or the verdict */
void slow_deferred_sample(struct an *an, struct an_comm *c, uint64_t now);

/* an_slow_nohist.c */
bool slow_nohist_new(struct an_slow *s, const struct an *an, int32_t nranks);
/* the bytes slow_nohist_new allocated for S, of NRANKS ranks */
size_t slow_nohist_bytes(const struct an_slow *s, int32_t nranks);
/* a slow verdict or recovery out (counted; a recovery ends those it opened) */
void slow_send_verdict(struct an *an, struct an_verdict *v);
void slow_nohist_free(struct an_slow *s);
/* the rank of C whose process is rank ORANK of comm O, else -1 */
int32_t member_of(const struct an *an, const struct an_comm *c,
		  const struct an_comm *o, int32_t orank);
/*
 * The comm whose op held RANK's GPU in C's round that ended at T_END (the
 * located round: its holder then, not in a later round), else the latest
 */
uint64_t slow_located_holder(const struct an_slow *s, uint64_t t_end, int32_t rank);
/*
 * V cleared and framed: a root verdict of KIND and CLS on C's round SEQ
 * (op FN), detected at DETECTED_NS on HOST's clock, naming RANK (-1 none)
 */
void slow_verdict_frame(const struct an *an, const struct an_comm *c, struct an_verdict *v,
			enum an_vkind kind, enum an_class cls, int64_t seq, int fn,
			uint32_t host, uint64_t detected_ns, int32_t rank);
/*
 * In round RD, whose last arriver LAST came GAP ns after the others: the
 * comm whose op its GPU came straight from (that op made it late, not its
 * own work), else 0
 */
uint64_t slow_late_from(const struct slow_round *rd, int32_t last, double gap);
/*
 * A round of C (of iteration ITER, -1 unknown) while step hooks sample it:
 * who arrived last, and whether it was still slow
 */
void slow_sampled_round(struct an_comm *c, const struct slow_round *rd, int64_t iter);
/*
 * C's sample's hooks are in: one of its ranks gave a step record since it
 * began (they go in together; a rank with no network peer never gives one)
 */
bool slow_sample_hooks_in(const struct an_comm *c);
/*
 * C's sample saw MIN_ITERS iterations or more and no slow round in them
 * (CCL-D, judging them, would have ended the incident): the slowdown was
 * over before the sample, whose arrivals then say nothing about its cause
 */
bool slow_sample_over(const struct an_slow *s, uint32_t min_iters);
/*
 * RD, a round of C's sample (of iteration ITER, -1 unknown), is the first
 * slow one after MIN_ITERS clean iterations or more: the onset the sample
 * began for was over, and a new slowdown begins here (the verdict is about
 * this round, not the one that opened the incident)
 */
bool slow_sample_turned(const struct an_slow *s, const struct slow_round *rd, int64_t iter,
			uint32_t min_iters);
/* ... the sample starts afresh for RD: its round, holders, counters, clock */
void slow_sample_reanchor(struct an *an, struct an_comm *c, const struct slow_round *rd,
			  int64_t iter);
/*
 * The rounds of C's step sample whose starts were all seen: the last
 * arriver the others waited for (-1: none caused ARR_SHARE of their wait),
 * that share and its mean lead; *held
 * (may be NULL) the comm whose late op it came straight from in most of
 * them, 0 if its own lateness.
 */
int32_t slow_arrival_culprit(const struct an_comm *c, double *share, double *gap_ns,
			     uint64_t *held);
/*
 * One more round whose last arriver was rank K, the others waiting G ns for
 * it, its GPU straight from comm HELD's op (0: not): the tallies below
 */
void slow_tally_last(uint32_t *last, double *gap, double *gmax, uint32_t *heldn,
		     uint64_t *holder, int32_t k, double g, uint64_t held);
/*
 * The same over NRANKS ranks' tallies of ROUNDS rounds: LAST[k] rounds
 * last, GAP[k] the others' wait summed, GMAX[k] its largest (NULL: not
 * known), HELDN[k] of them straight from comm HOLDER[k]'s op
 */
int32_t slow_arrival_pick(int32_t nranks, uint32_t rounds, const uint32_t *last,
			  const double *gap, const double *gmax, const uint32_t *heldn,
			  const uint64_t *holder, double *share, double *gap_ns, uint64_t *held);
/* the rank with the shortest duration of RD, *GAP to the next shortest; -1 */
int32_t slow_last_arriver(const struct an_comm *c, const struct slow_round *rd, double *gap);

/* an_slow_chain.c: a cascade followed to its root */
/* RD's arrivals, where step hooks showed every one, noted for that */
void slow_note_arrivals(struct an_comm *c, const struct slow_round *rd);
/*
 * Comm H's noted rounds of the last ARR_NOTE_AGE_NS, those on HOST from
 * SINCE: who arrived last (as slow_arrival_culprit), over *ROUNDS rounds,
 * *NLAST of them by that rank
 */
int32_t slow_noted_culprit(const struct an *an, const struct an_comm *h, uint32_t host,
			   uint64_t since, double *share, double *gap_ns, uint64_t *held,
			   uint32_t *rounds, uint32_t *nlast);
/*
 * V (being built) names its comm's straggler a cascade of comm HELD, whose
 * op it came late from: where HELD has no incident and its noted rounds
 * have the same process arriving last by its own lateness, HELD's root
 * verdict is given first (the cascade then points at it).  With OWN, where
 * HELD's ops are p2p and V's straggler itself made them late, true: V is
 * no cascade but a root, and the end of its text says so (OWN only where
 * V's text is written).
 */
bool slow_hold_chain(struct an *an, struct an_verdict *v, uint64_t held, bool own);
/*
 * C's straggler CRANK (by its sample's arrivals, not straight from another
 * comm's op) waited in another comm H for another rank, by H's noted
 * rounds, as much as it kept C waiting (half at least): its lateness is
 * that rank's, and H is the comm C is a cascade of.  H's hash, 0 none.
 */
uint64_t slow_waited_elsewhere(struct an *an, const struct an_comm *c, int32_t crank);
/* comm C's incident ended (a recovery at NOW on HOST): so do those it opened */
void slow_chain_back(struct an *an, const struct an_comm *c, uint64_t now, uint32_t host);
/*
 * RANK of C entered its latest p2p ops in H LEAD_NS / 2 or more after its
 * peers (same host clock): it made H's op late, H did not hold it
 */
bool slow_p2p_late(const struct an *an, const struct an_comm *h, const struct an_comm *c,
		   int32_t rank, double lead_ns);
/*
 * The peer in p2p comm H that made C's straggler RANK late there: it
 * entered its side of their matched ops LEAD_NS / 2 or more after RANK, in
 * most of them (LATE_NS: by how much, the mean; OP, FN: its latest such
 * op); its rank in H, else -1
 */
int32_t slow_p2p_behind(const struct an *an, const struct an_comm *h, const struct an_comm *c,
			int32_t rank, double lead_ns, double *late_ns, int64_t *op, int *fn);
/*
 * Rank X of p2p comm H (-1: none) entered its own side of its matched ops
 * LEAD_NS / 2 or more after a peer there, in most of them, and no peer
 * kept it waiting (PEER: the peer it kept waiting most, its rank in H):
 * its mean lateness, else NAN
 */
double slow_p2p_self_late(const struct an *an, const struct an_comm *h, int32_t x,
			  double lead_ns, int32_t *peer);
/*
 * Where C's rounds grew by EXTRA_NS and no arrival in C explains it: the one
 * process among C's ranks that keeps a p2p peer waiting in some comm (it
 * entered its side of their matched ops EXTRA_NS / 2 or more after the
 * peer, in most of them, never the other way round, and not from a long op
 * of another comm): its rank in C, F what showed it; -1 none, or several
 * (a pipeline stage whose compute is slow keeps its neighbours waiting in
 * their send/recv; everyone then reaches C's next collective together)
 */
int32_t slow_p2p_straggler(const struct an *an, const struct an_comm *c, double extra_ns,
			   struct slow_p2p_found *f);
/* what F shows of RANK (its rank in the verdict's comm), as text and values */
void slow_p2p_evidence(struct an_verdict *v, int32_t rank, const struct slow_p2p_found *f);
/* C's slow state, made where it has none yet (a comm of p2p ops only) */
struct an_slow *slow_state(struct an *an, struct an_comm *c);
/* a judged round: the peer comparison and the network part */
void slow_nohist_round(struct an *an, struct an_comm *c, const struct slow_round *rd,
		       bool learned);
/*
 * A round under step hooks (not judged): the peer comparison still hears
 * it where a process without hooks arrived last (hooks only delay the
 * processes they are on)
 */
void slow_nohist_hooked_round(struct an *an, struct an_comm *c, const struct slow_round *rd,
			      bool learned);
/* P's step hooks (or the second after them) touch its rounds ending at T_NS */
bool slow_proc_hooked(const struct an_proc *p, uint32_t host, uint64_t t_ns);

/*
 * The rank of C's step sample whose GPU reaches the ops last (as
 * slow_arrival_culprit), where its mean lead accounts for a quarter of
 * EXTRA_NS at least, else -1
 */
int32_t slow_arrival_explains(const struct an_comm *c, double extra_ns, double *share,
			      double *lead, uint64_t *held);
/* ---- a block of ranks arriving last together (an_slow_block.c) ---------- */
/* RD's arrivals (every one seen): who was in the block arriving last */
void slow_note_block(struct an_slow *s, const struct slow_round *rd, int32_t nranks);
/* rank K was in the block in 3 of 4 sampled rounds */
bool slow_in_block(const struct an_slow *s, int32_t k);
/* the lowest rank of C's block (the verdict's first culprit), -1 */
int32_t slow_block_first(const struct an_comm *c);
/*
 * C's sample shows one block of 2 to nranks/2 ranks arriving last together
 * (each in it in 3 of 4 rounds, no other in more than 1 of 4), its lead
 * (*LEAD, ns: the least of its members' means) a quarter of EXTRA_NS at
 * least: its size, else 0
 */
uint32_t slow_arrival_block(const struct an_comm *c, double extra_ns, double *lead);
/* a part sample begins (part 1): the parts' waits from nothing */
void slow_parts_reset(struct an_slow *s, int32_t nranks);
/* the part's sample starts afresh (slow_sample_reanchor): its ranks' waits too */
void slow_part_restart(struct an_slow *s, int32_t nranks);
/* RD's waits of the part's hooked ranks (every one seen) */
void slow_note_part_waits(struct an_slow *s, const struct slow_round *rd, int32_t nranks);
/* a part's sample is over: were its iterations slow in the main? */
void slow_part_done(struct an_slow *s);
/*
 * The last part of C's part sample is over, no part naming anyone: the
 * ranks whose mean wait is least, before the largest gap in the means, 2
 * to nranks/2 of them, with every part slow, every rank's wait known, the
 * gap (*LEAD) a quarter of EXTRA_NS at least and each of their waits under
 * a quarter of it: they reach the op last together (part_blk, blk_parts).
 * Their number, else 0.
 */
uint32_t slow_parts_block(const struct an_comm *c, double extra_ns, double *lead);
/*
 * The comm whose ops may have held rank CRANK of C unseen: an intra-node
 * comm of 2 ranks or more holding its process, its rounds' starts unknown
 * (the CPUs run ahead), called by it since C's sample began; 0 none
 */
uint64_t slow_unseen_holder(const struct an *an, const struct an_comm *c, int32_t crank);
/* V's straggler or any rank of HOLDER (slow_unseen_holder): culprits, words, values */
void slow_unseen_evidence(struct an *an, struct an_comm *c, struct an_verdict *v,
			  uint64_t holder);
/* the block as V's culprits, words and values (s->blk_lead its lead) */
void slow_block_evidence(const struct an *an, const struct an_comm *c, struct an_verdict *v,
			 double secs);

/*
 * The verdict's frame of the detectors without history, kind new or
 * RECOVERED; *ROOT: the comm whose open incident names the same process (a
 * cascade of it), else NULL.  HELD (0 none): the comm whose op held RANK's
 * GPU when it reached this op last: a cascade of that comm too.
 */
struct an_verdict *slow_nohist_frame(struct an *an, struct an_comm *c,
				     const struct slow_round *rd, uint64_t now,
				     enum an_class cls, int32_t rank, bool recovered,
				     uint64_t held, const struct an_comm **root);
/*
 * What a step sample found (S2: rank's link, A and B its and the others'
 * ns per step; S1: rank's GPU last, A its share of the wait, B its mean
 * lead), as V's words and values; a cascade of ROOT, or of the comm whose
 * op held the rank's GPU (followed to its own root where shown).  CLS S1
 * in a verdict V framed S2: the arrivals are a lossy link's echo
 * (slow_tcp_echo)
 */
void slow_sampled_cause(struct an *an, struct an_comm *c, struct an_verdict *v,
			enum an_class cls, int32_t rank, double a, double b,
			const struct an_comm *root);
/* another detector's incident, or a sample, speaks for C */
bool slow_covered(const struct an_comm *c);
/* a sample started for PEND_GROUP ended: the verdict, or none */
void slow_group_sampled(struct an *an, struct an_comm *c, uint64_t now);
/*
 * Appends C's median round time MEDIAN_NS for signature SIG to the table
 * *ST (*N entries, *CAP allocated) that sl_group_check() judges; false
 * (the table freed) on no memory.
 */
bool slow_stat_push(struct sl_comm_stat **st, size_t *n, size_t *cap,
		    const struct an_comm *c, uint64_t sig, double median_ns);
/* a slow link whose COST (slow_link_cost) is a quarter of EXTRA_NS at least */
bool slow_link_explains(double cost, double extra_ns);
enum an_class slow_sample_decide(const struct an_comm *c, double extra_ns, int32_t *rank,
				 double *a, double *b, uint64_t *held);
/* a sample started for PEND_RISE ended: the verdict, or none; true where the
 * next part of a part sample is due */
bool slow_rise_sampled(struct an *an, struct an_comm *c, uint64_t now);
/*
 * an_slow_survey.c: a judged round RD of C: a survey's step sample starts
 * where due
 */
void slow_survey_round(struct an *an, struct an_comm *c, const struct slow_round *rd);
/*
 * C's judged round SEQ ended at T_END (SAMPLING: C's sample is on): true
 * where C was surveyed, nothing found, and its rounds have come
 * RESURVEY_RISE times further apart than when that survey began for
 * RESURVEY_HOLD_NS (S->resurvey_rise says how much): it is due for another
 */
bool slow_survey_rose(struct an_slow *s, int64_t seq, uint64_t t_end, bool sampling);
/* a survey's sample has too few rounds yet (NOW: its clock) */
bool slow_survey_short(const struct an_slow *s, uint64_t now);
/*
 * the rank of C whose link a survey's sample shows slow (-1 none): twice the
 * others' time per send step, costing a quarter of IV (ns between rounds)
 * at least; *LAT, *LAT_MED its and the others' ns per step
 */
int32_t slow_survey_link(const struct an_comm *c, double iv, double *lat, double *lat_med);
/* the mean ns between a sample's rounds with every arrival, NAN */
double slow_sample_interval(const struct an_slow *s);
/*
 * the survey's straggler rule, no history needed: RANK (slow_arrival_culprit,
 * LEAD its mean lead) last in 3/4 of enough sampled rounds that chance
 * would not do it, by a quarter of IV (ns between rounds) and 1 ms at least
 */
bool slow_survey_names(const struct an_comm *c, int32_t rank, double lead, double iv);
/*
 * a survey's sample ended: a verdict, a recovery, or nothing; true where
 * the next part of a part sample is due
 */
bool slow_survey_sampled(struct an *an, struct an_comm *c, uint64_t now);
/* C's rounds' starts are mostly unknown (the CPU runs ahead of the GPU) */
bool slow_runahead(const struct an_slow *s);

#endif
