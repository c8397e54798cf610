/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef CCLD_CAPS_H
#define CCLD_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* CAP (CAP_BPF, ...) in this process's effective set; true if unknown */
bool have_cap(int cap);
/* why bpf() said EPERM: " (needs ...)", the capability or RLIMIT_MEMLOCK */
const char *load_eperm_hint(void);
/*
 * No NCCL found in PID: true, with ERR filled, when a library of PID whose
 * name says NCCL could not be opened for lack of CAP_SYS_PTRACE or
 * CAP_DAC_READ_SEARCH
 */
bool explain_denied(pid_t pid, char *err, size_t errlen);

#endif
