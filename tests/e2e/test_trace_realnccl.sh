#!/usr/bin/env bash
# The real libnccl.so.2 (2.28.9): a program calls its API with known invalid
# arguments (no GPU: the calls fail fast); ccld-trace, attached to the running
# process with -p, must report exactly those arguments and return codes.
. "$(dirname "$0")/../lib.sh"
require_bpf
require_real_nccl
inc=$(dirname "$REAL_NCCL")/../include
[ -r "$inc/nccl.h" ] || skip "no nccl.h beside $REAL_NCCL"

cc -O1 -g -Wall -Werror -I"$inc" "$TOP/tests/e2e/realnccl_prog.c" \
	-L"$(dirname "$REAL_NCCL")" -lnccl -Wl,-rpath,"$(dirname "$REAL_NCCL")" \
	-o "$TMP/prog" || fail "cannot build the test program"

"$TMP/prog" "$TMP/go" >"$TMP/expected.jsonl" 2>"$TMP/prog.err" &
prog=$!
at_exit "kill $prog"
"$BIN/ccld-trace" -p "$prog" --json --events >"$TMP/trace.jsonl" 2>"$TMP/trace.err" &
tracer=$!
at_exit "kill $tracer"
WAIT_S=60 wait_for grep -qs "tracing" "$TMP/trace.err" ||
	fail "tracer did not start: $(cat "$TMP/trace.err")"
touch "$TMP/go"
wait "$prog" || fail "test program failed: $(cat "$TMP/prog.err")"
# ccld-trace -p ends by itself once every traced process has exited
WAIT_S=10 wait_for grep -qs "every traced process exited" "$TMP/trace.err" ||
	fail "ccld-trace did not notice the exit: $(cat "$TMP/trace.err")"
wait "$tracer" || fail "ccld-trace exited with $?: $(cat "$TMP/trace.err")"

python3 - "$TMP/expected.jsonl" "$TMP/trace.jsonl" <<'PY' || fail "trace differs from the calls made"
import json, sys
expected = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
expected = [e for e in expected if "op" in e]
trace = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
calls = [r for r in trace if r["type"] == "call"]
comms = [r for r in trace if r["type"] == "comm"]
bad = 0
for want in expected:
    pool = comms if want["op"].startswith("Comm") else calls
    match = [r for r in pool if all(r.get(k) == v for k, v in want.items())]
    if len(match) != 1:
        print(f"expected exactly one traced call like {want}, found {len(match)}")
        bad += 1
if len(calls) != sum(1 for w in expected if not w["op"].startswith("Comm")):
    print(f"traced {len(calls)} calls: {calls}")
    bad += 1
summary = [r for r in trace if r["type"] == "summary"]
if not summary or summary[-1]["dropped"] != 0:
    print(f"bad summary: {summary}")
    bad += 1
if bad:
    print("trace was:", *trace, sep="\n  ")
    sys.exit(1)
print(f"ok: {len(expected)} real NCCL calls traced with their arguments and return codes")
PY
