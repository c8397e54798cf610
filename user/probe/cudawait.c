// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <linux/types.h>
#include "ccld.h"
#include "cudawait.h"
#include "elfsym.h"
#include "hooks.h"
#include "procmaps.h"
#include "procmem.h"
#include "ustack.h"

/*
 * F's synchronize functions (the synchronize rows of the tier B hook
 * table) at their load address into OUT[*N..MAX)
 */
static void lib_fns(const struct mapped_file *f, struct cudawait_fn *out, size_t *n, size_t max)
{
	char err[256];
	struct elf_syms *es = elfsym_open(f->host_path, err, sizeof(err));
	unsigned long v0, v, size;
	int i;

	/* the lowest mapping maps file offset 0 */
	if (!es || !elfsym_offset_vaddr(es, 0, &v0))
		goto out;
	for (i = 0; i < cuda_hooks_n && *n < max; i++) {
		const struct cuda_hook_def *h = &cuda_hooks[i];
		long off;

		if (h->fn != CCLD_FN_CUDA_STREAM_SYNC && h->fn != CCLD_FN_CUDA_EVENT_SYNC)
			continue;
		off = elfsym_offset_size(es, h->symbol, &size);
		if (off < 0 || !size || !elfsym_offset_vaddr(es, (unsigned long)off, &v) || v < v0)
			continue;
		out[*n].start = f->base + (v - v0);
		out[*n].end = out[*n].start + size;
		out[*n].fn = (uint8_t)h->fn;
		(*n)++;
	}
out:
	elfsym_close(es);
}

int cudawait_fns(pid_t pid, struct cudawait_fn *out, size_t max)
{
	struct mapped_file *files = NULL;
	size_t nf = 0, i, n = 0;
	int ret = procmaps_files(pid, &files, &nf);

	if (ret)
		return ret;
	for (i = 0; i < nf; i++)
		if (hooks_cuda_file(files[i].path))
			lib_fns(&files[i], out, &n, max);
	free(files);
	return (int)n;
}

uint8_t cudawait_match(const uint64_t *words, size_t n, const struct cudawait_fn *fns,
		       size_t nfns, bool (*is_call_ret)(void *ctx, uint64_t addr), void *ctx)
{
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < nfns; j++)
			/* a return address is past the call: not the entry */
			if (words[i] > fns[j].start && words[i] <= fns[j].end &&
			    (!is_call_ret || is_call_ret(ctx, words[i])))
				return fns[j].fn;
	return 0;
}

/*
 * ADDR in PID follows a call instruction: x86-64's call rel32 (e8, 5 bytes)
 * or an indirect call (ff /2: 2 to 7 bytes); elsewhere not checked.
 */
static bool after_call(void *ctx, uint64_t addr)
{
#if defined(__x86_64__)
	pid_t pid = (pid_t)(intptr_t)ctx;
	uint8_t b[8];
	int k;

	if (addr < sizeof(b) || procmem_read(pid, addr - sizeof(b), b, sizeof(b)))
		return false;
	if (b[3] == 0xe8)
		return true;
	for (k = 2; k <= 7; k++) {
		uint8_t op = b[8 - k], modrm = b[8 - k + 1];

		if (op == 0xff && ((modrm >> 3) & 7) == 2)
			return true;
	}
	return false;
#else
	(void)ctx;
	(void)addr;
	return true;
#endif
}

uint8_t cudawait_thread(pid_t pid, uint64_t sp, const struct cudawait_fn *fns, size_t nfns)
{
	uint64_t *words;
	size_t got = 0;
	uint8_t fn = 0;

	if (!nfns || !sp)
		return 0;
	words = malloc(CUDAWAIT_STACK_BYTES);
	if (!words)
		return 0;
	/* page by page: the stack's mapping may end before the budget */
	while (got < CUDAWAIT_STACK_BYTES) {
		size_t len = 4096 - ((sp + got) & 4095);

		if (got + len > CUDAWAIT_STACK_BYTES)
			len = CUDAWAIT_STACK_BYTES - got;
		if (procmem_read(pid, sp + got, (char *)words + got, len))
			break;
		got += len;
	}
	fn = cudawait_match(words, got / sizeof(*words), fns, nfns, after_call,
			    (void *)(intptr_t)pid);
	free(words);
	return fn;
}

uint8_t cudawait_confirm(pid_t pid, pid_t tid, uint64_t sp, uint64_t pc,
			 const struct cudawait_fn *fns, size_t nfns, uint8_t fn)
{
	uint64_t pcs[CUDAWAIT_FRAMES];
	struct ustack *u;
	bool complete;
	int n, i, err;
	size_t j;

	if (!fn || !sp || !(u = ustack_open(pid, &err)))
		return fn;
	n = ustack_thread_pcs(u, tid, sp, pc, pcs, CUDAWAIT_FRAMES, &complete);
	ustack_close(u);
	for (i = 0; i < n; i++)
		for (j = 0; j < nfns; j++)
			if (pcs[i] >= fns[j].start && pcs[i] < fns[j].end)
				return fns[j].fn;
	return complete || n >= CUDAWAIT_FRAMES ? 0 : fn;
}
