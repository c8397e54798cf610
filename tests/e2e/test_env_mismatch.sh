#!/usr/bin/env bash
# Mismatched environments (docs/analyzer.md, "Mismatched environments"): a
# 4-rank stand-in job (TP 2) whose rank 3 runs another build of the
# library (a copy with another build id, by LD_LIBRARY_PATH) and sets
# NCCL_ALGO=Tree where the others set Ring.  Attached with -p, ccld must
# give an ENV verdict naming rank 3 on each comm it is in, and when rank 3
# then hangs in CPU code, the H1 verdict on its TP comm must cite both
# differences.  The capture replays to the same verdicts.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=3

# the stand-in again, another build id: what another container image brings
mkdir -p "$TMP/other"
python3 - "$SIMLIB/libnccl.so.2" "$TMP/other/libnccl.so.2" <<'PY' || fail "cannot copy the library"
import subprocess, sys
src, dst = sys.argv[1:3]
out = subprocess.run(["readelf", "-n", src], capture_output=True, text=True, check=True).stdout
bid = bytes.fromhex(next(l.split()[-1] for l in out.splitlines() if "Build ID" in l))
data = open(src, "rb").read()
assert data.count(bid) == 1, "the build id is not in the file once"
open(dst, "wb").write(data.replace(bid, bytes(b ^ 0xff for b in bid)))
PY
readelf -n "$TMP/other/libnccl.so.2" | grep -q "Build ID" || fail "the copy has no build id"

start_job --ranks 4 --tp 2 --steps 100000 --compute-ms 5 --timeout 60 --hang 3:40 \
	--rank-env "0:NCCL_ALGO=Ring" --rank-env "1:NCCL_ALGO=Ring" --rank-env "2:NCCL_ALGO=Ring" \
	--rank-env "3:NCCL_ALGO=Tree" --rank-env "3:LD_LIBRARY_PATH=$TMP/other:$SIMLIB" \
	--wait-start "$TMP/go"
pids=$(rank_pids 4)
grep -q "$TMP/other/libnccl.so.2" "/proc/$(awk '$1 == 3 {print $2}' "$TMP/pids")/maps" ||
	fail "rank 3 does not run the copy"
start_tracer env -p "$pids" --json --stall "$STALL" -o "$TMP/env.ccld"
touch "$TMP/go"
WAIT_S=$((STALL + 30)) wait_for grep -qs '"class":"H1","role":"root"' "$TMP/env.jsonl" ||
	fail "no H1 verdict: $(tail -3 "$TMP/env.jsonl") $(cat "$TMP/env.err")"
sleep 1
stop_tracer env
stop_job "$JOB"

python3 - "$TMP/env.jsonl" "$TMP/pids" <<'PY' || fail "wrong verdicts"
import json, sys
vs = [json.loads(l) for l in open(sys.argv[1]) if '"verdict"' in l]
pid3 = next(int(l.split()[1]) for l in open(sys.argv[2]) if l.split()[0] == "3")
env = [v for v in vs if v["class"] == "ENV"]
bad = []
# rank 3 is in the world comm and in one TP comm (DP 2 comms: TP 2, 4 ranks)
comms = {v["comm"] for v in env}
if len(env) < 2 or len(comms) != len(env):
    bad.append(f"expected one ENV verdict per comm of rank 3, got {env}")
for v in env:
    pids = sorted(c["pid"] for c in v["culprits"])
    text = v["evidence"]["text"]
    # the world comm: 3 ranks on one build, rank 3 alone on the other; a
    # 2-rank comm has no majority: both are named
    if "run different NCCL libraries" not in text:
        bad.append(f"ENV verdict without the libraries: {v}")
    elif "no build runs on most" in text:
        if pid3 not in pids or len(pids) != 2:
            bad.append(f"2-rank ENV verdict does not name both: {v}")
    elif pids != [pid3]:
        bad.append(f"ENV verdict does not name rank 3 (pid {pid3}) alone: {v}")
if not any([c["pid"] for c in v["culprits"]] == [pid3] for v in env):
    bad.append("no ENV verdict names rank 3 alone (the world comm's)")
h1 = [v for v in vs if v["class"] == "H1" and v["role"] == "root"]
if not h1:
    bad.append("no H1 root verdict")
else:
    t = h1[0]["evidence"]["text"]
    if [c["pid"] for c in h1[0]["culprits"]] != [pid3]:
        bad.append(f"H1 does not name rank 3: {h1[0]}")
    for want in ("the comm's ranks run different NCCL libraries",
                 "NCCL_ALGO differs across the comm's ranks: Ring on rank",
                 "Tree on rank"):
        if want not in t:
            bad.append(f"H1 does not say {want!r}: {t}")
for b in bad:
    print(b)
print(*[v["evidence"]["text"] for v in env + h1[:1]], sep="\n")
sys.exit(1 if bad else 0)
PY
replay_same env --stall "$STALL"
echo "ok: mixed NCCL builds named at once, and cited with NCCL_ALGO in the hang verdict"
