// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include "an_wire.h"
#include "dedupe.h"
#include "fleet_analyzer.h"
#include "fleet_stream.h"
#include "json.h"

#define MAX_NODES	65536
#define CLAIM_TTL_S	(7 * 24 * 3600)	/* a verdict is printed once a week at most */
#define NODE_QUIET_NS	5000000000ull	/* a node silent this long holds no one back */
/* no record from any node this long: delivery stopped (agents tick every 250 ms) */
#define RESUME_GAP_NS	1000000000ull

struct node {
	char *name;
	int host;		/* an_host id */
	uint64_t *tick;		/* [nshards] latest clock record per shard */
	uint64_t wm;		/* all its records up to here have arrived */
	uint64_t clock;		/* the clock given to the analyzer */
	uint64_t seen_ns;	/* analyzer's monotonic time wm last moved */
	bool silent;		/* told to the analyzer: an_host_silent */
};

struct fleet_analyzer {
	struct fleet_analyzer_opts o;
	struct an *an;
	struct fs_conn *conn;	/* claims and the verdict stream */
	struct dedupe dd;
	struct node *nodes;
	uint32_t nnodes;
	int64_t *offset;	/* per an_host id: realtime - monotonic of that node */
	uint32_t noffset;
	struct fleet_analyzer_stats st;
	uint64_t last_rec_ns;	/* monotonic time the latest record arrived */
	uint64_t resumed_ns;	/* ... the first after a pause of RESUME_GAP_NS */
	bool reported_bad;
	struct fleet_last *last;	/* latest verdict per comm, for /metrics */
	uint32_t nlast, caplast;
	struct an_wire w;
};

static void note_last(struct fleet_analyzer *fa, const struct an_verdict *v, int64_t off)
{
	struct fleet_last *n;
	uint32_t i;

	for (i = 0; i < fa->nlast && fa->last[i].comm != v->comm; i++)
		;
	if (i == fa->nlast) {
		if (fa->nlast == fa->caplast) {
			n = realloc(fa->last, (fa->caplast ? 2 * fa->caplast : 16) * sizeof(*n));
			if (!n)
				return;
			fa->last = n;
			fa->caplast = fa->caplast ? 2 * fa->caplast : 16;
		}
		fa->nlast++;
	}
	fa->last[i].comm = v->comm;
	fa->last[i].cls = v->cls;
	fa->last[i].recovered = v->kind == AN_V_RECOVERED;
	fa->last[i].t_s = (double)((int64_t)v->detected_ns + off) / 1e9;
}

const struct fleet_last *fleet_analyzer_last(const struct fleet_analyzer *fa, uint32_t *n)
{
	*n = fa->nlast;
	return fa->last;
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;

	while (n--)
		h = (h ^ *c++) * 1099511628211ull;
	return h;
}

/* the same statement about the same incident gets the same key */
static void claim_key(const struct an_verdict *v, char *key, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	uint32_t i;

	for (i = 0; i < v->ncul; i++) {
		h = fnv(&v->cul[i].rank, sizeof(v->cul[i].rank), h);
		h = fnv(&v->cul[i].pid, sizeof(v->cul[i].pid), h);
	}
	h = fnv(&v->blocked_comm, sizeof(v->blocked_comm), h);
	h = fnv(&v->t4, sizeof(v->t4), h);
	snprintf(key, n, "ccld:verdict:%016" PRIx64 ":%" PRId64 ":%s:%d:%d:%016" PRIx64,
		 v->comm, v->seq, an_class_name(v->cls), (int)v->kind, (int)v->role, h);
}

static int claim(struct fleet_analyzer *fa, const char *key)
{
	char err[256];
	int r;

	if (!fa->conn)
		fa->conn = fs_connect(fa->o.url, fa->o.cred, err, sizeof(err));
	if (!fa->conn)
		return -1;
	r = fs_claim_once(fa->conn, key, CLAIM_TTL_S);
	if (r < 0) {
		fs_close(fa->conn);
		fa->conn = NULL;
	}
	return r;
}

