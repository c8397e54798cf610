/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* ccld's minimal cuda_runtime.h: the runtime API subset of cuda_runtime_api.h. */
#ifndef CCLD_CUDA_RUNTIME_H
#define CCLD_CUDA_RUNTIME_H
#include "cuda_runtime_api.h"
#endif
