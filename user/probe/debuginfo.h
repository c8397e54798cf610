/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Separate debuginfo of a stripped library, found by its GNU build-id
 * where distributions and debuginfod put it:
 *
 *   $CCLD_DEBUGINFO_DIR/.build-id/xx/yyyy.debug
 *   /usr/lib/debug/.build-id/xx/yyyy.debug
 *   $DEBUGINFOD_CACHE_PATH/<build-id>/debuginfo
 *   $XDG_CACHE_HOME/debuginfod_client/<build-id>/debuginfo
 *   $HOME/.cache/debuginfod_client/<build-id>/debuginfo
 *
 * each first inside the target's root (a library path under /proc/PID/root,
 * as attach passes it), then on the host.  A candidate counts only if it
 * carries the same build-id and has .debug_info.
 */
#ifndef CCLD_DEBUGINFO_H
#define CCLD_DEBUGINFO_H

#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define DEBUGINFO_MAX_CANDIDATES 10

/*
 * The candidate paths for BUILD_ID (lowercase hex) of the library at
 * LIB_PATH, in search order, into OUT (at most MAX).  Returns how many
 * (0 for an unusable build-id).
 */
int debuginfo_candidates(const char *lib_path, const char *build_id,
			 char (*out)[PATH_MAX], int max);

/* True when ELF has a .debug_info (or .zdebug_info) section with bits. */
bool debuginfo_has_dwarf(Elf *elf);

/*
 * The first candidate that is an ELF file with BUILD_ID and DWARF, into
 * OUT.  False when there is none.
 */
bool debuginfo_find(const char *lib_path, const char *build_id, char *out,
		    size_t outlen);

#endif
