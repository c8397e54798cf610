// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Shared memory of the NCCL stand-in: one POSIX shm segment per
 * communicator (/dev/shm/ccldsim-<tag>-c<commHash>) holding the rank table
 * (bootstrap), the split exchange and every connection's buffers, plus one
 * small doorbell segment per process.  All cross-process waits are futexes
 * on these shared words: nothing spins.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "sim.h"

/* a wait that lasts this long is reported once in the call log (ret null) */
#define SIM_SLOW_WAIT_NS 2000000000ull

uint64_t sim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Shared (not PRIVATE) futex ops: the words live in MAP_SHARED memory. */
void sim_futex_wait(uint32_t *addr, uint32_t val, int64_t timeout_ns)
{
	struct timespec ts, *tp = NULL;

	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tp = &ts;
	}
	syscall(SYS_futex, addr, FUTEX_WAIT, val, tp, NULL, 0);
}

void sim_futex_wake(uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void sim_bell_ring(struct sim_bell *b)
{
	__atomic_add_fetch(&b->seq, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&b->sleeping, __ATOMIC_SEQ_CST))
		sim_futex_wake(&b->seq);
}

static void *shm_map(const char *name, size_t size, int create)
{
	struct stat st;
	void *p;
	int fd;

	fd = shm_open(name, O_RDWR | (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || ((size_t)st.st_size < size && ftruncate(fd, size))) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* Maps another process's doorbell; cached for the life of the process. */
struct sim_bell *sim_bell_map(const char *name)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static struct { char name[64]; struct sim_bell *b; } cache[256];
	static int n;
	struct sim_bell *b = NULL;
	int i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < n; i++)
		if (!strcmp(cache[i].name, name)) {
			b = cache[i].b;
			goto out;
		}
	b = shm_map(name, sizeof(*b), 1);
	if (b && n < (int)(sizeof(cache) / sizeof(cache[0]))) {
		snprintf(cache[n].name, sizeof(cache[n].name), "%s", name);
		cache[n++].b = b;
	}
out:
	pthread_mutex_unlock(&mu);
	return b;
}

static size_t seg_size(int nranks)
{
	return sizeof(struct sim_seg) +
	       (size_t)SIM_CONN_KINDS * SIM_MAX_CHANNELS * nranks * nranks * sizeof(struct sim_conn);
}

struct sim_conn *sim_conn(struct ncclComm *comm, int kind, int ch, int src, int dst)
{
	struct sim_conn *c = (struct sim_conn *)(comm->seg + 1);
	int n = comm->nRanks;

	return c + (((size_t)kind * SIM_MAX_CHANNELS + ch) * n + src) * n + dst;
}

ncclResult_t sim_seg_join(struct ncclComm *comm, const char *tag, uint64_t hash,
			  int nranks, int rank)
{
	struct sim_rank_info *ri;
	struct sim_seg *seg;
	uint32_t zero = 0;

	snprintf(comm->tag, sizeof(comm->tag), "%s", tag);
	snprintf(comm->segName, sizeof(comm->segName), "/ccldsim-%s-c%016llx", tag,
		 (unsigned long long)hash);
	comm->segSize = seg_size(nranks);
	seg = shm_map(comm->segName, comm->segSize, 1);
	if (!seg) {
		SIM_WARN("cannot map shared memory %s: %s", comm->segName,
			 strerror(errno));
		return ncclSystemError;
	}
	comm->seg = seg;
	if (!__atomic_compare_exchange_n(&seg->nranks, &zero, nranks, 0, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST) && zero != (uint32_t)nranks) {
		SIM_WARN("rank %d: nranks %d differs from %u given by another rank",
			 rank, nranks, zero);
		goto fail;
	}
	seg->magic = NCCL_MAGIC;
	seg->hash = hash;
	ri = &seg->ranks[rank];
	zero = 0;
	if (!__atomic_compare_exchange_n(&ri->present, &zero, 1, 0, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST)) {
		SIM_WARN("rank %d of communicator %016llx joined twice", rank,
			 (unsigned long long)hash);
		goto fail;
	}
	ri->pid = getpid();
	ri->host_hash = sim_host_hash();
	ri->pid_hash = sim_pid_hash();
	ri->cuda_dev = comm->cudaDev;
	ri->bus_id = comm->busId;
	snprintf(ri->bell, sizeof(ri->bell), "%s", comm->proxyState->bellName);
	snprintf(ri->kbell, sizeof(ri->kbell), "%s", sim_kernel_bell_name());
	sim_net_publish(comm, ri);
	__atomic_add_fetch(&seg->refs, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&seg->joined, 1, __ATOMIC_SEQ_CST);
	sim_futex_wake(&seg->joined);
	return ncclSuccess;
fail:
	munmap(seg, comm->segSize);
	comm->seg = NULL;
	return ncclInvalidArgument;
}

