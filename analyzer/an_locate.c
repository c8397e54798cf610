// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Locating one communicator's stall (docs/analyzer.md, CCL-D Fig. 7): the
 * stuck round and its class, H1 (ranks that did not enter it), H2 (ranks
 * whose arguments differ), H3 (all entered and consistent: located from
 * tier C/E counters per Mycroft Table 4, else tier B, else every rank is
 * listed).  This file runs the rules (collectives first, then p2p) and
 * holds the evidence every class shares: the culprit's process, calls
 * that never returned, what is not known.  The rules: an_locate_coll.c,
 * an_locate_h2.c, an_locate_p2p.c, an_locate_h3.c; where each GPU is:
 * an_locate_gpu.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "an_config.h"
#include "an_locate_int.h"
#include "ccld.h"
#include "names.h"

/* "sleeping in pause()", "running", "in I/O (D) in fsync() [wchan]" */
static void thread_words(const struct an_thread *t, char *buf, size_t n)
{
	const char *sc = t->syscall >= 0 ? syscall_name(t->syscall) : NULL;
	const char *st = t->state == 'R' ? "running" : t->state == 'S' ? "sleeping" :
			 t->state == 'D' ? "blocked in I/O (D)" :
			 t->state == 'T' || t->state == 't' ? "stopped" : "in state";
	int k;

	k = snprintf(buf, n, "%s", st);
	if (t->state != 'R' && t->state != 'S' && t->state != 'D' && t->state != 'T' &&
	    t->state != 't' && k >= 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, " %c", t->state);
	if (k >= 0 && (size_t)k < n && t->syscall >= 0) {
		if (sc)
			k += snprintf(buf + k, n - (size_t)k, " in %s()", sc);
		else
			k += snprintf(buf + k, n - (size_t)k, " in system call %d", t->syscall);
		/* "in write() on /ckpt/step1200.pt" */
		if (k >= 0 && (size_t)k < n && t->path[0])
			k += snprintf(buf + k, n - (size_t)k, " on %.*s", (int)sizeof(t->path),
				      t->path);
	}
	if (k >= 0 && (size_t)k < n && t->wchan[0] && t->state != 'R')
		snprintf(buf + k, n - (size_t)k, " [%s]", t->wchan);
}

static const char *cuda_sync_name(uint8_t fn)
{
	return fn == CCLD_FN_CUDA_EVENT_SYNC ? "cudaEventSynchronize" :
	       fn == CCLD_FN_CUDA_STREAM_SYNC ? "cudaStreamSynchronize" : NULL;
}

/*
 * ", inside cudaStreamSynchronize(): its CPU waits for its GPU[, which is
 * in comm X's op]" where P's main thread is in a CUDA synchronize (its
 * futex is the GPU's, not a lock's), else ""
 */
static void cuda_words(const struct an_proc *p, char *buf, size_t n)
{
	const char *fn = cuda_sync_name(p->main_thread.cuda_sync);
	int k;

	buf[0] = '\0';
	if (!fn)
		return;
	k = snprintf(buf, n, ", inside %s()%s: its CPU waits for its GPU", fn,
		     p->main_thread.cuda_stack ? " (found on its stack)" : "");
	if (k >= 0 && (size_t)k < n && p->gpu_known && p->gpu_comm)
		snprintf(buf + k, n - (size_t)k, ", which is in comm %016" PRIx64 "'s op",
			 p->gpu_comm->hash);
}

/* " (stack: write+0x17 < main+0x2e)" where T's native stack was read (SHOW), else "" */
static void stack_words(const struct an_thread *t, bool show, char *buf, size_t n)
{
	if (show && t->stack[0])
		snprintf(buf, n, " (stack: %.*s)", (int)sizeof(t->stack), t->stack);
	else if (n)
		buf[0] = '\0';
}

/* the process's state, with its main thread as /proc last showed it */
const char *loc_proc_words(const struct an *an, const struct an_rank *r,
			   char *buf, size_t n)
{
	const struct an_proc *p = an_proc_of(an, r);
	char tw[176], held[32] = "", cuda[112], stack[AN_STACK_MAX + 16];
	uint64_t held_ns;

	if (p && p->state == AN_PROC_EXITED) {
		if (r->dead)
			snprintf(buf, n, "process %u exited before ccld attached: NCCL's peer"
				 " table names it", p->pid);
		else
			snprintf(buf, n, "process exited, status %d", p->exit_status);
		return buf;
	}
	/* where it stopped, where its main thread's stack was read there */
	if (p && p->state == AN_PROC_STOPPED) {
		stack_words(&p->main_thread, p->has_main && (p->main_thread.state == 'T' ||
							     p->main_thread.state == 't'),
			    stack, sizeof(stack));
		snprintf(buf, n, "process stopped (state T)%s", stack);
		return buf;
	}
	if (!p || !p->has_main)
		return "process running";
	thread_words(&p->main_thread, tw, sizeof(tw));
	/* how long at least: since the first look that found it there */
	held_ns = age(an, p->host, p->main_since);
	if (p->main_thread.syscall >= 0 && held_ns >= 1000000000ull)
		snprintf(held, sizeof(held), " for %.0f s or more", (double)held_ns / 1e9);
	cuda_words(p, cuda, sizeof(cuda));
	stack_words(&p->main_thread, true, stack, sizeof(stack));
	snprintf(buf, n, "process running; its main thread is %s%s%s%s%s", tw, held, cuda,
		 p->nthreads_d > (p->main_thread.state == 'D') ? ", another in I/O (D)" : "",
		 stack);
	return buf;
}

