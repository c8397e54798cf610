// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Maps an NCCL library and holds one communicator-shaped block in its
 * memory, laid out by the offsets given (there is no GPU: NCCL cannot make
 * a real comm here), for test_layout_table_real.sh to attach ccld-trace
 * to.  Prints "ready ADDR" once the block is filled, then waits until
 * stdin closes.
 *
 * Usage: fakecomm_prog LIB SIZE START_MAGIC END_MAGIC COMM_HASH RANK NRANKS
 *                      CUDA_DEV SEQ_NUMBER SEQ_N COLL_OP_COUNT
 * (byte offsets; the values planted are fixed below)
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NCCL_MAGIC	0x0280028002800280ULL
#define HASH		0x1234abcd5678ef01ULL
#define RANK		1
#define NRANKS		4
#define CUDA_DEV	2
static const uint64_t seq[] = { 3, 0, 5, 0, 7 };

static long arg(char **argv, int i, long size)
{
	char *end;
	long v = strtol(argv[i], &end, 0);

	if (*end || v < 0 || v + 8 > size) {
		fprintf(stderr, "fakecomm_prog: bad offset '%s'\n", argv[i]);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long size, seqn, i;
	uint64_t coll = 0;
	uint8_t *c;
	int32_t v;
	char b;

	if (argc != 12) {
		fprintf(stderr, "usage: fakecomm_prog LIB SIZE START END HASH RANK NRANKS "
			"CUDA_DEV SEQ SEQ_N COLL_OP_COUNT\n");
		return 2;
	}
	if (!dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "fakecomm_prog: %s\n", dlerror());
		return 1;
	}
	size = strtol(argv[2], NULL, 0);
	seqn = strtol(argv[10], NULL, 0);
	if (size < 64 || seqn < 1 || seqn > 5) {
		fprintf(stderr, "fakecomm_prog: bad size or SEQ_N\n");
		return 2;
	}
	c = calloc(1, (size_t)size);
	if (!c)
		return 1;
	memcpy(c + arg(argv, 3, size), &(uint64_t){ NCCL_MAGIC }, 8);
	memcpy(c + arg(argv, 4, size), &(uint64_t){ NCCL_MAGIC }, 8);
	memcpy(c + arg(argv, 5, size), &(uint64_t){ HASH }, 8);
	memcpy(c + arg(argv, 6, size), &(int32_t){ RANK }, 4);
	memcpy(c + arg(argv, 7, size), &(int32_t){ NRANKS }, 4);
	v = CUDA_DEV;
	memcpy(c + arg(argv, 8, size), &v, 4);
	for (i = 0; i < seqn; i++) {
		memcpy(c + arg(argv, 9, size - 8 * i) + 8 * i, &seq[i], 8);
		coll += seq[i];
	}
	memcpy(c + arg(argv, 11, size), &coll, 8);
	printf("ready %p\n", (void *)c);
	fflush(stdout);
	while (read(0, &b, 1) > 0)
		;
	free(c);
	return 0;
}
