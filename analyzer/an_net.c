// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Network evidence (tier D, TCP): retransmits, resets and closes on the
 * connections of traced processes (NCCL's socket transport), per
 * (process, peer) pair, counted in one-second buckets of the host's clock.
 *
 * Verdicts that point at the network (S2, the network part of S3, H3) cite
 * the recent counts on the culprits' connections, and the slow detector
 * asks which process is at one end of every retransmitting connection of a
 * comm: a lossy link shows on both directions (the rank's own sends and
 * its peers' sends to it), so the send rates alone cannot tell the two
 * ends apart, while the common endpoint can.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "an_int.h"

#define NET_WINDOW_S	30	/* counts cited: the last 30 s */
#define NET_END_SHARE	0.9	/* of a comm's retransmits on one rank's links: its link */
#define NET_OTHER_SHARE	0.75	/* ... and no other rank's links with more of its count */

struct an_tcp_pair {
	uint32_t host, pid, peer_pid;	/* peer_pid 0: not traced, see remote */
	char remote[AN_LABEL_MAX];
	uint32_t retrans, resets, closes;	/* since the start */
	int64_t sec[NET_WINDOW_S];	/* bucket i: second sec[i] of the host's clock */
	uint32_t cnt[NET_WINDOW_S];	/* retransmits in it */
};

void an_tcp_event(struct an *an, uint32_t host, uint32_t pid, uint32_t peer_pid,
		  enum an_tcp_kind kind, int old_state, int new_state, const char *remote,
		  uint64_t t_ns)
{
	struct hkey k = hkey3((uint64_t)host << 32 | pid, peer_pid, peer_pid ? 0 : hkey_str(remote));
	struct an_tcp_pair *p = hmap_get(&an->tcp, k);
	int64_t s = (int64_t)(t_ns / 1000000000ull);
	int i;

	an->stats.records++;
	if (kind < AN_TCP_RETRANSMIT || kind > AN_TCP_STATE || !an_proc_find(an, host, pid)) {
		an->stats.rejected++;
		return;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || hmap_put(&an->tcp, k, p)) {
			free(p);
			an->stats.rejected++;
			return;
		}
		p->host = host;
		p->pid = pid;
		p->peer_pid = peer_pid;
		snprintf(p->remote, sizeof(p->remote), "%s", remote);
		for (i = 0; i < NET_WINDOW_S; i++)
			p->sec[i] = -1;
	}
	switch (kind) {
	case AN_TCP_RETRANSMIT:
		p->retrans++;
		i = (int)(s % NET_WINDOW_S);
		if (p->sec[i] != s) {
			p->sec[i] = s;
			p->cnt[i] = 0;
		}
		p->cnt[i]++;
		break;
	case AN_TCP_RESET_RX:
	case AN_TCP_RESET_TX:
		p->resets++;
		break;
	case AN_TCP_STATE:
		/* an established connection that ends (TCP_ESTABLISHED is 1) */
		if (old_state == 1 && new_state != 1)
			p->closes++;
		break;
	}
}

void an_net_free(struct an *an)
{
	struct hkey k;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->tcp, &it, &k, &v);)
		free(v);
	hmap_free(&an->tcp);
}

void an_net_forget(struct an *an, uint32_t host, uint32_t pid)
{
	struct hkey k;
	size_t it;
	void *v;

	for (it = 0; hmap_next(&an->tcp, &it, &k, &v);)
		if (k.a == ((uint64_t)host << 32 | pid)) {
			hmap_del(&an->tcp, k);
			free(v);
		}
}

/* retransmits of P in the last NET_WINDOW_S seconds of its host's clock */
static uint32_t recent(const struct an *an, const struct an_tcp_pair *p)
{
	int64_t now = p->host < an->nhosts && an->hosts[p->host].have_now ?
		      (int64_t)(an->hosts[p->host].now / 1000000000ull) : -1;
	uint32_t sum = 0;
	int i;

	for (i = 0; i < NET_WINDOW_S; i++)
		if (p->sec[i] >= 0 && (now < 0 || p->sec[i] > now - NET_WINDOW_S))
			sum += p->cnt[i];
	return sum;
}

static int32_t rank_of(const struct an *an, const struct an_comm *c, uint32_t host, uint32_t pid)
{
	int32_t r;

	for (r = 0; r < c->nranks; r++) {
		const struct an_proc *p = an_proc_of(an, &c->r[r]);

		if (p && p->host == host && p->pid == pid)
			return r;
	}
	return -1;
}

/*
 * The rank of C at one end of the connections that carry C's TCP
 * retransmits (the last NET_WINDOW_S seconds), -1 none: at least
 * NET_END_SHARE of them on its connections, and no other rank with more
 * than NET_OTHER_SHARE of its count (one lossy link alone has both ends
 * alike: no answer).  A stray retransmit elsewhere, a spurious timeout on
 * a busy host, must not hide the lossy end: test_trace_tcp_loss had 1 of
 * 246 on the link of the two healthy ranks, and asking for an end common
 * to every link named nobody.  NLINKS, NRETRANS: all of C's retransmitting
 * connections and their retransmits; NMINE: the rank's share.
 */
