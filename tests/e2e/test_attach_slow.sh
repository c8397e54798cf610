#!/usr/bin/env bash
# Attaching to a job that is already slow: one rank of the
# stand-in job (8 ranks, TP 2, PP 2, DP 2) computes 2x longer from its
# first step; ccld-trace attaches only after several slow steps, with its
# default minimum duration of a slow verdict (3 iterations, 1 s).  No
# baseline of the healthy job exists: the straggler must be named as S1,
# root, by comparing the ranks of its comms, within 5 iterations (of ~0.85
# s) of the attach.  The capture replays to the same.  pytorch: the same
# where the CPUs run ahead of their GPUs (rank 3's GPU computes 2x longer,
# 100 ms steps), so no round's starts are known without step hooks: the
# survey of a run-ahead comm (docs/slow.md) must name it within
# PT_MAX_ITERS iterations: 16 judged rounds of its TP comm show that the
# CPUs run ahead, then the survey waits for 59 rounds of that 2-rank comm
# with every arrival (4 a step), 5 s at most (about 24 steps of 207 ms):
# 30 allowed.  Its replay cannot turn hooks on, so only the live verdict
# is checked.
# CCLD_SCENARIO=name runs one scenario.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
BASE=(--ranks 8 --tp 2 --pp 2 --compute-ms 400 --jitter 10 --steps 100000 --timeout 120)
MAX_ITERS=5
PT_MAX_ITERS=30

# iterations NS0 NS1 PID: the job's iterations between two wall-clock times,
# from the median step time of rank PID's call log (its world all-reduces)
iterations() {
	python3 - "$1" "$2" "$TMP/log/calls.$3.jsonl" <<'EOF'
import json, statistics, sys
t0, t1, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ts = [c["t_ns"] for c in map(json.loads, open(path))
      if c.get("op") == "AllReduce" and c.get("nranks") == 8]
step = statistics.median(b - a for a, b in zip(ts, ts[1:]))
print(f"{(t1 - t0) / step:.1f} {step / 1e6:.0f}")
EOF
}

# scenario NAME "JOB ARGS" CULPRIT MAX_ITERS REPLAY(1: the replay gives the same)
scenario() {
	local name=$1 jobargs=$2 culprit=$3 max_iters=$4 replay=$5
	begin_scenario "$name" || return 0
	rm -rf "$TMP/log" "$TMP/pids"
	# shellcheck disable=SC2086
	start_job "${BASE[@]}" $jobargs
	local pids t0 v got iters step cpid
	pids=$(rank_pids 8)
	sleep 5		# ~6 slow steps before anyone looks
	start_tracer "$name" -p "$pids" --json -o "$TMP/$name.ccld"
	t0=$(date +%s%N)	# its probes are in
	WAIT_S=20 wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no root verdict: $(tail -3 "$TMP/$name.jsonl")"
	sleep 0.5
	stop_tracer "$name"
	v=$(grep -m1 '"role":"root"' "$TMP/$name.jsonl")
	cpid=$(awk -v r="$culprit" '$1 == r { print $2 }' "$TMP/pids")
	got=$(python3 -c '
import json, sys
v = json.loads(sys.argv[1])
print(v["type"], v["class"], " ".join(str(c["pid"]) for c in v["culprits"]), v["detected_ns"])
' "$v")
	read -r typ cls cpids det <<<"$got"
	[ "$typ $cls $cpids" = "verdict S1 $cpid" ] ||
		fail "$name: want S1 naming rank $culprit (pid $cpid), got: $v"
	read -r iters step <<<"$(iterations "$t0" "$det" "$cpid")"
	awk -v i="$iters" -v m="$max_iters" 'BEGIN { exit !(i <= m) }' ||
		fail "$name: verdict $iters iterations (of $step ms) after the attach, want <= $max_iters"
	stop_job "$JOB"
	[ "$replay" = 1 ] || {
		echo "$name: ok: S1 rank $culprit, $iters iterations ($step ms) after the attach"
		return 0
	}
	"$BIN/ccld-trace" replay "$TMP/$name.ccld" --json >"$TMP/$name.replay" ||
		fail "$name: replay failed"
	diff <(grep -E '"(verdict|recovery)"' "$TMP/$name.jsonl") \
		<(grep -E '"(verdict|recovery)"' "$TMP/$name.replay") >/dev/null ||
		fail "$name: replay verdicts differ"
	echo "$name: ok: S1 rank $culprit, $iters iterations ($step ms) after the attach"
}

scenario plain "--slow 3:0:2" 3 "$MAX_ITERS" 1
scenario pytorch "--pattern pytorch --compute-ms 100 --slow 3:0:2" 3 "$PT_MAX_ITERS" 0
echo "ok: a job slow before ccld attached had its straggler named"
