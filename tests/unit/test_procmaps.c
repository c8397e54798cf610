// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * procmaps: synthetic maps lines (spaces, " (deleted)", anonymous maps),
 * this process's own maps (libc, the executable, a deleted file mapped
 * executable, a file on an overlay mount), and /proc/PID/stat states of a child with an awkward name.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "procmaps.h"

static void test_parse(void)
{
	struct maps_line ml;

	CHECK_INT(procmaps_parse_line("7f1c2a000000-7f1c2a021000 r-xp 00001000 fd:01 "
				      "1234567                    /usr/lib/lib with space.so (deleted)\n",
				      &ml), 0);
	CHECK(ml.start == 0x7f1c2a000000UL);
	CHECK(ml.end == 0x7f1c2a021000UL);
	CHECK_STR(ml.perms, "r-xp");
	CHECK(ml.offset == 0x1000);
	CHECK_INT(ml.dev_major, 0xfd);
	CHECK_INT(ml.dev_minor, 1);
	CHECK_INT(ml.ino, 1234567);
	CHECK_INT(ml.deleted, 1);
	CHECK_INT(ml.path_len, strlen("/usr/lib/lib with space.so"));
	CHECK(strncmp(ml.path, "/usr/lib/lib with space.so", ml.path_len) == 0);

	/* a name with parentheses that is not a deletion mark */
	CHECK_INT(procmaps_parse_line("1000-2000 r--p 00000000 103:02 42 /opt/x (1)/libnccl.so.2",
				      &ml), 0);
	CHECK_INT(ml.dev_major, 0x103);
	CHECK_INT(ml.dev_minor, 2);
	CHECK_INT(ml.deleted, 0);
	CHECK_INT(ml.path_len, strlen("/opt/x (1)/libnccl.so.2"));

	CHECK_INT(procmaps_parse_line("7ffd0000-7ffd1000 rw-p 00000000 00:00 0 \n", &ml), 0);
	CHECK_INT(ml.path_len, 0);
	CHECK_INT(ml.ino, 0);
	CHECK_INT(procmaps_parse_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0"
				      "                  [vsyscall]\n", &ml), 0);
	CHECK(strncmp(ml.path, "[vsyscall]", ml.path_len) == 0);

	CHECK_INT(procmaps_parse_line("", &ml), -EINVAL);
	CHECK_INT(procmaps_parse_line("garbage line\n", &ml), -EINVAL);
	CHECK_INT(procmaps_parse_line("1000-2000 r-xp 0 fd:01\n", &ml), -EINVAL);
	CHECK_INT(procmaps_parse_line("2000-1000 r-xp 00000000 fd:01 5 /x\n", &ml), -EINVAL);
}

static const struct mapped_file *find_path(const struct mapped_file *f, size_t n,
					   const char *path)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(f[i].path, path) == 0)
			return &f[i];
	}
	return NULL;
}

static void test_self(void)
{
	const struct mapped_file *libc = NULL, *exe;
	char self[4096], want[4200], tmpl[] = "/tmp/ccld-procmaps.XXXXXX";
	struct mapped_file *files = NULL;
	size_t n = 0, i, nlibc = 0;
	void *h, *sym, *map = MAP_FAILED;
	struct stat st, dst;
	ssize_t len;
	Dl_info info;
	int fd;

	/* a file mapped executable and then deleted: reachable via map_files */
	fd = mkstemp(tmpl);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(ftruncate(fd, 4096) == 0);
		CHECK(fstat(fd, &dst) == 0);
		map = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		unlink(tmpl);
		close(fd);
		if (map == MAP_FAILED)
			printf("test_procmaps: cannot map /tmp executable: "
			       "deleted-file part skipped\n");
	}

	CHECK_INT(procmaps_files(getpid(), &files, &n), 0);
	CHECK(n > 2);
	for (i = 0; i < n; i++) {
		const char *base = strrchr(files[i].path, '/');
		struct stat hs;

		/* every host_path opens the very file (dev and inode) */
		CHECK(stat(files[i].host_path, &hs) == 0);
		CHECK(hs.st_dev == files[i].dev && hs.st_ino == files[i].ino);
		if (base && strncmp(base + 1, "libc.so", 7) == 0) {
			libc = &files[i];
			nlibc++;
		}
	}
	CHECK_INT(nlibc, 1);		/* distinct files, not mappings */
	CHECK(libc != NULL);
	if (libc) {
		snprintf(want, sizeof(want), "/proc/%d/root%s", getpid(), libc->path);
		CHECK_STR(libc->host_path, want);
		h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
		sym = h ? dlsym(h, "strtoul") : NULL;
		CHECK(sym && dladdr(sym, &info));
		if (sym && dladdr(sym, &info))
			CHECK(libc->base == (unsigned long)info.dli_fbase);
		if (h)
			dlclose(h);
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(len > 0);
	if (len > 0) {
		self[len] = '\0';
		exe = find_path(files, n, self);
		CHECK(exe != NULL);
		if (exe && stat(self, &st) == 0)
			CHECK(exe->ino == st.st_ino);
	}
	if (map != MAP_FAILED) {
		const struct mapped_file *d = find_path(files, n, tmpl);

		CHECK(d != NULL);
		if (d) {
			snprintf(want, sizeof(want), "/proc/%d/map_files/", getpid());
			CHECK(strncmp(d->host_path, want, strlen(want)) == 0);
			CHECK(d->ino == dst.st_ino);
			CHECK(d->base == (unsigned long)map);
		}
		munmap(map, 4096);
	}
	free(files);

	CHECK_INT(procmaps_files(0x3ffffff0, &files, &n), -ENOENT);
}

