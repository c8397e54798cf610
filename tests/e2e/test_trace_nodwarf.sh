#!/usr/bin/env bash
# A library without DWARF: ccld-trace falls back to init-argument capture
# (ncclUniqueId hashed at ncclCommInitRank*, rank and nranks from the
# arguments, split comms derived from the parent), says what it lost, and
# still reports every call once with consistent communicator ids.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
command -v objcopy >/dev/null || fail "no objcopy"
mkdir -p "$TMP/lib"
objcopy --strip-debug "$SIMLIB/libnccl.so.2" "$TMP/lib/libnccl.so.2"
cp "$SIMLIB/libcudart.so.13" "$TMP/lib/"
readelf -S "$TMP/lib/libnccl.so.2" | grep -q debug_info && fail "DWARF left in the copy"

# a fresh layout cache: the copy keeps the build-id of the library with DWARF
CCLD_CACHE_DIR=$TMP/cache start_tracer nodwarf --all --json --events
LD_LIBRARY_PATH=$TMP/lib start_job --ranks 8 --tp 2 --pp 2 --steps 10 --compute-ms 2
wait_job
sleep 1
stop_tracer nodwarf
grep -q "libnccl.so.2: no DWARF layout of ncclComm" "$TMP/nodwarf.err" ||
	fail "no word about the missing DWARF: $(cat "$TMP/nodwarf.err")"
grep -q "identity from init arguments only" "$TMP/nodwarf.err" ||
	fail "does not say what is lost: $(cat "$TMP/nodwarf.err")"
python3 "$TOP/tests/e2e/compare_calls.py" "$TMP/nodwarf.jsonl" "$TMP/log" --no-dwarf ||
	fail "without DWARF: trace differs from the job's calls"
grep -q '"seq_source":"local"' "$TMP/nodwarf.jsonl" || fail "seq not counted locally"
echo "ok: without DWARF every call is traced, ids consistent, loss stated"
