// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include "names.h"

/* nccl.h: ncclDataType_t (values are ABI facts) */
static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
	{ "int8", 1 }, { "uint8", 1 }, { "int32", 4 }, { "uint32", 4 },
	{ "int64", 8 }, { "uint64", 8 }, { "float16", 2 }, { "float32", 4 },
	{ "float64", 8 }, { "bfloat16", 2 }, { "fp8e4m3", 1 }, { "fp8e5m2", 1 },
};

static const char *const redops[] = { "sum", "prod", "max", "min", "avg" };

const char *dtype_name(int dtype)
{
	if (dtype < 0 || dtype >= (int)(sizeof(dtypes) / sizeof(dtypes[0])))
		return NULL;
	return dtypes[dtype].name;
}

size_t dtype_size(int dtype)
{
	if (dtype < 0 || dtype >= (int)(sizeof(dtypes) / sizeof(dtypes[0])))
		return 0;
	return dtypes[dtype].size;
}

const char *redop_name(int redop)
{
	if (redop < 0 || redop >= (int)(sizeof(redops) / sizeof(redops[0])))
		return NULL;
	return redops[redop];
}

/* the blocking calls a stuck rank's threads are found in (x86-64 numbers) */
static const struct {
	int nr;
	const char *name;
} syscalls[] = {
	{ 0, "read" }, { 1, "write" }, { 7, "poll" }, { 16, "ioctl" }, { 17, "pread64" },
	{ 18, "pwrite64" }, { 19, "readv" }, { 20, "writev" }, { 23, "select" },
	{ 24, "sched_yield" }, { 26, "msync" }, { 34, "pause" }, { 35, "nanosleep" },
	{ 42, "connect" }, { 43, "accept" }, { 44, "sendto" }, { 45, "recvfrom" },
	{ 46, "sendmsg" }, { 47, "recvmsg" }, { 61, "wait4" }, { 73, "flock" },
	{ 74, "fsync" }, { 75, "fdatasync" }, { 128, "rt_sigtimedwait" },
	{ 130, "rt_sigsuspend" }, { 162, "sync" }, { 202, "futex" }, { 230, "clock_nanosleep" },
	{ 232, "epoll_wait" }, { 247, "waitid" }, { 257, "openat" }, { 270, "pselect6" },
	{ 271, "ppoll" }, { 281, "epoll_pwait" }, { 288, "accept4" }, { 295, "preadv" },
	{ 296, "pwritev" }, { 299, "recvmmsg" }, { 307, "sendmmsg" }, { 441, "epoll_pwait2" },
	{ 449, "futex_waitv" },
};

const char *syscall_name(int nr)
{
	size_t i;

	for (i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
		if (syscalls[i].nr == nr)
			return syscalls[i].name;
	return NULL;
}

void pci_bus_name(unsigned long long bus, char *out, size_t n)
{
	snprintf(out, n, "%04x:%02x:%02x.%x", (unsigned)(bus >> 20) & 0xffff,
		 (unsigned)(bus >> 12) & 0xff, (unsigned)(bus >> 4) & 0xff,
		 (unsigned)bus & 0xf);
}
