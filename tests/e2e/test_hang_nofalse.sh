#!/usr/bin/env bash
# No false hang verdicts: a clean run with a checkpoint-like pause of every
# rank longer than the stall threshold (below the long one), with +-20%
# jitter, and a rank 4 stall thresholds late to a barrier-sized all-reduce.
# CCLD_NOFALSE_SECS sets the clean run's length, CCLD_NOFALSE_PAUSE the
# checkpoint (STEP:SECONDS, ~10 steps/s), CCLD_NOFALSE_BARRIER_S the late
# rank's wait: 30 s, a 10 s pause at step 100 and 10 s by default (make test:
# each twice the stall threshold, and the run goes on 10 s after each), 300 s,
# 20 s at step 300 and 60 s in make soak.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=${CCLD_TEST_STALL:-5}
SECS=${CCLD_NOFALSE_SECS:-30}
PAUSE=${CCLD_NOFALSE_PAUSE:-100:10}
BARRIER_S=${CCLD_NOFALSE_BARRIER_S:-10}

# run NAME SECONDS JOBARGS...: traces the job for SECONDS, expects no verdict
run() {
	local name=$1 secs=$2
	shift 2
	begin_scenario "$name" || return 0
	rm -rf "$TMP/log" "$TMP/pids" "$TMP/go"
	start_job --ranks 8 --tp 2 --pp 2 --timeout $((secs + 60)) --wait-start "$TMP/go" "$@"
	local pids
	pids=$(rank_pids 8)
	start_tracer "$name" -p "$pids" --json --stall "$STALL" --hang 300 \
		--duration "$secs" -o "$TMP/$name.ccld"
	touch "$TMP/go"
	wait "$TRACER" || fail "$name: ccld-trace exited $?: $(cat "$TMP/$name.err")"
	stop_job "$JOB"
	python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--no-verdict || fail "$name: false verdict"
	grep -q '"type":"summary"' "$TMP/$name.jsonl" || fail "$name: no summary"
	echo "$name: no verdict in $secs s"
}

# ~10 steps/s; every rank pauses at once (a checkpoint)
run checkpoint "$SECS" --steps 100000 --compute-ms 90 --jitter 20 --pause "$PAUSE"
# rank 4 sleeps BARRIER_S before the 1-element barrier all-reduce at step 20
# (~2 s in); the comms behind it must not stall once it ends
run barrier $((BARRIER_S + 12)) --steps 100000 --compute-ms 90 --barrier-wait 4:20:$BARRIER_S
echo "ok: no false verdict"
