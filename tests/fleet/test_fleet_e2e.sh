#!/usr/bin/env bash
# Fleet mode end to end: a real redis-server on loopback, one
# stand-in job of 8 ranks split over two "nodes" (ccld-trace daemon
# --node nodeA -p ranks 0-3, --node nodeB -p ranks 4-7) and one
# ccld-analyzer.  The hang and slow scenarios give the verdicts of
# single-node tracing, with the culprit's node and pid; a wrong Redis URL
# gives one clear line.  CCLD_SCENARIO=name runs one scenario.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
command -v redis-server >/dev/null || skip "redis-server not installed"
STALL=${CCLD_TEST_STALL:-3}
SHARDS=4
ANALYZER=$BIN/ccld-analyzer

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=redis://127.0.0.1:$PORT
mkdir -p "$TMP/redis"
# an append-only file: a restarted server (the outage scenario) keeps the streams
start_redis() {
	redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly yes \
		--dir "$TMP/redis" >>"$TMP/redis.log" 2>&1 &
	REDIS=$!
	at_exit "kill $REDIS"
	WAIT_S=10 wait_for redis-cli -p "$PORT" ping >/dev/null 2>&1 ||
		fail "redis-server did not start: $(cat "$TMP/redis.log")"
}
start_redis

# a wrong or unreachable URL: exit 1 and one line naming the URL
for bad in "redis://127.0.0.1:1" "http://x"; do
	"$ANALYZER" --redis "$bad" --duration 1 >/dev/null 2>"$TMP/bad.err"
	rc=$?
	[ $rc = 1 ] && [ "$(wc -l <"$TMP/bad.err")" = 1 ] && grep -q "$bad" "$TMP/bad.err" ||
		fail "ccld-analyzer --redis $bad: rc $rc, stderr: $(cat "$TMP/bad.err")"
	"$BIN/ccld-trace" daemon --redis "$bad" --node x -p $$ >/dev/null 2>"$TMP/bad.err"
	rc=$?
	[ $rc = 1 ] && [ "$(wc -l <"$TMP/bad.err")" = 1 ] && grep -q "$bad" "$TMP/bad.err" ||
		fail "ccld-trace daemon --redis $bad: rc $rc, stderr: $(cat "$TMP/bad.err")"
done
echo "bad URLs: one clear line each"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
MPORT_A=$(free_port)
MPORT_AN=$(free_port)

# fresh_job [JOB ARGS]: Redis's streams emptied, then the scenarios' 8-rank
# job (TP 2, PP 2, 25 ms of compute a step) with ARGS; waits for its ranks
fresh_job() {
	rm -rf "$TMP/log" "$TMP/pids" "$TMP/go"
	redis-cli -p "$PORT" flushall >/dev/null
	start_job --ranks 8 --tp 2 --pp 2 --compute-ms 25 --timeout 120 "$@"
	rank_pids 8 >/dev/null
}

# start_fleet NAME [ANALYZER ARGS]: the two agents and the analyzer for the
# job in $TMP/pids (agent A and the analyzer serve /metrics on MPORT_A,
# MPORT_AN)
start_fleet() {
	local name=$1 a b
	shift
	a=$(awk '$1 < 4 {print $2}' "$TMP/pids" | paste -sd,)
	b=$(awk '$1 >= 4 {print $2}' "$TMP/pids" | paste -sd,)
	"$BIN/ccld-trace" daemon --redis "$URL" --node nodeA --shards $SHARDS -p "$a" \
		--stall "$STALL" --metrics "127.0.0.1:$MPORT_A" 2>"$TMP/$name.agentA" &
	AGENT_A=$!
	"$BIN/ccld-trace" daemon --redis "$URL" --node nodeB --shards $SHARDS -p "$b" \
		--stall "$STALL" 2>"$TMP/$name.agentB" &
	AGENT_B=$!
	at_exit "kill -9 $AGENT_A $AGENT_B"
	start_analyzer "$name" "$@"
	WAIT_S=60 wait_for grep -qs "tracing" "$TMP/$name.agentA" ||
		fail "agent A did not start: $(cat "$TMP/$name.agentA")"
	WAIT_S=60 wait_for grep -qs "tracing" "$TMP/$name.agentB" ||
		fail "agent B did not start: $(cat "$TMP/$name.agentB")"
}

