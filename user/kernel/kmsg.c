// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kmsg.h"

struct kmsg {
	int fd;
};

static const char *find(const char *s, size_t len, const char *what)
{
	size_t n = strlen(what), i;

	for (i = 0; i + n <= len; i++)
		if (!memcmp(s + i, what, n))
			return s + i;
	return NULL;
}

static bool hex_field(const char **p, const char *end, unsigned digits, uint64_t *v)
{
	unsigned i;

	for (i = 0; i < digits; i++, (*p)++) {
		if (*p >= end || !isxdigit((unsigned char)**p))
			return false;
		*v = *v << 4 | (uint64_t)(isdigit((unsigned char)**p) ? **p - '0' :
					   (tolower((unsigned char)**p) - 'a' + 10));
	}
	return true;
}

bool xid_parse(const char *msg, size_t len, struct xid_line *x)
{
	const char *end = msg + len, *p = find(msg, len, "NVRM: Xid (PCI:");
	uint64_t v = 0;
	unsigned long n = 0;
	size_t tl;

	memset(x, 0, sizeof(*x));
	if (!p)
		return false;
	p += strlen("NVRM: Xid (PCI:");
	/* DDDD:BB:DD */
	if (!hex_field(&p, end, 4, &v) || p >= end || *p++ != ':' ||
	    !hex_field(&p, end, 2, &v) || p >= end || *p++ != ':' ||
	    !hex_field(&p, end, 2, &v))
		return false;
	snprintf(x->bus, sizeof(x->bus), "%.10s", p - 10);
	if (p >= end || *p != ')')
		return false;
	p++;
	/* NCCL's busId also has the function digit: DDDD:BB:DD.F */
	x->bus_id = v << 4;
	if (p >= end || *p++ != ':')
		return false;
	while (p < end && *p == ' ')
		p++;
	if (p >= end || !isdigit((unsigned char)*p))
		return false;
	while (p < end && isdigit((unsigned char)*p) && n < 100000)
		n = n * 10 + (unsigned long)(*p++ - '0');
	if (n >= 100000)
		return false;
	x->xid = (uint32_t)n;
	while (p < end && (*p == ',' || *p == ' '))
		p++;
	tl = (size_t)(end - p);
	while (tl && (p[tl - 1] == '\n' || p[tl - 1] == ' '))
		tl--;
	if (tl >= sizeof(x->text))
		tl = sizeof(x->text) - 1;
	memcpy(x->text, p, tl);
	/* no control characters or NULs from the log into our output */
	for (n = 0; n < tl; n++)
		if ((unsigned char)x->text[n] < 0x20)
			x->text[n] = ' ';
	return true;
}

struct kmsg *kmsg_open(char *err, size_t errlen)
{
	struct kmsg *k = calloc(1, sizeof(*k));

	if (!k) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (k->fd < 0) {
		snprintf(err, errlen, "/dev/kmsg: %s", strerror(errno));
		free(k);
		return NULL;
	}
	/* only what the driver logs from now on */
	lseek(k->fd, 0, SEEK_END);
	return k;
}

void kmsg_close(struct kmsg *k)
{
	if (!k)
		return;
	close(k->fd);
	free(k);
}

void kmsg_poll(struct kmsg *k, void (*fn)(void *ctx, const struct xid_line *x), void *ctx)
{
	char rec[8192];
	int i;

	/* one record per read(); bounded so that a log flood cannot stall us */
	for (i = 0; i < 1024; i++) {
		ssize_t n = read(k->fd, rec, sizeof(rec) - 1);
		const char *msg;
		struct xid_line x;

		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on with the next */
		if (n <= 0)
			return;
		rec[n] = '\0';
		msg = memchr(rec, ';', (size_t)n);
		if (!msg)
			continue;
		msg++;
		if (xid_parse(msg, (size_t)(rec + n - msg), &x))
			fn(ctx, &x);
	}
}