/* the culprit's main thread as evidence values (what /proc last showed) */
void loc_thread_vals(const struct an *an, const struct an_rank *r, struct an_status *st)
{
	const struct an_proc *p = an_proc_of(an, r);
	const char *sc;
	uint64_t now;
	char s[2];

	if (!p || !p->has_main || p->state != AN_PROC_RUNNING)
		return;
	s[0] = p->main_thread.state;
	s[1] = '\0';
	an_val_s(st, "main_state", s);
	sc = p->main_thread.syscall >= 0 ? syscall_name(p->main_thread.syscall) : NULL;
	if (sc)
		an_val_s(st, "main_syscall", sc);
	else if (p->main_thread.syscall >= 0)
		an_val_i(st, "main_syscall", p->main_thread.syscall);
	if (p->main_thread.wchan[0] && p->main_thread.state != 'R')
		an_val_s(st, "main_wchan", p->main_thread.wchan);
	if (p->main_thread.path[0])
		an_val_s(st, "main_fd_path", p->main_thread.path);
	if (cuda_sync_name(p->main_thread.cuda_sync))
		an_val_s(st, "main_cuda_sync", cuda_sync_name(p->main_thread.cuda_sync));
	now = p->host < an->nhosts ? an->hosts[p->host].now : 0;
	if (p->main_thread.syscall >= 0 && now >= p->main_since)
		an_val_f(st, "main_for_s", (double)(now - p->main_since) / 1e9);
}

static void reset(struct an_status *st)
{
	st->strength = ST_NONE;
	st->barrier = st->p2p = false;
	st->seq = -1;
	st->fn = 0;
	st->cls = 0;
	st->ncul = st->nwait = 0;
	st->t4 = AN_T4_NONE;
	st->t4_remote = false;
	st->t4_rank = st->t4_peer = -1;
	st->t4_sender_unseen = st->t4_sender_behind = st->p2p_cross = false;
	st->net_global = false;
	st->untouched = false;
	st->spmd = false;
	st->spmd_skipped = 0;
	st->p2p_waiter = -1;
	an_evidence_clear(st);
	st->max_call_age_ns = 0;
}

/* "ranks 1,2,3" or "rank 1" (the first few) */
void loc_rank_list(struct an_status *st, const int32_t *a, uint32_t n)
{
	uint32_t i;

	an_text(st, "%s ", n == 1 ? "rank" : "ranks");
	for (i = 0; i < n && i < 8; i++)
		an_text(st, "%s%d", i ? "," : "", a[i]);
	if (n > 8)
		an_text(st, ",... (%u)", n);
}

/* calls that never returned: evidence "blocked inside an NCCL call" */
void loc_blocked_inside(struct an *an, struct an_comm *c,
			struct an_status *st)
{
	uint32_t n = 0;
	int32_t i;

	for (i = 0; i < c->nranks; i++) {
		struct an_rank *r = &c->r[i];
		uint64_t a;

		if (!live(r) || !r->in_call || r->call_seq != st->seq)
			continue;
		a = age(an, an_rank_host(an, r), r->call_ns);
		if (a > st->max_call_age_ns)
			st->max_call_age_ns = a;
		n++;
	}
	if (n) {
		an_text(st, "; %u rank%s blocked inside %s seq %" PRId64
			", a call that never returned (%.1f s)", n,
			n == 1 ? "" : "s", an_fn_name(st->fn), st->seq,
			secs(st->max_call_age_ns));
		an_val_i(st, "blocked_in_call", n);
	}
}

/*
 * The comm's oldest collective proxy op still open on some rank: NCCL
 * numbers collectives alike on every rank.  Without one, some rank's open
 * p2p op, which says only that p2p is open: p2p ids count per rank and
 * channel and name nothing on another rank.  0 if none known.
 */
