// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tier D, TCP.  The tracepoints fire where the current task is anyone, so
 * BPF matches the socket's 4-tuple and network namespace against tcp_watch:
 * the sockets of the traced processes, read here from /proc/PID/fd and
 * /proc/PID/net/tcp{,6} (once per network namespace) on every scan (the
 * tracer scans each second).  A
 * socket opened since the last scan is not watched yet.
 *
 * Peers: a socket whose 4-tuple mirrors another watched socket's belongs
 * to a connection between two traced processes; the record names the
 * other one (peer_pid), which the analyzer turns into ranks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "procnet.h"
#include "tcpwatch.h"
#include "tcp.skel.h"

struct watched {
	struct ccld_tcp_key key;
	uint32_t pid;
};

struct socks {
	struct watched *v;
	size_t n, cap;
};

struct tcpwatch {
	struct tcp_bpf *skel;
	struct bpf_link *links[4];
	struct watched *tab;	/* sorted by key */
	size_t n;
	struct socks listen;	/* the listening sockets (not watched: no traffic) */
};

/* the tracepoints, and each one's two programs */
struct tp {
	const char *name;
	struct bpf_program *(*btf)(struct tcp_bpf *);
	struct bpf_program *(*raw)(struct tcp_bpf *);
};

#define PROGS(n) \
	static struct bpf_program *n##_btf(struct tcp_bpf *s) { return s->progs.n##_btf; } \
	static struct bpf_program *n##_raw(struct tcp_bpf *s) { return s->progs.n##_raw; }
PROGS(tcp_retransmit)
PROGS(tcp_receive_reset)
PROGS(tcp_send_reset)
PROGS(inet_sock_set_state)

static const struct tp tps[] = {
	{ "tcp_retransmit_skb", tcp_retransmit_btf, tcp_retransmit_raw },
	{ "tcp_receive_reset", tcp_receive_reset_btf, tcp_receive_reset_raw },
	{ "tcp_send_reset", tcp_send_reset_btf, tcp_send_reset_raw },
	{ "inet_sock_set_state", inet_sock_set_state_btf, inet_sock_set_state_raw },
};
#define NTPS (sizeof(tps) / sizeof(tps[0]))

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct ccld_tcp_key));
}

/* Opens and loads the object with tp_btf (BTF true) or raw_tp programs. */
static struct tcp_bpf *load(int events_fd, int drops_fd, int pid_drops_fd, bool btf,
			    const struct btf *vmlinux, bool *want, char *err, size_t errlen)
{
	struct tcp_bpf *s = tcp_bpf__open();
	size_t i;
	int ret;

	if (!s) {
		snprintf(err, errlen, "cannot open the object: %s", strerror(errno));
		return NULL;
	}
	for (i = 0; i < NTPS; i++) {
		char tname[96];

		/* a tracepoint the kernel lacks would fail the whole load */
		snprintf(tname, sizeof(tname), "btf_trace_%s", tps[i].name);
		want[i] = !vmlinux || btf__find_by_name_kind(vmlinux, tname, BTF_KIND_TYPEDEF) > 0;
		bpf_program__set_autoload(tps[i].btf(s), btf && want[i]);
		bpf_program__set_autoload(tps[i].raw(s), !btf && want[i]);
	}
	ret = bpf_map__reuse_fd(s->maps.events, events_fd);
	if (!ret)
		ret = bpf_map__reuse_fd(s->maps.drops, drops_fd);
	if (!ret)
		ret = bpf_map__reuse_fd(s->maps.pid_drops, pid_drops_fd);
	if (!ret)
		ret = tcp_bpf__load(s);
	if (ret) {
		snprintf(err, errlen, "cannot load the %s programs: %s", btf ? "tp_btf" : "raw_tp",
			 strerror(-ret));
		tcp_bpf__destroy(s);
		return NULL;
	}
	return s;
}

