// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What NCCL 2.24+'s RAS keeps of every communicator, and NCCL's host and
 * process hashes (src/ras/ras.cc, src/misc/utils.cc in 2.28.9):
 *
 * - the global array ncclComms[nNcclComms] of every live communicator of
 *   the process, guarded by ncclCommsMutex: a comm takes the first free
 *   slot at bootstrap (the array grows by 32), its slot is cleared when it
 *   is destroyed.  NCCL_RAS_ENABLE=0 leaves it empty, as in NCCL.  The
 *   names are NCCL's and, built with -fvisibility=hidden, they are local
 *   .bss symbols of .symtab like in the real library: a tool attaching to
 *   a running job finds every communicator here.
 * - hostHash = getHash(hostname + boot_id) (or NCCL_HOSTID),
 *   pidHash = getHash("<pid>" + readlink(/proc/self/ns/pid)), as in
 *   comm->peerInfo[].
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sim.h"

#define RAS_INCREMENT 4

pthread_mutex_t ncclCommsMutex = PTHREAD_MUTEX_INITIALIZER;
struct ncclComm **ncclComms;
int nNcclComms;
bool ncclCommsSorted;

static int ras_enabled(void)
{
	const char *v = getenv("NCCL_RAS_ENABLE");

	return !v || atoi(v) == 1;
}

void sim_ras_comm_init(struct ncclComm *comm)
{
	int i;

	if (!ras_enabled())
		return;
	pthread_mutex_lock(&ncclCommsMutex);
	for (i = 0; i < nNcclComms && ncclComms[i]; i++)
		;
	if (i == nNcclComms) {
		struct ncclComm **n = realloc(ncclComms, (nNcclComms + RAS_INCREMENT * 8) *
						       sizeof(*n));

		if (!n) {	/* NCCL goes on without RAS */
			pthread_mutex_unlock(&ncclCommsMutex);
			return;
		}
		memset(n + nNcclComms, 0, RAS_INCREMENT * 8 * sizeof(*n));
		ncclComms = n;
		nNcclComms += RAS_INCREMENT * 8;
	}
	ncclComms[i] = comm;
	ncclCommsSorted = false;
	pthread_mutex_unlock(&ncclCommsMutex);
}

void sim_ras_comm_fini(struct ncclComm *comm)
{
	int i;

	pthread_mutex_lock(&ncclCommsMutex);
	for (i = 0; i < nNcclComms; i++)
		if (ncclComms[i] == comm) {
			ncclComms[i] = NULL;
			ncclCommsSorted = false;
			break;
		}
	pthread_mutex_unlock(&ncclCommsMutex);
}

uint64_t sim_host_hash(void)
{
	char s[1024] = "";
	const char *id = getenv("NCCL_HOSTID");
	size_t n;
	FILE *f;

	if (gethostname(s, sizeof(s) - 1))
		snprintf(s, sizeof(s), "unknown");
	s[sizeof(s) - 1] = '\0';
	if (id) {
		snprintf(s, sizeof(s), "%s", id);
	} else if ((f = fopen("/proc/sys/kernel/random/boot_id", "r"))) {
		n = strlen(s);
		if (fscanf(f, "%1000s", s + n) != 1)
			s[n] = '\0';
		fclose(f);
	}
	return sim_get_hash(s, strlen(s));
}

uint64_t sim_pid_hash(void)
{
	char s[1024];
	int n = snprintf(s, sizeof(s), "%ld", (long)getpid());
	ssize_t len = readlink("/proc/self/ns/pid", s + n, sizeof(s) - 1 - n);

	s[n + (len > 0 ? len : 0)] = '\0';
	return sim_get_hash(s, strlen(s));
}
