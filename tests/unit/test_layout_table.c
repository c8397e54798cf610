// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The NCCL layout table (user/probe/nccl_layout_table.c, generated from NCCL's
 * headers by tools/gen-layout-table.sh): every member ccld reads has a
 * column, entries follow NCCL's own rules (startMagic first, endMagic last,
 * members inside their struct), the 2.28.9 entry equals the real library's
 * DWARF, and an entry is judged against a live process: a child lays out
 * comms in its memory, some as the entry says and some not.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "attach.h"
#include "check.h"
#include "commfind.h"
#include "commread.h"
#include "dwarf_layout.h"
#include "elfsym.h"
#include "layout_table.h"

#define NCCL_MAGIC 0x0280028002800280ULL

static int column(const char *strct, const char *member)
{
	char name[128];
	int i;

	snprintf(name, sizeof(name), "%s.%s", strct, member);
	for (i = 0; i < layout_table_nfields; i++)
		if (strcmp(layout_table_fields[i], name) == 0)
			return i;
	return -1;
}

static long struct_size(const struct layout_table_entry *e, const char *strct)
{
	if (!strcmp(strct, "ncclComm"))
		return e->comm_size;
	if (!strcmp(strct, "ncclProxySubArgs"))
		return e->sub_size;
	if (!strcmp(strct, "ncclPeerInfo"))
		return e->peer_size;
	return -1;
}

/* 2.X.Y with 18 <= X <= 30 */
static bool release_ok(const char *v)
{
	int major, minor, patch, n = 0;

	return sscanf(v, "%d.%d.%d%n", &major, &minor, &patch, &n) == 3 && !v[n] &&
	       major == 2 && minor >= 18 && minor <= 30 && patch >= 0;
}

static void test_consistency(void)
{
	int i, j, minor;

	/* a member added to layout_fields[] needs the table regenerated */
	for (i = 0; i < layout_fields_n; i++) {
		if (column(layout_fields[i].struct_name, layout_fields[i].member) < 0) {
			fprintf(stderr, "no table column for %s.%s: run tools/gen-layout-table.sh\n",
				layout_fields[i].struct_name, layout_fields[i].member);
			CHECK(!"table lacks a member ccld reads");
		}
	}
	CHECK(layout_table_n >= 31);
	for (i = 0; i < layout_table_n; i++) {
		const struct layout_table_entry *e = &layout_table[i];
		__s32 start = e->off[column("ncclComm", "startMagic")];
		__s32 end = e->off[column("ncclComm", "endMagic")];

		CHECK(release_ok(e->version));
		for (j = 0; j < i; j++)
			CHECK(strcmp(layout_table[j].version, e->version) != 0);
		sscanf(e->version, "2.%d", &minor);
		/* NCCL 2.21 added the magics; comm.h asserts first and last */
		if (minor >= 21) {
			CHECK_INT(start, 0);
			CHECK_INT(end, e->comm_size - 8);
		} else {
			CHECK_INT(start, -1);
			CHECK_INT(end, -1);
		}
		CHECK(e->off[column("ncclComm", "rank")] >= 0);
		CHECK(e->off[column("ncclComm", "nRanks")] >= 0);
		CHECK(e->off[column("ncclComm", "commHash")] >= 0);
		CHECK(e->off[column("ncclProxyArgs", "subs")] >= 0);
		CHECK(e->sub_size > 0 && e->peer_size > 0);
		CHECK(e->seq_number_n <= CCLD_MAX_SEQ_TYPES);
		CHECK((e->seq_number_n > 0) == (e->off[column("ncclComm", "seqNumber")] >= 0));
		/* every member inside its struct, where the table knows its size */
		for (j = 0; j < layout_table_nfields; j++) {
			char strct[64];
			long size;

			snprintf(strct, sizeof(strct), "%.*s",
				 (int)strcspn(layout_table_fields[j], "."), layout_table_fields[j]);
			size = struct_size(e, strct);
			if (size > 0 && e->off[j] >= size) {
				fprintf(stderr, "%s: %s at %d, past its %ld bytes\n", e->version,
					layout_table_fields[j], e->off[j], size);
				CHECK(!"member outside its struct");
			}
		}
	}
}

