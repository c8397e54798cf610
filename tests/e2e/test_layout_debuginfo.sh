#!/usr/bin/env bash
# A stripped library whose DWARF is installed apart, found by build-id:
# the stand-in (and the real libnccl.so.2 where present) split with
# objcopy --only-keep-debug / --strip-debug.
# 1. probe-check finds the debuginfo in CCLD_DEBUGINFO_DIR/.build-id/xx/
#    yyyy.debug and in debuginfod's cache layout (DEBUGINFOD_CACHE_PATH/
#    <build-id>/debuginfo), says so, and reads the same layout as from the
#    unstripped file.
# 2. Tracing a job on the stripped stand-in: the layout comes from the
#    debuginfo, so communicators are identified from memory (NCCL's
#    commHash and seqNumber[]), and the trace equals the job's calls.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
command -v objcopy >/dev/null || fail "no objcopy"

# split LIB NAME: $TMP/NAME/lib/libnccl.so.2 (stripped) and its debuginfo
# as $TMP/NAME/debug.bin; sets ID (its build-id)
split() {
	mkdir -p "$TMP/$2/lib"
	objcopy --only-keep-debug "$1" "$TMP/$2/debug.bin" || fail "$2: objcopy --only-keep-debug"
	objcopy --strip-debug "$1" "$TMP/$2/lib/libnccl.so.2" || fail "$2: objcopy --strip-debug"
	readelf -S "$TMP/$2/lib/libnccl.so.2" | grep -q debug_info && fail "$2: DWARF left"
	ID=$(readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3 }')
	[ -n "$ID" ] || fail "$2: no build-id"
}

# same_layout NAME ORIGINAL_JSON STRIPPED_JSON DEBUGFILE
same_layout() {
	python3 - "$@" <<'PY' || fail "$1: layout from the debuginfo differs"
import json, sys
name, d, s, dbg = sys.argv[1], *(json.load(open(p)) for p in sys.argv[2:4]), sys.argv[4]
assert d["layout"]["source"] == "dwarf", d["layout"]
assert s["layout"] == {"source": "debuginfo", "debuginfo": dbg, "table_version": None}, s["layout"]
assert s["dwarf"]["present"]
for k in ("structs", "comm_size", "seq_number_n", "sub_size", "peer_size"):
    assert d[k] == s[k], (k, d[k], s[k])
print(f"ok: {name}: layout from {dbg}, equal to the unstripped file's")
PY
}

# probe NAME LIB: probe-check --json of LIB with a fresh layout cache
probe() {
	CCLD_CACHE_DIR=$TMP/cache-$1 "$BIN/ccld-trace" probe-check --json "$2" >"$TMP/$1.json" ||
		fail "probe-check $2 failed"
}

# check_split NAME ORIGINAL: both places debuginfo is looked for
check_split() {
	local dbg
	split "$2" "$1"
	probe "$1-orig" "$2"
	probe "$1-none" "$TMP/$1/lib/libnccl.so.2"
	python3 -c 'import json,sys; l = json.load(open(sys.argv[1]))["layout"]
assert l["source"] in ("table", "none"), l' "$TMP/$1-none.json" ||
		fail "$1: a layout without the debuginfo installed"
	dbg=$TMP/$1/dbg/.build-id/${ID:0:2}/${ID:2}.debug
	mkdir -p "$(dirname "$dbg")"
	cp "$TMP/$1/debug.bin" "$dbg"
	CCLD_DEBUGINFO_DIR=$TMP/$1/dbg probe "$1-dir" "$TMP/$1/lib/libnccl.so.2"
	same_layout "$1 (.build-id)" "$TMP/$1-orig.json" "$TMP/$1-dir.json" "$dbg"
	dbg=$TMP/$1/dcache/$ID/debuginfo
	mkdir -p "$(dirname "$dbg")"
	mv "$TMP/$1/debug.bin" "$dbg"
	DEBUGINFOD_CACHE_PATH=$TMP/$1/dcache probe "$1-dcache" "$TMP/$1/lib/libnccl.so.2"
	same_layout "$1 (debuginfod cache)" "$TMP/$1-orig.json" "$TMP/$1-dcache.json" "$dbg"
}

# 1: probe-check, the stand-in and (where present) the real library
unset CCLD_DEBUGINFO_DIR DEBUGINFOD_CACHE_PATH
check_split standin "$SIMLIB/libnccl.so.2"
SID=$ID
REAL_NCCL=${CCLD_REAL_NCCL:-/usr/local/cuda/lib/libnccl.so.2}
if [ -r "$REAL_NCCL" ]; then
	check_split real "$REAL_NCCL"
	rm -rf "$TMP/real"
elif [ "${CCLD_REQUIRE_REAL_NCCL:-0}" = 1 ]; then
	fail "no real libnccl.so.2 at $REAL_NCCL and CCLD_REQUIRE_REAL_NCCL=1"
else
	echo "no real libnccl.so.2 at $REAL_NCCL: its part skipped"
fi

# 2: a job on the stripped stand-in, its layout from the debuginfo
require_bpf
cp "$SIMLIB/libcudart.so.13" "$TMP/standin/lib/"
export CCLD_DEBUGINFO_DIR=$TMP/standin/dbg CCLD_CACHE_DIR=$TMP/cache-trace
mkdir -p "$CCLD_DEBUGINFO_DIR/.build-id/${SID:0:2}"
cp "$TMP/standin/dcache/$SID/debuginfo" "$CCLD_DEBUGINFO_DIR/.build-id/${SID:0:2}/${SID:2}.debug"
start_tracer trace --all --stop-new --json --events -v
LD_LIBRARY_PATH=$TMP/standin/lib start_job --ranks 4 --tp 2 --steps 30 --compute-ms 5
wait_job
sleep 1
stop_tracer trace
# (found through the process's root: /proc/PID/root/... names the same file)
grep -F "$TMP/standin/lib/libnccl.so.2 " "$TMP/trace.err" |
	grep -q "layout debuginfo [^ ]*$CCLD_DEBUGINFO_DIR/.build-id/${SID:0:2}/${SID:2}.debug)" ||
	fail "the layout did not come from the debuginfo: $(cat "$TMP/trace.err")"
grep -F "$TMP/standin/lib/libnccl.so.2: " "$TMP/trace.err" | grep -q "no DWARF layout" &&
	fail "said there is no layout: $(cat "$TMP/trace.err")"
job_records "$TMP/trace.jsonl" "$TMP/trace.job.jsonl" 4
python3 "$TOP/tests/e2e/compare_calls.py" "$TMP/trace.job.jsonl" "$TMP/log" ||
	fail "with the debuginfo's layout: trace differs from the job's calls"
grep -q '"seq_source":"local"' "$TMP/trace.job.jsonl" &&
	fail "sequence numbers counted locally: NCCL's seqNumber[] not read"
echo "ok: a job on the stripped stand-in traced with the layout from its debuginfo"
