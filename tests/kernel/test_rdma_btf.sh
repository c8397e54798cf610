#!/usr/bin/env bash
# The RDMA programs (bpf/rdma.bpf.c) against the BTF of Debian 12's 6.1
# kernel, which has ib_core, ib_uverbs and kprobes (this machine's has
# none): every CO-RE relocation resolves against each module's BTF (the
# kprobe programs load with that BTF as btf_custom_path), every fentry
# target is a FUNC there, and the same load against vmlinux alone fails
# (the check is not vacuous).  Skips without a cached .deb: make test does
# not download 70 MB; `tests/kernel/debian-kernel.sh fetch` does.
. "$(dirname "$0")/../lib.sh"
set -u
LOADER=$TOP/build/tests/kernel/rdma_btf_load
OBJ=$TOP/build/bpf/rdma.bpf.o
[ -x "$LOADER" ] && [ -r "$OBJ" ] || fail "run make first ($LOADER, $OBJ)"
require_bpf
dir=$("$TOP/tests/kernel/debian-kernel.sh" extract 2>"$TMP/err"); rc=$?
[ $rc = 3 ] && skip_bpf "no Debian 6.1 kernel .deb cached ($(cat "$TMP/err")); tests/kernel/debian-kernel.sh fetch"
[ $rc = 0 ] || fail "extracting the Debian kernel: $(cat "$TMP/err")"

declare -A fentry=([ib_core]="ib_modify_qp_with_udata ib_dispatch_event"
		   [ib_uverbs]="ib_uverbs_qp_event_handler ib_uverbs_cq_event_handler")
for m in ib_core ib_uverbs; do
	"$LOADER" "$dir/vmlinux" "$dir/$m.ko" -- "$OBJ" >"$TMP/$m.out" 2>"$TMP/$m.err" ||
		fail "$m: load failed: $(tail -n 20 "$TMP/$m.err")"
	cat "$TMP/$m.out"
	grep -q '^ok: 4 kprobe programs loaded' "$TMP/$m.out" || fail "$m: $(cat "$TMP/$m.out")"
	for f in ${fentry[$m]}; do
		grep -q "^fentry target $f .*FUNC in BTF" "$TMP/$m.out" ||
			fail "$m: fentry target $f not in its BTF"
	done
	# the fields that matter, at their 6.1 offsets (struct ib_qp.qp_num etc.)
	for want in 'struct ib_qp.qp_num' 'struct ib_qp.res' 'struct ib_device.name' \
		    'struct ib_event.element.port_num' 'struct rdma_restrack_entry.task' \
		    'struct ib_qp_attr.qp_state' 'struct ib_cq.res'; do
		grep -q "matching candidate #0 .*\] $want " "$TMP/$m.err" ||
			fail "$m: no CO-RE match for $want"
	done
	! grep -q 'no matching targets\|failed' "$TMP/$m.err" || fail "$m: $(grep -m3 'no matching\|failed' "$TMP/$m.err")"
done
# negative control: this kernel's BTF has no RDMA types: the load must fail
if "$LOADER" /sys/kernel/btf/vmlinux - -- "$OBJ" >"$TMP/neg.out" 2>&1; then
	fail "load against a BTF without RDMA types succeeded: the check proves nothing"
fi
echo "ok: CO-RE relocations resolve against $(basename "$dir") ib_core and ib_uverbs"
