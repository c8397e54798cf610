/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ccld's own NCCL header: a drop-in for the subset of NVIDIA's nccl.h (2.28)
 * that ccld hooks and the GPU-less stand-in (tests/sim) implements.  Enum
 * values, types and prototypes are facts of NCCL's ABI and match the real
 * header; nothing here is copied from it.  A program built against either
 * header links and runs against either library.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>
#include "cuda_runtime.h"

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 22809
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : \
			       (X) * 10000 + (Y) * 100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm *ncclComm_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;

typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
	ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* ncclConfig_v22800: layout and initializer as in NCCL 2.28 */
typedef struct ncclConfig_v22800 {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	const char *netName;
	int splitShare;
	int trafficClass;
	const char *commName;
	int collnetEnable;
	int CTAPolicy;
	int shrinkShare;
	int nvlsCTAs;
	int nChannelsPerNetPeer;
	int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_MAGIC 0xcafebeef
#define NCCL_CONFIG_INITIALIZER {					\
	sizeof(ncclConfig_t), NCCL_CONFIG_MAGIC,			\
	NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),		\
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,			\
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,			\
	NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,			\
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR,			\
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,			\
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,			\
	NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,			\
}

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
	ncclSum = 0,
	ncclProd = 1,
	ncclMax = 2,
	ncclMin = 3,
	ncclAvg = 4,
	ncclNumOps = 5,
	ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
	ncclInt8 = 0, ncclChar = 0,
	ncclUint8 = 1,
	ncclInt32 = 2, ncclInt = 2,
	ncclUint32 = 3,
	ncclInt64 = 4,
	ncclUint64 = 5,
	ncclFloat16 = 6, ncclHalf = 6,
	ncclFloat32 = 7, ncclFloat = 7,
	ncclFloat64 = 8, ncclDouble = 8,
	ncclBfloat16 = 9,
	ncclFloat8e4m3 = 10,
	ncclFloat8e5m2 = 11,
	ncclNumTypes = 12
} ncclDataType_t;

/* Every function exists as ncclX (weak) and pncclX (strong, same address). */
#define NCCL_SIM_DECL(ret, name, args) ret name args; ret p##name args

NCCL_SIM_DECL(ncclResult_t, ncclGetVersion, (int *version));
NCCL_SIM_DECL(ncclResult_t, ncclGetUniqueId, (ncclUniqueId *uniqueId));
NCCL_SIM_DECL(ncclResult_t, ncclCommInitRankConfig, (ncclComm_t *comm, int nranks,
	ncclUniqueId commId, int rank, ncclConfig_t *config));
NCCL_SIM_DECL(ncclResult_t, ncclCommInitRank, (ncclComm_t *comm, int nranks,
	ncclUniqueId commId, int rank));
NCCL_SIM_DECL(ncclResult_t, ncclCommInitRankScalable, (ncclComm_t *newcomm, int nranks,
	int myrank, int nId, ncclUniqueId *commIds, ncclConfig_t *config));
NCCL_SIM_DECL(ncclResult_t, ncclCommInitAll, (ncclComm_t *comm, int ndev, const int *devlist));
NCCL_SIM_DECL(ncclResult_t, ncclCommFinalize, (ncclComm_t comm));
NCCL_SIM_DECL(ncclResult_t, ncclCommDestroy, (ncclComm_t comm));
NCCL_SIM_DECL(ncclResult_t, ncclCommAbort, (ncclComm_t comm));
NCCL_SIM_DECL(ncclResult_t, ncclCommSplit, (ncclComm_t comm, int color, int key,
	ncclComm_t *newcomm, ncclConfig_t *config));
NCCL_SIM_DECL(const char *, ncclGetErrorString, (ncclResult_t result));
NCCL_SIM_DECL(const char *, ncclGetLastError, (ncclComm_t comm));
NCCL_SIM_DECL(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError));
NCCL_SIM_DECL(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int *count));
NCCL_SIM_DECL(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int *device));
NCCL_SIM_DECL(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int *rank));
NCCL_SIM_DECL(ncclResult_t, ncclReduce, (const void *sendbuff, void *recvbuff, size_t count,
	ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclBcast, (void *buff, size_t count, ncclDataType_t datatype,
	int root, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclBroadcast, (const void *sendbuff, void *recvbuff, size_t count,
	ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclAllReduce, (const void *sendbuff, void *recvbuff, size_t count,
	ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclReduceScatter, (const void *sendbuff, void *recvbuff,
	size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
	cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclAllGather, (const void *sendbuff, void *recvbuff,
	size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclAlltoAll, (const void *sendbuff, void *recvbuff, size_t count,
	ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclGather, (const void *sendbuff, void *recvbuff, size_t count,
	ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclScatter, (const void *sendbuff, void *recvbuff, size_t count,
	ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclSend, (const void *sendbuff, size_t count,
	ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclRecv, (void *recvbuff, size_t count,
	ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream));
NCCL_SIM_DECL(ncclResult_t, ncclGroupStart, (void));
NCCL_SIM_DECL(ncclResult_t, ncclGroupEnd, (void));

#undef NCCL_SIM_DECL

#ifdef __cplusplus
}
#endif
#endif /* NCCL_H_ */
