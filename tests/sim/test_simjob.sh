#!/usr/bin/env bash
# ccld-simjob: 8 ranks x 200 steps (TP 2, PP 2, DP 2) finish correctly in
# under 60 s on this 2-core machine, and the stand-in's ground-truth call
# logs (CCLD_SIM_CALLLOG) are consistent: one comm hash per communicator on
# all its ranks, every collective seq seen on every rank with one signature.
# Also: an injected mismatch or skip hangs (never completes), and wrong
# usage is refused.
# run.sh: parallel
. "$(dirname "$0")/../lib.sh"
JOB=$BIN/ccld-simjob
[ -x "$JOB" ] || fail "ccld-simjob not built (make sim)"

mkdir -p "$TMP/log"
ls /dev/shm | grep '^ccldsim-' | sort >"$TMP/shm.before"
start=$(date +%s.%N)
CCLD_SIM_CALLLOG=$TMP/log timeout 120 "$JOB" --ranks 8 --tp 2 --pp 2 --steps 200 \
	--compute-ms 2 --jitter 20 >"$TMP/out" 2>&1 || { tail -30 "$TMP/out"; fail "simjob failed"; }
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
echo "8 ranks x 200 steps: ${secs} s"
awk -v s="$secs" 'BEGIN { exit !(s < 60) }' || fail "took ${secs} s (limit 60)"
[ "$(grep -c 'results ok' "$TMP/out")" = 8 ] || { cat "$TMP/out"; fail "not every rank correct"; }
[ "$(grep -c '^rank [0-9] pid [0-9]*$' "$TMP/out")" = 8 ] || fail "rank pids not printed"
# this job's segments are gone (others' may belong to jobs still running)
ls /dev/shm | grep '^ccldsim-' | sort | comm -13 "$TMP/shm.before" - | grep -q . &&
	fail "shared memory left in /dev/shm"

python3 - "$TMP/log" <<'PY' || fail "call logs inconsistent"
import glob, json, sys, collections
recs = [json.loads(l) for f in glob.glob(sys.argv[1] + "/calls.*.jsonl") for l in open(f)]
pids = {r["pid"] for r in recs}
assert len(pids) == 8, f"{len(pids)} processes logged"
byseq = collections.defaultdict(list)
ranks = collections.defaultdict(set)
nranks = {}
for r in recs:
    if r["comm"] is None:
        continue
    assert r["ret"] == 0, r
    ranks[r["comm"]].add((r["rank"], r["pid"]))
    assert nranks.setdefault(r["comm"], r["nranks"]) == r["nranks"], r
    if r["seq"] is not None:
        byseq[(r["comm"], r["seq"])].append(r)
for c, rs in ranks.items():
    assert len(rs) == nranks[c], f"comm {c}: {len(rs)} ranks of {nranks[c]}"
    assert len({p for _, p in rs}) == len(rs), f"comm {c}: a pid twice"
for (c, s), rs in byseq.items():
    sig = {(r["op"], r["count"], r["dtype"], r["redop"], r["root"]) for r in rs}
    assert len(sig) == 1, f"comm {c} seq {s}: {sig}"
    assert len(rs) == nranks[c], f"comm {c} seq {s}: {len(rs)} of {nranks[c]} ranks"
ncomm = len(ranks)
world = [c for c in ranks if nranks[c] == 8]
assert len(world) == 1 and ncomm == 13, f"{ncomm} comms, world {world}"
percomm = collections.Counter(c for c, s in byseq)
assert percomm[world[0]] == 200, percomm
p2p = sum(1 for r in recs if r["op"] in ("Send", "Recv"))
assert p2p == 8 * 200 * 2, p2p
print(f"{len(recs)} call records, {ncomm} communicators, {len(byseq)} collective rounds consistent")
PY

# DDP's buffer broadcast each step (--bcast): checked on every rank
"$JOB" --ranks 4 --pp 2 --steps 30 --compute-ms 1 --bcast --timeout 60 >"$TMP/bc.out" 2>&1 ||
	{ tail "$TMP/bc.out"; fail "--bcast job failed"; }
grep -q '4 ranks, all ok' "$TMP/bc.out" || fail "--bcast: $(tail -2 "$TMP/bc.out")"

# application faults hang the job instead of completing it
for f in "--mismatch 1:3:count" "--skip 2:3:loss" "--exit 3:2" "--bcast --skip 1:3:bcast" \
	"--bcast --mismatch 3:3:root"; do
	# shellcheck disable=SC2086
	"$JOB" --ranks 4 --steps 20 --compute-ms 1 --timeout 3 $f >"$TMP/f.out" 2>&1
	rc=$?
	[ "$rc" = 124 ] || { tail "$TMP/f.out"; fail "$f: exit $rc, want a hang (124)"; }
	echo "$f: hangs as expected"
done
# the socket transport (data over TCP on loopback): same results, and the
# sockets really are the ranks' (each rank's connections to its peers)
CCLD_SIM_TRANSPORT=socket "$JOB" --ranks 4 --tp 2 --pp 2 --steps 40 --compute-ms 1 \
	--timeout 60 >"$TMP/sock.out" 2>&1 || { tail "$TMP/sock.out"; fail "socket transport run failed"; }
grep -q '4 ranks, all ok' "$TMP/sock.out" || fail "socket transport: $(tail -2 "$TMP/sock.out")"
grep -q 'ccld-sim:' "$TMP/sock.out" && fail "socket transport complained: $(grep ccld-sim: "$TMP/sock.out")"
CCLD_SIM_TRANSPORT=socket "$JOB" --ranks 2 --steps 400 --compute-ms 5 --timeout 60 \
	--pidfile "$TMP/sock.pids" >"$TMP/sock2.out" 2>&1 &
sj=$!
WAIT_S=20 wait_for test -s "$TMP/sock.pids" || fail "no pidfile"
pid0=$(awk '$1 == 0 {print $2}' "$TMP/sock.pids")
# its listener and connections, once made (on a busy CPU not at once)
sockets() { n=$(ls -l "/proc/$pid0/fd" 2>/dev/null | grep -c socket:); [ "$n" -ge 3 ]; }
WAIT_S=10 wait_for sockets
wait $sj || fail "socket transport (2 ranks) failed: $(tail -2 "$TMP/sock2.out")"
[ "$n" -ge 3 ] || fail "rank 0 has $n sockets, want a listener and connections"
echo "socket transport: results ok, rank 0 held $n sockets"
CCLD_SIM_TRANSPORT=rdma "$JOB" --ranks 2 --steps 2 >"$TMP/bad.out" 2>&1 &&
	fail "CCLD_SIM_TRANSPORT=rdma accepted"
grep -q 'CCLD_SIM_TRANSPORT=rdma: expected shm or socket' "$TMP/bad.out" ||
	fail "no clear error for a bad transport: $(tail -3 "$TMP/bad.out")"
"$JOB" --ranks 6 --tp 4 >/dev/null 2>&1 && fail "--ranks 6 --tp 4 accepted"
"$JOB" --ranks 4 --skip 1:3:bcast >/dev/null 2>&1 && fail "--skip R:S:bcast without --bcast accepted"
"$JOB" --ranks 4 --tp 4 --bcast >/dev/null 2>&1 && fail "--bcast without a DP comm accepted"
"$JOB" --help | grep -q -- '--barrier-wait' || fail "--help incomplete"
exit 0
