#!/usr/bin/env bash
# make demo: a simulated 8-rank training job (TP=2, PP=2, DP=2) on the
# GPU-less NCCL stand-in, with an injected fault (default: rank 5 hangs in
# CPU code at step 100), traced live with real uprobes by ccld-trace
# attached to the running ranks, and diagnosed.
# Environment: DEMO_JOB_FAULT (ccld-simjob fault options),
# DEMO_FAULT (a CCLD_SIM_FAULT value), DEMO_STALL (seconds).
set -u
cd "$(dirname "$0")/.."
BIN=build/bin
TMP=$(mktemp -d /tmp/ccld-demo.XXXXXX)
FAULT=${DEMO_FAULT:-}
JOB_FAULT=${DEMO_JOB_FAULT:---hang 5:100}
STALL=${DEMO_STALL:-5}
job=
cleanup() {
	# the launcher stops its ranks and removes their shared memory on SIGTERM
	if [ -n "$job" ] && kill -TERM "$job" 2>/dev/null; then
		for _ in $(seq 50); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
		pkill -9 -P "$job" 2>/dev/null
		kill -9 "$job" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then
	echo "make demo: ccld-trace loads BPF programs: run it as root" >&2
	exit 1
fi
echo "== ccld demo: 8 ranks, TP=2 PP=2 DP=2, fault: $JOB_FAULT ${FAULT:+CCLD_SIM_FAULT='$FAULT'}"
# shellcheck disable=SC2086
CCLD_SIM_FAULT=$FAULT $BIN/ccld-simjob --ranks 8 --tp 2 --pp 2 --steps 1000000 $JOB_FAULT \
	--compute-ms 20 --wait-start "$TMP/go" --pidfile "$TMP/pids" --timeout 120 \
	>"$TMP/job.out" 2>"$TMP/job.err" &
job=$!
disown "$job"
for _ in $(seq 100); do
	[ -s "$TMP/pids" ] && [ "$(wc -l <"$TMP/pids")" -ge 8 ] && break
	sleep 0.1
done
[ -s "$TMP/pids" ] || { echo "demo: the job did not start:"; cat "$TMP/job.err"; exit 1; }
pids=$(awk '{print $2}' "$TMP/pids" | paste -sd, -)
echo "== ranks started and initialised: pids $pids"
echo "== attaching: ccld-trace -p $pids --stall $STALL --duration $((STALL + 12))"
touch "$TMP/go"
$BIN/ccld-trace -p "$pids" --stall "$STALL" --duration $((STALL + 12))
rc=$?
echo "== done (ccld-trace exit status $rc)"
exit $rc