# start_analyzer NAME [ARGS]: the analyzer as a user starts it, with ARGS
start_analyzer() {
	local name=$1
	shift
	# its debug lines (CCLD_AN_DEBUG) apart: a failure's diagnosis prints
	# those on the comms it is about (tests/lib.sh), as a capture's replay
	# gives them elsewhere
	CCLD_AN_DEBUG=1 "$ANALYZER" --redis "$URL" --json --stall "$STALL" --shards $SHARDS "$@" \
		--name an1 --metrics "127.0.0.1:$MPORT_AN" >>"$TMP/$name.jsonl" \
		2> >(awk -v dbg="$TMP/$name.adebug" -v err="$TMP/$name.aerr" \
			'/^an: / { print >>dbg; next } { print >>err; fflush(err) }') &
	AN=$!
	at_exit "kill -9 $AN"
}

# the agents first (the job's end is not part of the scenario), then the
# analyzer once it has read what they sent
stop_agents() {
	kill -INT "$AGENT_A" "$AGENT_B" 2>/dev/null
	wait "$AGENT_A" || fail "agent A exited $?: $(cat "$TMP/$1.agentA")"
	wait "$AGENT_B" || fail "agent B exited $?: $(cat "$TMP/$1.agentB")"
}

stop_analyzer() {
	sleep 1
	kill -INT "$AN" 2>/dev/null
	wait "$AN" || fail "ccld-analyzer exited $?: $(cat "$TMP/$1.aerr")"
}

# scenario NAME "JOB ARGS" "CHECK ARGS" [fault env]
scenario() {
	local name=$1 jobargs=$2 checkargs=$3 fault=${4:-}
	begin_scenario "$name" || return 0
	# shellcheck disable=SC2086
	CCLD_SIM_FAULT=$fault fresh_job $jobargs --wait-start "$TMP/go"
	start_fleet "$name"
	touch "$TMP/go"
	WAIT_S=$((STALL + 40)) wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no verdict: $(tail -3 "$TMP/$name.jsonl") $(cat "$TMP/$name.aerr")"
	sleep 1
	stop_agents "$name"
	stop_job "$JOB"
	stop_analyzer "$name"
	# shellcheck disable=SC2086
	python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--stall "$STALL" --hosts nodeA:0-3,nodeB:4-7 $checkargs ||
		fail "$name: wrong verdict"
	echo "$name: ok"
}

scenario skip-tp "--steps 100000 --skip 5:20:tp" "--class H1 --culprits 5 --kind tp"
scenario count "--steps 100000 --mismatch 3:20:count" "--class H2 --culprits 3 --kind world"
scenario netstall "--steps 100000" "--class H3 --culprits 6 --state not_delivered" \
	"netstall rank=6 after_ms=3000"
# S1: rank 2's compute phase 3x longer for 60 steps; the analyzer is
# killed with SIGKILL after its first verdict and restarted under the same
# name: it rebuilds its state from the streams, loses no record (it applies
# every record the agents sent), prints no verdict twice and reports the
# recovery
slow_restart() {
	local name=compute
	begin_scenario "$name" || return 0
	fresh_job --jitter 10 --steps 330 --slow 2:200:3:60 --wait-start "$TMP/go"
	# it counts iterations of 30 ms steps: no minimum wall time (the
	# single-node tests check the default).  Only here: with it, 3 rounds
	# of a busy machine's noise are a slowdown, as that option says (a
	# false S1 at skip-tp's start in a fresh-clone CI run of 1977007)
	start_fleet "$name" --slow-min-s 0
	touch "$TMP/go"
	WAIT_S=60 wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no verdict: $(cat "$TMP/$name.aerr")"
	kill -9 "$AN"
	wait "$AN" 2>/dev/null
	start_analyzer "$name" --slow-min-s 0
	wait "$JOB" || fail "$name: the job failed: $(tail -3 "$TMP/job.err")"
	sleep 1
	stop_agents "$name"
	stop_analyzer "$name"
	python3 "$TOP/tests/e2e/check_slow.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--class S1 --culprits 2 --onset 200 --until 260 || fail "$name: wrong verdict"
	[ "$(grep -c '"type"' "$TMP/$name.jsonl")" = \
	  "$(sort -u "$TMP/$name.jsonl" | grep -c '"type"')" ] ||
		fail "$name: a verdict printed twice"
	# every entry the agents sent was applied by the restarted analyzer
	local sent applied
	sent=$(cat "$TMP/$name.agentA" "$TMP/$name.agentB" |
		sed -n 's/.* \([0-9]*\) sent to Redis.*/\1/p' | awk '{s += $1} END {print s}')
	applied=$(sed -n 's/.*: \([0-9]*\) records applied.*/\1/p' "$TMP/$name.aerr" | tail -1)
	[ -n "$sent" ] && [ "$sent" = "$applied" ] ||
		fail "$name: agents sent $sent records, the restarted analyzer applied $applied"
	echo "$name: ok (analyzer killed and restarted; $applied of $sent records applied)"
}
slow_restart

