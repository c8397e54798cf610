#!/usr/bin/env bash
# A library without DWARF, without separate debuginfo and of an NCCL version
# ccld's layout table does not know: ccld-trace falls back to init-argument
# capture (ncclUniqueId hashed at ncclCommInitRank*, rank and nranks from
# the arguments, split comms derived from the parent), says what it lost,
# and still reports every call once with consistent communicator ids.
# (test_layout_table.sh: a version the table knows.)
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
stripped_standin "$TMP/lib"
# a release the table has no entry for: the version string, same length
python3 - "$TMP/lib/libnccl.so.2" <<'PY' || fail "cannot change the version string"
import sys
p = sys.argv[1]
b = open(p, "rb").read()
old, new = b"NCCL version 2.28.9+sim", b"NCCL version 2.99.9+sim"
assert b.count(old) == 1, "no single version string"
open(p, "wb").write(b.replace(old, new))
PY

# a fresh layout cache: the copy keeps the build-id of the library with DWARF
CCLD_CACHE_DIR=$TMP/cache start_tracer nodwarf --all --stop-new --json --events
LD_LIBRARY_PATH=$TMP/lib start_job --ranks 8 --tp 2 --pp 2 --steps 10 --compute-ms 2
wait_job
sleep 1
stop_tracer nodwarf
grep -q "libnccl.so.2: no DWARF layout of ncclComm (nor separate debuginfo for build-id [0-9a-f]*, nor an entry in ccld's table for NCCL 2.99.9)" "$TMP/nodwarf.err" ||
	fail "no word about the missing DWARF: $(cat "$TMP/nodwarf.err")"
grep -q "identity from init arguments only" "$TMP/nodwarf.err" ||
	fail "does not say what is lost: $(cat "$TMP/nodwarf.err")"
job_records "$TMP/nodwarf.jsonl" "$TMP/nodwarf.job.jsonl" 8
python3 "$TOP/tests/e2e/compare_calls.py" "$TMP/nodwarf.job.jsonl" "$TMP/log" --no-dwarf ||
	fail "without DWARF: trace differs from the job's calls"
grep -q '"seq_source":"local"' "$TMP/nodwarf.job.jsonl" || fail "seq not counted locally"
echo "ok: without DWARF every call is traced, ids consistent, loss stated"
