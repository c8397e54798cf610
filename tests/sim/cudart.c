// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * GPU-less CUDA runtime stand-in (libcudart.so.13): host memory stands in
 * for device memory, each stream is an in-order executor thread, events are
 * completion markers on those streams.  The stand-in libnccl queues its
 * simulated kernels here (sim_cudart.h), so stream order, events and
 * synchronisation behave as on a GPU, including hanging when a kernel hangs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "cuda_runtime_api.h"
#include "sim_cudart.h"

#define API __attribute__((visibility("default")))
#define STREAM_MAGIC 0x53545245414d5349ULL	/* "ISMAERTS" */
#define EVENT_MAGIC 0x4556454e54534953ULL
#define DEFAULT_NDEV 8

enum work_type { W_KERNEL, W_EVENT, W_WAIT, W_COPY, W_SET };

struct work {
	enum work_type type;
	ccldsim_kernel_fn fn;
	void *arg;
	struct CUevent_st *ev;
	uint64_t gen;
	void *dst;
	const void *src;
	size_t n;
	int val;
	struct work *next;
};

struct CUstream_st {
	uint64_t magic;
	pthread_t thr;
	pthread_cond_t cv;		/* new work or destroy */
	struct work *head, *tail;
	uint64_t enq, done;		/* items queued / finished */
	unsigned int flags;
	int destroyed;
	struct CUstream_st *next;	/* all live streams */
};

struct CUevent_st {
	uint64_t magic;
	unsigned int flags;
	uint64_t gen;		/* records so far */
	uint64_t done_gen;	/* last record that completed */
	uint64_t t_ns;		/* completion time of done_gen */
	int refs;		/* user handle + queued items */
};

/* one lock for all runtime state; g_done is broadcast on every completion */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_done = PTHREAD_COND_INITIALIZER;
static struct CUstream_st *g_streams;
static struct CUstream_st *g_default;
static __thread int t_dev;
static __thread cudaError_t t_last_err;

/* GPU faults */
static uint64_t g_fault_at = UINT64_MAX, g_fault_until = UINT64_MAX;
static int g_fault_stall;
static double g_fault_factor = 1.0;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static cudaError_t ret_err(cudaError_t e)
{
	if (e != cudaSuccess)
		t_last_err = e;
	return e;
}

static int ndev(void)
{
	const char *s = getenv("CCLD_SIM_NGPUS");
	int n = s ? atoi(s) : DEFAULT_NDEV;

	return n > 0 ? n : DEFAULT_NDEV;
}

API void ccldsim_gpu_fault_set(uint64_t at_ns, uint64_t until_ns, int stall, double factor)
{
	pthread_mutex_lock(&g_mu);
	g_fault_at = at_ns;
	g_fault_until = until_ns;
	g_fault_stall = stall;
	g_fault_factor = factor > 0 ? factor : 1.0;
	pthread_mutex_unlock(&g_mu);
}

API double ccldsim_gpu_gate(void)
{
	double f = 1.0;

	pthread_mutex_lock(&g_mu);
	if (now_ns() >= g_fault_at && now_ns() < g_fault_until) {
		/* a stalled GPU never finishes the kernel: wait forever, no spin */
		while (g_fault_stall)
			pthread_cond_wait(&g_done, &g_mu);
		f = g_fault_factor;
	}
	pthread_mutex_unlock(&g_mu);
	return f;
}

API void ccldsim_gpu_busy(double usec)
{
	double f = ccldsim_gpu_gate();
	uint64_t ns = (uint64_t)(usec * f * 1000.0);
	struct timespec ts = { ns / 1000000000ull, ns % 1000000000ull };

	if (ns)
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
}

static void event_put_locked(struct CUevent_st *ev)
{
	if (--ev->refs == 0) {
		ev->magic = 0;
		free(ev);
	}
}

