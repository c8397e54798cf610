#!/usr/bin/env bash
# No false hang verdicts: a clean run with a checkpoint-like pause of every
# rank longer than the stall threshold (below the long one), with +-20%
# jitter, and a rank 4 stall thresholds late to a barrier-sized all-reduce.
# CCLD_NOFALSE_SECS sets the clean run's length, CCLD_NOFALSE_BARRIER_S the
# late rank's wait: 60 s and 20 s by default (make test; the pause ends 10 s
# before the run), 300 s and 60 s in make soak.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=${CCLD_TEST_STALL:-5}
SECS=${CCLD_NOFALSE_SECS:-60}
BARRIER_S=${CCLD_NOFALSE_BARRIER_S:-20}

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

# ~10 steps/s; a 20 s pause of every rank at step 300 (30 s in)
run checkpoint "$SECS" --steps 100000 --compute-ms 90 --jitter 20 --pause 300:20
# rank 4 sleeps BARRIER_S before the 1-element barrier all-reduce at step 20
run barrier $((BARRIER_S + 20)) --steps 100000 --compute-ms 90 --barrier-wait 4:20:$BARRIER_S
echo "ok: no false verdict"
