# Churn helpers (tests/soak.sh, make soak); source after
# lib.sh and simjob_lib.sh.

# churn_start_agent [ARGS...]: a redis-server on a free loopback port and
# `ccld-trace daemon` (no -p: every NCCL process) with /metrics and ARGS;
# sets AGENT, METRICS (host:port)
churn_start_agent() {
	local rport mport
	read -r rport mport < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
	mkdir -p "$TMP/redis"
	redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no \
		--dir "$TMP/redis" >"$TMP/redis.log" 2>&1 &
	at_exit "kill $!"
	WAIT_S=10 wait_for redis-cli -p "$rport" ping >/dev/null 2>&1 ||
		fail "redis-server did not start: $(cat "$TMP/redis.log")"
	METRICS=127.0.0.1:$mport
	# -v: the processes it tracks and sees exit, for a failure's diagnosis
	"$BIN/ccld-trace" daemon --redis "redis://127.0.0.1:$rport" --node churn \
		--metrics "$METRICS" -v "$@" >"$TMP/agent.out" 2>"$TMP/agent.err" &
	AGENT=$!
	at_exit "kill -9 $AGENT"
	WAIT_S=60 wait_for grep -qs "tracing" "$TMP/agent.err" ||
		fail "the agent did not start: $(cat "$TMP/agent.err")"
}

CHURN_N=0 CHURN_KILLED=0 CHURN_PROCS=0 CHURN_COMMS=0
# churn_jobs N: N stand-in jobs one after the other, alternately 2 and 8
# ranks; every fifth runs until its ranks are in their calls, then loses a
# rank to SIGKILL and is torn down (the others hang in a collective).
# CHURN_OWN_LIB=K: every Kth job loads its own copy of the NCCL and CUDA
# stand-ins (another file, as a job that brings its NCCL in a fresh
# virtualenv or image), deleted after the job.
churn_jobs() {
	local i ranks
	for ((i = 0; i < $1; i++)); do
		CHURN_N=$((CHURN_N + 1))
		ranks=$((CHURN_N % 2 ? 2 : 8))
		rm -rf "$TMP/log" "$TMP/pids" "$TMP/ownlib"
		if [ "${CHURN_OWN_LIB:-0}" -gt 0 ] && ((CHURN_N % CHURN_OWN_LIB == 0)); then
			cp -r "$SIMLIB" "$TMP/ownlib"
			export LD_LIBRARY_PATH=$TMP/ownlib
		fi
		if ((CHURN_N % 5 == 0)); then
			start_job --ranks "$ranks" --tp 2 --steps 100000 --timeout 60
			rank_pids "$ranks" >/dev/null
			WAIT_S=20 wait_for bash -c "cat '$TMP'/log/calls.*.jsonl 2>/dev/null | grep -q AllReduce" ||
				{ echo "job $CHURN_N made no call: $(tail -3 "$TMP/job.err")"; return 1; }
			kill -9 "$(awk 'NR == 2 {print $2}' "$TMP/pids")"
			CHURN_KILLED=$((CHURN_KILLED + 1))
			sleep 0.2
			stop_job "$JOB"
			wait "$JOB" 2>/dev/null
		else
			start_job --ranks "$ranks" --tp 2 --steps 40 --timeout 60
			wait "$JOB" || { echo "job $CHURN_N failed: $(tail -3 "$TMP/job.err")"; return 1; }
		fi
		CHURN_PROCS=$((CHURN_PROCS + ranks))
		CHURN_COMMS=$((CHURN_COMMS + 4 * ranks))
		unset LD_LIBRARY_PATH
	done
	rm -rf "$TMP/ownlib"
}

# churn_sample: "RSS_KIB FDS PROCESSES SERIES HEAP_KIB" of the agent: its resident
# memory, open files (each uprobe is a perf event fd), the NCCL processes it
# says it traces, the number of metric series it exports and its heap in
# use (malloc's count of live bytes: a leak grows it, fragmentation not)
churn_sample() {
	local rss fds
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$AGENT/status")
	fds=$(find "/proc/$AGENT/fd" -mindepth 1 | wc -l)
	python3 - "$METRICS" "$rss" "$fds" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://{sys.argv[1]}/metrics", timeout=5).read().decode()
series = [l for l in text.splitlines() if l and not l.startswith("#")]
procs = [l for l in series if l.startswith("ccld_agent_processes")]
heap = [l for l in series if l.startswith('ccld_agent_heap_bytes{state="in_use"}')]
print(sys.argv[2], sys.argv[3], int(float(procs[0].split()[-1])) if procs else -1, len(series),
      int(float(heap[0].split()[-1])) // 1024 if heap else -1)
PY
}
