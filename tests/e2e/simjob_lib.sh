# Helpers for tests that run ccld-simjob under ccld-trace; source after lib.sh.
SIMJOB=$BIN/ccld-simjob

# start_job ARGS...: starts the job in the background with a call log in
# $TMP/log; sets JOB (launcher pid).  Rank pids land in $TMP/pids.
start_job() {
	mkdir -p "$TMP/log"
	# NEXT_PID: the pid the launcher's first fork should get; set in the
	# launcher's own process just before its exec, so that only what the host
	# forks in those few milliseconds can take it first
	(
		[ -z "${NEXT_PID:-}" ] || echo $((NEXT_PID - 1)) >/proc/sys/kernel/ns_last_pid
		CCLD_SIM_CALLLOG=$TMP/log exec "$SIMJOB" --pidfile "$TMP/pids" "$@"
	) >"$TMP/job.out" 2>"$TMP/job.err" &
	JOB=$!
	at_exit "stop_job $JOB"
}

# stop_job PID: SIGTERM (the launcher stops its ranks and removes their
# shared memory), then SIGKILL for whatever is left
stop_job() {
	kill -TERM "$1" 2>/dev/null || return 0
	for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	pkill -9 -P "$1"
	kill -9 "$1"
}

# rank_pids N: waits for N ranks in the pidfile, prints them comma separated
rank_pids() {
	WAIT_S=30 wait_for test -s "$TMP/pids" ||
		fail "no pidfile from ccld-simjob: $(cat "$TMP/job.err")"
	WAIT_S=30 wait_for bash -c "[ \$(wc -l < '$TMP/pids') -ge $1 ]" ||
		fail "ccld-simjob started only $(wc -l <"$TMP/pids") of $1 ranks"
	awk '{print $2}' "$TMP/pids" | paste -sd, -
}

# start_tracer NAME ARGS...: ccld-trace ARGS in the background, output in
# $TMP/NAME.jsonl / .err; waits until it traces; sets TRACER.
start_tracer() {
	local name=$1
	shift
	"$BIN/ccld-trace" "$@" >"$TMP/$name.jsonl" 2>"$TMP/$name.err" &
	TRACER=$!
	at_exit "kill -9 $TRACER"
	WAIT_S=60 wait_for grep -qs "tracing" "$TMP/$name.err" ||
		fail "ccld-trace did not start: $(cat "$TMP/$name.err")"
}

# replay_same NAME ARGS...: $TMP/NAME.ccld replayed (ccld-trace replay
# --json ARGS) gives the verdicts the live run wrote to $TMP/NAME.jsonl
replay_same() {
	local name=$1
	shift
	"$BIN/ccld-trace" replay "$TMP/$name.ccld" --json "$@" >"$TMP/$name.replay" ||
		fail "$name: replay failed"
	diff <(grep '"verdict"' "$TMP/$name.jsonl") <(grep '"verdict"' "$TMP/$name.replay") \
		>/dev/null || fail "$name: replay verdicts differ"
}

# wait_job: the job must finish correctly
wait_job() {
	wait "$JOB" || fail "ccld-simjob failed ($?): $(tail -5 "$TMP/job.err")"
}

# stop_tracer NAME: SIGINT, then it must exit 0
stop_tracer() {
	kill -INT "$TRACER" 2>/dev/null
	wait "$TRACER" || fail "ccld-trace exited $?: $(cat "$TMP/$1.err")"
}

# job_records IN OUT N: the records of IN whose pid is one of the job's N
# ranks, and those without a pid, into OUT (--all also traces the other
# NCCL jobs that run on this host)
job_records() {
	python3 - "$1" "$(rank_pids "$3")" >"$2" <<'PY'
import json, sys
pids = {int(p) for p in sys.argv[2].split(",")}
for l in open(sys.argv[1]):
    r = json.loads(l) if l.startswith("{") else None
    if r is not None and ("pid" not in r or r["pid"] in pids):
        sys.stdout.write(l)
PY
}

# wait_hung [SECS]: the job is hung once its call logs stop growing for
# 1 s; fails after SECS (default 30) without that
wait_hung() {
	local last=-1 now same=0 i
	for ((i = 0; i < ${1:-30} * 10; i++)); do
		now=$(cat "$TMP"/log/calls.*.jsonl 2>/dev/null | wc -l)
		if [ "$now" = "$last" ] && [ "$now" -gt 0 ]; then
			same=$((same + 1))
			[ $same -ge 10 ] && return 0
		else
			same=0
		fi
		last=$now
		sleep 0.1
	done
	fail "the job did not hang: $(tail -3 "$TMP/job.err")"
}

# stripped_standin DIR: the stand-in NCCL without its DWARF, and its CUDA
# runtime beside it, in DIR
stripped_standin() {
	command -v objcopy >/dev/null || fail "no objcopy"
	mkdir -p "$1"
	objcopy --strip-debug "$SIMLIB/libnccl.so.2" "$1/libnccl.so.2"
	cp "$SIMLIB/libcudart.so.13" "$1/"
	if readelf -S "$1/libnccl.so.2" | grep -q debug_info; then
		fail "DWARF left in the copy"
	fi
}
