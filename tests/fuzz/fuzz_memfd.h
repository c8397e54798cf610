/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * For the fuzz targets whose parser opens a file by path (ELF, DWARF): the
 * input as an in-memory file, reached as /proc/self/fd/N.
 */
#ifndef CCLD_FUZZ_MEMFD_H
#define CCLD_FUZZ_MEMFD_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* One memfd for the whole run, truncated and rewritten per input. */
static int fuzz_memfd(const unsigned char *data, size_t size, char *path, size_t pathlen)
{
	static int fd = -1;
	size_t off = 0;

	if (fd < 0) {
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
	}
	if (ftruncate(fd, 0)) {
		perror("ftruncate");
		abort();
	}
	while (off < size) {
		ssize_t n = pwrite(fd, data + off, size - off, (off_t)off);

		if (n <= 0) {
			perror("pwrite");
			abort();
		}
		off += (size_t)n;
	}
	snprintf(path, pathlen, "/proc/self/fd/%d", fd);
	return fd;
}

#endif
