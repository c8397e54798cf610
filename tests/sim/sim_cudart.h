/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Private interface between the stand-in libnccl and libcudart (tests/sim):
 * kernels on the simulated streams and the GPU fault state.  Exported by
 * libcudart.so.13 with a ccldsim_ prefix; no real CUDA program uses it.
 */
#ifndef CCLD_SIM_CUDART_H
#define CCLD_SIM_CUDART_H

#include <stdint.h>
#include "cuda_runtime_api.h"

/* A simulated kernel: runs on the stream's executor thread, in order. */
typedef void (*ccldsim_kernel_fn)(void *arg);

/* Queues FN(ARG) on STREAM (NULL / legacy / per-thread: the default stream). */
cudaError_t ccldsim_stream_launch(cudaStream_t stream, ccldsim_kernel_fn fn, void *arg);

/*
 * GPU faults of this process (CCLD_SIM_FAULT gpustall / gpuslow, parsed by
 * libnccl): from AT_NS (CLOCK_MONOTONIC) until UNTIL_NS (UINT64_MAX: for
 * ever), kernels stop (STALL) or run FACTOR times slower.
 */
void ccldsim_gpu_fault_set(uint64_t at_ns, uint64_t until_ns, int stall, double factor);

/*
 * Called by executing kernels: blocks forever while the GPU is stalled,
 * else returns the slow-down factor (1.0 normally).
 */
double ccldsim_gpu_gate(void);

/* Sleeps USEC microseconds of simulated GPU time, scaled by the gate. */
void ccldsim_gpu_busy(double usec);

#endif