/* a file on an overlay mount is keyed by its layer file's device */
static void test_overlay(void)
{
	char dir[] = "/tmp/ccld-ovl.XXXXXX", p[5][300], opts[1300], file[400];
	struct mapped_file *files = NULL;
	const struct mapped_file *mf;
	struct stat lower_st, ovl_st;
	void *map = MAP_FAILED;
	size_t n = 0;
	int fd, i;
	static const char *const sub[5] = { "lower", "upper", "work", "m", "" };

	if (!mkdtemp(dir))
		return;
	for (i = 0; i < 4; i++) {
		snprintf(p[i], sizeof(p[i]), "%s/%s", dir, sub[i]);
		mkdir(p[i], 0755);
	}
	snprintf(file, sizeof(file), "%s/lib.so", p[0]);
	fd = open(file, O_CREAT | O_WRONLY, 0755);
	if (fd < 0 || ftruncate(fd, 4096) || close(fd))
		goto out;
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s",
		 p[0], p[1], p[2]);
	if (mount("overlay", p[3], "overlay", 0, opts)) {
		printf("test_procmaps: cannot mount overlay (%s): overlay part "
		       "skipped\n", strerror(errno));
		goto out;
	}
	CHECK(stat(file, &lower_st) == 0);
	snprintf(file, sizeof(file), "%s/lib.so", p[3]);
	fd = open(file, O_RDONLY);
	CHECK(fd >= 0 && fstat(fd, &ovl_st) == 0);
	if (fd >= 0) {
		map = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		close(fd);
	}
	if (map != MAP_FAILED) {
		CHECK_INT(procmaps_files(getpid(), &files, &n), 0);
		mf = find_path(files, n, file);
		CHECK(mf != NULL);
		if (mf) {
			CHECK(mf->ino == lower_st.st_ino);
			CHECK(mf->dev == lower_st.st_dev);
			/* the overlay's own device differs: containers would not share */
			CHECK(ovl_st.st_dev != lower_st.st_dev);
		}
		free(files);
		munmap(map, 4096);
	}
	umount2(p[3], MNT_DETACH);
out:
	snprintf(opts, sizeof(opts), "rm -rf %s", dir);
	if (system(opts))
		fprintf(stderr, "cannot remove %s\n", dir);
}

static void test_state(void)
{
	siginfo_t si;
	int status;
	pid_t pid;

	CHECK_INT(procmaps_state(getpid()), 'R');
	pid = fork();
	CHECK(pid >= 0);
	if (pid < 0)
		return;
	if (pid == 0) {
		/* comm with spaces and parentheses: stat parsing from the last ')' */
		prctl(PR_SET_NAME, "a) T (b) c", 0, 0, 0);
		raise(SIGSTOP);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status));
	CHECK_INT(procmaps_state(pid), 'T');
	kill(pid, SIGKILL);
	/* killed but not reaped (WNOWAIT): a zombie, then gone */
	CHECK(waitid(P_PID, pid, &si, WEXITED | WNOWAIT) == 0);
	CHECK_INT(procmaps_state(pid), 'Z');
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_INT(procmaps_state(pid), 0);
}

/* the start time names a process: the same for one, another for a later one */
static void test_start_time(void)
{
	char line[] = "42 (a) b) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 123456 19 20\n";
	char *state = procmaps_stat_parse(line);
	uint64_t start = 0, a = 0, b = 0;
	char st = 0;
	int status;
	pid_t pid;

	CHECK(state && *state == 'S');
	CHECK_INT(procmaps_stat_start(state, &start), 0);
	CHECK(start == 123456);
	CHECK_INT(procmaps_stat_start("S 1 2 3", &start), -EINVAL);
	CHECK_INT(procmaps_stat_start("S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x", &start),
		  -EINVAL);
	CHECK_INT(procmaps_identity(getpid(), &st, &a), 0);
	CHECK_INT(st, 'R');
	CHECK_INT(procmaps_identity(getpid(), &st, &b), 0);
	CHECK(a && a == b);
	/* a child started later (a tick is 10 ms): a later start time */
	usleep(30000);
	pid = fork();
	CHECK(pid >= 0);
	if (pid < 0)
		return;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	CHECK_INT(procmaps_identity(pid, &st, &b), 0);
	CHECK(b > a);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_INT(procmaps_identity(pid, &st, &b), -ENOENT);
}

int main(void)
{
	test_parse();
	test_self();
	test_overlay();
	test_state();
	test_start_time();
	return check_finish("test_procmaps");
}