# Redis stopped for 10 s while rank 2 hangs in CPU code, then restarted:
# the agents buffer, report the gap, and the verdict comes.  /metrics of an
# agent and of the analyzer parse as Prometheus text with the numbers.
outage() {
	local name=outage
	begin_scenario "$name" || return 0
	fresh_job --steps 100000 --hang 2:150 --wait-start "$TMP/go"
	start_fleet "$name"
	touch "$TMP/go"
	sleep 3
	curl -sf "http://127.0.0.1:$MPORT_A/metrics" >"$TMP/agent.prom" ||
		fail "no /metrics from the agent"
	curl -sf "http://127.0.0.1:$MPORT_AN/metrics" >"$TMP/analyzer.prom" ||
		fail "no /metrics from the analyzer"
	python3 "$TOP/tests/fleet/prom_parse.py" "$TMP/agent.prom" >"$TMP/agent.samples" ||
		fail "agent /metrics does not parse"
	python3 "$TOP/tests/fleet/prom_parse.py" "$TMP/analyzer.prom" >"$TMP/analyzer.samples" ||
		fail "analyzer /metrics does not parse"
	for m in ccld_collectives_total ccld_bytes_total ccld_inflight_age_seconds \
		 ccld_agent_processes ccld_agent_events_total ccld_agent_fleet_records_total \
		 ccld_agent_drops_total ccld_agent_step_records_shed_total; do
		grep -q "^$m " "$TMP/agent.samples" || fail "agent /metrics lacks $m"
	done
	grep -Eq '^ccld_agent_processes \{\} 4(\.0)?$' "$TMP/agent.samples" ||
		fail "agent A should trace 4 processes: $(grep processes "$TMP/agent.samples")"
	for m in ccld_analyzer_records_total ccld_analyzer_lag_entries ccld_analyzer_verdicts_total; do
		grep -q "^$m " "$TMP/analyzer.samples" || fail "analyzer /metrics lacks $m"
	done
	redis-cli -p "$PORT" shutdown >/dev/null 2>&1
	wait "$REDIS" 2>/dev/null
	sleep 10
	# agent A comes back 2.5 s after B (its reconnect backoff, a busy
	# node): node B's backlog, flushed first, must not run B's clock past
	# A's records still on their way (a false H3 'GPU not ready' root on
	# B's DP comms, whose holder is the pipeline comm shared with A)
	kill -STOP "$AGENT_A"
	start_redis
	sleep 2.5
	kill -CONT "$AGENT_A"
	WAIT_S=$((STALL + 40)) wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no verdict after the outage: $(cat "$TMP/$name.aerr" "$TMP/$name.agentA")"
	sleep 1
	stop_agents "$name"
	stop_job "$JOB"
	stop_analyzer "$name"
	grep -q "unreachable" "$TMP/$name.agentA" && grep -q "reachable again after" "$TMP/$name.agentA" ||
		fail "$name: the agent did not report the outage: $(cat "$TMP/$name.agentA")"
	python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--stall "$STALL" --hosts nodeA:0-3,nodeB:4-7 --class H1 --culprits 2 --kind tp \
		--ignore-slow || fail "$name: wrong verdict"
	echo "$name: ok ($(grep -h "reachable again" "$TMP/$name.agentA"))"
}
outage

