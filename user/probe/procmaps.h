/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* /proc/PID/maps: the ELF files a process maps, seen through /proc/PID/root. */
#ifndef CCLD_PROCMAPS_H
#define CCLD_PROCMAPS_H

#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
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

/*
 * /proc/PID/stat into BUF (LEN bytes): a pointer to its state letter (field
 * 3; the fields after it follow), or NULL with errno set.  Plain open/read,
 * no stdio: a forked child of a threaded process may call it.
 */
char *procmaps_stat(pid_t pid, char *buf, size_t len);

/* The state letter in the NUL-terminated text of a /proc/PID/stat (or
 * task stat) file, as procmaps_stat; NULL with errno EINVAL. */
char *procmaps_stat_parse(char *buf);

/* /proc/PID/stat state letter ('R', 'S', 'T', 'Z'...), or 0 if gone. */
char procmaps_state(pid_t pid);

/* state letter ST (procmaps_state) is of a process that has exited: none, a zombie, dead */
static inline bool procmaps_exited(char st)
{
	return !st || st == 'Z' || st == 'X';
}

/*
 * The start time (field 22, clock ticks after boot) in a stat text from
 * its STATE letter on (procmaps_stat's pointer): 0, or -EINVAL.  With the
 * pid it names one process: a later process that reuses the pid has
 * another start time.
 */
int procmaps_stat_start(const char *state, uint64_t *start);

/* PID's state letter and start time: 0, or -errno (ENOENT: gone). */
int procmaps_identity(pid_t pid, char *state, uint64_t *start);

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

/*
 * One /proc/PID/mountinfo LINE (modified): its mount point, unescaped,
 * into MNT, and for an overlay mount its layer directories into *LAYERS
 * ("upper\0lower1\0lower2\0\0", malloc'ed; else NULL).  0, or -EINVAL.
 */
int procmaps_parse_mount(char *line, char *mnt, size_t mntlen, char **layers);

#endif