static void run_work(struct work *w)
{
	switch (w->type) {
	case W_KERNEL:
		ccldsim_gpu_gate();
		w->fn(w->arg);
		break;
	case W_COPY:
		ccldsim_gpu_gate();
		memmove(w->dst, w->src, w->n);
		break;
	case W_SET:
		ccldsim_gpu_gate();
		memset(w->dst, w->val, w->n);
		break;
	case W_EVENT:
		/*
		 * Not gated: a GPU fault is a kernel that never finishes; the
		 * stream order holds back the events behind it, and an event
		 * behind finished kernels completes (a stall never lands between
		 * the last kernel of a step and its event).
		 */
		pthread_mutex_lock(&g_mu);
		if (w->ev->done_gen < w->gen) {
			w->ev->done_gen = w->gen;
			w->ev->t_ns = now_ns();
		}
		event_put_locked(w->ev);
		pthread_mutex_unlock(&g_mu);
		break;
	case W_WAIT:
		pthread_mutex_lock(&g_mu);
		while (w->ev->done_gen < w->gen)
			pthread_cond_wait(&g_done, &g_mu);
		event_put_locked(w->ev);
		pthread_mutex_unlock(&g_mu);
		break;
	}
}

static void *stream_main(void *arg)
{
	struct CUstream_st *s = arg;
	struct work *w;

	prctl(PR_SET_NAME, "ccldsim-stream");
	prctl(PR_SET_TIMERSLACK, 1000UL);
	pthread_mutex_lock(&g_mu);
	for (;;) {
		while (!s->head && !s->destroyed)
			pthread_cond_wait(&s->cv, &g_mu);
		if (!s->head)
			break;
		w = s->head;
		s->head = w->next;
		if (!s->head)
			s->tail = NULL;
		pthread_mutex_unlock(&g_mu);
		run_work(w);
		free(w);
		pthread_mutex_lock(&g_mu);
		s->done++;
		pthread_cond_broadcast(&g_done);
	}
	/* destroyed and drained: unlink and free */
	for (struct CUstream_st **p = &g_streams; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	s->magic = 0;
	pthread_mutex_unlock(&g_mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	return NULL;
}

static cudaError_t stream_new(struct CUstream_st **out, unsigned int flags)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));
	pthread_attr_t at;
	int err;

	if (!s)
		return cudaErrorMemoryAllocation;
	s->magic = STREAM_MAGIC;
	s->flags = flags;
	pthread_cond_init(&s->cv, NULL);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&g_mu);
	err = pthread_create(&s->thr, &at, stream_main, s);
	pthread_attr_destroy(&at);
	if (err) {
		pthread_mutex_unlock(&g_mu);
		fprintf(stderr, "ccld-sim cudart: cannot start a stream thread: %s\n",
			strerror(err));
		pthread_cond_destroy(&s->cv);
		free(s);
		return cudaErrorMemoryAllocation;
	}
	s->next = g_streams;
	g_streams = s;
	pthread_mutex_unlock(&g_mu);
	*out = s;
	return cudaSuccess;
}

/* Resolves a user handle; the special handles map to one default stream. */
static cudaError_t stream_get(cudaStream_t h, struct CUstream_st **out)
{
	cudaError_t e;

	if (h == NULL || h == cudaStreamLegacy || h == cudaStreamPerThread) {
		pthread_mutex_lock(&g_mu);
		*out = g_default;
		pthread_mutex_unlock(&g_mu);
		if (*out)
			return cudaSuccess;
		e = stream_new(out, 0);
		if (e)
			return e;
		pthread_mutex_lock(&g_mu);
		if (g_default) {	/* another thread won the race */
			(*out)->destroyed = 1;
			pthread_cond_signal(&(*out)->cv);
			*out = g_default;
		} else {
			g_default = *out;
		}
		pthread_mutex_unlock(&g_mu);
		return cudaSuccess;
	}
	if (h->magic != STREAM_MAGIC || h->destroyed)
		return cudaErrorInvalidResourceHandle;
	*out = h;
	return cudaSuccess;
}

static cudaError_t enqueue(cudaStream_t h, struct work *w)
{
	struct CUstream_st *s;
	cudaError_t e = stream_get(h, &s);

	if (e) {
		free(w);
		return e;
	}
	pthread_mutex_lock(&g_mu);
	if (w->ev)
		w->ev->refs++;
	if (s->tail)
		s->tail->next = w;
	else
		s->head = w;
	s->tail = w;
	s->enq++;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&g_mu);
	return cudaSuccess;
}

static struct work *work_new(enum work_type t)
{
	struct work *w = calloc(1, sizeof(*w));

	if (w)
		w->type = t;
	return w;
}

