// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ccld-trace: find the rank that makes an NCCL job hang or slow down.
 * Subcommands in a table (bpftool style); no subcommand means live tracing.
 */
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include "cmd.h"

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
} cmds[] = {
	{ "record", cmd_record },
	{ "daemon", cmd_daemon },
	{ "replay", cmd_replay },
	{ "probe-check", cmd_probe_check },
};

/*
 * A crash prints where it happened (a rare SIGSEGV at the end of a step-hook
 * run is still open: docs/notes), then dies of the signal as before.  Only
 * async-signal-safe calls: backtrace() is made safe by a first call at start.
 */
static void on_crash(int sig)
{
	void *frames[64];
	int n = backtrace(frames, 64);

	(void)!write(STDERR_FILENO, "ccld-trace: crashed; backtrace:\n", 32);
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void crash_handlers(void)
{
	void *warm[1];

#ifdef __SANITIZE_ADDRESS__
	return;		/* ASan's own handler reports a crash, with more */
#endif
	backtrace(warm, 1);	/* loads libgcc now, not in the handler */
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGABRT, on_crash);
}

int main(int argc, char **argv)
{
	size_t i;

	crash_handlers();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && argv[1][0] != '-') {
		for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			if (strcmp(argv[1], cmds[i].name) == 0)
				return cmds[i].fn(argc - 1, argv + 1);
		}
		return cmd_bad_usage("unknown command '%s'", argv[1]);
	}
	return cmd_live(argc, argv);
}
