/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* /proc/PID/maps: the ELF files a process maps, seen through /proc/PID/root. */
#ifndef CCLD_PROCMAPS_H
#define CCLD_PROCMAPS_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

struct mapped_file {
	char path[PATH_MAX];	/* path as the process sees it */
	char host_path[PATH_MAX]; /* /proc/PID/root/<path>: openable from here */
	dev_t dev;
	ino_t ino;
	unsigned long base;	/* lowest mapping address */
};

/*
 * Lists the distinct files (by dev/inode) PID maps with an executable
 * mapping.  dev/ino are stat's, of the layer file for a file on an overlay
 * mount (one image's library in many containers is one uprobe inode); a
 * file deleted or replaced since mapping gets host_path
 * /proc/PID/map_files/START-END.  *out is malloc'ed; returns 0, or -errno
 * (ENOENT: no such process).
 */
int procmaps_files(pid_t pid, struct mapped_file **out, size_t *n);

/* /proc/PID/stat state letter ('R', 'S', 'T', 'Z'...), or 0 if gone. */
char procmaps_state(pid_t pid);

/* One parsed /proc/PID/maps line. */
struct maps_line {
	unsigned long start, end, offset;
	char perms[5];
	unsigned int dev_major, dev_minor;
	unsigned long ino;
	const char *path;	/* into the line ("" for anonymous maps) */
	size_t path_len;	/* without a trailing " (deleted)" or newline */
	int deleted;		/* the path ended in " (deleted)" */
};

/* Parses LINE; returns 0, or -EINVAL for a malformed line. */
int procmaps_parse_line(const char *line, struct maps_line *ml);

#endif
