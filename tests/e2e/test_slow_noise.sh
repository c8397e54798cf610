#!/usr/bin/env bash
# A noisy neighbour: CPU hogs on every core of the machine (the
# ranks' cores: the 8 ranks share them) in bursts of 0.5-0.8 s every 2-3 s,
# while the stand-in job (8 ranks, TP 2, PP 2, DP 2) trains, traced live
# with the default minimum duration of a slow verdict (3 iterations, 1 s).
#  - healthy job: no slow verdict.  The noise is real: the same capture,
#    replayed with no minimum (--slow-min-iters 1 --slow-min-s 0), gives
#    slow verdicts;
#  - rank 3 computing 2x longer from step 250 on (sustained), same noise,
#    the job stopped 2 s after the first root verdict:
#    still named, S1 root.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
BASE=(--ranks 8 --tp 2 --pp 2 --compute-ms 25 --jitter 10 --timeout 120)
NCPU=$(nproc)

# hog_bursts FOR_S: busy loops on every core in bursts until FOR_S passed
hog_bursts() {
	local end=$((SECONDS + $1)) i
	while [ $SECONDS -lt $end ]; do
		sleep "$(awk -v r=$RANDOM 'BEGIN { print 2 + r / 32767 }')"
		for ((i = 0; i < NCPU; i++)); do
			timeout "$(awk -v r=$RANDOM 'BEGIN { print 0.5 + 0.3 * r / 32767 }')" \
				bash -c 'while :; do :; done' &
		done
		wait
	done
}

# run NAME STEPS "JOB ARGS" [ROOT]: the job under noise, traced; verdicts in
# NAME.jsonl.  ROOT=1: stopped 2 s after the first root verdict (the steps
# after it add nothing to judge by); else it runs to its end
run() {
	local name=$1 steps=$2 jobargs=$3 root=${4:-0} hog
	rm -rf "$TMP/log" "$TMP/pids" "$TMP/go"
	# shellcheck disable=SC2086
	start_job "${BASE[@]}" --steps "$steps" $jobargs --wait-start "$TMP/go"
	start_tracer "$name" -p "$(rank_pids 8)" --json -o "$TMP/$name.ccld"
	touch "$TMP/go"
	sleep 5		# the baselines are learned in quiet (~4 s)
	hog_bursts 60 &
	hog=$!
	at_exit "kill $hog"
	if [ "$root" = 1 ]; then
		WAIT_S=60 wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl"
		sleep 2
		stop_job "$JOB"
	else
		wait_job
	fi
	kill "$hog" 2>/dev/null
	pkill -f 'while :; do :; done' 2>/dev/null
	sleep 0.5
	stop_tracer "$name"
}

slow_verdicts() {
	grep -E '"type":"verdict"' "$1" | grep -cE '"class":"S[123]"'
}

run healthy 700 ""
n=$(slow_verdicts "$TMP/healthy.jsonl")
[ "$n" = 0 ] || fail "healthy job under noise: $n slow verdict(s): $(grep -m2 verdict "$TMP/healthy.jsonl")"
"$BIN/ccld-trace" replay "$TMP/healthy.ccld" --json --slow-min-iters 1 --slow-min-s 0 \
	>"$TMP/healthy.nomin" || fail "replay failed"
n=$(slow_verdicts "$TMP/healthy.nomin")
[ "$n" -gt 0 ] || fail "the noise slowed nothing: no verdict even with no minimum duration"
echo "healthy: ok: no verdict under noise ($n without the minimum duration)"

run straggler 700 "--slow 3:250:2" 1
pid3=$(awk '$1 == 3 { print $2 }' "$TMP/pids")
python3 - "$TMP/straggler.jsonl" "$pid3" <<'EOF' || fail "straggler under noise not named"
import json, sys
roots = [v for v in map(json.loads, open(sys.argv[1]))
         if v.get("type") == "verdict" and v.get("role") == "root"]
ok = [v for v in roots if v["class"] == "S1" and
      [c["pid"] for c in v["culprits"]] == [int(sys.argv[2])]]
for v in roots:
    print(v["class"], [c["pid"] for c in v["culprits"]], v["evidence"]["text"][:160])
sys.exit(0 if ok and ok[0] is roots[0] else 1)
EOF
echo "straggler: ok: named under the same noise"
echo "ok: noise gives no verdict, a sustained straggler under it is named"