static void on_verdict(void *ctx, const struct an_verdict *v)
{
	struct fleet_analyzer *fa = ctx;
	int64_t off = v->clock_host < fa->noffset ? fa->offset[v->clock_host] : 0;
	struct json_buf b, t;
	char key[160];
	int c;

	claim_key(v, key, sizeof(key));
	c = claim(fa, key);
	if (c == 0) {
		fa->st.verdicts_other++;
		return;
	}
	/* Redis unreachable (c < 0): printing twice beats printing nothing */
	json_init(&b);
	json_init(&t);
	/* the one line every program prints; the JSON goes to Redis */
	if (an_verdict_json(fa->an, v, off, &b) ||
	    an_verdict_line(fa->an, v, fa->o.json, off, &t)) {
		fprintf(stderr, "ccld-analyzer: out of memory formatting a verdict\n");
	} else {
		fprintf(fa->o.out, "%s\n", json_str(&t));
		fflush(fa->o.out);
		fa->st.verdicts++;
		fa->st.by_class[v->cls <= AN_CLASS_LAST ? v->cls : 0]++;
		note_last(fa, v, off);
		if (c < 0 || !fa->conn ||
		    fs_xadd(fa->conn, FS_VERDICT_STREAM, "verdict", json_str(&b),
			    strlen(json_str(&b)), 100000) < 0)
			fa->st.publish_errors++;
	}
	json_free(&b);
	json_free(&t);
}

struct fleet_analyzer *fleet_analyzer_new(const struct fleet_analyzer_opts *o,
					  char *err, size_t errlen)
{
	struct fleet_analyzer *fa = calloc(1, sizeof(*fa));
	struct an_sink sink = { .verdict = on_verdict };

	if (!fa) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	fa->o = *o;
	dedupe_init(&fa->dd);
	fa->conn = fs_connect(o->url, o->cred, err, errlen);
	if (!fa->conn) {
		fleet_analyzer_free(fa);
		return NULL;
	}
	sink.ctx = fa;
	fa->an = an_new(&o->an, &sink);
	if (!fa->an) {
		snprintf(err, errlen, "out of memory");
		fleet_analyzer_free(fa);
		return NULL;
	}
	return fa;
}

void fleet_analyzer_free(struct fleet_analyzer *fa)
{
	uint32_t i;

	if (!fa)
		return;
	an_free(fa->an);
	fs_close(fa->conn);
	dedupe_free(&fa->dd);
	for (i = 0; i < fa->nnodes; i++) {
		free(fa->nodes[i].name);
		free(fa->nodes[i].tick);
	}
	free(fa->nodes);
	free(fa->offset);
	free(fa->last);
	free(fa);
}

/* the node of NAME, registered on first sight; NULL on ENOMEM */
static struct node *node_of(struct fleet_analyzer *fa, const char *name)
{
	struct node *n;
	int64_t *o;
	uint32_t i;
	int h;

	for (i = 0; i < fa->nnodes; i++)	/* nodes: hundreds; a map if it shows */
		if (!strcmp(fa->nodes[i].name, name))
			return &fa->nodes[i];
	if (fa->nnodes >= MAX_NODES)
		return NULL;
	h = an_host(fa->an, name);
	n = realloc(fa->nodes, (fa->nnodes + 1) * sizeof(*n));
	if (h < 0 || !n)
		return NULL;
	fa->nodes = n;
	n += fa->nnodes;
	memset(n, 0, sizeof(*n));
	n->name = strdup(name);
	n->tick = calloc(fa->o.nshards ? fa->o.nshards : 1, sizeof(*n->tick));
	if (!n->name || !n->tick) {
		free(n->name);
		free(n->tick);
		return NULL;
	}
	n->host = h;
	fa->nnodes++;
	if ((uint32_t)h >= fa->noffset) {
		o = realloc(fa->offset, ((size_t)h + 1) * sizeof(*o));
		if (!o)
			return NULL;
		memset(o + fa->noffset, 0, ((size_t)h + 1 - fa->noffset) * sizeof(*o));
		fa->offset = o;
		fa->noffset = (uint32_t)h + 1;
	}
	return n;
}

