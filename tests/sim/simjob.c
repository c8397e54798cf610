// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-simjob: the launcher of the simulated training job (docs/simjob.md).
 * Like torchrun it starts N rank processes as its children (fork + exec of
 * ccld-simjob-rank with RANK / WORLD_SIZE / LOCAL_RANK in the environment),
 * prints each rank's pid at once, waits for all and reports.  It does not
 * link NCCL itself, so a tracer sees exactly the N rank processes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "simjob_opts.h"
#include "simjob_random.h"

static pid_t g_pids[64];
static int g_n;
static char g_rundir[64];
static volatile sig_atomic_t g_sig;

static void on_signal(int sig)
{
	g_sig = sig;
}

static void kill_all(void)
{
	int r;

	for (r = 0; r < g_n; r++)
		if (g_pids[r] > 0)
			kill(g_pids[r], SIGKILL);
}

/* removes the job's shared memory (named by the tag in the unique id) */
static void cleanup(void)
{
	char path[PATH_MAX + 300], id[64] = "", prefix[64];
	struct dirent *de;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "%s/id", g_rundir);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(id, sizeof(id), f))
			id[0] = 0;
		fclose(f);
	}
	/* the id's hex starts with "CCLDSIM1" (16 digits) then the 16-char tag */
	if (strlen(id) >= 64 - 1) {
		char tag[17];
		int i;

		for (i = 0; i < 16; i++) {
			unsigned int b;

			sscanf(id + 16 + 2 * i, "%2x", &b);
			tag[i] = (char)b;
		}
		tag[16] = 0;
		snprintf(prefix, sizeof(prefix), "ccldsim-%s-", tag);
		d = opendir("/dev/shm");
		while (d && (de = readdir(d)))
			if (!strncmp(de->d_name, prefix, strlen(prefix))) {
				snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
				unlink(path);
			}
		if (d)
			closedir(d);
	}
	d = opendir(g_rundir);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", g_rundir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(g_rundir);
}

static const char *worker_path(char *buf, size_t len)
{
	const char *env = getenv("CCLD_SIMJOB_RANK_BIN");
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env)
		return env;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		return NULL;
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	snprintf(buf, len, "%s/../sim/bin/ccld-simjob-rank", self);
	return buf;
}

/*
 * CCLD_SIMJOB_NETNS=PREFIX: rank R runs in the network namespace PREFIX<R>
 * (ip netns add PREFIXR, /run/netns/PREFIXR), e.g. for the socket transport
 * over veth links with loss on one rank's link.
 */
