/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading another process's memory without stopping it (process_vm_readv):
 * the attach snapshot, tier E proxy walks, comm fields.  A read of memory
 * the process is changing may be torn; callers check what they read (magic
 * values, ranges) before they believe it.
 */
#ifndef CCLD_PROCMEM_H
#define CCLD_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* LEN bytes at ADDR of PID into BUF: 0, -EFAULT (unmapped, short) or -errno. */
int procmem_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* The u64 / s32 at ADDR + OFF; OFF < 0 (field missing): -ENOENT. */
int procmem_u64(pid_t pid, uint64_t addr, int32_t off, uint64_t *v);
int procmem_s32(pid_t pid, uint64_t addr, int32_t off, int32_t *v);

#endif
