# Shared helpers for the shell tests; source it: . "$(dirname "$0")/../lib.sh"
# Sets TOP (repository root), BIN, SIMLIB; offers skip/fail/require_* helpers.
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$TOP/build/bin
SIMLIB=$TOP/build/sim/lib
TMP=$(mktemp -d /tmp/ccld-test.XXXXXX)
_cleanup_fns=()
at_exit() { _cleanup_fns+=("$*"); }
_run_cleanup() {
	local f
	for f in "${_cleanup_fns[@]}"; do eval "$f" >/dev/null 2>&1; done
	[ -n "${CCLD_KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap _run_cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
# A BPF test that cannot run is a failure when CCLD_REQUIRE_BPF=1 (CI).
skip_bpf() {
	if [ "${CCLD_REQUIRE_BPF:-0}" = 1 ]; then
		fail "BPF test cannot run and CCLD_REQUIRE_BPF=1: $*"
	fi
	skip "$*"
}
require_bpf() {
	[ "$(id -u)" = 0 ] || skip_bpf "needs root"
	[ -r /sys/kernel/btf/vmlinux ] || skip_bpf "kernel has no BTF"
}
require_real_nccl() {
	REAL_NCCL=${CCLD_REAL_NCCL:-/usr/local/cuda/lib/libnccl.so.2}
	[ -r "$REAL_NCCL" ] || skip "no real libnccl.so.2 at $REAL_NCCL"
}
# wait_for CMD... : retry CMD for up to $WAIT_S seconds (default 10)
wait_for() {
	local i
	for ((i = 0; i < ${WAIT_S:-10} * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