API cudaError_t ccldsim_stream_launch(cudaStream_t stream, ccldsim_kernel_fn fn, void *arg)
{
	struct work *w = work_new(W_KERNEL);

	if (!w)
		return cudaErrorMemoryAllocation;
	w->fn = fn;
	w->arg = arg;
	return enqueue(stream, w);
}

static void stream_wait_idle(struct CUstream_st *s)
{
	uint64_t target;

	pthread_mutex_lock(&g_mu);
	target = s->enq;
	while (s->done < target)
		pthread_cond_wait(&g_done, &g_mu);
	pthread_mutex_unlock(&g_mu);
}

API cudaError_t cudaSetDevice(int device)
{
	if (device < 0 || device >= ndev())
		return ret_err(cudaErrorInvalidDevice);
	t_dev = device;
	return cudaSuccess;
}

API cudaError_t cudaGetDevice(int *device)
{
	if (!device)
		return ret_err(cudaErrorInvalidValue);
	*device = t_dev;
	return cudaSuccess;
}

API cudaError_t cudaGetDeviceCount(int *count)
{
	if (!count)
		return ret_err(cudaErrorInvalidValue);
	*count = ndev();
	return cudaSuccess;
}

API cudaError_t cudaDeviceSynchronize(void)
{
	struct CUstream_st *s;
	int busy;

	pthread_mutex_lock(&g_mu);
	do {
		busy = 0;
		for (s = g_streams; s; s = s->next)
			if (s->done < s->enq)
				busy = 1;
		if (busy)
			pthread_cond_wait(&g_done, &g_mu);
	} while (busy);
	pthread_mutex_unlock(&g_mu);
	return cudaSuccess;
}

API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	if (!pStream || flags > cudaStreamNonBlocking)
		return ret_err(cudaErrorInvalidValue);
	return ret_err(stream_new(pStream, flags));
}

API cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	if (!stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
		return ret_err(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&g_mu);
	if (stream->magic != STREAM_MAGIC || stream->destroyed) {
		pthread_mutex_unlock(&g_mu);
		return ret_err(cudaErrorInvalidResourceHandle);
	}
	/* like CUDA: returns at once, the thread drains the queue and exits */
	stream->destroyed = 1;
	pthread_cond_signal(&stream->cv);
	pthread_mutex_unlock(&g_mu);
	return cudaSuccess;
}

API cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	struct CUstream_st *s;
	cudaError_t e = stream_get(stream, &s);

	if (e)
		return ret_err(e);
	stream_wait_idle(s);
	return cudaSuccess;
}

API cudaError_t cudaStreamQuery(cudaStream_t stream)
{
	struct CUstream_st *s;
	cudaError_t e = stream_get(stream, &s);

	if (e)
		return ret_err(e);
	pthread_mutex_lock(&g_mu);
	e = s->done == s->enq ? cudaSuccess : cudaErrorNotReady;
	pthread_mutex_unlock(&g_mu);
	return e;
}

static int event_ok(cudaEvent_t ev)
{
	return ev && ev->magic == EVENT_MAGIC;
}

API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	struct work *w;

	if (!event_ok(event))
		return ret_err(cudaErrorInvalidResourceHandle);
	w = work_new(W_WAIT);
	if (!w)
		return ret_err(cudaErrorMemoryAllocation);
	pthread_mutex_lock(&g_mu);
	w->gen = event->gen;
	pthread_mutex_unlock(&g_mu);
	w->ev = event;
	return ret_err(enqueue(stream, w));
}

API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	struct CUevent_st *ev;

	if (!event || flags > (cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess))
		return ret_err(cudaErrorInvalidValue);
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return ret_err(cudaErrorMemoryAllocation);
	ev->magic = EVENT_MAGIC;
	ev->flags = flags;
	ev->refs = 1;
	*event = ev;
	return cudaSuccess;
}

API cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	return cudaEventCreateWithFlags(event, cudaEventDefault);
}

API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	struct work *w;

	if (!event_ok(event))
		return ret_err(cudaErrorInvalidResourceHandle);
	w = work_new(W_EVENT);
	if (!w)
		return ret_err(cudaErrorMemoryAllocation);
	pthread_mutex_lock(&g_mu);
	w->gen = ++event->gen;
	pthread_mutex_unlock(&g_mu);
	w->ev = event;
	return ret_err(enqueue(stream, w));
}

