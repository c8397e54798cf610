// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reductions of the NCCL stand-in: sum, prod, max, min, avg on every
 * ncclDataType_t.  fp16, bf16 and the two fp8 formats are widened to float,
 * combined, and rounded back to nearest-even (fp8 saturates to the largest
 * finite value, as NCCL's satfinite conversions).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "sim.h"

size_t sim_dtype_size(int dtype)
{
	switch (dtype) {
	case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2:
		return 1;
	case ncclFloat16: case ncclBfloat16:
		return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32:
		return 4;
	case ncclInt64: case ncclUint64: case ncclFloat64:
		return 8;
	}
	return 0;
}

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	uint32_t bits;
	float f;

	if (exp == 0) {
		f = ldexpf((float)man, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		bits = sign | 0x7f800000 | (man << 13);
	else
		bits = sign | ((exp + 112) << 23) | (man << 13);
	memcpy(&f, &bits, 4);
	return f;
}

static uint16_t float_to_half(float f)
{
	uint32_t x, sign, man;
	int exp;

	memcpy(&x, &f, 4);
	sign = (x >> 16) & 0x8000;
	if ((x & 0x7fffffff) > 0x7f800000)
		return sign | 0x7e00;
	exp = (int)((x >> 23) & 0xff) - 127 + 15;
	man = x & 0x7fffff;
	if (exp >= 31)
		return sign | 0x7c00;
	if (exp <= 0) {
		/* subnormal: shift in the implicit bit, round to nearest even */
		uint32_t m, shift, r, half;

		if (exp < -10)
			return sign;
		m = man | 0x800000;
		shift = 14 - exp;
		r = m >> shift;
		half = 1u << (shift - 1);
		if ((m & ((1u << shift) - 1)) > half || ((m & ((1u << shift) - 1)) == half && (r & 1)))
			r++;
		return sign | r;
	}
	{
		uint32_t h = sign | ((uint32_t)exp << 10) | (man >> 13);
		uint32_t rest = man & 0x1fff;

		if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
			h++;	/* may carry into the exponent: still correct */
		return h;
	}
}

static float bf16_to_float(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;

	memcpy(&f, &x, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t x;

	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (x >> 16) | 0x40;
	x += 0x7fff + ((x >> 16) & 1);
	return x >> 16;
}

/* fp8: decode tables built once; encode by nearest finite magnitude */
static float fp8_val[2][256];
static int fp8_maxcode[2] = { 0x7e, 0x7b };	/* largest finite: 448, 57344 */
static pthread_once_t fp8_once = PTHREAD_ONCE_INIT;

static float fp8_decode(int fmt, uint8_t c)
{
	int ebits = fmt ? 5 : 4, mbits = 7 - ebits, bias = fmt ? 15 : 7;
	int e = (c >> mbits) & ((1 << ebits) - 1), m = c & ((1 << mbits) - 1);
	float v;

	if (fmt == 0 && (c & 0x7f) == 0x7f)
		return NAN;
	if (fmt == 1 && e == 31)
		return m ? NAN : ((c & 0x80) ? -INFINITY : INFINITY);
	if (e == 0)
		v = ldexpf((float)m, 1 - bias - mbits);
	else
		v = ldexpf((float)((1 << mbits) | m), e - bias - mbits);
	return (c & 0x80) ? -v : v;
}

static void fp8_init(void)
{
	int f, c;

	for (f = 0; f < 2; f++)
		for (c = 0; c < 256; c++)
			fp8_val[f][c] = fp8_decode(f, c);
}

static uint8_t fp8_encode(int fmt, float v)
{
	uint8_t sign = signbit(v) ? 0x80 : 0;
	float a = fabsf(v);
	int lo = 0, hi = fp8_maxcode[fmt];

	if (isnan(v))
		return 0x7f;
	if (a >= fp8_val[fmt][hi])
		return sign | hi;
	/* magnitudes of codes 0..maxcode increase: binary search the bracket */
	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;

		if (fp8_val[fmt][mid] <= a)
			lo = mid;
		else
			hi = mid;
	}
	{
		float dl = a - fp8_val[fmt][lo], dh = fp8_val[fmt][hi] - a;
		int c = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);

		return sign | c;
	}
}

static float load_f(const void *p, size_t i, int dtype)
{
	switch (dtype) {
	case ncclFloat16: return half_to_float(((const uint16_t *)p)[i]);
	case ncclBfloat16: return bf16_to_float(((const uint16_t *)p)[i]);
	case ncclFloat8e4m3: return fp8_val[0][((const uint8_t *)p)[i]];
	default: return fp8_val[1][((const uint8_t *)p)[i]];
	}
}

static void store_f(void *p, size_t i, int dtype, float v)
{
	switch (dtype) {
	case ncclFloat16: ((uint16_t *)p)[i] = float_to_half(v); break;
	case ncclBfloat16: ((uint16_t *)p)[i] = float_to_bf16(v); break;
	case ncclFloat8e4m3: ((uint8_t *)p)[i] = fp8_encode(0, v); break;
	default: ((uint8_t *)p)[i] = fp8_encode(1, v); break;
	}
}

/* integer ops wrap like the GPU's: do them on the unsigned type */
#define REDUCE_INT(T, UT)						\
	do {								\
		T *a = acc; const T *b = in;				\
		for (i = 0; i < n; i++) {				\
			switch (redop) {				\
			case ncclProd: a[i] = (T)((UT)a[i] * (UT)b[i]); break; \
			case ncclMax: a[i] = a[i] > b[i] ? a[i] : b[i]; break; \
			case ncclMin: a[i] = a[i] < b[i] ? a[i] : b[i]; break; \
			default: a[i] = (T)((UT)a[i] + (UT)b[i]); break; \
			}						\
		}							\
	} while (0)

#define REDUCE_FLT(T)							\
	do {								\
		T *a = acc; const T *b = in;				\
		for (i = 0; i < n; i++) {				\
			switch (redop) {				\
			case ncclProd: a[i] = a[i] * b[i]; break;	\
			case ncclMax: a[i] = fmax(a[i], b[i]); break;	\
			case ncclMin: a[i] = fmin(a[i], b[i]); break;	\
			default: a[i] = a[i] + b[i]; break;		\
			}						\
		}							\
	} while (0)

/* ACC[i] = ACC[i] op IN[i]; avg accumulates a sum (sim_avg_finish divides) */
void sim_reduce(void *acc, const void *in, size_t n, int dtype, int redop)
{
	size_t i;

	switch (dtype) {
	case ncclInt8: REDUCE_INT(int8_t, uint8_t); return;
	case ncclUint8: REDUCE_INT(uint8_t, uint8_t); return;
	case ncclInt32: REDUCE_INT(int32_t, uint32_t); return;
	case ncclUint32: REDUCE_INT(uint32_t, uint32_t); return;
	case ncclInt64: REDUCE_INT(int64_t, uint64_t); return;
	case ncclUint64: REDUCE_INT(uint64_t, uint64_t); return;
	case ncclFloat32: REDUCE_FLT(float); return;
	case ncclFloat64: REDUCE_FLT(double); return;
	}
	pthread_once(&fp8_once, fp8_init);
	for (i = 0; i < n; i++) {
		float a = load_f(acc, i, dtype), b = load_f(in, i, dtype), r;

		switch (redop) {
		case ncclProd: r = a * b; break;
		case ncclMax: r = fmaxf(a, b); break;
		case ncclMin: r = fminf(a, b); break;
		default: r = a + b; break;
		}
		store_f(acc, i, dtype, r);
	}
}

#define AVG_INT(T)							\
	do {								\
		T *a = acc;						\
		for (i = 0; i < n; i++)					\
			a[i] = (T)(a[i] / (T)nranks);			\
	} while (0)

void sim_avg_finish(void *acc, size_t n, int dtype, int nranks)
{
	size_t i;

	switch (dtype) {
	case ncclInt8: AVG_INT(int8_t); return;
	case ncclUint8: AVG_INT(uint8_t); return;
	case ncclInt32: AVG_INT(int32_t); return;
	case ncclUint32: AVG_INT(uint32_t); return;
	case ncclInt64: AVG_INT(int64_t); return;
	case ncclUint64: AVG_INT(uint64_t); return;
	case ncclFloat32: AVG_INT(float); return;
	case ncclFloat64: AVG_INT(double); return;
	}
	pthread_once(&fp8_once, fp8_init);
	for (i = 0; i < n; i++)
		store_f(acc, i, dtype, load_f(acc, i, dtype) / (float)nranks);
}
