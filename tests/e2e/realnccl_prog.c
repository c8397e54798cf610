// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Calls the real NCCL API with known, invalid arguments (there is no GPU:
 * the calls fail fast) and prints each call with its return code as a JSON
 * line, then NCCL's last warning, for test_trace_realnccl.sh and
 * test_nccl_warn.sh to compare with what ccld-trace saw.  Built against the
 * stand-in too (its nccl.h): the same calls.
 * Usage: realnccl_prog GOFILE   (waits until GOFILE exists, so the tracer
 * can attach first)
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nccl.h>

#define STREAM(x) ((cudaStream_t)(unsigned long)(x))

/*
 * NCCL's last warning after a call, as the library itself says it
 * (ncclGetLastError): {"last_error":"..."}, for the warnings ccld reads
 */
static void print_last_error(void)
{
	const char *e = ncclGetLastError(NULL);

	if (!e || !e[0])
		return;
	printf("{\"last_error\":\"");
	for (; *e; e++) {
		if (*e == '"' || *e == '\\')
			printf("\\%c", *e);
		else if ((unsigned char)*e < 0x20)
			printf("\\u%04x", (unsigned char)*e);
		else
			putchar(*e);
	}
	printf("\"}\n");
}

static void print_call(const char *op, size_t count, const char *dtype,
		       const char *redop, int root, int peer, unsigned long stream,
		       int ret)
{
	printf("{\"op\":\"%s\",\"count\":%zu,\"dtype\":\"%s\",", op, count, dtype);
	if (redop)
		printf("\"redop\":\"%s\",", redop);
	else
		printf("\"redop\":null,");
	printf(root >= 0 ? "\"root\":%d," : "\"root\":null,", root);
	printf(peer >= 0 ? "\"peer\":%d," : "\"peer\":null,", peer);
	printf("\"stream\":\"0x%lx\",\"ret\":%d}\n", stream, ret);
	print_last_error();
}

int main(int argc, char **argv)
{
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	ncclComm_t comm = NULL, newcomm = NULL;
	ncclUniqueId id;
	struct stat st;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GOFILE\n", argv[0]);
		return 2;
	}
	fprintf(stderr, "pid %d\n", getpid());
	while (stat(argv[1], &st) != 0)
		usleep(20000);

	memset(&id, 0x5a, sizeof(id));
	/* each creation call's config names its comm (read at the call's entry) */
	config.commName = "real-world";
	ret = ncclCommInitRankConfig(&comm, 4, id, 9, &config);
	printf("{\"op\":\"CommInitRankConfig\",\"arg_nranks\":4,\"arg_rank\":9,"
	       "\"name\":\"real-world\",\"ret\":%d}\n", ret);
	print_last_error();
	config.commName = "real-scalable";
	ret = ncclCommInitRankScalable(&comm, 4, 2, 1, &id, &config);
	printf("{\"op\":\"CommInitRankScalable\",\"arg_nranks\":4,\"arg_rank\":2,"
	       "\"name\":\"real-scalable\",\"ret\":%d}\n", ret);
	print_last_error();
	config.commName = "real-split";
	ret = ncclCommSplit(NULL, 3, 5, &newcomm, &config);
	printf("{\"op\":\"CommSplit\",\"color\":3,\"key\":5,\"name\":\"real-split\","
	       "\"ret\":%d}\n", ret);
	print_last_error();
	ret = ncclAllReduce((void *)0x1000, (void *)0x2000, 1234, ncclFloat32,
			    ncclMax, NULL, STREAM(0x5000));
	print_call("AllReduce", 1234, "float32", "max", -1, -1, 0x5000, ret);
	ret = ncclSend((void *)0x3000, 77, ncclInt32, 2, NULL, STREAM(0x6000));
	print_call("Send", 77, "int32", NULL, -1, 2, 0x6000, ret);
	ret = ncclBroadcast((void *)0x1000, (void *)0x2000, 99, ncclUint8, 1,
			    NULL, STREAM(0x7000));
	print_call("Broadcast", 99, "uint8", NULL, 1, -1, 0x7000, ret);
	ret = ncclReduce((void *)0x1000, (void *)0x2000, 4321, ncclFloat64,
			 ncclMin, 3, NULL, STREAM(0x8000));
	print_call("Reduce", 4321, "float64", "min", 3, -1, 0x8000, ret);
	ret = ncclAllGather((void *)0x1000, (void *)0x2000, 55, ncclFloat16,
			    NULL, STREAM(0x9000));
	print_call("AllGather", 55, "float16", NULL, -1, -1, 0x9000, ret);
	ret = ncclRecv((void *)0x3000, 66, ncclBfloat16, 6, NULL, STREAM(0xa000));
	print_call("Recv", 66, "bfloat16", NULL, -1, 6, 0xa000, ret);
	/* 2.28's p2p collectives: PyTorch 2.11 calls ncclAlltoAll */
	ret = ncclAlltoAll((void *)0x1000, (void *)0x2000, 88, ncclInt8, NULL, STREAM(0xb000));
	print_call("AlltoAll", 88, "int8", NULL, -1, -1, 0xb000, ret);
	ret = ncclGather((void *)0x1000, (void *)0x2000, 44, ncclFloat32, 2, NULL,
			 STREAM(0xc000));
	print_call("Gather", 44, "float32", NULL, 2, -1, 0xc000, ret);
	ret = ncclScatter((void *)0x1000, (void *)0x2000, 33, ncclInt64, 1, NULL,
			  STREAM(0xd000));
	print_call("Scatter", 33, "int64", NULL, 1, -1, 0xd000, ret);
	fflush(stdout);
	return 0;
}
