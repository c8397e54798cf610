#!/usr/bin/env bash
# A hang in communicator teardown (docs/analyzer.md, "Setup and teardown"):
# a 4-rank stand-in job (TP 2, PP 2) traced from its start, whose rank 2
# never returns from its first ncclCommDestroy (CCLD_SIM_FAULT teardownhang,
# as NCCL's teardown when its proxy thread is stuck in the network).  The
# other ranks destroy their comms and exit.  ccld must give one root
# verdict, an H3 naming rank 2's process inside ncclCommDestroy, and the
# capture must replay to the same verdicts.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=3

CCLD_SIM_FAULT="teardownhang rank=2" start_job --ranks 4 --tp 2 --pp 2 --steps 30 \
	--compute-ms 5 --timeout 60 --wait-start "$TMP/go"
pids=$(rank_pids 4)
start_tracer td -p "$pids" --json --stall "$STALL" -o "$TMP/td.ccld"
touch "$TMP/go"
WAIT_S=$((STALL + 30)) wait_for grep -qs '"class":"H3","role":"root"' "$TMP/td.jsonl" ||
	fail "no H3 verdict: $(grep verdict "$TMP/td.jsonl" | tail -3) $(cat "$TMP/td.err")"
sleep 1
stop_tracer td
stop_job "$JOB"
grep -q "teardownhang: ncclCommDestroy never returns" "$TMP/job.err" ||
	fail "the fault did not take effect: $(tail -3 "$TMP/job.err")"

python3 - "$TMP/td.jsonl" "$TMP/pids" <<'PY' || fail "wrong verdict"
import json, re, sys
vs = [json.loads(l) for l in open(sys.argv[1]) if '"verdict"' in l]
pid2 = next(int(l.split()[1]) for l in open(sys.argv[2]) if l.split()[0] == "2")
roots = [v for v in vs if v.get("role") == "root"]
bad = []
if len(roots) != 1:
    bad.append(f"expected one root verdict, got {len(roots)}")
else:
    v = roots[0]
    t = v["evidence"]["text"]
    cul = v["culprits"]
    if v["class"] != "H3" or [c["pid"] for c in cul] != [pid2]:
        bad.append(f"not an H3 naming pid {pid2} (rank 2)")
    if cul and cul[0].get("global_rank") != 2:
        bad.append("no global_rank 2 in the culprit")
    # inside for the stall time (3 s) and at most one analysis tick more
    if not re.search(r"rank 1 of comm [0-9a-f]{16} is inside ncclCommDestroy"
                     r" for 3\.[0-9] s or more", t):
        bad.append("the text does not say that rank 1 is inside ncclCommDestroy"
                   " for the stall time")
    if "the teardown does not complete" not in t:
        bad.append("the text does not say that the teardown does not complete")
for b in bad:
    print(b)
for v in vs:
    print(json.dumps(v))
sys.exit(1 if bad else 0)
PY
replay_same td --stall "$STALL"
echo "ok: the rank stuck in its teardown named, with its process"
