#!/usr/bin/env bash
# ccld-trace and ccld-analyzer built with ASan+UBSan (build/asan/) through
# a few e2e scenarios (CCLD_ASAN=1, tests/lib.sh): a hang (H1, rank 2
# stuck in CPU code) and the step hooks turned on and off for a stopped
# rank, with their usual scripts and checks; a PyTorch-like job with a
# slow rank, whose comms get step-hook samples; each capture replayed; a
# fleet run (two agents, the analyzer, a local Redis).  Any sanitizer
# report fails, leaks at exit included.  The slow run checks that hooks
# were sampled, not its verdict: the sanitizers slow ccld-trace down, and
# test_slow_scenarios.sh checks the verdict with the plain build.
export CCLD_ASAN=1
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf

# under NAME ENV... SCRIPT: an e2e script with CCLD_ASAN=1 and ENV (its own
# sanitizer options and report folder); its output in $TMP/NAME.log,
# printed when it fails
under() {
	local name=$1 rc
	shift
	env -u ASAN_OPTIONS -u UBSAN_OPTIONS "$@" >"$TMP/$name.log" 2>&1
	rc=$?
	case $rc in
	0) echo "$name: ok" ;;
	77) echo "$name: skipped ($(tail -n 1 "$TMP/$name.log"))" ;;
	*) cat "$TMP/$name.log"; fail "$name under ASan+UBSan (exit $rc)" ;;
	esac
}

under hang CCLD_SCENARIO=cpu-hang "$TOP/tests/e2e/test_hang_scenarios.sh"
under step-hooks "$TOP/tests/e2e/test_step_hooks.sh"

# rank 2's compute 3x longer for 60 steps from step 200, every call queued
# without waiting (test_slow_scenarios.sh ptcompute): the slow comms'
# processes get step hooks for a sample, on and off while the job runs
start_job --ranks 8 --tp 2 --pp 2 --compute-ms 25 --jitter 10 --timeout 120 --steps 330 \
	--pattern pytorch --slow 2:200:3:60 --wait-start "$TMP/go"
start_tracer slow -p "$(rank_pids 8)" --json --slow-min-s 0 -o "$TMP/slow.ccld"
touch "$TMP/go"
wait_job
sleep 0.5
stop_tracer slow
grep -q "step hooks were on for" "$TMP/slow.err" ||
	fail "slow: no step-hook sample: $(cat "$TMP/slow.err")"
"$BIN/ccld-trace" replay "$TMP/slow.ccld" --json --slow-min-s 0 >"$TMP/slow.replay" ||
	fail "slow: replay failed"
echo "slow: ok ($(grep -c "step hooks were on for" "$TMP/slow.err") step-hook sample(s))"

under fleet CCLD_SCENARIO=skip-tp "$TOP/tests/fleet/test_fleet_e2e.sh"
echo "ok: no sanitizer report from ccld-trace or ccld-analyzer"
