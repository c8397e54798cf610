#!/usr/bin/env bash
# Intra-node comms end to end: the stand-in job (8 ranks, TP 2, PP 2, DP 2)
# with two ranks per host (--ranks-per-host 2), so each TP comm's ranks
# share a host and talk over the intra-node path (NCCL's P2P/SHM: no proxy
# ops, no profiler proxy hooks) while DP, PP and the world cross hosts over
# the network.  Every scenario must name the right class and culprit, and
# no verdict on a TP comm may rest on proxy data (evidence_tiers: A/B only).
# CCLD_SCENARIO=name runs one scenario.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=${CCLD_TEST_STALL:-3}
HOSTS=(--ranks-per-host 2)

# hang NAME "JOB ARGS" "CHECK ARGS" [fault env]
hang() {
	local name=$1 jobargs=$2 checkargs=$3 fault=${4:-}
	begin_scenario "$name" || return 0
	rm -rf "$TMP/log" "$TMP/pids" "$TMP/go"
	# shellcheck disable=SC2086
	CCLD_SIM_FAULT=$fault start_job --ranks 8 --tp 2 --pp 2 --compute-ms 5 --timeout 120 \
		"${HOSTS[@]}" $jobargs --wait-start "$TMP/go"
	start_tracer "$name" -p "$(rank_pids 8)" --json --stall "$STALL" -o "$TMP/$name.ccld"
	touch "$TMP/go"
	WAIT_S=$((STALL + 30)) wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no verdict: $(tail -3 "$TMP/$name.jsonl") $(cat "$TMP/$name.err")"
	sleep 1
	stop_tracer "$name"
	stop_job "$JOB"
	# shellcheck disable=SC2086
	python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--stall "$STALL" --no-proxy-kind tp $checkargs || fail "$name: wrong verdict"
	echo "$name: ok"
}

# H1 on the intra-node TP comm: only calls and GPU completions say it
hang skip "--steps 12 --skip 3:4:tp" "--class H1 --culprits 3 --kind tp"
# H2 on the world's loss all-reduce (across hosts)
hang count "--steps 100000 --mismatch 3:20:count" "--class H2 --culprits 3 --kind world"
# H3: rank 3's network stops (CCLD_SIM_FAULT netstall: the network only).  Its intra-node TP peer (rank 2) is not
# touched; every comm rank 3 has across hosts stalls with its data not
# transmitted or sent and never delivered (which of them the first stuck
# flow shows depends on where the stall caught it), which the proxy state
# of those network comms shows.
# Rank 2 then waits in TP for rank 3, whose GPU is held by the network
# comm: a cascade, never a root of its own.
hang netstall "--steps 100000" \
	"--class H3 --culprits 3 --state not_delivered,not_transmitted --want-proxy" \
	"netstall rank=3 after_ms=1500"

# S1: rank 2's compute phase 3x longer for 60 steps from step 200; its TP
# peer (rank 3, same host) waits for it in the intra-node all-reduce.  The
# TP comms' ops end only at the step's CUDA event, after the world's loss
# all-reduce, which waits for rank 2: every TP comm's rounds look slower,
# but only rank 2's TP comm has a rank arriving late.  No root may name no
# one (the other TP comms were culprit-less S2 roots before).
slow() {
	local name=$1 steps=$2 jobargs=$3 checkargs=$4
	begin_scenario "$name" || return 0
	rm -rf "$TMP/log" "$TMP/pids" "$TMP/go"
	# shellcheck disable=SC2086
	start_job --ranks 8 --tp 2 --pp 2 --compute-ms 25 --jitter 10 --timeout 120 \
		"${HOSTS[@]}" --steps "$steps" $jobargs --wait-start "$TMP/go"
	# a slowdown must last 0.1 s: rank 2's (80 ms iterations) is named in
	# its third slow iteration all the same, while a DP comm's 3 slow
	# iterations of 2 ms rounds on a loaded machine (50 ms) are not
	start_tracer "$name" -p "$(rank_pids 8)" --json --slow-min-s 0.1 -o "$TMP/$name.ccld"
	touch "$TMP/go"
	wait "$JOB" || fail "$name: the job failed: $(tail -3 "$TMP/job.err")"
	sleep 0.5
	stop_tracer "$name"
	# shellcheck disable=SC2086
	python3 "$TOP/tests/e2e/check_slow.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--tracer-min-s 0.1 $checkargs || fail "$name: wrong verdict"
	echo "$name: ok"
}
slow compute 330 "--slow 2:200:3:60" "--class S1 --culprits 2 --onset 200 --until 260 --named-roots"
echo "ok: intra-node TP comms diagnosed from calls and GPU completions"
