// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Prometheus registry and /metrics endpoint (metrics.h).  The text format
 * 0.0.4 rules followed here: one "# HELP" and one "# TYPE" per family
 * before its samples; help text escapes '\' and newline; label values
 * escape '\', '"' and newline; values are Go floats ("+Inf", "-Inf",
 * "NaN"); every line ends with '\n'.
 *
 * Label sets are stored in one canonical form (sorted by label name), so
 * `a="1",b="2"` and `b="2",a="1"` are the same sample.
 */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "errbuf.h"
#include "metrics.h"

#define MAX_LABELS		32
#define LISTEN_BACKLOG		64
#define CONN_TIMEOUT_S		10
#define CONTENT_TYPE		"text/plain; version=0.0.4; charset=utf-8"

struct sample {
	char *labels;		/* canonical, without braces; "" for none */
	double value;
};

struct family {
	char *name;
	char *help;
	enum metric_type type;
	struct sample *s;
	size_t n, cap;
};

struct metrics {
	pthread_mutex_t lock;
	struct family *f;
	size_t nf, capf;
	struct MHD_Daemon *d;
	int port;
};

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (pthread_mutex_init(&m->lock, NULL)) {
		free(m);
		return NULL;
	}
	return m;
}

void metrics_free(struct metrics *m)
{
	size_t i, j;

	if (!m)
		return;
	metrics_stop(m);
	for (i = 0; i < m->nf; i++) {
		for (j = 0; j < m->f[i].n; j++)
			free(m->f[i].s[j].labels);
		free(m->f[i].s);
		free(m->f[i].name);
		free(m->f[i].help);
	}
	free(m->f);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* ---- growing string ------------------------------------------------------ */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_reserve(struct sbuf *b, size_t more)
{
	size_t ncap;
	char *np;

	if (b->oom || b->len + more + 1 <= b->cap)
		return;
	ncap = b->cap ? b->cap : 256;
	while (ncap < b->len + more + 1)
		ncap *= 2;
	np = realloc(b->p, ncap);
	if (!np) {
		b->oom = true;
		return;
	}
	b->p = np;
	b->cap = ncap;
	b->p[b->len] = '\0';
}

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	sb_reserve(b, n);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

/* S with '\' and newline escaped, and '"' too if QUOTE. */
static void sb_escaped(struct sbuf *b, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			sb_put(b, "\\\\", 2);
		else if (*s == '\n')
			sb_put(b, "\\n", 2);
		else if (*s == '"' && quote)
			sb_put(b, "\\\"", 2);
		else
			sb_put(b, s, 1);
	}
}

/* ---- names and labels ---------------------------------------------------- */

static bool name_ok(const char *s, bool metric)
{
	const char *p;

	if (!*s)
		return false;
	for (p = s; *p; p++) {
		bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			     *p == '_' || (metric && *p == ':');

		if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
			return false;
	}
	return true;
}

struct label {
	const char *name, *value;	/* value: escaped, between the quotes */
	size_t name_len, value_len;
};

static int label_cmp(const void *a, const void *b)
{
	const struct label *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/*
 * Checks label text S (exposition syntax, no braces) and returns it in
 * canonical form (malloc'ed), or NULL with errno EINVAL or ENOMEM.
 */
static char *canon_labels(const char *s)
{
	struct label l[MAX_LABELS];
	struct sbuf b = { 0 };
	size_t n = 0, i;
	const char *p = s ? s : "";

	while (*p) {
		const char *q = p;

		if (n == MAX_LABELS)
			goto inval;
		while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
		       *q == '_' || (q > p && *q >= '0' && *q <= '9'))
			q++;
		if (q == p || q[0] != '=' || q[1] != '"')
			goto inval;
		if (q - p >= 2 && p[0] == '_' && p[1] == '_')
			goto inval;	/* reserved for Prometheus */
		l[n].name = p;
		l[n].name_len = q - p;
		p = q + 2;
		l[n].value = p;
		while (*p && *p != '"') {
			if (*p == '\n')
				goto inval;
			if (*p == '\\') {
				if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
					goto inval;
				p++;
			}
			p++;
		}
		if (*p != '"')
			goto inval;
		l[n].value_len = p - l[n].value;
		n++;
		p++;
		if (*p == ',') {
			p++;
			if (!*p)
				goto inval;
		} else if (*p) {
			goto inval;
		}
	}
	qsort(l, n, sizeof(l[0]), label_cmp);
	for (i = 0; i + 1 < n; i++)
		if (!label_cmp(&l[i], &l[i + 1]))
			goto inval;
	sb_reserve(&b, 0);
	for (i = 0; i < n; i++) {
		if (i)
			sb_put(&b, ",", 1);
		sb_put(&b, l[i].name, l[i].name_len);
		sb_put(&b, "=\"", 2);
		sb_put(&b, l[i].value, l[i].value_len);
		sb_put(&b, "\"", 1);
	}
	if (b.oom) {
		free(b.p);
		errno = ENOMEM;
		return NULL;
	}
	return b.p;
inval:
	errno = EINVAL;
	return NULL;
}

