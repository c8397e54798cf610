#!/usr/bin/env bash
# ccld-trace on the stand-in job (8 ranks, TP=2, PP=2, DP=2): every call the
# job made (the stand-in's own call log) appears exactly once with the right
# comm hash, rank, nranks, op, count, dtype, redop, root/peer and return code;
# seq equal across ranks; zero drops.  Attached with -p after init (identity
# and seq from NCCL's memory), and with --all --stop-new before the job
# starts (each rank stopped at its NCCL load until its probes are in place),
# which also sees the names the job's configs give its comms.
# The -p run is also recorded and replayed: the same lines, record for record.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
[ -x "$SIMJOB" ] || fail "no $SIMJOB: run make"
JOBARGS=(--ranks 8 --tp 2 --pp 2 --steps 30 --compute-ms 2)

# 1. -p after init, with uprobe_multi links (the default), which kernels
# 6.6 and later make (checked below)
start_job "${JOBARGS[@]}" --wait-start "$TMP/go"
pids=$(rank_pids 8)
start_tracer live -v -p "$pids" --json --events -o "$TMP/run.ccld"
touch "$TMP/go"
wait_job
WAIT_S=10 wait_for grep -qs "every traced process exited" "$TMP/live.err" ||
	fail "ccld-trace -p did not end with the job: $(cat "$TMP/live.err")"
wait "$TRACER" || fail "ccld-trace exited $?: $(cat "$TMP/live.err")"
python3 "$TOP/tests/e2e/compare_calls.py" "$TMP/live.jsonl" "$TMP/log" --pids "$pids" ||
	fail "-p after init: trace differs from the job's calls"
grep -q '"seq_source":"nccl"' "$TMP/live.jsonl" || fail "seq not from NCCL's counters"
# p2p: NCCL keeps no per-peer counter; counted from the attach, "aligned"
! grep '"seq_source":"aligned"' "$TMP/live.jsonl" | grep -vq '"op":"\(Send\|Recv\)"' ||
	fail "some collective's seq not from NCCL's counters"

# 2. replay of the recording gives the same lines
"$BIN/ccld-trace" replay "$TMP/run.ccld" --json --events >"$TMP/replay.jsonl" ||
	fail "replay failed"
diff <(grep -v '"summary"' "$TMP/live.jsonl") <(grep -v '"summary"' "$TMP/replay.jsonl") \
	>"$TMP/diff" || fail "replay differs from live: $(head -5 "$TMP/diff")"

# 3. --all --stop-new, started before the job: not one call missed
rm -rf "$TMP/log" "$TMP/pids"
start_tracer all --all --stop-new --json --events
start_job "${JOBARGS[@]}"
wait_job
sleep 1
stop_tracer all
# (--all also traces the other NCCL jobs that run on this host)
job_records "$TMP/all.jsonl" "$TMP/all.job.jsonl" 8
python3 "$TOP/tests/e2e/compare_calls.py" "$TMP/all.job.jsonl" "$TMP/log" ||
	fail "--all before start: trace differs from the job's calls"
grep -q '"type":"comm".*"op":"CommSplit"' "$TMP/all.jsonl" || fail "no CommSplit seen"
# the names the job's configs gave its comms (world, tpN, dpN, ppN)
python3 "$TOP/tests/e2e/check_comm_names.py" "$TMP/all.job.jsonl" "$TMP/log" ||
	fail "--all before start: comm names differ from the job's configs"
if grep -q "uprobes: one perf-event uprobe per probe (this kernel has no" "$TMP/live.err"; then
	# shellcheck disable=SC2046
	[ $(printf '%s\n6.6\n' "$(uname -r | cut -d- -f1)" | sort -V | head -1) != 6.6 ] ||
		fail "kernel $(uname -r) makes no uprobe_multi links: $(grep uprobes: "$TMP/live.err")"
else
	grep -q "uprobes: uprobe_multi links" "$TMP/live.err" ||
		fail "no uprobe_multi links by default: $(grep uprobes: "$TMP/live.err")"
fi
# 4. -p after init with one perf-event uprobe per probe (CCLD_UPROBE_MULTI=0,
# and kernels before 6.6): the same calls
rm -rf "$TMP/log" "$TMP/pids"
start_job "${JOBARGS[@]}" --wait-start "$TMP/go1"
pids=$(rank_pids 8)
CCLD_UPROBE_MULTI=0 start_tracer multi -v -p "$pids" --json --events
touch "$TMP/go1"
wait_job
WAIT_S=10 wait_for grep -qs "every traced process exited" "$TMP/multi.err" ||
	fail "ccld-trace -p (perf-event uprobes) did not end with the job: $(cat "$TMP/multi.err")"
wait "$TRACER" || fail "ccld-trace exited $?: $(cat "$TMP/multi.err")"
grep -q "uprobes: one perf-event uprobe per probe" "$TMP/multi.err" ||
	fail "CCLD_UPROBE_MULTI=0 still made multi links: $(grep uprobes: "$TMP/multi.err")"
python3 "$TOP/tests/e2e/compare_calls.py" "$TMP/multi.jsonl" "$TMP/log" --pids "$pids" ||
	fail "-p with perf-event uprobes: trace differs from the job's calls"
echo "ok: -p after init (both kinds of uprobe link), --all before start and replay all match the job's calls"
