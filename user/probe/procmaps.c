// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /proc/PID/maps -> the distinct ELF files a process executes from.  Files
 * are opened through /proc/PID/root so that a containerised process's
 * paths resolve in its own mount namespace.  A file deleted or replaced
 * since it was mapped is reached through /proc/PID/map_files instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "procmaps.h"

static const char deleted_sfx[] = " (deleted)";

int procmaps_parse_line(const char *line, struct maps_line *ml)
{
	const char *p;
	size_t len;
	int pos = 0;

	memset(ml, 0, sizeof(*ml));
	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu%n", &ml->start, &ml->end,
		   ml->perms, &ml->offset, &ml->dev_major, &ml->dev_minor,
		   &ml->ino, &pos) != 7 || !pos)
		return -EINVAL;
	if (strlen(ml->perms) != 4 || ml->end < ml->start)
		return -EINVAL;
	/* the path starts after the padding and may itself contain spaces */
	p = line + pos;
	while (*p == ' ' || *p == '\t')
		p++;
	len = strcspn(p, "\n");
	if (len >= sizeof(deleted_sfx) - 1 &&
	    memcmp(p + len - (sizeof(deleted_sfx) - 1), deleted_sfx,
		   sizeof(deleted_sfx) - 1) == 0) {
		len -= sizeof(deleted_sfx) - 1;
		ml->deleted = 1;
	}
	ml->path = p;
	ml->path_len = len;
	return 0;
}

struct cand {
	struct mapped_file mf;
	unsigned long x_start, x_end;	/* one executable mapping */
	bool exec;
	bool deleted;
};

static struct cand *find_cand(struct cand *c, size_t n, unsigned int maj,
			      unsigned int min, unsigned long ino,
			      const char *path, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (c[i].mf.ino == ino && c[i].mf.dev == makedev(maj, min) &&
		    strlen(c[i].mf.path) == len &&
		    memcmp(c[i].mf.path, path, len) == 0)
			return &c[i];
	}
	return NULL;
}

/*
 * Overlay mounts (containers): each container's overlay has its own device
 * number, but a uprobe lands on the real (layer) inode, shared by every
 * container of one image.  Keying files by the layer file's dev/ino lets
 * them share one set of probes instead of firing once per container.
 */
struct mount_ent {
	char mnt[PATH_MAX];	/* mount point, as the process sees it */
	char *layers;		/* overlay: "upper\0lower1\0lower2\0\0", else NULL */
};

/* undoes mountinfo's octal escapes (\040 for a space) in place */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* "rw,lowerdir=/a:/b,upperdir=/u,..." -> "/u\0/a\0/b\0\0" */
static char *overlay_layers(char *opts)
{
	char *upper = NULL, *lower = NULL, *tok, *save = NULL, *out, *p;
	size_t len;

	for (tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strncmp(tok, "upperdir=", 9) == 0)
			upper = tok + 9;
		else if (strncmp(tok, "lowerdir=", 9) == 0)
			lower = tok + 9;
	}
	if (!lower)
		return NULL;
	len = strlen(lower) + (upper ? strlen(upper) : 0) + 3;
	out = calloc(1, len);
	if (!out)
		return NULL;
	p = out;
	if (upper) {
		unescape(upper);
		p = stpcpy(p, upper) + 1;
	}
	for (tok = strtok_r(lower, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
		unescape(tok);
		p = stpcpy(p, tok) + 1;
	}
	*p = '\0';
	return out;
}

static void free_mounts(struct mount_ent *m, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(m[i].layers);
	free(m);
}

int procmaps_parse_mount(char *line, char *mnt, size_t mntlen, char **layers)
{
	char mp[PATH_MAX], fstype[64], *sep, *opts;

	*layers = NULL;
	/* id parent maj:min root MOUNTPOINT ... - FSTYPE SOURCE OPTS */
	if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
		return -EINVAL;
	sep = strstr(line, " - ");
	if (!sep || sscanf(sep + 3, "%63s", fstype) != 1)
		return -EINVAL;
	unescape(mp);
	snprintf(mnt, mntlen, "%s", mp);
	/* the options are the last field: after fstype and source */
	opts = strrchr(sep, ' ');
	if (strcmp(fstype, "overlay") == 0 && opts) {
		opts[strcspn(opts, "\n")] = '\0';
		*layers = overlay_layers(opts + 1);
	}
	return 0;
}

/* /proc/PID/mountinfo; NULL (no overlay handling) if unreadable */
static struct mount_ent *read_mounts(pid_t pid, size_t *n)
{
	struct mount_ent *m = NULL, *tmp;
	char path[64], *line = NULL;
	size_t cap = 0, linecap = 0;
	FILE *f;

	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (getline(&line, &linecap, f) > 0) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			tmp = realloc(m, cap * sizeof(*m));
			if (!tmp)
				break;
			m = tmp;
		}
		if (procmaps_parse_mount(line, m[*n].mnt, sizeof(m[*n].mnt), &m[*n].layers))
			continue;
		(*n)++;
	}
	free(line);
	fclose(f);
	return m;
}

/*
 * If PATH lies on an overlay mount, the layer file with the same inode
 * number (overlay shows the real inode number for files): its device.
 */
