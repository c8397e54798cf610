#!/usr/bin/env bash
# Attaching to a job that is already hung: the stand-in job (8
# ranks, TP 2, PP 2, DP 2) hangs first, with no tracer anywhere; only then
# ccld-trace attaches (-p with every rank's pid, an exited one included).  No call is
# ever seen: the verdict rests on what it reads from memory at attach
# (NCCL's comm array, launch counters, proxy ops, peer tables, threads).
# Each hang kind, with the plain workload and the way PyTorch drives NCCL
# (--pattern pytorch), must give the right class and culprit within the
# stall threshold + 2 s of the attach; the capture replays to the same.
# Once more with NCCL_RAS_ENABLE=0 (no comm array: the memory scan).
# CCLD_SCENARIO=name runs one scenario (e.g. gpustall-pytorch).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=${CCLD_TEST_STALL:-3}
# a failed scenario's capture is replayed with these (tests/lib.sh)
SCENARIO_REPLAY_ARGS="--stall $STALL"
BASE=(--ranks 8 --tp 2 --pp 2 --compute-ms 20 --steps 100000 --timeout 120)

# scenario NAME PATTERN "JOB ARGS" "CHECK ARGS" [fault env]
scenario() {
	local name=$1-$2${RAS:+-ras$RAS} pattern=$2 jobargs=$3 checkargs=$4 fault=${5:-}
	begin_scenario "$name" || return 0
	rm -rf "$TMP/log" "$TMP/pids"
	# shellcheck disable=SC2086
	NCCL_RAS_ENABLE=${RAS:-1} CCLD_SIM_FAULT=$fault start_job "${BASE[@]}" \
		--pattern "$pattern" $jobargs
	rank_pids 8 >/dev/null
	# ZOMBIE=1: the launcher is stopped, so a rank that exits stays a
	# zombie (as under a launcher busy elsewhere)
	[ -n "${ZOMBIE:-}" ] && kill -STOP "$JOB"
	wait_hung
	# every rank's pid, as a user copies them from the launcher: one that
	# exited (reaped, or a zombie) is said dead and the others are traced
	local all dead="" pid t0
	all=$(awk '{print $2}' "$TMP/pids" | paste -sd, -)
	for pid in $(awk '{print $2}' "$TMP/pids"); do
		case $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) in
		Z | X | "") dead="$dead $pid" ;;
		esac
	done
	t0=$(date +%s%N)
	start_tracer "$name" -p "$all" --json --stall "$STALL" -o "$TMP/$name.ccld"
	WAIT_S=$((STALL + 10)) wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no verdict: $(tail -3 "$TMP/$name.jsonl") $(cat "$TMP/$name.err")"
	sleep 0.5
	stop_tracer "$name"
	[ -n "${ZOMBIE:-}" ] && kill -CONT "$JOB"
	stop_job "$JOB"
	for pid in $dead; do
		grep -q "process $pid has exited${ZOMBIE:+ (a zombie}" "$TMP/$name.err" ||
			fail "$name: the exited rank's pid $pid not reported: $(cat "$TMP/$name.err")"
	done
	grep -q "state read from memory: [1-9]" "$TMP/$name.err" ||
		fail "$name: nothing read from memory: $(cat "$TMP/$name.err")"
	if [ "${RAS:-1}" = 0 ]; then
		grep -q "state read from memory: .*(a memory scan)" "$TMP/$name.err" ||
			fail "$name: comms not found by the scan: $(cat "$TMP/$name.err")"
	fi
	# shellcheck disable=SC2086
	python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--stall "$STALL" --attached-ns "$t0" $checkargs || fail "$name: wrong verdict"
	"$BIN/ccld-trace" replay "$TMP/$name.ccld" --json --stall "$STALL" \
		>"$TMP/$name.replay" || fail "$name: replay failed"
	diff <(grep '"verdict"' "$TMP/$name.jsonl") <(grep '"verdict"' "$TMP/$name.replay") \
		>/dev/null || fail "$name: replay verdicts differ"
	echo "$name: ok"
}

for p in plain pytorch; do
	# the rank skips its second TP all-reduce (pytorch: one of four same-size)
	skip=tp
	[ $p = pytorch ] && skip=tp1
	# a CPU hang reads the same (a launch counter, a thread in pause()) and
	# a count or op type mismatch the same way (a proxy op, NCCL's
	# per-function counts) whatever the pattern: each runs once (the
	# PyTorch count mismatch below, with its comms found by the scan: how
	# the comms are found, NCCL's array, is every other scenario's)
	[ $p = pytorch ] && scenario cpu-hang $p "--hang 5:20" "--class H1 --culprits 5"
	# plain: the exited rank stays a zombie; pytorch: the launcher reaped it
	ZOMBIE=$([ $p = plain ] && echo 1) scenario exit $p "--exit 6:20" "--class H1 --culprits 6"
	scenario skip $p "--skip 3:20:$skip" "--class H1 --culprits 3"
	[ $p = plain ] && scenario optype $p "--mismatch 3:20:op" "--class H2 --culprits 3 --kind world"
	scenario netstall $p "" "--class H3 --culprits 3 --seq none" "netstall rank=3 after_ms=1500"
	scenario gpustall $p "" "--class H3 --culprits 5 --seq none" "gpustall rank=5 after_ms=1500"
done
# NCCL_RAS_ENABLE=0 leaves NCCL's comm array empty: the comms are found by
# scanning the processes' memory for their magic numbers
RAS=0 scenario count pytorch "--mismatch 3:20:count" "--class H2 --culprits 3 --kind world"
echo "ok: every hang kind was diagnosed from memory alone, within $((STALL + 2)) s of the attach"
