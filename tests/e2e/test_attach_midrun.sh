#!/usr/bin/env bash
# Attaching to a job in the middle of its run, the way ccld is used: the
# stand-in job (8 ranks, TP 2, PP 2, DP 2) runs from its first step with no
# tracer; ccld-trace -p attaches once rank 0 is past step 60, while
# collectives and p2p calls are in flight.
#  - calls: every call after the attach exactly once, NCCL's seq on every
#    collective, p2p counted from the attach and labelled so
#    (check_midrun.py against the job's own call log), both workload
#    patterns (the plain one in subset-calls);
#  - a subset of the ranks first, the rest later: two recorders attached
#    ~60 steps apart, their captures replayed together give the same, and
#    p2p counters that started at different moments never make a verdict
#    of their own (the job is healthy: none may come);
#  - faults after the attach: H1 (skipped p2p group), H3 (network stall)
#    and S1 (4x compute, PyTorch pattern) with the right class and culprit,
#    and H1 and H2 (count mismatch) where the ranks were attached at
#    different times.
# CCLD_SCENARIO=name runs one scenario.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=${CCLD_TEST_STALL:-3}
# a failed scenario's capture is replayed with these (tests/lib.sh)
SCENARIO_REPLAY_ARGS="--stall $STALL --slow-min-s 0"
BASE=(--ranks 8 --tp 2 --pp 2 --timeout 120 -v)
ATTACH_STEP=60

only() { begin_scenario "$1"; }
mono_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }
# past_step R S: rank R finished step S (the job runs with -v)
past_step() {
	WAIT_S=60 wait_for grep -qs "^rank $1 step $2 done" "$TMP/job.err" ||
		fail "rank $1 never reached step $2: $(tail -3 "$TMP/job.err")"
}
# pids_of "AWK COND": the pids of the ranks matching COND on $1 (the rank)
pids_of() { awk "$1 {print \$2}" "$TMP/pids" | paste -sd, -; }
# before_step R S: the fault step S of rank R was not reached before now
before_step() {
	! grep -qs "^rank $1 step $2 done" "$TMP/job.err" ||
		fail "the attach took too long: rank $1 passed step $2 before it"
}
new_job() {
	rm -rf "$TMP/log" "$TMP/pids"
	CCLD_SIM_FAULT=${FAULT:-} start_job "${BASE[@]}" "$@"
	rank_pids 8 >/dev/null
	past_step 0 $ATTACH_STEP
}

# no_hang_verdict NAME: a healthy job, seen from the middle, is not hung.
# (Slow verdicts under this VM's CPU noise are test_slow_noise.sh's matter.)
no_hang_verdict() {
	! grep -q '"type":"verdict".*"class":"H' "$TMP/$1.jsonl" ||
		fail "$1: a hang verdict on a healthy job: $(grep '"class":"H' "$TMP/$1.jsonl" | head -2)"
}

# calls NAME PATTERN: all ranks at once; the job runs to its end traced
calls() {
	only "$1" || return 0
	new_job --steps 400 --compute-ms 5 --pattern "$2"
	start_tracer "$1" -p "$(pids_of 1)" --json --events
	local t0
	t0=$(mono_ns)
	wait_job
	stop_tracer "$1"
	python3 "$TOP/tests/e2e/check_midrun.py" "$TMP/$1.jsonl" "$TMP/log" \
		--group "$(pids_of 1)@$t0" || fail "$1: calls after the attach"
	no_hang_verdict "$1"
	echo "$1: ok"
}

declare -A REC
# start_recorder NAME PIDS: ccld-trace record of PIDS into NAME.ccld
start_recorder() {
	"$BIN/ccld-trace" record -p "$2" -o "$TMP/$1.ccld" --stall "$STALL" \
		>"$TMP/$1.out" 2>"$TMP/$1.err" &
	REC[$1]=$!
	at_exit "kill -9 ${REC[$1]}"
	WAIT_S=60 wait_for grep -qs "tracing" "$TMP/$1.err" ||
		fail "recorder $1 did not start: $(cat "$TMP/$1.err")"
}
stop_recorder() {
	kill -INT "${REC[$1]}" 2>/dev/null
	wait "${REC[$1]}" || fail "recorder $1 exited $?: $(cat "$TMP/$1.err")"
}