# agents (and the analyzer) started while the job already hangs, as after a
# rollout or an OOM kill of the agent: rank 5 (node B) has been stuck in
# CPU code for seconds; the agents read every comm from memory at start and
# the analyzer names it within the stall threshold + 2 s of their start
late() {
	local name=late last=-1 now same=0 i t0
	begin_scenario "$name" || return 0
	fresh_job --steps 100000 --hang 5:20 --pattern pytorch
	for ((i = 0; i < 300 && same < 15; i++)); do
		now=$(cat "$TMP"/log/calls.*.jsonl 2>/dev/null | wc -l)
		if [ "$now" = "$last" ] && [ "$now" -gt 0 ]; then same=$((same + 1)); else same=0; fi
		last=$now
		sleep 0.1
	done
	[ $same -ge 15 ] || fail "$name: the job did not hang"
	t0=$(date +%s%N)
	start_fleet "$name"
	WAIT_S=$((STALL + 30)) wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no verdict: $(tail -3 "$TMP/$name.jsonl") $(cat "$TMP/$name.aerr")"
	sleep 1
	stop_agents "$name"
	stop_job "$JOB"
	stop_analyzer "$name"
	grep -q "state read from memory: 16 comm" "$TMP/$name.agentB" ||
		fail "$name: agent B read nothing from memory: $(cat "$TMP/$name.agentB")"
	python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
		--stall "$STALL" --hosts nodeA:0-3,nodeB:4-7 --class H1 --culprits 5 \
		--attached-ns "$t0" || fail "$name: wrong verdict"
	echo "$name: ok"
}
late

