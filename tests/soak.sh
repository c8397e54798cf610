#!/usr/bin/env bash
# make soak: the node agent, `ccld-trace daemon` (every NCCL process of the
# host, as the DaemonSet runs it), while short stand-in jobs come and go for
# CCLD_SOAK_S seconds (default 1800): 2-rank and 8-rank jobs (4 comms per
# rank, created by init and three splits, destroyed at the end), every
# fifth with a rank killed by SIGKILL in the middle of its calls; PIDs are
# reused within a few hundred jobs (pid_max 32768 here).  The agent frees
# a finished job's state 30 s after it ended: the warm-up runs jobs for
# 60 s, then the agent's RSS, open files (each uprobe is one), tracked
# processes and metric series are sampled after every 10 jobs into
# build/soak.csv (seconds, jobs, RSS KiB, fds, processes, series, heap in
# use KiB: malloc's live bytes, which tell a leak from fragmentation).  Fails if
# the agent dies, if its open files grow or its RSS grows past the
# warm-up's (10% or 2 MiB), and if 35 s after the last job it still tracks
# a process or exports more series than when idle.  Run it on a host
# without other NCCL jobs: the agent traces those too.
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
. "$TOP/tests/e2e/churn_lib.sh"
require_bpf
SOAK_S=${CCLD_SOAK_S:-1800}
CSV=$TOP/build/soak.csv
# the agent's open files, the fewest of three reads 0.3 s apart: while jobs
# start it holds a /proc directory or a process's maps open for a moment (a
# 30-minute run read 110 against 107 once, with 7 processes being tracked);
# a leaked file stays open in all three
steady_fds() {
	local n=$1 i m
	for i in 1 2; do
		sleep 0.3
		m=$(find "/proc/$AGENT/fd" -mindepth 1 | wc -l)
		[ "$m" -lt "$n" ] && n=$m
	done
	echo "$n"
}
churn_start_agent
sleep 2
read -r _ _ _ series_idle _ < <(churn_sample)
warm=$(date +%s)
while [ $(( $(date +%s) - warm )) -lt 60 ]; do
	churn_jobs 10 || fail "warm-up jobs failed"
done
read -r rss0 fds0 procs0 series0 heap0 < <(churn_sample)
fds0=$(steady_fds "$fds0")
echo "seconds,jobs,rss_kib,fds,processes,series,heap_kib" >"$CSV"
echo "0,$CHURN_N,$rss0,$fds0,$procs0,$series0,$heap0" >>"$CSV"
start=$(date +%s)
max=$rss0 smax=$series0
while [ $(( $(date +%s) - start )) -lt "$SOAK_S" ]; do
	churn_jobs 10 || fail "jobs failed"
	kill -0 "$AGENT" 2>/dev/null || fail "the agent died: $(tail -5 "$TMP/agent.err")"
	read -r rss fds procs series heap < <(churn_sample)
	fds=$(steady_fds "$fds")
	echo "$(( $(date +%s) - start )),$CHURN_N,$rss,$fds,$procs,$series,$heap" >>"$CSV"
	[ "$rss" -gt "$max" ] && max=$rss
	[ "$series" -gt "$smax" ] && smax=$series
	[ "$fds" -le $((fds0 + 2)) ] || fail "open files grew: $fds0 -> $fds"
done
sleep 35
read -r rss fds procs series heap < <(churn_sample)
echo "$(( $(date +%s) - start )),$CHURN_N,$rss,$fds,$procs,$series,$heap" >>"$CSV"
[ "$procs" -eq 0 ] || fail "the agent still tracks $procs processes"
[ "$series" -eq "$series_idle" ] || fail "metric series: $series, $series_idle when idle"
[ "$max" -le $((rss0 + 2048 > rss0 * 11 / 10 ? rss0 + 2048 : rss0 * 11 / 10)) ] ||
	fail "RSS grew: ${rss0} -> max ${max} KiB"
echo "ok: soak ${SOAK_S} s: $CHURN_N jobs, $CHURN_PROCS rank processes ($CHURN_KILLED killed)," \
	"$CHURN_COMMS comm ranks; RSS ${rss0} -> ${rss} KiB (max ${max}), heap in use" \
	"${heap0} -> ${heap} KiB, fds ${fds0} -> ${fds}," \
	"series at most ${smax}, ${series} at the end (idle ${series_idle}); samples in build/soak.csv"
