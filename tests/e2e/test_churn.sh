#!/usr/bin/env bash
# The node agent (`ccld-trace daemon`, every NCCL process of the host) under
# a churn of short stand-in jobs: two rounds of 20 jobs of 2 and 8 ranks
# (4 comms per rank; every fifth job loses a rank to SIGKILL in the middle
# of its calls; in the second round every fourth job loads its own copy of the
# libraries, as a job with its own virtualenv or image does), and a job
# whose rank gets the pid of an earlier job's rank (pid reuse, forced
# through ns_last_pid).  After each round and the agent's forget delay
# (--forget 5; 30 s by default, as in make soak): no process tracked, the metric series back to those of the idle
# agent, open files (each uprobe link is one) as after the first round (the
# second round's libraries detached), and the second round no larger in
# RSS than the first.  The reused pid is traced as the new process it is.
# make soak runs the first kind of round for 30 minutes.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
. "$TOP/tests/e2e/churn_lib.sh"
require_bpf
FORGET_S=5

churn_start_agent --forget "$FORGET_S"
sleep 2
read -r rss_idle fds_idle procs series_idle _ < <(churn_sample)
echo "idle: RSS $rss_idle KiB, $fds_idle fds, $series_idle series"

# after a round and the forget delay (and a tick or two): nothing of the
# jobs is left; libraries no job uses are detached one at a time, each in
# about 5 s here (a uprobe takes ~50 ms to unregister); then the agent gives
# the heap they used back to the system (-v says so).
# settled NAME [FDS]: sets RSS FDS HEAP
settled() {
	local procs series waited trims
	trims=$(grep -c "freed heap given back" "$TMP/agent.err")
	sleep "$FORGET_S"
	for waited in $(seq 40); do
		read -r RSS FDS procs series HEAP < <(churn_sample)
		[ "$procs" = 0 ] && [ "$series" = "$series_idle" ] &&
			[ "$FDS" -le "${2:-$FDS}" ] &&
			[ "$(grep -c "freed heap given back" "$TMP/agent.err")" -gt "$trims" ] && break
		sleep 1
	done
	kill -0 "$AGENT" 2>/dev/null || fail "the agent died: $(tail -5 "$TMP/agent.err")"
	echo "$1: $CHURN_N jobs: RSS $RSS KiB (heap in use $HEAP KiB), $FDS fds, $procs processes," \
		"$series series ($((FORGET_S + waited)) s after the last job)"
	[ "$procs" = 0 ] || fail "$1: the agent still tracks $procs processes"
	[ "$series" = "$series_idle" ] ||
		fail "$1: $series metric series, the idle agent had $series_idle:" \
			"$(curl -s "http://$METRICS/metrics" | grep '^ccld_collectives_total' | head -5)"
}

churn_jobs 20 || fail "round 1 failed"
settled "round 1"
rss1=$RSS fds1=$FDS

# pid reuse: a rank of job B gets the pid of a rank of job A.  The launcher
# sets the next pid (ns_last_pid) itself, then forks its ranks; whatever else
# the host forks in between (other tests, two at a time in make test) moves
# them on, so job A has 8 ranks to aim into and each try aims again from what
# the last one saw.
rm -rf "$TMP/log" "$TMP/pids"
start_job --ranks 8 --tp 2 --steps 40 --timeout 60
wait "$JOB" || fail "job A failed: $(tail -3 "$TMP/job.err")"
a_pids=$(awk '{print $2}' "$TMP/pids" | sort -n | paste -sd, -)
aim=$(cut -d, -f3 <<<"$a_pids")
reused= skew=0
for try in 1 2 3 4 5; do
	rm -rf "$TMP/log" "$TMP/pids"
	NEXT_PID=$((aim - skew)) start_job --ranks 2 --tp 2 --steps 100000 --compute-ms 10 --timeout 60
	b_pids=$(rank_pids 2 | tr , '\n' | sort -n | paste -sd, -)
	reused=$(tr , '\n' <<<"$b_pids" | grep -Fxf <(tr , '\n' <<<"$a_pids") | paste -sd, -)
	[ -n "$reused" ] && break
	skew=$((skew + ${b_pids%%,*} - aim))
	stop_job "$JOB"
	wait "$JOB" 2>/dev/null
done
[ -n "$reused" ] || fail "could not make job B reuse job A's pids ($a_pids; last $b_pids)"
# both are traced as live processes: the old code kept the pids as exited
for _ in $(seq 50); do
	read -r _ _ procs _ _ < <(churn_sample)
	[ "$procs" = 2 ] && break
	sleep 0.2
done
[ "$procs" = 2 ] || fail "pid $reused reused: the agent tracks $procs processes, not 2" \
	"(job A's ranks $a_pids, job B's $b_pids; the stand-in's processes now:" \
	"$(ps -o pid=,ppid=,stat=,lstart=,args= -p "$(pgrep -d, -f ccld-simjob)" | cut -c1-120));" \
	"the agent's processes (-v), latest: $(grep -E 'process [0-9]+ .*(tracked|exited)' \
		"$TMP/agent.err" | tail -16)"
echo "pid $reused of job A's ranks ($a_pids) reused by job B ($b_pids, try $try): both ranks traced"
stop_job "$JOB"
wait "$JOB" 2>/dev/null

# round 2: every fourth job brings its own copy of the libraries (new files)
CHURN_OWN_LIB=4 churn_jobs 20 || fail "round 2 failed"
settled "round 2" "$fds1"
[ "$FDS" -le "$fds1" ] || fail "open files grew: $fds1 -> $FDS"
# the heap freed after each round went back to the system: RSS follows what
# stays in use, which must not grow
[ "$RSS" -le $((rss1 + 2048)) ] || fail "RSS grew: $rss1 -> $RSS KiB"
echo "ok: $CHURN_PROCS rank processes ($CHURN_KILLED killed mid-call), $CHURN_COMMS comm ranks:" \
	"nothing left after the forget delay; RSS $rss1 -> $RSS KiB, fds $fds1 -> $FDS," \
	"series back to $series_idle"
