/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The dynamic loader's debugger hook (_dl_debug_state / _r_debug). */
#ifndef CCLD_LDSO_H
#define CCLD_LDSO_H

#include <stdbool.h>
#include <stddef.h>

/* ld-linux*.so* / ld-*.so*: a dynamic loader by its file name */
bool ldso_is_loader(const char *path);

/*
 * For the uprobe on PATH's _dl_debug_state: its file offset (*off) and the
 * distance from it to _r_debug in the loaded image (*rdebug_delta), which
 * the BPF program adds to the probe's instruction pointer.  0 or -1.
 */
int ldso_debug_hook(const char *path, long *off, long *rdebug_delta,
		    char *err, size_t errlen);

#endif
