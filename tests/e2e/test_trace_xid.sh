#!/usr/bin/env bash
# GPU Xid evidence (tier D): an NVIDIA driver Xid line for the GPU
# of rank 2 (the stand-in gives rank r the bus id 0000:(18+r):00.0) written
# to /dev/kmsg while the job runs: an "HW" verdict names rank 2 and the
# Xid; then rank 2's GPU stalls (gpustall) and the H3 verdict cites the
# Xid.  The capture replays with the same verdicts.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
[ -w /dev/kmsg ] || fail "/dev/kmsg not writable"
STALL=3

CCLD_SIM_FAULT="gpustall rank=2 after_ms=6000" start_job --ranks 8 --tp 2 --pp 2 \
	--steps 100000 --compute-ms 25 --timeout 120 --wait-start "$TMP/go"
pids=$(rank_pids 8)
start_tracer xid -p "$pids" --json --stall "$STALL" -o "$TMP/xid.ccld"
grep -q "no GPU Xid evidence" "$TMP/xid.err" && fail "$(cat "$TMP/xid.err")"
touch "$TMP/go"
sleep 2
echo "NVRM: Xid (PCI:0000:1a:00): 79, pid=$(awk '$1 == 2 {print $2}' "$TMP/pids"), name=ccld-simjob-ran, GPU has fallen off the bus." >/dev/kmsg
WAIT_S=20 wait_for grep -qs '"class":"HW"' "$TMP/xid.jsonl" ||
	fail "no HW verdict: $(cat "$TMP/xid.err")"
WAIT_S=30 wait_for grep -qs '"class":"H3","role":"root"' "$TMP/xid.jsonl" ||
	fail "no H3 verdict: $(tail -3 "$TMP/xid.jsonl")"
sleep 1
stop_tracer xid
stop_job "$JOB"
python3 - "$TMP/xid.jsonl" "$TMP/pids" <<'PY' || fail "wrong verdicts"
import json, sys
vs = [json.loads(l) for l in open(sys.argv[1]) if '"verdict"' in l]
pid2 = [int(l.split()[1]) for l in open(sys.argv[2]) if l.split()[0] == "2"][0]
hw = [v for v in vs if v["class"] == "HW"]
assert len(hw) == 1, hw
assert [c["pid"] for c in hw[0]["culprits"]] == [pid2], hw[0]
assert hw[0]["evidence"]["xid"] == 79 and hw[0]["evidence"]["gpu"] == "0000:1a:00.0", hw[0]
h3 = [v for v in vs if v["class"] == "H3" and v["role"] == "root"][0]
assert pid2 in [c["pid"] for c in h3["culprits"]], h3
assert h3["evidence"].get("xid") == 79 and "Xid 79" in h3["evidence"]["text"], h3
print("ok:", hw[0]["evidence"]["text"])
print("ok:", h3["evidence"]["text"][:300])
PY
"$BIN/ccld-trace" replay "$TMP/xid.ccld" --json --stall "$STALL" >"$TMP/xid.replay" ||
	fail "replay failed"
diff <(grep '"verdict"' "$TMP/xid.jsonl") <(grep '"verdict"' "$TMP/xid.replay") >/dev/null ||
	fail "replay verdicts differ"
echo "ok: the Xid is an HW verdict for rank 2 and evidence in its H3 verdict, live and replayed"