/* Label text from name/value pairs, values escaped; NULL with errno. */
static char *kv_labels(const char *const *kv)
{
	struct sbuf b = { 0 };
	char *canon;
	size_t i;

	sb_reserve(&b, 0);
	for (i = 0; kv && kv[i]; i += 2) {
		if (!kv[i + 1] || !name_ok(kv[i], false)) {
			free(b.p);
			errno = EINVAL;
			return NULL;
		}
		if (i)
			sb_put(&b, ",", 1);
		sb_str(&b, kv[i]);
		sb_put(&b, "=\"", 2);
		sb_escaped(&b, kv[i + 1], true);
		sb_put(&b, "\"", 1);
	}
	if (b.oom) {
		free(b.p);
		errno = ENOMEM;
		return NULL;
	}
	canon = canon_labels(b.p);
	free(b.p);
	return canon;
}

/* ---- registry ------------------------------------------------------------ */

static struct family *find_family(struct metrics *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->nf; i++)
		if (!strcmp(m->f[i].name, name))
			return &m->f[i];
	return NULL;
}

int metrics_declare_all(struct metrics *m, const struct metric_family *f, size_t n,
			char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (metrics_declare(m, f[i].name, f[i].type, f[i].help)) {
			snprintf(err, errlen, "metrics: cannot declare %s: %s", f[i].name,
				 strerror(errno));
			return -1;
		}
	return 0;
}

int metrics_declare(struct metrics *m, const char *name,
		    enum metric_type type, const char *help)
{
	struct family *f;
	char *h;
	int ret = -1;

	if (!name || !name_ok(name, true) ||
	    (type != METRIC_COUNTER && type != METRIC_GAUGE)) {
		errno = EINVAL;
		return -1;
	}
	h = strdup(help ? help : "");
	if (!h) {
		errno = ENOMEM;
		return -1;
	}
	pthread_mutex_lock(&m->lock);
	f = find_family(m, name);
	if (f) {
		if (f->type != type) {
			errno = EINVAL;
			goto out;
		}
		free(f->help);
		f->help = h;
		h = NULL;
		ret = 0;
		goto out;
	}
	if (m->nf == m->capf) {
		size_t ncap = m->capf ? m->capf * 2 : 16;
		struct family *nf = realloc(m->f, ncap * sizeof(*nf));

		if (!nf) {
			errno = ENOMEM;
			goto out;
		}
		m->f = nf;
		m->capf = ncap;
	}
	f = &m->f[m->nf];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	if (!f->name) {
		errno = ENOMEM;
		goto out;
	}
	f->help = h;
	h = NULL;
	f->type = type;
	m->nf++;
	ret = 0;
out:
	pthread_mutex_unlock(&m->lock);
	free(h);
	return ret;
}

/* Sets or adds to a sample; takes ownership of LABELS (canonical). */
static int update(struct metrics *m, const char *name, char *labels,
		  double v, bool add)
{
	struct family *f;
	struct sample *s = NULL;
	size_t i;
	int ret = -1;

	if (!labels)
		return -1;	/* errno set by the label parser */
	pthread_mutex_lock(&m->lock);
	f = find_family(m, name);
	if (!f) {
		errno = ENOENT;
		goto out;
	}
	if (add && f->type == METRIC_COUNTER && v < 0) {
		errno = EINVAL;
		goto out;
	}
	for (i = 0; i < f->n && !s; i++)
		if (!strcmp(f->s[i].labels, labels))
			s = &f->s[i];
	if (!s) {
		if (f->n == f->cap) {
			size_t ncap = f->cap ? f->cap * 2 : 8;
			struct sample *ns = realloc(f->s, ncap * sizeof(*ns));

			if (!ns) {
				errno = ENOMEM;
				goto out;
			}
			f->s = ns;
			f->cap = ncap;
		}
		s = &f->s[f->n++];
		s->labels = labels;
		s->value = 0;
		labels = NULL;
	}
	s->value = add ? s->value + v : v;
	ret = 0;
out:
	pthread_mutex_unlock(&m->lock);
	free(labels);
	return ret;
}

