/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * NCCL's hashes (2.26+, src/include/bitops.h and src/misc/utils.cc), to
 * recognise what NCCL wrote in a comm's peer table: ncclPeerInfo.pidHash
 * = getHash("<pid>" + readlink("/proc/self/ns/pid")), which names a rank's
 * process even after it exited.
 */
#ifndef CCLD_NCCLHASH_H
#define CCLD_NCCLHASH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

uint64_t nccl_get_hash(const void *bytes, size_t size);

/* NCCL's pidHash of PID (as numbered in its own pid namespace) in the
 * namespace whose /proc/X/ns/pid link reads NS_LINK ("pid:[4026531836]") */
uint64_t nccl_pid_hash(long pid, const char *ns_link);

/*
 * The pid in the namespace NS_LINK whose pidHash is HASH: the live
 * processes first (CANDIDATES, N of them, may be NULL), then every pid up
 * to the kernel's pid_max (an exited process).  0 when none matches.
 */
long nccl_pid_of_hash(uint64_t hash, const char *ns_link, const long *candidates, size_t n);

#endif