static void test_find_fill(void)
{
	const struct layout_table_entry *e;
	struct nccl_layouts l;

	CHECK(layout_table_find("2.28.10") == NULL);
	CHECK(layout_table_find("2.28") == NULL);
	CHECK(layout_table_find("") == NULL);
	CHECK(layout_table_find(NULL) == NULL);
	CHECK(layout_table_find("2.17.1") == NULL);
	CHECK(layout_table_find("2.18.1") != NULL);
	CHECK(layout_table_find("2.30.7") != NULL);
	e = layout_table_find("2.28.9");
	CHECK(e != NULL);
	if (!e)
		return;
	CHECK_STR(e->version, "2.28.9");
	layout_table_fill(e, &l);
	CHECK_INT(l.source, LAYOUT_TABLE);
	CHECK_STR(l.origin, "2.28.9");
	CHECK(!l.from_cache);
	CHECK_INT(l.comm.valid, 1);
	CHECK(l.comm.magic == NCCL_MAGIC);
	CHECK_INT(l.proxy.valid, 1);
	CHECK_INT(l.comm.seq_number_n, 5);
	CHECK_INT(l.comm_size, e->comm_size);
	CHECK_INT(l.comm.rank, e->off[column("ncclComm", "rank")]);
	CHECK_INT(l.walk.args_next, e->off[column("ncclProxyArgs", "next")]);
	CHECK_INT(l.peer.pid_hash, e->off[column("ncclPeerInfo", "pidHash")]);

	/* before 2.21: no magics, no seqNumber[] (ccld counts its own) */
	layout_table_fill(layout_table_find("2.18.1"), &l);
	CHECK(l.comm.magic == 0);
	CHECK_INT(l.comm.start_magic, -1);
	CHECK_INT(l.comm.seq_number, -1);
	CHECK_INT(l.comm.seq_number_n, 0);
	CHECK_INT(l.comm.valid, 1);
}

/* the 2.28.9 entry is what NVIDIA's own build says in its DWARF */
static void test_real_dwarf(void)
{
	const char *path = getenv("CCLD_REAL_NCCL");
	char err[256] = "", id[41], cache[] = "/tmp/ccld-lt-cache.XXXXXX", cmd[64];
	struct nccl_layouts d, t;
	struct elf_syms *es;
	int i;

	if (!path)
		path = "/usr/local/cuda/lib/libnccl.so.2";
	if (access(path, R_OK)) {
		const char *req = getenv("CCLD_REQUIRE_REAL_NCCL");

		printf("test_layout_table: no real NCCL at %s: 2.28.9 check skipped\n", path);
		CHECK(!req || strcmp(req, "1") != 0);
		return;
	}
	es = elfsym_open(path, err, sizeof(err));
	CHECK(es != NULL);
	if (!es)
		return;
	snprintf(id, sizeof(id), "%s", elfsym_build_id(es));
	CHECK_STR(elfsym_nccl_version(es), "2.28.9");
	elfsym_close(es);
	if (!mkdtemp(cache))
		return;
	setenv("CCLD_CACHE_DIR", cache, 1);
	CHECK_INT(dwarf_layout_read(path, id, &d, err, sizeof(err)), 0);
	CHECK_INT(d.source, LAYOUT_DWARF);
	layout_table_fill(layout_table_find("2.28.9"), &t);
	for (i = 0; i < layout_fields_n; i++) {
		const struct layout_field *f = &layout_fields[i];

		if (layout_field_get(&d, f) != layout_field_get(&t, f)) {
			fprintf(stderr, "%s.%s: DWARF %d, table %d\n", f->struct_name, f->member,
				layout_field_get(&d, f), layout_field_get(&t, f));
			CHECK(!"2.28.9 entry differs from the real DWARF");
		}
	}
	CHECK_INT(d.comm_size, t.comm_size);
	CHECK_INT(d.proxy.sub_size, t.proxy.sub_size);
	CHECK_INT(d.peer.size, t.peer.size);
	CHECK_INT(d.comm.seq_number_n, t.comm.seq_number_n);
	CHECK(d.comm.magic == t.comm.magic);
	CHECK_INT(d.proxy.valid, t.proxy.valid);
	printf("test_layout_table: real %s: 2.28.9 entry == DWARF (%d members)\n", path,
	       layout_fields_n);
	unsetenv("CCLD_CACHE_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", cache);
}