/*
 * A node's clock record arrived on SHARD.  Each shard stream holds the
 * node's records in order, and the node sends its clock to every shard:
 * the oldest of its latest ticks over the shards is a time up to which
 * every record of the node has arrived.  Only that watermark goes to the
 * analyzer: after an outage the shards catch up at different speeds, and a
 * clock ahead of the records would make comms look stalled.
 */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Across nodes, the same in wall-clock time: a node whose records arrive
 * faster (after an outage its buffer may be flushed before another's)
 * must not see the others' comms as stalled because their records are
 * still on the way.  Each node's clock is held at the wall-clock time up
 * to which every node that is still sending has delivered (each node's
 * watermark through its realtime offset; NTP-level skew).  A node silent
 * for NODE_QUIET_NS (dead, or cut off) holds no one back: its own stalls
 * are what the others' clocks then show.  Silence counts from when
 * delivery resumed after a pause of every node (Redis or this analyzer's
 * connection down): the nodes' backlogs then come back one after another
 * (each agent's reconnect backoff, up to 1 s), and the first must not run
 * ahead of the others, whose silence was the outage's.  Measured: agent A
 * back 2.5 s after agent B following a 10 s outage gave false H3 'GPU not
 * ready' roots on B's comms whose GPU waits on a comm shared with A.
 * The analyzer is told which nodes are silent while others send: their
 * clocks stop with their records, and a node that died whole must not keep
 * the comms it shares with the others looking fresh.
 */
/* N's watermark has not moved for NODE_QUIET_NS since delivery resumed */
static bool node_quiet(const struct fleet_analyzer *fa, const struct node *n, uint64_t now)
{
	uint64_t seen = n->seen_ns > fa->resumed_ns ? n->seen_ns : fa->resumed_ns;

	return now - seen >= NODE_QUIET_NS;
}

static void advance_clocks(struct fleet_analyzer *fa)
{
	uint64_t now = mono_ns();
	int64_t w = INT64_MAX;
	uint32_t i;

	for (i = 0; i < fa->nnodes; i++) {
		const struct node *n = &fa->nodes[i];

		if (n->wm && !node_quiet(fa, n, now) &&
		    (int64_t)n->wm + fa->offset[n->host] < w)
			w = (int64_t)n->wm + fa->offset[n->host];
	}
	for (i = 0; i < fa->nnodes; i++) {
		struct node *n = &fa->nodes[i];
		/* silent: quiet while another node still sends */
		bool silent = n->wm && node_quiet(fa, n, now) && w != INT64_MAX;

		if (silent != n->silent) {
			n->silent = silent;
			an_host_silent(fa->an, (uint32_t)n->host, silent);
		}
	}
	for (i = 0; i < fa->nnodes; i++) {
		struct node *n = &fa->nodes[i];
		uint64_t t = n->wm;

		if (w != INT64_MAX && w - fa->offset[n->host] < (int64_t)t)
			t = (uint64_t)(w - fa->offset[n->host]);
		if (t > n->clock) {
			n->clock = t;
			an_clock(fa->an, (uint32_t)n->host, t);
		}
	}
}

static void node_clock(struct fleet_analyzer *fa, struct node *n, unsigned shard,
		       uint64_t t)
{
	uint64_t wm = UINT64_MAX;
	unsigned s, ns = fa->o.nshards ? fa->o.nshards : 1;

	if (shard >= ns)
		shard = 0;
	if (t > n->tick[shard])
		n->tick[shard] = t;
	for (s = 0; s < ns; s++)
		if (n->tick[s] < wm)
			wm = n->tick[s];
	if (wm <= n->wm)
		return;
	n->wm = wm;
	n->seen_ns = mono_ns();
	advance_clocks(fa);
}

void fleet_analyzer_idle(struct fleet_analyzer *fa)
{
	advance_clocks(fa);
}

int fleet_analyzer_record(void *ctx, const struct fs_record *r)
{
	struct fleet_analyzer *fa = ctx;
	struct node *n;
	char err[256];
	uint64_t now;
	int e;

	if (!dedupe_first(&fa->dd, r->node, r->inst, r->seq, &e))
		return e ? -1 : FS_ACK;
	if (an_wire_decode(r->data, r->len, &fa->w, err, sizeof(err))) {
		if (!fa->reported_bad)
			fprintf(stderr, "ccld-analyzer: a record from node %s does not"
				" decode (%s); such records are counted and skipped\n",
				r->node, err);
		fa->reported_bad = true;
		fa->st.bad++;
		return FS_ACK;
	}
	n = node_of(fa, r->node);
	if (!n)
		return -1;
	now = mono_ns();
	if (now - fa->last_rec_ns >= RESUME_GAP_NS)
		fa->resumed_ns = now;
	fa->last_rec_ns = now;
	fa->st.records++;
	if (fa->w.type == AW_CLOCK) {
		fa->offset[n->host] = fa->w.realtime_offset_ns;
		node_clock(fa, n, r->shard, fa->w.t_ns);
		return FS_ACK;
	}
	an_wire_apply(fa->an, (uint32_t)n->host, &fa->w);
	return FS_ACK;
}

void fleet_analyzer_stats(const struct fleet_analyzer *fa,
			  struct fleet_analyzer_stats *st)
{
	*st = fa->st;
	st->dups = fa->dd.dups;
	st->gaps = fa->dd.gaps;
}
