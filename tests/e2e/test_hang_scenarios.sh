#!/usr/bin/env bash
# Hang diagnosis end to end: the stand-in job (8 ranks, TP 2,
# PP 2, DP 2) with one injected fault per scenario, traced live with -p
# after init (cpu-hang: from before it) and a short stall threshold;
# check_verdict.py asserts class,
# communicator, seq, culprit set and detection latency against the job's own
# call log.  Every scenario is recorded and replayed: the same verdicts.
# CCLD_SCENARIO=name runs one scenario.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=${CCLD_TEST_STALL:-3}
# NCCL's warnings are read whatever NCCL_DEBUG says: the tests run without it
unset NCCL_DEBUG
# a failed scenario's capture is replayed with these (tests/lib.sh)
SCENARIO_REPLAY_ARGS="--stall $STALL"
BASE=(--ranks 8 --tp 2 --pp 2 --compute-ms 5 --timeout 120)

# scenario NAME "JOB ARGS" "CHECK ARGS" [fault env] [action]
# FROM_INIT=1: traced from before the ranks create their comms
scenario() {
	local name=$1 jobargs=$2 checkargs=$3 fault=${4:-} action=${5:-}
	local gate=--wait-start
	begin_scenario "$name" || return 0
	[ -n "${FROM_INIT:-}" ] && gate=--wait-init
	rm -rf "$TMP/log" "$TMP/pids" "$TMP/go"
	# shellcheck disable=SC2086
	CCLD_SIM_FAULT=$fault start_job "${BASE[@]}" $jobargs $gate "$TMP/go"
	local pids
	pids=$(rank_pids 8)
	start_tracer "$name" -p "$pids" --json --stall "$STALL" -o "$TMP/$name.ccld"
	touch "$TMP/go"
	[ -n "$action" ] && eval "$action"
	WAIT_S=$((STALL + 30)) wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no verdict: $(tail -3 "$TMP/$name.jsonl") $(cat "$TMP/$name.err")"
	sleep 1
	stop_tracer "$name"
	stop_job "$JOB"
	# shellcheck disable=SC2086
	python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--stall "$STALL" $checkargs || fail "$name: wrong verdict"
	"$BIN/ccld-trace" replay "$TMP/$name.ccld" --json --stall "$STALL" \
		>"$TMP/$name.replay" || fail "$name: replay failed"
	diff <(grep '"verdict"' "$TMP/$name.jsonl") <(grep '"verdict"' "$TMP/$name.replay") \
		>/dev/null || fail "$name: replay verdicts differ"
	if [ -n "${WANT_LINE:-}" ]; then
		"$BIN/ccld-trace" replay "$TMP/$name.ccld" --stall "$STALL" >"$TMP/$name.text" ||
			fail "$name: text replay failed"
		grep -q "$WANT_LINE" "$TMP/$name.text" ||
			fail "$name: no verdict line like '$WANT_LINE': $(grep VERDICT "$TMP/$name.text")"
	fi
	echo "$name: ok"
}

# H1: not entered; the root is the comm the culprit would have called next
# (each step starts with the TP all-reduces)
scenario skip-tp "--steps 12 --skip 3:4:tp" "--class H1 --culprits 3 --kind tp"
# the culprit named also by its launcher's global rank (RANK=2 in its
# environment), its TP rank being 0, and by its GPU (CUDA device, PCI address).
# Traced from before the comms are made: the comm is described as the job
# named it in its split's config (ncclConfig_t.commName) and by its color.
FROM_INIT=1 WANT_LINE='root comm [0-9a-f]\{16\} "tp1" (2 ranks: global 2,3, split color 1)' \
	scenario cpu-hang "--steps 100000 --hang 2:20" \
	"--class H1 --culprits 2 --kind tp --want-global-rank --want-gpu --want-comm-name"
# what the culprit does, from /proc: a checkpoint write that never ends (a
# FIFO nobody reads), named with its file and the function that writes it
# (its main thread's native stack); a stopped process named stopped
export TMP
mkfifo "$TMP/ckpt.fifo"
scenario ckpt-write "--steps 100000 --hang 2:20:write=$TMP/ckpt.fifo" \
	"--class H1 --culprits 2 --kind tp --evidence-has in_write()_on_%TMP%/ckpt.fifo
	 --stack-has hang_in_write"