/* ---- a live process ----------------------------------------------------- */

enum { GOOD, BAD_END, SMALL, BAD_RANK, FREED, OLD, NCOMMS };

struct child {
	pid_t pid;
	int hold;		/* the child lives until this is closed */
	uint64_t addr[NCOMMS];
};

static void put64(uint8_t *p, __s32 off, uint64_t v)
{
	memcpy(p + off, &v, sizeof(v));
}

static void put32(uint8_t *p, __s32 off, int32_t v)
{
	memcpy(p + off, &v, sizeof(v));
}

static uint8_t *region(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(3);
	return p;
}

/* the child's comms, laid out by N (2.28.9) and O (2.18.1) */
static void child_main(const struct nccl_layouts *n, const struct nccl_layouts *o, int out,
		       int hold)
{
	const struct ccld_layout *c = &n->comm;
	uint64_t addr[NCOMMS];
	uint8_t *p;
	char b;

	p = region((size_t)n->comm_size);	/* as the entry says: rank 3 of 8 */
	put64(p, c->start_magic, NCCL_MAGIC);
	put64(p, c->end_magic, NCCL_MAGIC);
	put32(p, c->rank, 3);
	put32(p, c->nranks, 8);
	addr[GOOD] = (uintptr_t)p;
	p = region((size_t)n->comm_size);	/* endMagic one word early */
	put64(p, c->start_magic, NCCL_MAGIC);
	put64(p, c->end_magic - 8, NCCL_MAGIC);
	put32(p, c->rank, 3);
	put32(p, c->nranks, 8);
	addr[BAD_END] = (uintptr_t)p;
	/* a small struct (as the stand-in's): unmapped where endMagic would be */
	p = region(4096 + (size_t)n->comm_size);
	if (mprotect(p + 4096, (size_t)n->comm_size, PROT_NONE))
		_exit(3);
	put64(p, 0, NCCL_MAGIC);
	put64(p, 4088, NCCL_MAGIC);
	addr[SMALL] = (uintptr_t)p;
	p = region((size_t)n->comm_size);	/* rank 9 of 8 */
	put64(p, c->start_magic, NCCL_MAGIC);
	put64(p, c->end_magic, NCCL_MAGIC);
	put32(p, c->rank, 9);
	put32(p, c->nranks, 8);
	addr[BAD_RANK] = (uintptr_t)p;
	p = region((size_t)n->comm_size);	/* freed: NCCL zeroes the magics */
	put32(p, c->rank, 1);
	put32(p, c->nranks, 2);
	addr[FREED] = (uintptr_t)p;
	p = region((size_t)o->comm_size);	/* 2.18.1: rank 2 of 4, no magics */
	put32(p, o->comm.rank, 2);
	put32(p, o->comm.nranks, 4);
	addr[OLD] = (uintptr_t)p;
	if (write(out, addr, sizeof(addr)) != sizeof(addr))
		_exit(2);
	while (read(hold, &b, 1) > 0)
		;
	_exit(0);
}

static int start_child(const struct nccl_layouts *n, const struct nccl_layouts *o,
		       struct child *ch)
{
	int out[2], hold[2];

