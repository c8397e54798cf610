// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* NCCL's warnings from their record parts (ncclwarn.h). */
#include <stdlib.h>
#include <string.h>
#include "ncclwarn.h"

/* one piece of a format: a literal byte, or a conversion (any text) */
struct fmt_tok {
	bool any;
	char c;
};

/* FMT as tokens into T (at most MAX); false when a conversion is cut */
static size_t fmt_tokens(const char *fmt, struct fmt_tok *t, size_t max)
{
	size_t n = 0;

	while (*fmt && n < max) {
		if (*fmt != '%') {
			t[n++] = (struct fmt_tok){ .c = *fmt++ };
			continue;
		}
		fmt++;
		if (*fmt == '%') {
			t[n++] = (struct fmt_tok){ .c = '%' };
			fmt++;
			continue;
		}
		/* flags, width, precision, length, then the conversion */
		fmt += strspn(fmt, "-+ #0'");
		fmt += strspn(fmt, "0123456789*");
		if (*fmt == '.')
			fmt += 1 + strspn(fmt + 1, "0123456789*");
		fmt += strspn(fmt, "hlLqjzt");
		t[n++] = (struct fmt_tok){ .any = true };
		if (*fmt)
			fmt++;
	}
	return n;
}

bool warn_fits_format(const char *fmt, bool fmt_cut, const char *msg, bool msg_cut)
{
	struct fmt_tok tok[CCLD_WARN_CHUNK + 1];
	size_t nt = fmt_tokens(fmt, tok, CCLD_WARN_CHUNK + 1);
	size_t nm = strlen(msg), i, j;
	/* can[i][j]: the first i tokens make the first j bytes of MSG */
	bool (*can)[NCCL_WARN_MSG_MAX + 1];
	bool fits = false;

	if (!fmt[0])
		return true;	/* no format read: nothing to check against */
	if (nm > NCCL_WARN_MSG_MAX)
		nm = NCCL_WARN_MSG_MAX;
	can = calloc(nt + 1, sizeof(*can));
	if (!can)
		return true;	/* cannot check: keep the warning */
	can[0][0] = true;
	for (i = 1; i <= nt; i++) {
		bool reach = false;	/* can[i - 1][k] for some k <= j */

		for (j = 0; j <= nm; j++) {
			if (tok[i - 1].any) {
				reach = reach || can[i - 1][j];
				can[i][j] = reach;
			} else {
				can[i][j] = j > 0 && can[i - 1][j - 1] && msg[j - 1] == tok[i - 1].c;
			}
		}
	}
	/* a cut format may go on after its tokens, a cut message may stop early */
	for (j = 0; j <= nm && !fits; j++)
		fits = can[nt][j] && (j == nm || fmt_cut);
	for (i = 0; i <= nt && !fits; i++)
		fits = can[i][nm] && msg_cut;
	free(can);
	return fits;
}

static struct warn_slot *slot_of(struct warn_asm *a, uint32_t host, uint32_t pid, uint32_t tid)
{
	struct warn_slot *s, *old = &a->slot[0];

	for (s = a->slot; s < a->slot + WARN_ASM_SLOTS; s++)
		if (s->used && s->w.host == host && s->w.pid == pid && s->w.tid == tid)
			return s;
	for (s = a->slot; s < a->slot + WARN_ASM_SLOTS; s++) {
		if (!s->used)
			return s;
		if (s->age < old->age)
			old = s;
	}
	/* 32 threads in the middle of a warning: the oldest goes */
	if (!old->broken)
		a->incomplete++;
	old->used = false;
	return old;
}

static void chunk_copy(char *dst, const char *src)
{
	memcpy(dst, src, CCLD_WARN_CHUNK);
	dst[CCLD_WARN_CHUNK] = '\0';
}

enum warn_feed warn_asm_feed(struct warn_asm *a, uint32_t host, const struct ccld_event *ev,
			     struct nccl_warning *out)
{
	const struct ccld_nccl_warn *p = &ev->u.warn;
	struct warn_slot *s = slot_of(a, host, ev->pid, ev->tid);
	size_t len;

	if (p->nparts < 3 || p->nparts > CCLD_WARN_MAX_PARTS || p->part >= p->nparts) {
		a->incomplete++;	/* not what BPF sends */
		return WARN_DROPPED;
	}
	/*
	 * A part is missing: the warning is dropped (counted once).  A new
	 * first part starts the next warning; another part goes on with this
	 * broken one to its end.
	 */
	if (s->used && (p->part != s->next || p->nparts != s->nparts)) {
		if (!s->broken)
			a->incomplete++;
		s->broken = true;
		s->nparts = p->nparts;
		if (p->part == 0)
			s->used = false;
	}
	if (!s->used) {
		memset(s, 0, sizeof(*s));
		s->used = true;
		s->nparts = p->nparts;
		s->w.host = host;
		s->w.pid = ev->pid;
		s->w.tid = ev->tid;
		s->w.line = p->line;
		/* its first parts were lost: the rest of it is dropped */
		s->broken = p->part != 0;
		if (s->broken)
			a->incomplete++;
	}
	if (p->part == 0) {
		chunk_copy(s->w.file, p->text);
	} else if (p->part == 1) {
		chunk_copy(s->w.fmt, p->text);
	} else {
		len = strlen(s->w.msg);
		if (len + CCLD_WARN_CHUNK < sizeof(s->w.msg))
			memcpy(s->w.msg + len, p->text, CCLD_WARN_CHUNK);
	}
	s->age = ++a->clock;
	s->next = p->part + 1;
	if (s->next < s->nparts)
		return WARN_MORE;
	s->used = false;
	if (s->broken)
		return WARN_DROPPED;
	s->w.ts_ns = ev->ts_ns;
	/* BPF reads at most NCCL_WARN_MSG_MAX - 1 bytes, the NUL included */
	s->w.truncated = strlen(s->w.msg) >= NCCL_WARN_MSG_MAX - 2;
	if (!warn_fits_format(s->w.fmt, strlen(s->w.fmt) == CCLD_WARN_CHUNK - 1, s->w.msg,
			      s->w.truncated)) {
		a->not_this_warn++;
		return WARN_DROPPED;
	}
	*out = s->w;
	return WARN_DONE;
}