int32_t an_net_common_rank(const struct an *an, const struct an_comm *c, uint32_t *nlinks,
			   uint32_t *nretrans, uint32_t *nmine)
{
	uint32_t *sum, best = 0, second = 0;
	int32_t r, best_rank = -1;
	struct hkey k;
	size_t it;
	void *v;

	*nlinks = *nretrans = *nmine = 0;
	if (c->nranks <= 0 || !(sum = calloc((size_t)c->nranks, sizeof(*sum))))
		return -1;
	for (it = 0; hmap_next(&an->tcp, &it, &k, &v);) {
		const struct an_tcp_pair *p = v;
		uint32_t n = recent(an, p);
		int32_t a, b;

		if (!n)
			continue;
		a = rank_of(an, c, p->host, p->pid);
		b = p->peer_pid ? rank_of(an, c, p->host, p->peer_pid) : -1;
		if (a < 0 && b < 0)
			continue;
		(*nlinks)++;
		*nretrans += n;
		if (a >= 0)
			sum[a] += n;
		if (b >= 0 && b != a)
			sum[b] += n;
	}
	for (r = 0; r < c->nranks; r++) {
		if (sum[r] > best) {
			second = best;
			best = sum[r];
			best_rank = r;
		} else if (sum[r] > second) {
			second = sum[r];
		}
	}
	free(sum);
	if (best_rank < 0 || best < NET_END_SHARE * *nretrans || second > NET_OTHER_SHARE * best)
		return -1;
	*nmine = best;
	return best_rank;
}

struct link {
	const struct an_tcp_pair *p;
	uint32_t n;
};

static int link_cmp(const void *a, const void *b)
{
	const struct link *x = a, *y = b;

	return x->n != y->n ? (x->n < y->n ? 1 : -1) :
	       x->p->pid != y->p->pid ? (x->p->pid < y->p->pid ? -1 : 1) :
	       (x->p->peer_pid > y->p->peer_pid) - (x->p->peer_pid < y->p->peer_pid);
}

/* "r2" for a rank of C, else "pid N" / the remote address */
static void end_name(const struct an *an, const struct an_comm *c, uint32_t host, uint32_t pid,
		     const char *remote, char *out, size_t n)
{
	int32_t r = pid ? rank_of(an, c, host, pid) : -1;

	if (r >= 0)
		snprintf(out, n, "r%d", r);
	else if (pid)
		snprintf(out, n, "pid %u", pid);
	else
		snprintf(out, n, "%s", remote);
}

#define NOTE_LINKS	6	/* links listed in the text, most retransmits first */

void an_net_note(const struct an *an, const struct an_comm *c, struct an_verdict *v)
{
	char a[AN_LABEL_MAX + 8], b[AN_LABEL_MAX + 8];
	uint32_t total = 0, resets = 0, closes = 0, i, nl = 0, cap = 0;
	struct link *links = NULL;
	size_t it;
	struct hkey k;
	void *val;

	for (it = 0; hmap_next(&an->tcp, &it, &k, &val);) {
		const struct an_tcp_pair *p = val;
		uint32_t n = recent(an, p);
		bool named = false;

		for (i = 0; i < v->ncul && !named; i++)
			named = v->cul[i].host == p->host &&
				(v->cul[i].pid == p->pid || v->cul[i].pid == p->peer_pid);
		if (!named)
			continue;
		resets += p->resets;
		closes += p->closes;
		if (!n)
			continue;
		total += n;
		if (nl == cap) {
			struct link *l = realloc(links, (cap = cap ? 2 * cap : 16) * sizeof(*l));

			if (!l)
				break;
			links = l;
		}
		links[nl].p = p;
		links[nl++].n = n;
	}
	if (total) {
		qsort(links, nl, sizeof(*links), link_cmp);
		an_text(v, "; TCP: %u retransmits in the last %d s on the culprit's connections (",
			total, NET_WINDOW_S);
		for (i = 0; i < nl && i < NOTE_LINKS; i++) {
			end_name(an, c, links[i].p->host, links[i].p->pid, "", a, sizeof(a));
			end_name(an, c, links[i].p->host, links[i].p->peer_pid, links[i].p->remote,
				 b, sizeof(b));
			an_text(v, "%s%s->%s %u", i ? ", " : "", a, b, links[i].n);
		}
		an_text(v, "%s)", nl > NOTE_LINKS ? ", ..." : "");
	}
	if (resets || closes)
		an_text(v, "; TCP: %u resets, %u established connections closed", resets, closes);
	if (total) {
		an_val_i(v, "tcp_retransmits", total);
		an_val_i(v, "tcp_links", nl);
	}
	if (resets)
		an_val_i(v, "tcp_resets", resets);
	if (closes)
		an_val_i(v, "tcp_closes", closes);
	free(links);
}
