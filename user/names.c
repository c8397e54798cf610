// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "names.h"

/* nccl.h: ncclDataType_t (values are ABI facts) */
static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
	{ "int8", 1 }, { "uint8", 1 }, { "int32", 4 }, { "uint32", 4 },
	{ "int64", 8 }, { "uint64", 8 }, { "float16", 2 }, { "float32", 4 },
	{ "float64", 8 }, { "bfloat16", 2 }, { "fp8e4m3", 1 }, { "fp8e5m2", 1 },
};

static const char *const redops[] = { "sum", "prod", "max", "min", "avg" };

const char *dtype_name(int dtype)
{
	if (dtype < 0 || dtype >= (int)(sizeof(dtypes) / sizeof(dtypes[0])))
		return NULL;
	return dtypes[dtype].name;
}

size_t dtype_size(int dtype)
{
	if (dtype < 0 || dtype >= (int)(sizeof(dtypes) / sizeof(dtypes[0])))
		return 0;
	return dtypes[dtype].size;
}

const char *redop_name(int redop)
{
	if (redop < 0 || redop >= (int)(sizeof(redops) / sizeof(redops[0])))
		return NULL;
	return redops[redop];
}