struct tcpwatch *tcpwatch_open(int events_fd, int drops_fd, int pid_drops_fd, char *summary,
			       size_t len)
{
	struct tcpwatch *w = calloc(1, sizeof(*w));
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool want[NTPS], btf = true;
	char err[256] = "", missing[256] = "";
	size_t i, nok = 0;

	if (!w) {
		snprintf(summary, len, "tcp: out of memory");
		btf__free(vmlinux);
		return NULL;
	}
	w->skel = load(events_fd, drops_fd, pid_drops_fd, true, vmlinux, want, err, sizeof(err));
	if (!w->skel) {
		btf = false;
		w->skel = load(events_fd, drops_fd, pid_drops_fd, false, vmlinux, want, err,
			       sizeof(err));
	}
	btf__free(vmlinux);
	if (!w->skel) {
		snprintf(summary, len, "tcp: not attached (%s)", err);
		free(w);
		return NULL;
	}
	for (i = 0; i < NTPS; i++) {
		struct bpf_program *p = btf ? tps[i].btf(w->skel) : tps[i].raw(w->skel);

		if (want[i])
			w->links[i] = bpf_program__attach(p);
		if (want[i] && w->links[i]) {
			nok++;
			continue;
		}
		w->links[i] = NULL;
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
			 missing[0] ? ", " : "", tps[i].name);
	}
	if (!nok) {
		snprintf(summary, len, "tcp: not attached (no TCP tracepoint attached: %s)",
			 missing);
		tcpwatch_free(w);
		return NULL;
	}
	snprintf(summary, len, "tcp: %zu/%zu tracepoints (%s)%s%s", nok, NTPS,
		 btf ? "tp_btf" : "raw_tp", missing[0] ? "; missing: " : "", missing);
	return w;
}

void tcpwatch_free(struct tcpwatch *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < NTPS; i++)
		bpf_link__destroy(w->links[i]);
	tcp_bpf__destroy(w->skel);
	free(w->tab);
	free(w->listen.v);
	free(w);
}

/* a traced process's socket inode, in its network namespace */
struct owned {
	uint32_t netns;
	uint32_t pid;
	uint64_t inode;
};

static int owned_cmp(const void *a, const void *b)
{
	const struct owned *x = a, *y = b;

	if (x->netns != y->netns)
		return x->netns < y->netns ? -1 : 1;
	return x->inode < y->inode ? -1 : x->inode > y->inode;
}

static int add(struct socks *s, const struct ccld_tcp_key *k, uint32_t pid)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 256;
		struct watched *t = realloc(s->v, ncap * sizeof(*t));

		if (!t)
			return -1;
		s->v = t;
		s->cap = ncap;
	}
	s->v[s->n].key = *k;
	s->v[s->n++].pid = pid;
	return 0;
}

/* every process's socket inodes, sorted by (netns, inode); -1: no memory */
static int collect(const uint32_t *pids, size_t npids, struct owned **out, size_t *nout)
{
	struct owned *own = NULL, *o;
	size_t n = 0, cap = 0, i, j;

	for (i = 0; i < npids; i++) {
		uint32_t netns = procnet_netns(pids[i]);
		uint64_t *inodes = NULL;
		size_t ni = 0;

		if (!netns || procnet_socket_inodes(pids[i], &inodes, &ni))
			continue;	/* gone meanwhile */
		if (n + ni > cap) {
			cap = (n + ni) * 2;
			o = realloc(own, cap * sizeof(*own));
			if (!o) {
				free(inodes);
				free(own);
				return -1;
			}
			own = o;
		}
		for (j = 0; j < ni; j++)
			own[n++] = (struct owned){ netns, pids[i], inodes[j] };
		free(inodes);
	}
	if (n > 1)
		qsort(own, n, sizeof(*own), owned_cmp);
	*out = own;
	*nout = n;
	return 0;
}

/*
 * The sockets of namespace NS: its tcp / tcp6 tables are read once, through
 * any process in it (READER), and matched against every owner's inodes;
 * listening ones go to LISTEN, the others to TAB.
 */