static int enter_netns(int rank)
{
	const char *prefix = getenv("CCLD_SIMJOB_NETNS");
	char path[PATH_MAX];
	int fd;

	if (!prefix || !*prefix)
		return 0;
	snprintf(path, sizeof(path), "/run/netns/%s%d", prefix, rank);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "ccld-simjob: rank %d: cannot enter network namespace %s: %s\n",
			rank, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * --random SEED [--dry-run]: the drawn options replace these two, the
 * other options given follow them (so --pidfile, --timeout, --wait-start
 * or an override apply); the drawn stand-in fault goes to CCLD_SIM_FAULT.
 * Returns -1 on bad usage; exits after --dry-run.
 */
static int random_job(int *argc, char ***argv)
{
	static struct simjob_draw d;
	static char *nargv[DRAW_MAX_ARGS + 128];
	unsigned long long seed = 0;
	int i, k = 0, dry = 0, have = 0;
	char *end;

	for (i = 1; i < *argc; i++) {
		if (!strcmp((*argv)[i], "--random") && i + 1 < *argc) {
			seed = strtoull((*argv)[++i], &end, 10);
			if (end == (*argv)[i] || *end) {
				fprintf(stderr, "ccld-simjob: bad value '%s' for --random\n",
					(*argv)[i]);
				return -1;
			}
			have = 1;
		} else if (!strcmp((*argv)[i], "--dry-run")) {
			dry = 1;
		}
	}
	if (!have) {
		if (dry) {
			fprintf(stderr, "ccld-simjob: --dry-run needs --random SEED\n");
			return -1;
		}
		return 0;
	}
	if (*argc > 128) {
		fprintf(stderr, "ccld-simjob: too many options with --random\n");
		return -1;
	}
	simjob_random(seed, &d);
	nargv[k++] = (*argv)[0];
	for (i = 0; i < d.argc; i++)
		nargv[k++] = d.argv[i];
	for (i = 1; i < *argc; i++) {
		if (!strcmp((*argv)[i], "--random"))
			i++;
		else if (strcmp((*argv)[i], "--dry-run"))
			nargv[k++] = (*argv)[i];
	}
	nargv[k] = NULL;
	if (dry) {
		printf("%s\n", d.json);
		if (d.net_us)
			printf("CCLD_SIM_NET_US=%d ", d.net_us);
		printf("%s%s%sccld-simjob", d.fault_env[0] ? "CCLD_SIM_FAULT='" : "", d.fault_env,
		       d.fault_env[0] ? "' " : "");
		for (i = 1; i < k; i++)
			printf(" %s", nargv[i]);
		printf("\n");
		exit(0);
	}
	if (d.fault_env[0] && setenv("CCLD_SIM_FAULT", d.fault_env, 1)) {
		fprintf(stderr, "ccld-simjob: setenv: %s\n", strerror(errno));
		return -1;
	}
	if (d.net_us) {
		char us[16];

		snprintf(us, sizeof(us), "%d", d.net_us);
		if (setenv("CCLD_SIM_NET_US", us, 1)) {
			fprintf(stderr, "ccld-simjob: setenv: %s\n", strerror(errno));
			return -1;
		}
	}
	*argc = k;
	*argv = nargv;
	fprintf(stderr, "ccld-simjob: random job %llu: %s\n", seed, d.json);
	return 0;
}

int main(int argc, char **argv)
{
	struct simjob_opts o;
	char wbuf[PATH_MAX + 64], num[32];
	const char *worker;
	struct sigaction sa;
	int r, i, status, left, bad = 0, timed_out = 0;
	time_t deadline = 0;

	if (random_job(&argc, &argv))
		return 2;
	if (simjob_parse(argc, argv, &o))
		return 2;
	worker = worker_path(wbuf, sizeof(wbuf));
	if (!worker || access(worker, X_OK)) {
		fprintf(stderr, "ccld-simjob: rank program %s not found (set CCLD_SIMJOB_RANK_BIN)\n",
			worker ? worker : "?");
		return 1;
	}
	snprintf(g_rundir, sizeof(g_rundir), "/tmp/ccld-simjob.XXXXXX");
	if (!mkdtemp(g_rundir)) {
		fprintf(stderr, "ccld-simjob: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	fflush(NULL);
	g_n = o.ranks;
	for (r = 0; r < g_n; r++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "ccld-simjob: fork: %s\n", strerror(errno));
			kill_all();
			cleanup();
			return 1;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlive the launcher */
			snprintf(num, sizeof(num), "%d", r);
			setenv("RANK", num, 1);
			setenv("LOCAL_RANK", num, 1);
			snprintf(num, sizeof(num), "%d", g_n);
			setenv("WORLD_SIZE", num, 1);
			setenv("LOCAL_WORLD_SIZE", num, 1);
			setenv("CCLD_SIMJOB_RUNDIR", g_rundir, 1);
			if (o.ranks_per_host > 0) {
				snprintf(num, sizeof(num), "simhost%d", r / o.ranks_per_host);
				setenv("NCCL_HOSTID", num, 1);
			} else {
				/*
				 * a cluster of one-rank hosts: all over the
				 * network; a GPU of its own for each rank
				 * (NCCL refuses two ranks of one host on one
				 * GPU; 16 ranks need more than the default 8)
				 */
				setenv("NCCL_P2P_DISABLE", "1", 1);
				setenv("NCCL_SHM_DISABLE", "1", 1);
				snprintf(num, sizeof(num), "%d", g_n);
				setenv("CCLD_SIM_NGPUS", num, 0);
			}
			for (i = 0; i < o.nrenv; i++) {
				const char *eq = strchr(o.renv[i], '=');
				char name[128];

				snprintf(name, sizeof(name), "%.*s", (int)(eq - o.renv[i]),
					 o.renv[i]);
				if (o.renv_rank[i] == r && setenv(name, eq + 1, 1))
					_exit(127);
			}
			if (enter_netns(r))
				_exit(127);
			argv[0] = "ccld-simjob-rank";
			execv(worker, argv);
			fprintf(stderr, "ccld-simjob: exec %s: %s\n", worker, strerror(errno));
			_exit(127);
		}
		g_pids[r] = pid;
		fprintf(stderr, "rank %d pid %d\n", r, (int)pid);
	}
	if (o.pidfile) {
		char tmp[PATH_MAX + 8];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", o.pidfile);
		f = fopen(tmp, "w");
		for (r = 0; f && r < g_n; r++)
			fprintf(f, "%d %d\n", r, (int)g_pids[r]);
		if (!f || fclose(f) || rename(tmp, o.pidfile))
			fprintf(stderr, "ccld-simjob: cannot write %s: %s\n", o.pidfile, strerror(errno));
	}
	if (o.timeout_s > 0)
		deadline = time(NULL) + (time_t)(o.timeout_s + 0.999);
	for (left = g_n; left > 0;) {
		pid_t pid;

		if (deadline)
			alarm((unsigned int)(deadline > time(NULL) ? deadline - time(NULL) : 1));
		pid = waitpid(-1, &status, 0);
		if (pid < 0) {
			if (errno != EINTR)
				break;
			if (g_sig == SIGALRM && time(NULL) < deadline) {
				g_sig = 0;
				continue;
			}
			if (g_sig == SIGALRM) {
				fprintf(stderr, "ccld-simjob: timeout after %g s, killing %d rank(s)\n",
					o.timeout_s, left);
				timed_out = 1;
			} else {
				fprintf(stderr, "ccld-simjob: signal %d, killing the ranks\n", (int)g_sig);
			}
			kill_all();
			while (waitpid(-1, &status, 0) > 0)
				;
			cleanup();
			return timed_out ? 124 : 128 + g_sig;
		}
		for (r = 0; r < g_n; r++)
			if (g_pids[r] == pid)
				break;
		if (r == g_n)
			continue;
		g_pids[r] = 0;
		left--;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			fprintf(stderr, "rank %d pid %d: exited 0\n", r, (int)pid);
		} else {
			bad = 1;
			if (WIFEXITED(status))
				fprintf(stderr, "rank %d pid %d: exited %d\n", r, (int)pid,
					WEXITSTATUS(status));
			else
				fprintf(stderr, "rank %d pid %d: killed by signal %d\n", r, (int)pid,
					WTERMSIG(status));
		}
	}
	cleanup();
	fprintf(stderr, "ccld-simjob: %d ranks, %s\n", g_n, bad ? "FAILED" : "all ok");
	return bad;
}
