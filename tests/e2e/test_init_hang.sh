#!/usr/bin/env bash
# Hangs in communicator setup (docs/analyzer.md, "Setup and teardown"): a
# 4-rank stand-in job traced from before its init (-p, the ranks wait for
# a file before ncclCommInitRankConfig) whose rank 2 never calls it.  The
# other three wait inside their init; ccld must give an H1 at init naming
# rank 2, its process (the launcher's global rank 2) and what it is doing,
# and the comm by the name the others' configs give it ("world").  Then
# the same for ncclCommSplit: rank 1 never calls its first split.
# Then the init hang again with ccld attached 2 s after it began: it finds
# the three ranks inside their init in memory (their comm's initState
# ncclInProgress) and names rank 2 the same way, its wait a bound.
# The captures replay to the same verdicts.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=3

# setup_hang NAME FAULT...: a 4-rank job with FAULT traced from before its
# init until its H1 root comes ($TMP/NAME.jsonl, $TMP/NAME.ccld)
setup_hang() {
	local name=$1
	shift
	rm -rf "$TMP/log" "$TMP/pids" "$TMP/go"
	start_job --ranks 4 --tp 2 --steps 10 --compute-ms 5 --timeout 60 "$@" \
		--wait-init "$TMP/go"
	pids=$(rank_pids 4)
	start_tracer "$name" -p "$pids" --json --stall "$STALL" ${TRACE_EVENTS:+--events} \
		-o "$TMP/$name.ccld"
	touch "$TMP/go"
	WAIT_S=$((STALL + 30)) wait_for grep -qs '"class":"H1","role":"root"' "$TMP/$name.jsonl" ||
		fail "$name: no H1 verdict: $(tail -3 "$TMP/$name.jsonl") $(cat "$TMP/$name.err")"
	sleep 1
	stop_tracer "$name"
	stop_job "$JOB"
}

# one_h1 NAME RANK MAX_LATE COMM_NAME WANT...: NAME.jsonl holds one verdict,
# an H1 naming rank RANK's process, the launcher's global rank RANK, on the
# comm whose name is COMM_NAME ("-": not checked), within MAX_LATE s of its
# onset ("-": not timed), its text saying each WANT ({pid}: that process,
# {comm}: the verdict's comm)
one_h1() {
	python3 - "$TMP/$1.jsonl" "$TMP/pids" "${@:2}" <<'PY' || fail "$1: wrong verdict"
import json, sys
path, pids, rank, max_late, name = sys.argv[1:6]
vs = [json.loads(l) for l in open(path) if '"verdict"' in l]
pid = next(int(l.split()[1]) for l in open(pids) if l.split()[0] == rank)
rank = int(rank)
bad = []
if len(vs) != 1:
    bad.append(f"expected one verdict, got {len(vs)}")
v = vs[0]
t = v["evidence"]["text"]
if v["class"] != "H1" or [(c["rank"], c["pid"]) for c in v["culprits"]] != [(rank, pid)]:
    bad.append(f"not an H1 naming rank {rank} (pid {pid})")
if v["culprits"][0].get("global_rank") != rank:
    bad.append(f"no global_rank {rank} in the culprit")
if name != "-" and v.get("comm_info", {}).get("name") != name:
    bad.append(f"not on the {name} comm")
for want in sys.argv[6:]:
    want = want.format(pid=pid, comm=v["comm"])
    if want not in t:
        bad.append(f"the text does not say {want!r}")
late = (v["detected_ns"] - v["onset_ns"]) / 1e9
if max_late != "-" and not late <= float(max_late):
    bad.append("late: %.1f s after its onset" % late)
for b in bad:
    print(b)
print(json.dumps(v))
sys.exit(1 if bad else 0)
PY
}

setup_hang init --no-init 2

one_h1 init 2 - - 'rank 2 of the 4 ranks never called ncclCommInitRankConfig ("world")' \
	"ranks 0,1,3 wait inside it" "rank 2 is global rank 2, pid {pid}" "sleeping in pause()"
replay_same init --stall "$STALL"
echo "ok: the rank that never called init named at init, with its process"

# split: rank 1 calls init, then never its first ncclCommSplit (the TP
# split of "world"); the others wait inside theirs.  An H1 on the world
# comm naming world rank 1 and its process.
TRACE_EVENTS=1 setup_hang split --no-split 1

# ccld hashes the unique id at the init call as NCCL makes the comm's
# commHash from it: a rank seen entering its init and one found inside it
# in memory name one group
python3 - "$TMP/split.jsonl" <<'PY' || fail "split: the unique id's hash is not the comm's"
import json, sys
inits = [e for e in map(json.loads, open(sys.argv[1]))
         if e.get("type") == "comm" and e.get("op") == "CommInitRankConfig" and e.get("ret") == 0]
if len(inits) != 4 or any(e.get("unique_id") != e.get("comm") for e in inits):
    print("init records (unique_id, comm):", [(e.get("unique_id"), e.get("comm")) for e in inits])
    sys.exit(1)
PY

one_h1 split 1 - world "rank 1 of the 4 ranks of comm {comm} never called ncclCommSplit" \
	"ranks 0,2,3 wait inside it" "is pid {pid}" "sleeping in pause()"
replay_same split --stall "$STALL"
echo "ok: the rank that never called its split named at the split, with its process"

# attached late: the stand-in logs a call still inside after 2 s, so the
# three ranks have waited inside their init for 2 s at least
rm -rf "$TMP/log" "$TMP/pids"
start_job --ranks 4 --tp 2 --steps 10 --compute-ms 5 --timeout 60 --no-init 2
pids=$(rank_pids 4)
WAIT_S=30 wait_for bash -c "[ \$(cat '$TMP'/log/calls.*.jsonl 2>/dev/null |
	grep -c '\"op\":\"CommInitRank') -ge 3 ]" || fail "init-late: the ranks are not inside their init"
start_tracer init-late -p "$pids" --json --stall "$STALL" -o "$TMP/init-late.ccld"
WAIT_S=$((STALL + 30)) wait_for grep -qs '"class":"H1","role":"root"' "$TMP/init-late.jsonl" ||
	fail "init-late: no H1 verdict: $(tail -3 "$TMP/init-late.jsonl") $(cat "$TMP/init-late.err")"
sleep 1
stop_tracer init-late
stop_job "$JOB"
grep -q "3 comm rank(s) of 4 process" "$TMP/init-late.err" ||
	fail "init-late: the ranks inside their init not read in memory: $(cat "$TMP/init-late.err")"
# its onset is the attach: the verdict within the stall time and 2 s
one_h1 init-late 2 $((STALL + 2)) - "rank 2 of the 4 ranks never called ncclCommInitRank*" \
	"ranks 0,1,3 wait inside it for" "or more (inside it when ccld attached)" \
	"rank 2 is global rank 2, pid {pid}" "sleeping in pause()"
replay_same init-late --stall "$STALL"
echo "ok: ranks found inside their init in memory: the rank that never called it named"
