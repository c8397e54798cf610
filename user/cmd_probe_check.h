/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `ccld-trace probe-check [--json] LIB`: what ccld can hook in a library. */
#ifndef CCLD_CMD_PROBE_CHECK_H
#define CCLD_CMD_PROBE_CHECK_H

/*
 * argv[0] is "probe-check".  Exit status: 0 every required tier A hook
 * resolves, 1 some do not (or LIB cannot be read), 2 bad usage.
 */
int cmd_probe_check(int argc, char **argv);

#endif