static uint64_t comm_open_op(const struct an_comm *c)
{
	uint64_t best = 0, p2p = 0;
	int32_t r;
	uint32_t i;

	for (r = 0; r < c->nranks; r++)
		for (i = 0; live(&c->r[r]) && i < c->r[r].nsubs; i++) {
			const struct an_progress *p = &c->r[r].subs[i];

			if (!p->op || !sub_open(p))
				continue;
			if (!an_coll_op(p->op))
				p2p = p2p ? p2p : p->op;
			else if (!best || p->op < best)
				best = p->op;
		}
	return best ? best : p2p;
}

/*
 * The data tiers the verdict rests on: A calls, B GPU completions, C proxy
 * progress hooks, E proxy state read from memory.  A comm whose ranks talk
 * over NCCL's intra-node transports (P2P, SHM) has no proxy progress at
 * all: its verdicts rest on A and B alone, and an H3 says so.
 */
static void evidence_tiers(const struct an_comm *c, struct an_status *st)
{
	bool b = false, cc = false, e = false;
	char buf[16];
	int32_t r;
	uint32_t i;

	for (r = 0; r < c->nranks; r++) {
		const struct an_rank *rk = &c->r[r];

		b |= rk->tierb;
		for (i = 0; i < rk->nsubs; i++) {
			cc |= !rk->subs[i].from_mem;
			e |= rk->subs[i].from_mem;
		}
	}
	snprintf(buf, sizeof(buf), "A%s%s%s", b ? ",B" : "", cc ? ",C" : "", e ? ",E" : "");
	an_val_s(st, "evidence_tiers", buf);
	/* where proxy data would have said which flow is stuck */
	if (!cc && !e && st->cls == AN_H3)
		an_text(st, " (from %s; no proxy data for this comm, as on NCCL's"
			" intra-node transports, which have none)",
			b ? "calls and GPU completions" : "calls");
}

/*
 * Says where the picture is partial: ranks of the comm no traced process
 * holds (never named: their state is unknown), and ranks whose state
 * comes from memory read at attach (what they did before is not known).
 */
void loc_what_is_not_known(const struct an_comm *c, struct an_status *st)
{
	int32_t r, miss[8];
	uint32_t nmiss = 0, k;
	bool mem = false;

	for (r = 0; r < c->nranks; r++) {
		if (!c->r[r].proc) {
			if (nmiss < 8)
				miss[nmiss] = r;
			nmiss++;
		}
		mem |= live(&c->r[r]) && (c->r[r].mem_only || c->r[r].dead);
	}
	if (nmiss) {
		an_text(st, "; %u of %d ranks are not traced (%s ", nmiss, c->nranks,
			nmiss == 1 ? "rank" : "ranks");
		for (k = 0; k < nmiss && k < 8; k++)
			an_text(st, "%s%d", k ? "," : "", miss[k]);
		an_text(st, "%s): their state is unknown", nmiss > 8 ? ",..." : "");
		an_val_i(st, "untraced", nmiss);
	}
	if (mem && !an_has_val(st, "source")) {
		an_text(st, "; state read from memory at attach");
		an_val_s(st, "source", "memory");
	}
	evidence_tiers(c, st);
}

/*
 * Rank R of C's GPU is past every collective R entered in C: its peers'
 * GPUs completed each one (tier B), which they cannot do without it
 */
static bool gpu_past_comm(const struct an_comm *c, int32_t r)
{
	int32_t k;

	if (c->r[r].entered < 0)
		return false;
	for (k = 0; k < c->nranks; k++)
		if (k != r && (!live(&c->r[k]) || !c->r[k].tierb ||
			       c->r[k].completed < c->r[r].entered))
			return false;
	return true;
}

/*
 * How long rank R of C's CPU has waited for a GPU that has nothing of NCCL
 * pending: its main thread is inside a CUDA synchronize (entered while
 * traced), and its GPU is known to hold no NCCL op (an_locate_gpu.c), or
 * (*UNPLACED) its place is not known but it is past every collective of C.
 * 0 if not so.
 */
static uint64_t gpu_wait_ns(const struct an *an, const struct an_comm *c, int32_t r,
			    bool *unplaced)
{
	const struct an_proc *p = an_proc_of(an, &c->r[r]);
	uint64_t now;

	if (!p || !p->has_main || p->state != AN_PROC_RUNNING ||
	    !p->main_thread.cuda_sync || !p->main_thread.cuda_since ||
	    p->gpu_comm || p->host >= an->nhosts)
		return 0;
	if (!p->gpu_known) {
		if (!gpu_past_comm(c, r))
			return 0;
		*unplaced = true;
	}
	now = an->hosts[p->host].now;
	return now > p->main_thread.cuda_since ? now - p->main_thread.cuda_since : 0;
}