static void scan_netns(const struct owned *own, size_t nown, uint32_t ns, uint32_t reader,
		       struct socks *tab, struct socks *listen)
{
	static const char *const files[] = { "tcp", "tcp6" };
	char line[512], path[64];
	size_t f;

	for (f = 0; f < 2; f++) {
		FILE *fp;

		snprintf(path, sizeof(path), "/proc/%u/net/%s", reader, files[f]);
		fp = fopen(path, "re");
		if (!fp)
			continue;
		while (fgets(line, sizeof(line), fp)) {
			struct procnet_sock s;
			struct owned key, *hit;

			if (!procnet_parse_line(line, f == 1, &s))
				continue;
			key = (struct owned){ .netns = ns, .inode = s.inode };
			hit = bsearch(&key, own, nown, sizeof(*own), owned_cmp);
			if (!hit)
				continue;
			s.key.netns = ns;
			if (add(s.state == PROCNET_TCP_LISTEN ? listen : tab, &s.key, hit->pid))
				break;
		}
		fclose(fp);
	}
}

void tcpwatch_scan(struct tcpwatch *w, const uint32_t *pids, size_t npids)
{
	int fd = bpf_map__fd(w->skel->maps.tcp_watch);
	struct socks socks = { 0 }, listen = { 0 };
	struct watched *tab;
	struct owned *own = NULL;
	size_t n, nown = 0, i, j;

	if (collect(pids, npids, &own, &nown))
		return;		/* no memory: the table stays as it was */
	for (i = 0; i < nown; i = j) {
		for (j = i; j < nown && own[j].netns == own[i].netns; j++)
			;
		scan_netns(own + i, j - i, own[i].netns, own[i].pid, &socks, &listen);
	}
	free(own);
	free(w->listen.v);
	w->listen = listen;
	tab = socks.v;
	n = socks.n;
	if (n > 1)
		qsort(tab, n, sizeof(*tab), key_cmp);
	/* sockets gone since the last scan leave the map; new ones enter it */
	for (i = j = 0; i < w->n; i++) {
		while (j < n && key_cmp(&tab[j].key, &w->tab[i].key) < 0)
			j++;
		if (j == n || key_cmp(&tab[j].key, &w->tab[i].key))
			bpf_map_delete_elem(fd, &w->tab[i].key);
	}
	for (i = 0; i < n; i++) {
		if (bpf_map_update_elem(fd, &tab[i].key, &tab[i].pid, BPF_ANY) && errno == E2BIG)
			break;	/* full: the rest go unwatched */
	}
	free(w->tab);
	w->tab = tab;
	w->n = n;
}

void tcpwatch_resolve(const struct tcpwatch *w, struct ccld_event *ev)
{
	const struct ccld_tcp *t = &ev->u.tcp;
	uint32_t other_ns = 0;
	size_t i;

	ev->u.tcp.peer_pid = 0;
	for (i = 0; i < w->n; i++) {
		const struct ccld_tcp_key *k = &w->tab[i].key;

		if (k->lport != t->rport || k->rport != t->lport ||
		    memcmp(k->laddr, t->raddr, 16) || memcmp(k->raddr, t->laddr, 16) ||
		    w->tab[i].pid == ev->pid)
			continue;
		/* the same 4-tuple can exist in two namespaces: ours first */
		if (k->netns == t->netns) {
			ev->u.tcp.peer_pid = w->tab[i].pid;
			return;
		}
		if (!other_ns) {
			other_ns = k->netns;
			ev->u.tcp.peer_pid = w->tab[i].pid;
		}
	}
}

size_t tcpwatch_size(const struct tcpwatch *w)
{
	return w ? w->n : 0;
}

size_t tcpwatch_nsockets(const struct tcpwatch *w)
{
	return w ? w->n + w->listen.n : 0;
}

void tcpwatch_socket(const struct tcpwatch *w, size_t i, struct ccld_tcp_key *key,
		     uint32_t *pid)
{
	const struct watched *s = i < w->n ? &w->tab[i] : &w->listen.v[i - w->n];

	*key = s->key;
	*pid = s->pid;
}
