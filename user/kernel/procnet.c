// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reading /proc for the TCP watch: socket tables and socket inodes.
 *
 *   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
 *    0: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 12345 ...
 *
 * Each address word is the kernel's __be32 printed with %08X, so on a
 * little-endian host the hex value, stored as a native u32, gives back the
 * network-order bytes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "procnet.h"

/* N hex digits at *P into *OUT; advances *P */
static bool hex_field(const char **p, int n, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < n; i++) {
		char c = (*p)[i];
		int d = c >= '0' && c <= '9' ? c - '0' :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 :
			c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

		if (d < 0)
			return false;
		v = v << 4 | (uint32_t)d;
	}
	*p += n;
	*out = v;
	return true;
}

/* "ADDR:PORT" with 1 (v4) or 4 (v6) address words */
static bool endpoint(const char **p, bool v6, uint8_t addr[16], uint16_t *port)
{
	uint32_t w, pt;
	int i;

	memset(addr, 0, 16);
	for (i = 0; i < (v6 ? 4 : 1); i++) {
		if (!hex_field(p, 8, &w))
			return false;
		memcpy(addr + 4 * i, &w, 4);	/* native order: see the top */
	}
	if (**p != ':')
		return false;
	(*p)++;
	if (!hex_field(p, 4, &pt))
		return false;
	*port = (uint16_t)pt;
	return true;
}

static const char *skip_spaces(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* skips one whitespace-separated field; NULL at the end of the line */
static const char *skip_field(const char *p)
{
	p = skip_spaces(p);
	if (!*p || *p == '\n')
		return NULL;
	while (*p && *p != ' ' && *p != '\t' && *p != '\n')
		p++;
	return p;
}

bool procnet_parse_line(const char *line, bool v6, struct procnet_sock *s)
{
	const char *p = skip_spaces(line);
	uint32_t st;
	char *end;
	int i;

	memset(s, 0, sizeof(*s));
	/* "N:" slot number */
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p++ != ':')
		return false;
	p = skip_spaces(p);
	if (!endpoint(&p, v6, s->key.laddr, &s->key.lport))
		return false;
	p = skip_spaces(p);
	if (!endpoint(&p, v6, s->key.raddr, &s->key.rport))
		return false;
	p = skip_spaces(p);
	if (!hex_field(&p, 2, &st) || (*p != ' ' && *p != '\t'))
		return false;
	s->state = (int)st;
	/* tx:rx, tr:when, retrnsmt, uid, timeout, then the inode */
	for (i = 0; i < 5; i++) {
		p = skip_field(p);
		if (!p)
			return false;
	}
	p = skip_spaces(p);
	if (*p < '0' || *p > '9')
		return false;
	errno = 0;
	s->inode = strtoull(p, &end, 10);
	if (errno || (*end != ' ' && *end != '\t' && *end != '\n' && *end))
		return false;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int procnet_socket_inodes(uint32_t pid, uint64_t **inodes, size_t *n)
{
	char path[64], link[64];
	struct dirent *de;
	uint64_t *v = NULL, *nv;
	size_t cnt = 0, cap = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%u/fd", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char fdpath[64 + sizeof(de->d_name)];
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		len = readlink(fdpath, link, sizeof(link) - 1);
		if (len <= 8 || strncmp(link, "socket:[", 8))
			continue;
		link[len] = '\0';
		if (cnt == cap) {
			cap = cap ? 2 * cap : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				errno = ENOMEM;
				return -1;
			}
			v = nv;
		}
		v[cnt++] = strtoull(link + 8, NULL, 10);
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_u64);
	*inodes = v;
	*n = cnt;
	return 0;
}

uint32_t procnet_netns(uint32_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u/ns/net", pid);
	return stat(path, &st) ? 0 : (uint32_t)st.st_ino;
}