# two analyzer replicas split the shards (--replica 0/2, 1/2): the one that
# reads the world comm's shard names the count mismatch; no verdict is
# printed by both (a cascade whose root is in the other replica's shards is
# a root there: docs/fleet.md "Replicas")
replicas() {
	local name=replicas a b
	begin_scenario "$name" || return 0
	fresh_job --steps 100000 --mismatch 3:20:count --wait-start "$TMP/go"
	a=$(awk '$1 < 4 {print $2}' "$TMP/pids" | paste -sd,)
	b=$(awk '$1 >= 4 {print $2}' "$TMP/pids" | paste -sd,)
	"$BIN/ccld-trace" daemon --redis "$URL" --node nodeA --shards $SHARDS -p "$a" \
		--stall "$STALL" 2>"$TMP/$name.agentA" &
	AGENT_A=$!
	"$BIN/ccld-trace" daemon --redis "$URL" --node nodeB --shards $SHARDS -p "$b" \
		--stall "$STALL" 2>"$TMP/$name.agentB" &
	AGENT_B=$!
	at_exit "kill -9 $AGENT_A $AGENT_B"
	local r pids=()
	for r in 0 1; do
		"$ANALYZER" --redis "$URL" --json --stall "$STALL" --shards $SHARDS \
			--name "rep$r" --replica "$r/2" >"$TMP/$name.$r.jsonl" 2>"$TMP/$name.$r.err" &
		pids+=($!)
		at_exit "kill -9 $!"
	done
	WAIT_S=60 wait_for grep -qs "tracing" "$TMP/$name.agentA" ||
		fail "agent A did not start: $(cat "$TMP/$name.agentA")"
	WAIT_S=60 wait_for grep -qs "tracing" "$TMP/$name.agentB" ||
		fail "agent B did not start: $(cat "$TMP/$name.agentB")"
	touch "$TMP/go"
	WAIT_S=$((STALL + 40)) wait_for grep -qs '"class":"H2","role":"root"' \
		"$TMP/$name.0.jsonl" "$TMP/$name.1.jsonl" ||
		fail "$name: no H2 verdict: $(cat "$TMP/$name".*.err)"
	sleep 1
	stop_agents "$name"
	stop_job "$JOB"
	sleep 1
	kill -INT "${pids[@]}"
	wait "${pids[0]}" && wait "${pids[1]}" || fail "$name: an analyzer failed: $(cat "$TMP/$name".*.err)"
	python3 - "$TMP/$name.0.jsonl" "$TMP/$name.1.jsonl" "$TMP/pids" <<'PY' || fail "$name: wrong"
import json, sys
out = [[json.loads(l) for l in open(f) if l.strip()] for f in sys.argv[1:3]]
pid3 = [int(l.split()[1]) for l in open(sys.argv[3]) if l.split()[0] == "3"][0]
h2 = [(i, v) for i in (0, 1) for v in out[i] if v.get("class") == "H2" and v.get("role") == "root"]
assert h2, "no H2 root verdict"
i, v = h2[0]
assert [c["pid"] for c in v["culprits"]] == [pid3], v
assert len({i for i, _ in h2}) == 1, "both replicas printed the H2 verdict"
keys = [{(x["comm"], x["seq"], x["class"], x.get("update", False), json.dumps(x["culprits"]))
         for x in o if x.get("type") == "verdict"} for o in out]
both = keys[0] & keys[1]
assert not both, f"printed by both replicas: {both}"
print(f"ok: replica {i} named rank 3 (pid {pid3}); {len(out[0])} + {len(out[1])} lines, none twice")
PY
	echo "$name: ok"
}
replicas
# node B dies (its agent and its ranks SIGKILLed at once, as a kernel
# panic or a power loss does): node A's ranks wait in comms shared with it
nodedeath() {
	local name=nodedeath b_ranks t_kill
	begin_scenario "$name" || return 0
	fresh_job --steps 100000 --wait-start "$TMP/go"
	start_fleet "$name"
	touch "$TMP/go"
	sleep 3
	t_kill=$(date +%s%N)
	mapfile -t b_ranks < <(awk '$1 >= 4 {print $2}' "$TMP/pids")
	kill -9 "$AGENT_B" "${b_ranks[@]}"
	WAIT_S=$((STALL + 30)) wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no verdict: $(tail -3 "$TMP/$name.jsonl") $(cat "$TMP/$name.aerr")"
	sleep 3
	kill -INT "$AGENT_A"
	wait "$AGENT_A" || fail "agent A exited $?: $(cat "$TMP/$name.agentA")"
	stop_job "$JOB"
	stop_analyzer "$name"
	# every root names node B's ranks only and says that node went silent,
	# within its 5 s of silence + the stall threshold + 2 s
	python3 - "$TMP/$name.jsonl" "$t_kill" "$STALL" <<'EOF_PY' ||
import json, sys
vs = [json.loads(l) for l in open(sys.argv[1]) if '"type":"verdict"' in l]
t_kill, stall = int(sys.argv[2]), float(sys.argv[3])
roots = [v for v in vs if v["role"] == "root"]
if not roots:
    sys.exit("no root verdict")
# (slow verdicts of the healthy job before the kill: as in outage, this
# VM's CPU noise under 8 ranks, two agents, Redis and the analyzer is
# test_slow_noise's matter; a hang verdict or a root there fails)
for v in vs:
    if v["detected_ns"] < t_kill and (v["class"].startswith("H") or v["role"] == "root"):
        sys.exit("a verdict before node B died: " + v["evidence"]["text"])
for v in roots:
    hosts = {c.get("host") for c in v["culprits"]}
    if hosts != {"nodeB"} or v["evidence"].get("node_silent") != "nodeB":
        sys.exit("a root not on the silent node B: " + v["evidence"]["text"])
lat = (min(v["detected_ns"] for v in roots) - t_kill) / 1e9
if lat > 5 + stall + 2:
    sys.exit("the root %.1f s after node B died" % lat)
print("nodedeath: %d roots, on node B's ranks %s, the first %.1f s after it died" %
      (len(roots), sorted({c["global_rank"] for v in roots for c in v["culprits"]}), lat))
EOF_PY
		fail "$name: wrong verdict"
	echo "$name: ok"
}
nodedeath

echo "ok: the fleet analyzer named class, communicator, round, culprit and node"
