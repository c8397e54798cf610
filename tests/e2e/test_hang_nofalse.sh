#!/usr/bin/env bash
# No false hang verdicts: one clean run in which rank 4 comes stall
# thresholds late to a barrier-sized all-reduce (its peers wait in it, and
# the comms behind it must not stall once it ends) and later every rank
# pauses at once longer than the stall threshold (a checkpoint: below the
# long one), with +-20% jitter.  CCLD_NOFALSE_SECS sets the run's length,
# CCLD_NOFALSE_BARRIER_S the late rank's wait (at step 20, ~2 s in),
# CCLD_NOFALSE_PAUSE the checkpoint (STEP:SECONDS, ~10 steps/s): 40 s,
# 10 s and a 10 s pause at step 100 by default (make test: each twice the
# stall threshold, and the run goes on 8-10 s after each), 300 s, 60 s and
# 20 s at step 300 in make soak.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=${CCLD_TEST_STALL:-5}
SECS=${CCLD_NOFALSE_SECS:-40}
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

# ~10 steps/s; rank 4 sleeps BARRIER_S before the 1-element barrier
# all-reduce at step 20, then every rank pauses at once at PAUSE's step
run clean "$SECS" --steps 100000 --compute-ms 90 --jitter 20 \
	--barrier-wait 4:20:$BARRIER_S --pause "$PAUSE"
echo "ok: no false verdict"
