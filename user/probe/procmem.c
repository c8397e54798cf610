// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <sys/uio.h>
#include "procmem.h"

int procmem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (!addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int procmem_u64(pid_t pid, uint64_t addr, int32_t off, uint64_t *v)
{
	if (off < 0)
		return -ENOENT;
	return procmem_read(pid, addr + (uint64_t)off, v, sizeof(*v));
}

int procmem_s32(pid_t pid, uint64_t addr, int32_t off, int32_t *v)
{
	if (off < 0)
		return -ENOENT;
	return procmem_read(pid, addr + (uint64_t)off, v, sizeof(*v));
}
