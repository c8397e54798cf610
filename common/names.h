/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Names and sizes of NCCL enum values as ccld prints them. */
#ifndef CCLD_NAMES_H
#define CCLD_NAMES_H

#include <stddef.h>

/* "float32"...; NULL for a value outside nccl.h's enum */
const char *dtype_name(int dtype);
/* bytes per element, 0 when unknown */
size_t dtype_size(int dtype);
/* "sum"...; NULL for none (0xff) or unknown */
const char *redop_name(int redop);

/*
 * x86-64 system call NR by name ("futex", "pause") for the calls a
 * blocked thread is seen in; NULL for the others (the number is shown).
 */
const char *syscall_name(int nr);

/*
 * NCCL's busId (comm->busId, peerInfo[].busId: the PCI address's hex digits
 * DDDD BB DD F as one number, 0x1a000) as "0000:1a:00.0" into OUT.
 */
void pci_bus_name(unsigned long long bus, char *out, size_t n);

#endif
