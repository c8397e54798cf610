// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <string.h>
#include "elfsym.h"
#include "hooks.h"
#include "nccl_fns.h"

/*
 * NCCL's progress functions by name (static functions of its transports): the
 * name says the direction; the transport comes from the table holding
 * the pointer, since net and collnet each have a sendProxyProgress.
 */
static const struct {
	const char *name;
	enum progress_dir dir;
	enum nccl_transport guess;	/* when no transport table points to it */
} known_fns[] = {
	{ "sendProxyProgress", PROGRESS_SEND, NCCL_TR_UNKNOWN },
	{ "recvProxyProgress", PROGRESS_RECV, NCCL_TR_UNKNOWN },
	{ "p2pSendProxyProgress", PROGRESS_SEND, NCCL_TR_P2P },
	{ "p2pRecvProxyProgress", PROGRESS_RECV, NCCL_TR_P2P },
	{ "shmSendProxyProgress", PROGRESS_SEND, NCCL_TR_SHM },
	{ "shmRecvProxyProgress", PROGRESS_RECV, NCCL_TR_SHM },
	{ "profilerProxyProgress", PROGRESS_NONE, NCCL_TR_PROFILER },
};

/* the progress signature: NCCL 2.19+ passes the proxy state, older the comm */
static const char *const progress_params[] = {
	"(ncclProxyState*, ncclProxyArgs*)",
	"(ncclComm*, ncclProxyArgs*)",
};

static const struct {
	const char *object;
	enum nccl_transport t;
} tables[] = {
	{ "p2pTransport", NCCL_TR_P2P },
	{ "shmTransport", NCCL_TR_SHM },
	{ "netTransport", NCCL_TR_NET },
	{ "collNetTransport", NCCL_TR_COLLNET },
	{ "nvlsTransport", NCCL_TR_NVLS },
	{ "profilerTransport", NCCL_TR_PROFILER },
};

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_TARGETS 64

static bool progress_signature(const char *params)
{
	size_t i;

	for (i = 0; params && i < ARRAY_LEN(progress_params); i++)
		if (strcmp(params, progress_params[i]) == 0)
			return true;
	return false;
}

static enum nccl_transport table_of(const struct elf_syms *es, long off)
{
	long targets[MAX_TARGETS];
	size_t i, k, n;

	for (i = 0; i < ARRAY_LEN(tables); i++) {
		n = elfsym_object_targets(es, tables[i].object, targets, MAX_TARGETS);
		for (k = 0; k < n && k < MAX_TARGETS; k++)
			if (targets[k] == off)
				return tables[i].t;
	}
	return NCCL_TR_UNKNOWN;
}

int progress_fns_find(const struct elf_syms *es, struct progress_fn *out, int max)
{
	struct elfsym_fn fns[8];
	size_t i, k, n;
	int count = 0;

	for (i = 0; i < ARRAY_LEN(known_fns); i++) {
		n = elfsym_functions(es, known_fns[i].name, fns, ARRAY_LEN(fns));
		for (k = 0; k < n && k < ARRAY_LEN(fns) && count < max; k++) {
			struct progress_fn *p = &out[count];

			if (!progress_signature(fns[k].params))
				continue;
			p->off = fns[k].off;
			p->symbol = fns[k].symbol;
			p->name = known_fns[i].name;
			p->dir = known_fns[i].dir;
			p->transport = table_of(es, p->off);
			if (p->transport == NCCL_TR_UNKNOWN)
				p->transport = known_fns[i].guess;
			count++;
		}
	}
	return count;
}

const char *nccl_transport_name(enum nccl_transport t)
{
	static const char *const names[NCCL_TR_MAX] = {
		[NCCL_TR_UNKNOWN] = "unknown", [NCCL_TR_P2P] = "P2P",
		[NCCL_TR_SHM] = "SHM", [NCCL_TR_NET] = "NET",
		[NCCL_TR_COLLNET] = "COLLNET", [NCCL_TR_NVLS] = "NVLS",
		[NCCL_TR_PROFILER] = "PROFILER",
	};

	return t < NCCL_TR_MAX ? names[t] : "unknown";
}

int nccl_transport_proxied(enum nccl_transport t)
{
	return t == NCCL_TR_NET || t == NCCL_TR_COLLNET;
}

long hook_resolve(const struct elf_syms *es, const struct hook_def *h,
		  const char **symbol)
{
	if (symbol)
		*symbol = h->symbol;
	if (!h->params)
		return elfsym_offset(es, h->symbol);
	return elfsym_offset_params(es, h->symbol, h->params, symbol);
}