int metrics_set(struct metrics *m, const char *name, const char *labels,
		double value)
{
	return update(m, name, canon_labels(labels), value, false);
}

int metrics_add(struct metrics *m, const char *name, const char *labels,
		double delta)
{
	return update(m, name, canon_labels(labels), delta, true);
}

int metrics_set_l(struct metrics *m, const char *name, double value,
		  const char *const *kv)
{
	return update(m, name, kv_labels(kv), value, false);
}

int metrics_add_l(struct metrics *m, const char *name, double delta,
		  const char *const *kv)
{
	return update(m, name, kv_labels(kv), delta, true);
}

int metrics_del(struct metrics *m, const char *name, const char *labels)
{
	char *canon = canon_labels(labels);
	struct family *f;
	size_t i;
	int ret = -1;

	if (!canon)
		return -1;
	pthread_mutex_lock(&m->lock);
	f = find_family(m, name);
	errno = ENOENT;
	for (i = 0; f && i < f->n; i++) {
		if (strcmp(f->s[i].labels, canon))
			continue;
		free(f->s[i].labels);
		memmove(&f->s[i], &f->s[i + 1], (f->n - i - 1) * sizeof(f->s[0]));
		f->n--;
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&m->lock);
	free(canon);
	return ret;
}

/* V as a Go float: shortest form that reads back the same. */
static void fmt_value(char *buf, size_t n, double v)
{
	if (isnan(v)) {
		snprintf(buf, n, "NaN");
	} else if (isinf(v)) {
		snprintf(buf, n, v > 0 ? "+Inf" : "-Inf");
	} else {
		snprintf(buf, n, "%.15g", v);
		if (strtod(buf, NULL) != v)
			snprintf(buf, n, "%.17g", v);
	}
}

