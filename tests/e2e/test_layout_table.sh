#!/usr/bin/env bash
# A library without DWARF whose NCCL version ccld's layout table knows: the
# stand-in, stripped, says "NCCL version 2.28.9", but its structs are laid
# out unlike NVIDIA's 2.28.9 (docs/standin.md), so the entry must not be
# used.  1. Traced from the start: the entry waits for a live comm, the
# first comm created rejects it (NCCL's startMagic where the entry puts it,
# the rest not), the trace stays the init-argument one and equals the
# job's calls.  2. Attached to running ranks: the attach-time read of their
# comm array rejects it, and no comm state is read through it.
# (test_layout_table_real.sh: the real 2.28.9 build, where the entry fits.)
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
stripped_standin "$TMP/lib"
strings -a "$TMP/lib/libnccl.so.2" | grep -q "^NCCL version 2.28.9+" ||
	fail "the stand-in no longer says it is NCCL 2.28.9"
export CCLD_CACHE_DIR=$TMP/cache	# the copy keeps the DWARF build's build-id
# what ccld-trace said of this copy (--all may also see other NCCL jobs)
said() { grep -F "$TMP/lib/libnccl.so.2: " "$TMP/$1.err"; }
# comm_state records of the job's ranks (their pids name the call logs)
comm_states() {
	python3 - "$TMP/$1.jsonl" "$TMP"/log/calls.*.jsonl <<'PY'
import json, re, sys
pids = {int(re.search(r"calls\.(\d+)\.jsonl$", p).group(1)) for p in sys.argv[2:]}
n = sum(1 for l in open(sys.argv[1]) if l.startswith("{")
        for r in [json.loads(l)] if r["type"] == "comm_state" and r["pid"] in pids)
print(n)
PY
}

# 1: traced from the start
start_tracer early --all --stop-new --json --events
LD_LIBRARY_PATH=$TMP/lib start_job --ranks 4 --tp 2 --steps 150 --compute-ms 5
wait_job
sleep 1
stop_tracer early
said early | grep -q "no DWARF layout of ncclComm (nor separate debuginfo for build-id [0-9a-f]*): ccld's table entry for NCCL 2.28.9 is used once a live communicator confirms it" ||
	fail "no word about the table entry: $(cat "$TMP/early.err")"
said early | grep -q "ccld's table layout of NCCL 2.28.9 does not fit this build (process [0-9]*, comm 0x[0-9a-f]*: endMagic at offset 1082960 .*): not used; no DWARF layout of ncclComm: identity from init arguments only" ||
	fail "the entry was not rejected: $(cat "$TMP/early.err")"
said early | grep -q "confirmed by comm" && fail "the entry was confirmed: $(cat "$TMP/early.err")"
[ "$(said early | grep -c "does not fit this build")" = 1 ] ||
	fail "rejected more than once: $(cat "$TMP/early.err")"
job_records "$TMP/early.jsonl" "$TMP/early.job.jsonl" 4
python3 "$TOP/tests/e2e/compare_calls.py" "$TMP/early.job.jsonl" "$TMP/log" --no-dwarf ||
	fail "with the entry rejected: trace differs from the job's calls"
[ "$(comm_states early)" = 0 ] || fail "a comm read through the rejected entry"
echo "ok: traced from the start, the 2.28.9 entry rejected by the first comm"

# 2: attached to a running job (NCCL's comm array, read at attach)
rm -rf "$TMP/log" "$TMP/pids"
LD_LIBRARY_PATH=$TMP/lib start_job --ranks 4 --tp 2 --steps 100000 --compute-ms 20 --timeout 60
pids=$(rank_pids 4)
WAIT_S=30 wait_for bash -c "[ \$(cat '$TMP'/log/calls.*.jsonl 2>/dev/null | wc -l) -ge 40 ]" ||
	fail "the job makes no calls: $(tail -3 "$TMP/job.err")"
start_tracer late -p "$pids" --json --events
WAIT_S=10 wait_for grep -qs "state read from memory" "$TMP/late.err" ||
	fail "no attach-time read: $(cat "$TMP/late.err")"
stop_tracer late
said late | grep -q "ccld's table layout of NCCL 2.28.9 does not fit this build (process [0-9]*, comm 0x[0-9a-f]*: endMagic at offset 1082960 .*): not used" ||
	fail "not rejected at attach: $(cat "$TMP/late.err")"
grep -q "state read from memory: 0 comm rank(s) of 4 process(es) (none found)" "$TMP/late.err" ||
	fail "comms read through the rejected entry: $(cat "$TMP/late.err")"
[ "$(comm_states late)" = 0 ] || fail "a comm read through the rejected entry"
echo "ok: attached late, the 2.28.9 entry rejected by the comms in NCCL's array"