static bool overlay_real_dev(const struct mount_ent *m, size_t nm,
			     const char *path, ino_t ino, dev_t *dev)
{
	const struct mount_ent *best = NULL;
	size_t i, best_len = 0;
	const char *rel, *layer;
	char real[PATH_MAX];
	struct stat st;

	for (i = 0; i < nm; i++) {
		size_t len = strlen(m[i].mnt);

		if (strcmp(m[i].mnt, "/") == 0)
			len = 0;
		else if (strncmp(path, m[i].mnt, len) != 0 || path[len] != '/')
			continue;
		/* the last of equal mount points is the one on top */
		if (!best || len >= best_len) {
			best = &m[i];
			best_len = len;
		}
	}
	if (!best || !best->layers)
		return false;
	rel = path + best_len;
	for (layer = best->layers; *layer; layer += strlen(layer) + 1) {
		int n = snprintf(real, sizeof(real), "%s%s", layer, rel);

		if (n > 0 && (size_t)n < sizeof(real) && stat(real, &st) == 0 &&
		    st.st_ino == ino) {
			*dev = st.st_dev;
			return true;
		}
	}
	return false;
}

/* host_path, and dev/ino as stat sees them (maps shows the mount's device) */
static bool resolve(pid_t pid, struct cand *c)
{
	struct mapped_file *mf = &c->mf;
	struct stat st;
	int n;

	if (!c->deleted) {
		n = snprintf(mf->host_path, sizeof(mf->host_path),
			     "/proc/%d/root%s", pid, mf->path);
		if (n > 0 && (size_t)n < sizeof(mf->host_path) &&
		    stat(mf->host_path, &st) == 0 && st.st_ino == mf->ino) {
			mf->dev = st.st_dev;
			return true;
		}
	}
	/* gone or replaced on disk: the mapping itself still names the inode */
	n = snprintf(mf->host_path, sizeof(mf->host_path),
		     "/proc/%d/map_files/%lx-%lx", pid, c->x_start, c->x_end);
	if (n < 0 || (size_t)n >= sizeof(mf->host_path) ||
	    stat(mf->host_path, &st) != 0 || st.st_ino != mf->ino)
		return false;
	mf->dev = st.st_dev;
	return true;
}

int procmaps_files(pid_t pid, struct mapped_file **out, size_t *n)
{
	struct cand *c = NULL, *tmp;
	struct mount_ent *mounts;
	struct mapped_file *res;
	size_t nc = 0, cap = 0, i, k = 0, nmounts = 0;
	char path[64], *line = NULL;
	size_t linecap = 0;
	FILE *f;
	int ret = 0;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &linecap, f) > 0) {
		struct maps_line ml;
		struct cand *e;

		if (procmaps_parse_line(line, &ml) || !ml.ino ||
		    ml.path_len == 0 || ml.path[0] != '/' ||
		    ml.path_len >= sizeof(c->mf.path))
			continue;
		e = find_cand(c, nc, ml.dev_major, ml.dev_minor, ml.ino,
			      ml.path, ml.path_len);
		if (!e) {
			if (nc == cap) {
				cap = cap ? cap * 2 : 64;
				tmp = realloc(c, cap * sizeof(*c));
				if (!tmp) {
					ret = -ENOMEM;
					goto out;
				}
				c = tmp;
			}
			e = &c[nc++];
			memset(e, 0, sizeof(*e));
			memcpy(e->mf.path, ml.path, ml.path_len);
			e->mf.path[ml.path_len] = '\0';
			e->mf.dev = makedev(ml.dev_major, ml.dev_minor);
			e->mf.ino = ml.ino;
			e->mf.base = ml.start;
			e->deleted = ml.deleted;
		}
		if (ml.start < e->mf.base)
			e->mf.base = ml.start;
		if (ml.perms[2] == 'x' && !e->exec) {
			e->exec = true;
			e->x_start = ml.start;
			e->x_end = ml.end;
		}
	}
	if (ferror(f)) {
		ret = -EIO;
		goto out;
	}
	res = calloc(nc ? nc : 1, sizeof(*res));
	if (!res) {
		ret = -ENOMEM;
		goto out;
	}
	mounts = read_mounts(pid, &nmounts);
	for (i = 0; i < nc; i++) {
		size_t j;
		bool dup = false;

		if (!c[i].exec || !resolve(pid, &c[i]))
			continue;
		if (mounts)
			overlay_real_dev(mounts, nmounts, c[i].mf.path,
					 c[i].mf.ino, &c[i].mf.dev);
		/* one file under two paths (bind mounts): keep the first */
		for (j = 0; j < k; j++) {
			if (res[j].dev == c[i].mf.dev && res[j].ino == c[i].mf.ino) {
				dup = true;
				break;
			}
		}
		if (!dup)
			res[k++] = c[i].mf;
	}
	free_mounts(mounts, nmounts);
	*out = res;
	*n = k;
out:
	free(line);
	free(c);
	fclose(f);
	return ret;
}

char *procmaps_stat_parse(char *buf)
{
	/* comm may contain spaces and ')': the state follows the last ')' */
	char *p = strrchr(buf, ')');

	if (!p || p[1] != ' ' || !p[2]) {
		errno = EINVAL;
		return NULL;
	}
	return p + 2;
}

char *procmaps_stat(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0) {
		if (!n)
			errno = ENODATA;
		return NULL;
	}
	buf[n] = '\0';
	return procmaps_stat_parse(buf);
}

char procmaps_state(pid_t pid)
{
	char buf[1024], *state = procmaps_stat(pid, buf, sizeof(buf));

	return state ? *state : 0;
}

int procmaps_stat_start(const char *state, uint64_t *start)
{
	const char *p = state;
	char *end;
	int field;

	/* the state is field 3; 19 fields on is the start time */
	for (field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*start = strtoull(p, &end, 10);
	if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
		return -EINVAL;
	return 0;
}

int procmaps_identity(pid_t pid, char *state, uint64_t *start)
{
	char buf[1024], *st = procmaps_stat(pid, buf, sizeof(buf));

	if (!st)
		return errno == ENODATA ? -ENOENT : -errno;
	*state = *st;
	return procmaps_stat_start(st, start);
}