char *metrics_render(struct metrics *m, size_t *len)
{
	struct sbuf b = { 0 };
	char val[40];
	size_t i, j;

	sb_reserve(&b, 4096);
	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nf; i++) {
		const struct family *f = &m->f[i];

		sb_str(&b, "# HELP ");
		sb_str(&b, f->name);
		sb_str(&b, " ");
		sb_escaped(&b, f->help, false);
		sb_str(&b, "\n# TYPE ");
		sb_str(&b, f->name);
		sb_str(&b, f->type == METRIC_COUNTER ? " counter\n" : " gauge\n");
		for (j = 0; j < f->n; j++) {
			sb_str(&b, f->name);
			if (f->s[j].labels[0]) {
				sb_str(&b, "{");
				sb_str(&b, f->s[j].labels);
				sb_str(&b, "}");
			}
			fmt_value(val, sizeof(val), f->s[j].value);
			sb_str(&b, " ");
			sb_str(&b, val);
			sb_str(&b, "\n");
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (b.oom) {
		free(b.p);
		errno = ENOMEM;
		return NULL;
	}
	if (len)
		*len = b.len;
	return b.p;
}

/* ---- HTTP ---------------------------------------------------------------- */

static enum MHD_Result queue_text(struct MHD_Connection *conn,
				  unsigned status, const char *text)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(text), (void *)text,
					    MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn,
			      const char *url, const char *method,
			      const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct metrics *m = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len;
	char *body;

	if (strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return queue_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed\n");
	if (strcmp(url, "/metrics"))
		return queue_text(conn, MHD_HTTP_NOT_FOUND,
				  "not found: try /metrics\n");
	body = metrics_render(m, &len);
	if (!body)
		return queue_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "out of memory\n");
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* A listening socket on ADDR, or -1 with ERR. */
static int listen_on(const char *addr, bool *v6, char *err, size_t errlen)
{
	char host[256] = "", port[8];
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	const char *colon, *p;
	int fd = -1, e = 0, one = 1, zero = 0, rc;
	long pv;
	char *end;

	if (addr[0] == '[') {
		p = strchr(addr, ']');
		if (!p || p[1] != ':' || (size_t)(p - addr - 1) >= sizeof(host))
			goto bad;
		memcpy(host, addr + 1, p - addr - 1);
		colon = p + 1;
	} else {
		colon = strrchr(addr, ':');
		if (colon) {
			if ((size_t)(colon - addr) >= sizeof(host))
				goto bad;
			memcpy(host, addr, colon - addr);
		}
	}
	p = colon ? colon + 1 : addr;
	errno = 0;
	pv = strtol(p, &end, 10);
	if (!*p || *end || errno || pv < 0 || pv > 65535)
		goto bad;
	snprintf(port, sizeof(port), "%ld", pv);

	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if (!host[0]) {
		/* all addresses: IPv6 with IPv4 mapped, else IPv4 only */
		hints.ai_family = AF_INET6;
		rc = getaddrinfo(NULL, port, &hints, &res);
		if (rc) {
			hints.ai_family = AF_INET;
			rc = getaddrinfo(NULL, port, &hints, &res);
		}
	} else {
		hints.ai_family = AF_UNSPEC;
		rc = getaddrinfo(host, port, &hints, &res);
	}
	if (rc) {
		put_err(err, errlen, "metrics: cannot listen on %s: %s", addr,
			gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6 && !host[0])
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
				   sizeof(zero));
		if (!bind(fd, ai->ai_addr, ai->ai_addrlen) &&
		    !listen(fd, LISTEN_BACKLOG)) {
			*v6 = ai->ai_family == AF_INET6;
			break;
		}
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0 && !host[0] && hints.ai_family == AF_INET6 &&
	    (e == EAFNOSUPPORT || e == EADDRNOTAVAIL)) {
		char any4[16];

		snprintf(any4, sizeof(any4), "0.0.0.0:%s", port);
		return listen_on(any4, v6, err, errlen);
	}
	if (fd < 0)
		put_err(err, errlen, "metrics: cannot listen on %s: %s", addr,
			strerror(e ? e : EADDRNOTAVAIL));
	return fd;
bad:
	put_err(err, errlen, "metrics: bad listen address '%s' (expected HOST:PORT, :PORT, [V6]:PORT or PORT)",
		addr);
	return -1;
}

int metrics_start(struct metrics *m, const char *addr, char *err,
		  size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct MHD_Daemon *d;
	bool v6 = false;
	int fd, port;

	if (!addr) {
		put_err(err, errlen, "metrics: no listen address");
		return -1;
	}
	pthread_mutex_lock(&m->lock);
	d = m->d;
	port = m->port;
	pthread_mutex_unlock(&m->lock);
	if (d) {
		put_err(err, errlen, "metrics: already serving on port %d", port);
		return -1;
	}
	fd = listen_on(addr, &v6, err, errlen);
	if (fd < 0)
		return -1;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		put_err(err, errlen, "metrics: getsockname on %s: %s", addr,
			strerror(errno));
		close(fd);
		return -1;
	}
	port = ntohs(ss.ss_family == AF_INET6 ?
		     ((struct sockaddr_in6 *)&ss)->sin6_port :
		     ((struct sockaddr_in *)&ss)->sin_port);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
			     (v6 ? MHD_USE_IPv6 : 0),
			     0, NULL, NULL, handle, m,
			     MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
			     MHD_OPTION_CONNECTION_TIMEOUT,
			     (unsigned int)CONN_TIMEOUT_S,
			     MHD_OPTION_END);
	if (!d) {
		put_err(err, errlen, "metrics: cannot start the HTTP server on %s",
			addr);
		close(fd);
		return -1;
	}
	pthread_mutex_lock(&m->lock);
	m->d = d;
	m->port = port;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int metrics_port(struct metrics *m)
{
	int port;

	pthread_mutex_lock(&m->lock);
	port = m->d ? m->port : 0;
	pthread_mutex_unlock(&m->lock);
	return port;
}

void metrics_stop(struct metrics *m)
{
	struct MHD_Daemon *d;

	pthread_mutex_lock(&m->lock);
	d = m->d;
	m->d = NULL;
	m->port = 0;
	pthread_mutex_unlock(&m->lock);
	/* not under the lock: the server thread takes it to render */
	if (d)
		MHD_stop_daemon(d);
}