	if (pipe(out) || pipe(hold))
		return -1;
	ch->pid = fork();
	if (ch->pid < 0)
		return -1;
	if (!ch->pid) {
		close(out[0]);
		close(hold[1]);
		child_main(n, o, out[1], hold[0]);
	}
	close(out[1]);
	close(hold[0]);
	ch->hold = hold[1];
	if (read(out[0], ch->addr, sizeof(ch->addr)) != sizeof(ch->addr)) {
		close(out[0]);
		return -1;
	}
	close(out[0]);
	return 0;
}

static void stop_child(struct child *ch)
{
	int status;

	close(ch->hold);
	waitpid(ch->pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static enum comm_check judge(const struct nccl_layouts *l, const struct child *ch, int which,
			     int32_t rank, int32_t nranks, char *why)
{
	return commread_check(l, ch->pid, ch->addr[which], rank, nranks, why, 128);
}

static void test_live(void)
{
	static struct traced_lib lib;
	struct nccl_layouts n, o;
	struct commfind_stats st;
	struct comm_addr *found = NULL;
	struct child ch;
	char why[128], err[256];
	size_t nfound = 0;

	layout_table_fill(layout_table_find("2.28.9"), &n);
	layout_table_fill(layout_table_find("2.18.1"), &o);
	if (start_child(&n, &o, &ch)) {
		CHECK(!"cannot start the child");
		return;
	}
	/* with the magics */
	CHECK_INT(judge(&n, &ch, GOOD, -1, -1, why), COMM_FITS);
	CHECK_INT(judge(&n, &ch, GOOD, 3, 8, why), COMM_FITS);
	CHECK_INT(judge(&n, &ch, GOOD, 2, 8, why), COMM_MISFIT);
	CHECK(strstr(why, "its init call said 2 of 8") != NULL);
	CHECK_INT(judge(&n, &ch, BAD_END, -1, -1, why), COMM_MISFIT);
	CHECK(strstr(why, "endMagic at offset") && strstr(why, "holds 0"));
	CHECK_INT(judge(&n, &ch, SMALL, -1, -1, why), COMM_MISFIT);
	CHECK(strstr(why, "unreadable") != NULL);
	CHECK_INT(judge(&n, &ch, BAD_RANK, -1, -1, why), COMM_MISFIT);
	CHECK(strstr(why, "rank 9 of nRanks 8") != NULL);
	CHECK_INT(judge(&n, &ch, FREED, -1, -1, why), COMM_NONE);
	CHECK_INT(commread_check(&n, ch.pid, 0, -1, -1, why, sizeof(why)), COMM_NONE);
	/* without: only a comm whose init call was seen, of 2 ranks or more */
	CHECK_INT(judge(&o, &ch, OLD, -1, -1, why), COMM_NONE);
	CHECK_INT(judge(&o, &ch, OLD, 0, 1, why), COMM_NONE);
	CHECK_INT(judge(&o, &ch, OLD, 2, 4, why), COMM_FITS);
	CHECK_INT(judge(&o, &ch, OLD, 1, 4, why), COMM_MISFIT);

	/* the attach-time scan: finds the one that fits, counts the misfits */
	snprintf(lib.path, sizeof(lib.path), "test");
	memset(&st, 0, sizeof(st));
	CHECK_INT(commfind_scan(&lib, &n, ch.pid, 1ull << 30, 10.0, &found, &nfound, &st, err,
				sizeof(err)), 0);
	CHECK_INT(nfound, 1);
	if (nfound == 1)
		CHECK(found[0].addr == ch.addr[GOOD]);
	CHECK(st.misfits >= 3);
	CHECK(strstr(st.misfit, "comm 0x") != NULL);
	CHECK(!st.cut);
	free(found);
	found = NULL;
	nfound = 0;
	memset(&st, 0, sizeof(st));
	/* a layout without magics cannot be scanned for */
	CHECK_INT(commfind_scan(&lib, &o, ch.pid, 1ull << 30, 10.0, &found, &nfound, &st, err,
				sizeof(err)), -ENOTSUP);
	stop_child(&ch);
}

int main(void)
{
	test_consistency();
	test_find_fill();
	test_real_dwarf();
	test_live();
	return check_finish("test_layout_table");
}