# subset NAME "JOB ARGS" "CHECK ARGS": ranks 0-3 first, 4-7 sixty steps
# later; CHECK ARGS empty: the healthy job's calls are checked instead
subset() {
	local name=$1 jobargs=$2 checkargs=$3
	only "$name" || return 0
	# shellcheck disable=SC2086
	new_job $jobargs
	start_recorder "$name-a" "$(pids_of '$1 < 4')"
	local ta tb
	ta=$(mono_ns)
	past_step 4 $((ATTACH_STEP * 2))
	start_recorder "$name-b" "$(pids_of '$1 >= 4')"
	tb=$(mono_ns)
	if [ -z "$checkargs" ]; then
		wait_job
	else
		wait_hung 60
		sleep $((STALL + 2))
	fi
	stop_recorder "$name-a"
	stop_recorder "$name-b"
	stop_job "$JOB"
	"$BIN/ccld-trace" replay "$TMP/$name-a.ccld" "$TMP/$name-b.ccld" --json --events \
		--stall "$STALL" >"$TMP/$name.jsonl" || fail "$name: replay failed"
	if [ -z "$checkargs" ]; then
		python3 "$TOP/tests/e2e/check_midrun.py" "$TMP/$name.jsonl" "$TMP/log" \
			--group "$(pids_of '$1 < 4')@$ta" --group "$(pids_of '$1 >= 4')@$tb" ||
			fail "$name: calls of two recorders attached at different times"
		no_hang_verdict "$name"
	else
		# shellcheck disable=SC2086
		python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" \
			"$TMP/log" --stall "$STALL" $checkargs || fail "$name: wrong verdict"
	fi
	echo "$name: ok"
}

# hang NAME FAULT_RANK FAULT_STEP "JOB ARGS" "CHECK ARGS": the fault comes
# after the attach of every rank at once
hang() {
	local name=$1 frank=$2 fstep=$3 jobargs=$4 checkargs=$5
	only "$name" || return 0
	# shellcheck disable=SC2086
	new_job --steps 100000 --compute-ms 5 $jobargs
	start_tracer "$name" -p "$(pids_of 1)" --json --stall "$STALL" -o "$TMP/$name.ccld"
	before_step "$frank" "$fstep"
	WAIT_S=$((STALL + 40)) wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no verdict: $(tail -3 "$TMP/$name.jsonl") $(cat "$TMP/$name.err")"
	sleep 1
	stop_tracer "$name"
	stop_job "$JOB"
	# shellcheck disable=SC2086
	python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--stall "$STALL" $checkargs || fail "$name: wrong verdict"
	echo "$name: ok"
}

# slow NAME "JOB ARGS" "CHECK ARGS": a slowdown long after the attach; the
# baselines are learned from what came after it
slow() {
	local name=$1 jobargs=$2 checkargs=$3
	only "$name" || return 0
	# shellcheck disable=SC2086
	new_job --compute-ms 25 --jitter 10 $jobargs
	start_tracer "$name" -p "$(pids_of 1)" --json --slow-min-s 0 -o "$TMP/$name.ccld"
	wait_job
	sleep 0.5
	stop_tracer "$name"
	# shellcheck disable=SC2086
	python3 "$TOP/tests/e2e/check_slow.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--tracer-min-s 0 $checkargs || fail "$name: wrong verdict"
	echo "$name: ok"
}

# the plain pattern's calls after a mid-run attach are subset-calls' (each
# of its two recorders' calls checked the same way, from their captures);
# the live output's, here with the PyTorch pattern
calls calls-pytorch pytorch
subset subset-calls "--steps 600 --compute-ms 5" ""
# faults at step 400: the attach (at step 60) is long done by then
hang skip-pp 5 400 "--skip 5:400:pp" "--class H1 --culprits 5 --kind pp --seq none"
# (a CPU hang and a count mismatch are test_hang_scenarios.sh's cpu-hang and
# count; the mid-run attach adds nothing to them that skip-pp, netstall and
# the subset scenarios do not test)
# rank 3's network stops: the first stuck flow is its data sent and never
# delivered, or a peer's send toward it without credit (not transmitted,
# the receiver's cause), depending on where the stall caught each proxy
FAULT="netstall rank=3 after_ms=7000" \
	hang netstall 3 100000 "" "--class H3 --culprits 3 --state not_delivered,not_transmitted"
# (the plain pattern's S1 is test_slow_scenarios.sh's compute)
# PyTorch pattern, 4x.  Rank 2's TP comm (the direct one) grows little (its
# rounds include the kernels: R 1.4-2.5) while its DP comms, which wait for
# it, are R 7-25 and are sampled first: the root is then found by following
# the DP comm's cascade to the TP comm, whose rounds the sample hooks too
# (docs/slow.md, "A cascade followed to its root").
slow ptcompute "--steps 400 --pattern pytorch --slow 2:260:4:60" \
	"--class S1 --culprits 2 --onset 260 --until 320"
subset subset-skip-pp "--steps 100000 --compute-ms 5 --skip 6:400:pp" \
	"--class H1 --culprits 6 --kind pp --seq none"
# the culprit attached first: its p2p counter started ~60 steps before its
# peer's, so comparing the two counts would blame the peer
subset subset-skip-pp-first "--steps 100000 --compute-ms 5 --skip 2:400:pp" \
	"--class H1 --culprits 2 --kind pp --seq none"
subset subset-count "--steps 100000 --compute-ms 5 --mismatch 3:400:count" \
	"--class H2 --culprits 3 --kind world"
echo "ok: attached mid-run, every call after the attach seen once and every fault after it diagnosed"
