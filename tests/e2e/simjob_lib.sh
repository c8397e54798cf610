# Helpers for tests that run ccld-simjob under ccld-trace; source after lib.sh.
SIMJOB=$BIN/ccld-simjob

# start_job ARGS...: starts the job in the background with a call log in
# $TMP/log; sets JOB (launcher pid).  Rank pids land in $TMP/pids.
start_job() {
	mkdir -p "$TMP/log"
	CCLD_SIM_CALLLOG=$TMP/log "$SIMJOB" --pidfile "$TMP/pids" "$@" \
		>"$TMP/job.out" 2>"$TMP/job.err" &
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

# wait_job: the job must finish correctly
wait_job() {
	wait "$JOB" || fail "ccld-simjob failed ($?): $(tail -5 "$TMP/job.err")"
}

# stop_tracer NAME: SIGINT, then it must exit 0
stop_tracer() {
	kill -INT "$TRACER" 2>/dev/null
	wait "$TRACER" || fail "ccld-trace exited $?: $(cat "$TMP/$1.err")"
}
