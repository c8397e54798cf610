// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Load test of the RDMA programs (bpf/rdma.bpf.c) against the BTF of a
 * kernel that has ib_core / ib_uverbs: this machine has neither.
 *
 *   rdma_btf_load [-v] VMLINUX MODULE.ko -- RDMA.bpf.o
 *
 * VMLINUX is that kernel's vmlinux ELF (or raw BTF); MODULE.ko's .BTF is
 * split BTF over it ("-": none, a negative control).  The base and the
 * module's own types are merged into
 * one standalone BTF file (type ids kept: base types first, then the
 * module's), which is the btf_custom_path for CO-RE.  Then:
 *  - every fentry target must be a FUNC in the merged BTF;
 *  - the kprobe programs are loaded into the running kernel with their
 *    CO-RE relocations resolved against the merged BTF: a field or type
 *    that does not resolve poisons the program and the verifier rejects it.
 * (The fentry programs cannot be loaded here: their attach target must be
 * in the running kernel.)  Prints what relocated, exits 0 when all loaded.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

static bool verbose;

static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	/* the CO-RE decisions about our flavours, and every warning */
	if (level != LIBBPF_DEBUG || verbose ||
	    (strstr(line, "relo #") && (strstr(line, "___ccld") ||
					strstr(line, "matching candidate"))) ||
	    strstr(line, "no matching targets") || strstr(line, "failed"))
		fputs(line, stderr);
	return 0;
}

/* appends SRC's types (base first, then its own) to DST unless present */
static int merge(struct btf *dst, const struct btf *src, __u32 from)
{
	__u32 id, n = btf__type_cnt(src);
	int err;

	for (id = from; id < n; id++) {
		err = btf__add_type(dst, src, btf__type_by_id(src, id));
		if (err < 0)
			return err;
	}
	return 0;
}

static int write_file(const char *path, const struct btf *btf)
{
	__u32 size;
	const void *data = btf__raw_data(btf, &size);
	FILE *f;

	if (!data)
		return -errno;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fwrite(data, 1, size, f) != size) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) ? -errno : 0;
}

static const char *const fentry_targets[] = {
	"ib_modify_qp_with_udata", "ib_dispatch_event",
	"ib_uverbs_qp_event_handler", "ib_uverbs_cq_event_handler", NULL,
};

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	char merged[] = "/tmp/ccld-rdma-btf.XXXXXX";
	struct btf *base, *out, *mod;
	struct bpf_program *prog;
	struct bpf_object *obj;
	int i, dash = 0, err, fd, nkp = 0;

	if (argc > 1 && !strcmp(argv[1], "-v")) {
		verbose = true;
		argv++;
		argc--;
	}
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--"))
			dash = i;
	if (dash != 3 || argc != 5) {
		fprintf(stderr, "usage: %s [-v] VMLINUX MODULE.ko -- RDMA.bpf.o\n",
			argv[0]);
		return 2;
	}
	libbpf_set_print(print_fn);
	base = btf__parse(argv[1], NULL);
	if (!base) {
		fprintf(stderr, "cannot read BTF of %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	out = btf__new_empty();
	if (!out || merge(out, base, 1)) {
		fprintf(stderr, "cannot copy base BTF: %s\n", strerror(errno));
		return 1;
	}
	/* module BTF is split over vmlinux alone: its own ids follow the
	 * base's, so appending them in order keeps every id */
	mod = strcmp(argv[2], "-") ? btf__parse_split(argv[2], base) : btf__new_empty_split(base);
	if (!mod) {
		fprintf(stderr, "cannot read split BTF of %s: %s\n", argv[2],
			strerror(errno));
		return 1;
	}
	err = merge(out, mod, btf__type_cnt(base));
	btf__free(mod);
	if (err) {
		fprintf(stderr, "cannot merge %s: %s\n", argv[2], strerror(-err));
		return 1;
	}
	fd = mkstemp(merged);
	if (fd < 0 || close(fd) || (err = write_file(merged, out))) {
		fprintf(stderr, "cannot write %s: %s\n", merged, strerror(errno));
		return 1;
	}
	printf("merged BTF: %u types\n", btf__type_cnt(out) - 1);
	for (i = 0; fentry_targets[i]; i++) {
		bool found = btf__find_by_name_kind(out, fentry_targets[i],
						    BTF_KIND_FUNC) > 0;

		printf("fentry target %-28s %s\n", fentry_targets[i],
		       found ? "FUNC in BTF" : "not in this BTF");
	}

	oo.btf_custom_path = merged;
	obj = bpf_object__open_file(argv[argc - 1], &oo);
	if (!obj) {
		fprintf(stderr, "cannot open %s: %s\n", argv[argc - 1], strerror(errno));
		unlink(merged);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		bool kp = !strncmp(bpf_program__name(prog), "kp_", 3);

		bpf_program__set_autoload(prog, kp);
		nkp += kp;
	}
	err = bpf_object__load(obj);
	unlink(merged);
	if (err) {
		fprintf(stderr, "load against %s: %s\n", argv[2], strerror(-err));
		bpf_object__close(obj);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (bpf_program__autoload(prog))
			printf("loaded %s (%s)\n", bpf_program__name(prog),
			       bpf_program__section_name(prog));
	}
	printf("ok: %d kprobe programs loaded with CO-RE relocated against %s\n",
	       nkp, argv[2]);
	bpf_object__close(obj);
	btf__free(out);
	btf__free(base);
	return 0;
}