/*
 * An H1 whose every culprit never entered because its CPU waits for its
 * GPU (in a CUDA synchronize since the comm was suspected or before) while
 * no NCCL op is pending there (or none of this comm, and none of another
 * placed: random job 298, its other comms intra-node, with no proxy data
 * to place its GPU by): the GPU is stuck in other work queued before
 * the call (a kernel, a copy), a GPU fault (H3, GPU not ready), not a CPU
 * hang.  A skipped op (loc_spmd_skip) stays H1.
 */
static void gpu_stuck_outside(const struct an *an, const struct an_comm *c,
			      struct an_status *st)
{
	uint64_t min_ns = (uint64_t)(an_config_suspect_s(&an->cfg) * 1e9), w = 0;
	const struct an_proc *p;
	const char *sync;
	bool unplaced = false;
	uint32_t i;

	if (!st->ncul)
		return;
	for (i = 0; i < st->ncul; i++) {
		uint64_t wi = gpu_wait_ns(an, c, st->cul[i], &unplaced);

		if (wi < min_ns)
			return;
		if (!w || wi < w)
			w = wi;
	}
	p = an_proc_of(an, &c->r[st->cul[0]]);
	sync = cuda_sync_name(p->main_thread.cuda_sync);
	st->cls = AN_H3;
	st->t4 = AN_T4_GPU_NOT_READY;
	st->t4_remote = false;
	st->t4_rank = st->cul[0];
	st->t4_peer = -1;
	an_text(st, "; it has waited in %s() for %.1f s%s, with %s: the GPU is stuck in work"
		" queued before the call (GPU not ready)",
		sync ? sync : "cudaStreamSynchronize", (double)w / 1e9,
		p->main_thread.cuda_stack ? " or more (entered before the attach: found on"
		" its main thread's stack)" : "",
		unplaced ? "no NCCL op of this comm pending on the GPU (its peers completed"
			   " every one it entered) and none of another comm known to hold it" :
			   "no NCCL op pending on the GPU");
	an_val_s(st, "state", an_t4_name(AN_T4_GPU_NOT_READY));
	an_val_s(st, "cause", "local");
	an_val_f(st, "cuda_wait_s", (double)w / 1e9);
}

void an_locate(struct an *an, struct an_comm *c)
{
	struct an_status *st = &c->st;
	enum an_strength coll;

	an->stats.analyses++;
	c->analyzed = c->version;
	c->gpu_gen = an->gpu_gen;
	reset(st);
	st->open_op = comm_open_op(c);
	loc_coll(an, c, st);
	/*
	 * Every rank entered the round alike (H3), while a p2p op of the comm
	 * waits for one its peer never posted: the p2p names the culprit (the
	 * round queues behind it on the ranks' streams, or waits for ranks
	 * that do).  Not a p2p op its rank entered after the round: that one
	 * queues behind the round, and its peer may not have reached it yet
	 * (blocked behind the round), not skipped it.  A collective with a
	 * rank missing (H1) or differing (H2) keeps its own verdict; stream
	 * orders that cross (an H1 read from the proxies) yield to the counts.
	 */
	if (st->strength == ST_STRONG && (st->cls == AN_H3 || st->p2p_cross) &&
	    loc_p2p_unmatched(c, st->seq)) {
		int64_t round = st->seq;
		uint32_t nround = st->nwait, k;
		int32_t *waits = nround ? malloc(nround * sizeof(*waits)) : NULL;

		if (waits)
			memcpy(waits, st->wait, nround * sizeof(*waits));
		reset(st);
		loc_p2p(an, c, st, round);
		/*
		 * a peer skipped its side of a pair: the ranks in the round
		 * wait in this comm as well (their round queues behind the
		 * pair on the waiting rank's stream)
		 */
		for (k = 0; waits && st->spmd && k < nround; k++)
			add_wait(an, st, waits[k]);
		free(waits);
		if (st->strength != ST_STRONG) {
			reset(st);
			loc_coll(an, c, st);
		}
	} else if (st->strength != ST_STRONG) {
		coll = st->strength;
		reset(st);
		loc_p2p(an, c, st, -1);
		if (st->strength != ST_STRONG) {
			/* a weak collective picture (only the long threshold applies) */
			reset(st);
			if (coll != ST_NONE)
				loc_coll(an, c, st);
		}
	}
	/* a rank that went past an op of this comm, or of one holding every rank */
	if (st->cls == AN_H1 || st->cls == AN_H3)
		loc_spmd_skip(an, c, st);
	if (st->cls == AN_H1 && !st->spmd)
		gpu_stuck_outside(an, c, st);
	if (st->cls)
		loc_what_is_not_known(c, st);
}
