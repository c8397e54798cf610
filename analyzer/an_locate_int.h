/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Locating one comm's stall: what its files share, and no other file.
 * an_locate.c runs the rules and holds the evidence every class shares;
 * an_locate_coll.c (the stuck round of a collective, H1), an_locate_h2.c
 * (H2), an_locate_p2p.c (p2p), an_locate_h3.c (H3, Mycroft Table 4),
 * an_locate_gpu.c (where each process's GPU is).
 */
#ifndef CCLD_AN_LOCATE_INT_H
#define CCLD_AN_LOCATE_INT_H

#include "an_int.h"

static inline void add_rank(struct an *an, int32_t **a, uint32_t *n, uint32_t *cap,
			    int32_t rank)
{
	int32_t *p = an_grow(an, *a, cap, *n + 1, sizeof(**a));

	if (!p)
		return;
	*a = p;
	p[(*n)++] = rank;
}

static inline void add_cul(struct an *an, struct an_status *st, int32_t rank)
{
	add_rank(an, &st->cul, &st->ncul, &st->cap_cul, rank);
}

static inline void add_wait(struct an *an, struct an_status *st, int32_t rank)
{
	add_rank(an, &st->wait, &st->nwait, &st->cap_wait, rank);
}

static inline double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* age of T on HOST's clock */
static inline uint64_t age(const struct an *an, uint32_t host, uint64_t t)
{
	uint64_t now = host < an->nhosts ? an->hosts[host].now : 0;

	return now > t ? now - t : 0;
}

static inline bool live(const struct an_rank *r)
{
	return r->proc && !r->gone;
}

static inline bool proc_down(const struct an *an, const struct an_rank *r)
{
	const struct an_proc *p = an_proc_of(an, r);

	return p && p->state != AN_PROC_RUNNING;
}

/* rank RK's kept entry of its collective SEQ, NULL where not kept */
static inline const struct an_sig *hist_at(const struct an_rank *rk, int64_t seq)
{
	const struct an_sig *s;

	if (seq < 0)
		return NULL;
	s = &rk->hist[(uint64_t)seq % AN_HIST];
	return s->seq == seq ? s : NULL;
}

static inline bool sub_open(const struct an_progress *p)
{
	return !p->nsteps || p->done < p->nsteps;
}

/* an_locate.c: evidence every class shares */
/*
 * the process's state, with its main thread as /proc last showed it and
 * its native stack where read (a buffer of LOC_PROC_WORDS_MAX holds it all)
 */
#define LOC_PROC_WORDS_MAX	(384 + AN_STACK_MAX)
const char *loc_proc_words(const struct an *an, const struct an_rank *r, char *buf, size_t n);
/* the culprit's main thread as evidence values (what /proc last showed) */
void loc_thread_vals(const struct an *an, const struct an_rank *r, struct an_status *st);
/* "ranks 1,2,3" or "rank 1" (the first few) */
void loc_rank_list(struct an_status *st, const int32_t *a, uint32_t n);
/* calls that never returned: evidence "blocked inside an NCCL call" */
void loc_blocked_inside(struct an *an, struct an_comm *c, struct an_status *st);
/* untraced ranks, state read from memory, the data tiers */
void loc_what_is_not_known(const struct an_comm *c, struct an_status *st);

/* an_locate_coll.c: a collective's stuck round, H1, then H2 or H3 */
void loc_coll(struct an *an, struct an_comm *c, struct an_status *st);

/* an_locate_h2.c */
bool loc_h2(struct an *an, struct an_comm *c, struct an_status *st);
/* the first field where A and B differ, both values as text (VA, VB: N bytes) */
const char *loc_sig_diff(const struct an_sig *a, const struct an_sig *b,
			 char *va, char *vb, size_t n);
/* ncclFunc_t (proxy args, seqNumber[] index) -> enum ccld_fn */
int loc_fn_of_nccl_func(int f);

/* an_locate_p2p.c */
/*
 * C's p2p picture; ROUND: the comm's collective round every rank entered
 * (-1 none), which a peer that went past its side of a pair entered
 */
void loc_p2p(struct an *an, struct an_comm *c, struct an_status *st, int64_t round);
/*
 * some rank of C waits in a p2p op its peer never posted (counted alike,
 * or from the attach where the peer finished all it posted toward it and
 * entered round SEQ), not one it entered after its round SEQ of C (-1: any)
 */
bool loc_p2p_unmatched(const struct an_comm *c, int64_t seq);
/*
 * an_locate_spmd.c: one rank of C entered more or fewer of C's ops before
 * a round of a comm holding every rank than its peers: it skipped one (of
 * C's, or of that comm's); ST becomes that H1 (st->spmd).  False: no such
 * rank, ST unchanged.
 */
bool loc_spmd_skip(struct an *an, struct an_comm *c, struct an_status *st);

/* an_locate_h3.c */
void loc_h3(struct an *an, struct an_comm *c, struct an_status *st);
/* Table 4 on the stuck round's flows: false if no proxy data narrows it */
bool loc_t4(struct an *an, struct an_comm *c, struct an_status *st);
/* the stuck op moved on no rank at all: it queues behind another comm */
bool loc_untouched(const struct an *an, const struct an_comm *c, const struct an_status *st);

/* an_locate_gpu.c: the rank's oldest proxy op with an unfinished sub, 0 none */
uint64_t loc_open_op(const struct an_rank *rk, uint64_t *t_first);
/* its open ops seen in memory only are collectives and p2p ops both */
bool loc_mem_both_sequences(const struct an_rank *rk);

#endif