API cudaError_t cudaEventQuery(cudaEvent_t event)
{
	cudaError_t e;

	if (!event_ok(event))
		return ret_err(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&g_mu);
	e = event->done_gen >= event->gen ? cudaSuccess : cudaErrorNotReady;
	pthread_mutex_unlock(&g_mu);
	return e;
}

API cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	uint64_t gen;

	if (!event_ok(event))
		return ret_err(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&g_mu);
	gen = event->gen;
	while (event->done_gen < gen)
		pthread_cond_wait(&g_done, &g_mu);
	pthread_mutex_unlock(&g_mu);
	return cudaSuccess;
}

API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	cudaError_t e = cudaSuccess;

	if (!ms)
		return ret_err(cudaErrorInvalidValue);
	if (!event_ok(start) || !event_ok(end))
		return ret_err(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&g_mu);
	if ((start->flags | end->flags) & cudaEventDisableTiming)
		e = cudaErrorInvalidResourceHandle;
	else if (!start->gen || !end->gen)
		e = cudaErrorInvalidResourceHandle;
	else if (start->done_gen < start->gen || end->done_gen < end->gen)
		e = cudaErrorNotReady;
	else
		*ms = (float)(((double)end->t_ns - (double)start->t_ns) / 1e6);
	pthread_mutex_unlock(&g_mu);
	return ret_err(e);
}

API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	if (!event_ok(event))
		return ret_err(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&g_mu);
	/* queued records/waits keep it alive until they ran */
	event_put_locked(event);
	pthread_mutex_unlock(&g_mu);
	return cudaSuccess;
}

API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	void *p = NULL;

	if (!devPtr)
		return ret_err(cudaErrorInvalidValue);
	/* cudaMalloc alignment is at least 256 bytes */
	if (posix_memalign(&p, 256, size ? size : 1))
		return ret_err(cudaErrorMemoryAllocation);
	*devPtr = p;
	return cudaSuccess;
}

API cudaError_t cudaFree(void *devPtr)
{
	free(devPtr);
	return cudaSuccess;
}

API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	return cudaMalloc(ptr, size);
}

API cudaError_t cudaFreeHost(void *ptr)
{
	free(ptr);
	return cudaSuccess;
}

API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
				enum cudaMemcpyKind kind, cudaStream_t stream)
{
	struct work *w;

	if ((unsigned int)kind > cudaMemcpyDefault)
		return ret_err(cudaErrorInvalidMemcpyDirection);
	if (count && (!dst || !src))
		return ret_err(cudaErrorInvalidValue);
	w = work_new(W_COPY);
	if (!w)
		return ret_err(cudaErrorMemoryAllocation);
	w->dst = dst;
	w->src = src;
	w->n = count;
	return ret_err(enqueue(stream, w));
}

API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	cudaError_t e = cudaMemcpyAsync(dst, src, count, kind, NULL);

	return e ? e : cudaStreamSynchronize(NULL);
}

API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	struct work *w;

	if (count && !devPtr)
		return ret_err(cudaErrorInvalidValue);
	w = work_new(W_SET);
	if (!w)
		return ret_err(cudaErrorMemoryAllocation);
	w->dst = devPtr;
	w->val = value;
	w->n = count;
	return ret_err(enqueue(stream, w));
}

API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	cudaError_t e = cudaMemsetAsync(devPtr, value, count, NULL);

	return e ? e : cudaStreamSynchronize(NULL);
}

API cudaError_t cudaGetLastError(void)
{
	cudaError_t e = t_last_err;

	t_last_err = cudaSuccess;
	return e;
}

API const char *cudaGetErrorString(cudaError_t error)
{
	switch (error) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorInitializationError: return "initialization error";
	case cudaErrorInvalidDevicePointer: return "invalid device pointer";
	case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
	case cudaErrorNoDevice: return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice: return "invalid device ordinal";
	case cudaErrorInvalidResourceHandle: return "invalid resource handle";
	case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
	case cudaErrorNotReady: return "device not ready";
	case cudaErrorUnknown: return "unknown error";
	}
	return "unrecognized error code";
}