/*
 * Waits until *WORD >= TARGET, forever if need be (like NCCL's bootstrap).
 * A wait longer than SIM_SLOW_WAIT_NS writes WHAT's call-log line now, with
 * "ret":null, and sets *LOGGED: the call may never return.
 */
static void wait_ge(uint32_t *word, uint32_t target, const struct ncclComm *comm,
		    const char *what, int *logged)
{
	uint64_t start = sim_now_ns();
	uint32_t v;

	while ((v = __atomic_load_n(word, __ATOMIC_SEQ_CST)) < target) {
		sim_futex_wait(word, v, 500000000);
		if (!*logged && sim_now_ns() - start > SIM_SLOW_WAIT_NS) {
			sim_calllog(comm, what, 0, 0, 0, -1, -1, -1, -1, 0, 0, NULL);
			*logged = 1;
		}
	}
}

/* Waits until every rank joined, then fills the peer table, maps doorbells. */
static ncclResult_t seg_connect(struct ncclComm *comm, const char *what, int *logged)
{
	struct sim_seg *seg = comm->seg;
	int r;

	wait_ge(&seg->joined, comm->nRanks, comm, what, logged);
	comm->peerBells = calloc(comm->nRanks, sizeof(*comm->peerBells));
	comm->peerKbells = calloc(comm->nRanks, sizeof(*comm->peerKbells));
	comm->peerInfo = calloc(comm->nRanks, sizeof(*comm->peerInfo));
	if (!comm->peerBells || !comm->peerKbells || !comm->peerInfo)
		return ncclSystemError;
	for (r = 0; r < comm->nRanks; r++) {
		struct ncclPeerInfo *pi = &comm->peerInfo[r];

		pi->rank = r;
		pi->cudaDev = seg->ranks[r].cuda_dev;
		pi->nvmlDev = seg->ranks[r].cuda_dev;
		pi->hostHash = seg->ranks[r].host_hash;
		pi->pidHash = seg->ranks[r].pid_hash;
		pi->busId = seg->ranks[r].bus_id;
		pi->comm = r == comm->rank ? comm : NULL;
	}
	for (r = 0; r < comm->nRanks; r++) {
		comm->peerBells[r] = sim_bell_map(seg->ranks[r].bell);
		comm->peerKbells[r] = sim_bell_map(seg->ranks[r].kbell);
		if (!comm->peerBells[r] || !comm->peerKbells[r]) {
			SIM_WARN("cannot map the doorbell %s of rank %d: %s",
				 seg->ranks[r].bell, r, strerror(errno));
			return ncclSystemError;
		}
	}
	return sim_net_start(comm);
}

/* seg_connect; the comm's initState then says ncclSuccess, or the error */
ncclResult_t sim_seg_wait(struct ncclComm *comm, const char *what, int *logged)
{
	ncclResult_t res = seg_connect(comm, what, logged);

	__atomic_store_n(&comm->initState, res, __ATOMIC_RELEASE);
	return res;
}

void sim_seg_leave(struct ncclComm *comm)
{
	struct sim_seg *seg = comm->seg;

	if (!seg)
		return;
	if (__atomic_sub_fetch(&seg->refs, 1, __ATOMIC_SEQ_CST) == 0)
		shm_unlink(comm->segName);
	munmap(seg, comm->segSize);
	comm->seg = NULL;
}

/* All ranks of COMM publish (color, key); returns everybody's. */
ncclResult_t sim_split_exchange(struct ncclComm *comm, int color, int key,
				int *colors, int *keys, int *logged)
{
	struct sim_seg *seg = comm->seg;
	int gen = ++comm->splitCount, slot = gen & 1, r;

	seg->ranks[comm->rank].split_color[slot] = color;
	seg->ranks[comm->rank].split_key[slot] = key;
	__atomic_add_fetch(&seg->split_arrive, 1, __ATOMIC_SEQ_CST);
	sim_futex_wake(&seg->split_arrive);
	wait_ge(&seg->split_arrive, (uint32_t)gen * comm->nRanks, comm, "CommSplit", logged);
	for (r = 0; r < comm->nRanks; r++) {
		colors[r] = seg->ranks[r].split_color[slot];
		keys[r] = seg->ranks[r].split_key[slot];
	}
	return ncclSuccess;
}