scenario exit "--steps 100000 --exit 6:20" "--class H1 --culprits 6 --kind tp"
# over the socket transport the exited rank's peers find its connections
# closed and NCCL warns so (NCCL_DEBUG unset): the verdict cites that warning,
# and names the peer the warning gives by its address (rank 6's end of the
# connection) by its rank
CCLD_SIM_TRANSPORT=socket scenario exit-socket "--steps 100000 --exit 6:20" \
	"--class H1 --culprits 6 --kind tp --evidence-has logged_NCCL_WARN
	 --evidence-has Connection_closed_by_remote_peer
	 --evidence-has is_rank_0_of_this_comm_(global_rank_6,"
# rank 5 stops itself between two steps: its TP peer waits in the next
# step's first all-reduce, which rank 5 never entered; where it stopped is
# its main thread's stack
scenario sigstop "--steps 100000 --stop 5:20" \
	"--class H1 --culprits 5 --kind tp --evidence-has process_stopped --stack-has main"
# stopped from outside at any point of a step: its GPU work in flight, or
# between two calls; which comm holds the first stuck round depends on
# where the stop landed (a stopped GPU's round was entered by every rank)
scenario sigstop-any "--steps 100000" \
	"--class H1 --culprits 5 --evidence-has process_stopped" "" \
	'sleep 2; kill -STOP $(awk "\$1 == 5 {print \$2}" "$TMP/pids")'
# H2: inconsistent op, on the world's loss all-reduce (a datatype mismatch
# is found the same way: every field of the signature is compared alike,
# test_an_h2 has each; the probes' decoding of the datatype is checked
# call by call against the job's log by test_attach_midrun)
scenario count "--steps 100000 --mismatch 3:20:count" "--class H2 --culprits 3 --kind world"
scenario optype "--steps 100000 --mismatch 3:20:op" "--class H2 --culprits 3 --kind world"
# H3: all entered, consistent; the proxy counters (tier E snapshots while
# suspected) say where: rank 3's data left and never arrived (network);
# rank 5's GPU holds received data it never consumes (GPU).
scenario netstall "--steps 100000" "--class H3 --culprits 3 --state not_delivered" \
	"netstall rank=3 after_ms=1500"
scenario gpustall "--steps 100000" "--class H3 --culprits 5 --state GPU_not_ready" \
	"gpustall rank=5 after_ms=1500"
# a mixture-of-experts step as PyTorch drives it (docs/simjob.md, --pattern
# moe): a compute and an NCCL stream joined by events, the expert
# all-to-alls as a group of send/recv per peer (itself included) and as
# ncclAlltoAll, the pipeline p2p on the world comm, a host sync every
# other step (the CPU two steps ahead).  One root each: the comms whose
# ops queue behind the stuck one on the ranks' streams are its cascades.
MOE="--tp 1 --pattern moe --compute-ms 10 --steps 100000"
# rank 5 leaves its send to its next expert peer out of a dispatch
scenario moe-a2a "$MOE --skip 5:20:a2a" "--class H1 --culprits 5 --seq none"
# rank 5 (last stage) leaves out its gradient send to rank 1
scenario moe-ppsend "$MOE --skip 5:20:ppsend" "--class H1 --culprits 5 --seq none"
scenario moe-count "$MOE --mismatch 3:20:count" "--class H2 --culprits 3 --kind world"
scenario moe-hang "$MOE --hang 6:20" "--class H1 --culprits 6"
# rank 5's GPU stops: its partner in the pipeline, rank 1, is held in that
# p2p, so stage 0's expert comm waits for rank 1: a cascade, not a root
scenario moe-gpustall "$MOE" "--class H3 --culprits 5 --state GPU_not_ready --seq none" \
	"gpustall rank=5 after_ms=2000"
echo "ok: every hang scenario named its class, communicator, round and culprit"
