#!/usr/bin/env bash
# The fleet transport (user/fleet/fs_*.c) against a real redis-server of
# its own on a free loopback port, and the metrics endpoint (user/fleet/metrics.c)
# read with curl and checked by a strict exposition-format parser:
#  1. 2 producers x 5000 records over 4 shards reach one consumer exactly
#     once, per-producer seq without gaps, payloads intact
#  2. two consumers of one group split the records; the union is exact
#  3. consumers killed (SIGKILL) after reading, before acking: the same
#     name re-reads its pending entries, another consumer takes over a dead
#     one's with fs_claim_stale; nothing lost, nothing acked comes back
#  4. Redis killed for 3 s while a producer sends 2000 records/s: the gap
#     and the buffer are reported, everything arrives in order after the
#     restart, also at a consumer that ran through the outage; with a small
#     buffer the drops are counted exactly
#  5. unreachable and malformed URLs: one clear error line each
#  6. GET /metrics on a port picked by the kernel: valid text format 0.0.4
#  7. verdict dedupe: fs_claim_once lets one publisher win
# run.sh: parallel
. "$(dirname "$0")/../lib.sh"
DRV=$TOP/build/tests/fleet/fleet_stream_drv
PARSE=$TOP/tests/fleet/prom_parse.py
[ -x "$DRV" ] || fail "no $DRV: run make"
command -v redis-server >/dev/null || skip "no redis-server (deploy/install-deps.sh installs it)"
command -v curl >/dev/null || skip "no curl (deploy/install-deps.sh installs it)"
T0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_redis VAR PORT ARGS...: a redis-server in the background, its PID
# in $VAR, ready when this returns
start_redis() {
	local var=$1 port=$2
	shift 2
	redis-server --port "$port" --bind 127.0.0.1 --save '' --daemonize no \
		"$@" >>"$TMP/redis-$port.log" 2>&1 &
	printf -v "$var" '%s' "$!"
	WAIT_S=10 wait_for "$DRV" ping "redis://127.0.0.1:$port" 2>/dev/null ||
		fail "redis-server on port $port did not start: $(tail -n 3 "$TMP/redis-$port.log")"
}

# Record checks on the consumers' output lines:
#   ACK|KEEP shard id node inst seq redelivery
cat >"$TMP/check.py" <<'EOF'
import sys
from collections import Counter, defaultdict

def lines(path):
    out = []
    for l in open(path):
        f = l.split()
        # entry ids are per stream: (shard, id) names an entry
        out.append(dict(flag=f[0], shard=int(f[1]), id=(int(f[1]), f[2]), node=f[3],
                        seq=int(f[5]), redel=f[6] == "1"))
    return out

def fail(msg):
    print("check: " + msg)
    sys.exit(1)

def in_order(recs, what):
    # per node and shard, first deliveries come in seq order
    last = {}
    for r in recs:
        if r["redel"]:
            continue
        k = (r["node"], r["shard"])
        if r["seq"] <= last.get(k, 0):
            fail("%s: %s shard %d: seq %d after %d" % (what, k[0], k[1], r["seq"], last[k]))
        last[k] = r["seq"]

def once(spec, files):
    want = {(n, s) for n, c in (x.split(":") for x in spec.split(",")) for s in range(1, int(c) + 1)}
    acked = Counter()
    for p in files:
        recs = lines(p)
        in_order(recs, p)
        acked.update((r["node"], r["seq"]) for r in recs if r["flag"] == "ACK")
    twice = [k for k, v in acked.items() if v > 1]
    missing = want - set(acked)
    extra = set(acked) - want
    if twice or missing or extra:
        fail("%d acked twice, %d missing (%s), %d unexpected" %
             (len(twice), len(missing), sorted(missing)[:5], len(extra)))
    return len(want)

mode = sys.argv[1]
if mode == "once":
    n = once(sys.argv[2], sys.argv[3:])
    print("%d records, each acked exactly once, in order per shard" % n)
elif mode == "split":
    n = once(sys.argv[2], sys.argv[3:])
    shares = [sum(1 for r in lines(p) if r["flag"] == "ACK") for p in sys.argv[3:]]
    if min(shares) == 0:
        fail("one consumer got nothing: %s" % shares)
    print("%d records split %s between the consumers, union exact" % (n, shares))
elif mode == "restart":
    spec, a, b, c, d = sys.argv[2:7]
    A, B, C, D = (lines(p) for p in (a, b, c, d))
    keep_a = [r["id"] for r in A if r["flag"] == "KEEP"]
    first_b = [r["id"] for r in B[:len(keep_a)]]
    if sorted(keep_a) != sorted(first_b) or not all(r["redel"] for r in B[:len(keep_a)]):
        fail("the restarted consumer did not first re-read its %d pending entries" % len(keep_a))
    keep_c = {r["id"] for r in C if r["flag"] == "KEEP"}
    got_d = {r["id"] for r in D if r["redel"]}
    if not keep_c <= got_d:
        fail("%d entries of the dead consumer were not claimed" % len(keep_c - got_d))
    seen_acked = set()
    for run in (A, B, C, D):
        for r in run:
            if r["id"] in seen_acked:
                fail("acked entry %s delivered again" % r["id"])
        seen_acked |= {r["id"] for r in run if r["flag"] == "ACK"}
    n = once(spec, (a, b, c, d))
    print("%d records: %d re-read by the restarted consumer, %d claimed from the "
          "dead one; each acked exactly once, no acked entry redelivered" %
          (n, len(keep_a), len(keep_c)))
elif mode == "outage":
    node, accepted, dropped, path = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    recs = [r for r in lines(path) if r["node"] == node]
    cnt = Counter(r["seq"] for r in recs)
    first = []
    seen = set()
    for r in recs:
        if r["seq"] not in seen:
            seen.add(r["seq"])
            first.append(dict(r, redel=False))
    in_order(first, path)
    missing = sorted(set(range(1, accepted + 1)) - seen)
    if len(seen) != accepted - dropped or len(missing) != dropped:
        fail("accepted %d dropped %d but %d distinct arrived (%d missing)" %
             (accepted, dropped, len(seen), len(missing)))
    if missing and missing[-1] - missing[0] + 1 != len(missing):
        fail("the dropped records are not one run of the oldest: %s..." % missing[:5])
    dups = sum(v - 1 for v in cnt.values())
    print("%d accepted, %d arrived in order, %d dropped (seq %s), %d duplicates" %
          (accepted, len(seen), dropped,
           "%d-%d" % (missing[0], missing[-1]) if missing else "none", dups))
EOF
# check MODE ARGS...: prints the verdict line; use as r=$(check ..) || fail "$r"
check() { python3 "$TMP/check.py" "$@"; }

# field VALUE_NAME LINE: the number after NAME in a stats line
field() { sed -n "s/.* $1 \([0-9.]*\).*/\1/p" <<<"$2"; }

PORT=$(free_port)
SOCK=$TMP/redis.sock
start_redis REDIS_PID "$PORT" --appendonly no --unixsocket "$SOCK" --unixsocketperm 700
at_exit 'kill -9 $REDIS_PID'
URL=redis://127.0.0.1:$PORT
"$DRV" ping "unix://$SOCK" || fail "unix:// URL does not connect"

# ---- 1. two producers, one consumer ------------------------------------
"$DRV" produce "$URL" n1 4 5000 >"$TMP/p1.out" 2>&1 &
p1=$!
"$DRV" produce "$URL" n2 4 5000 >"$TMP/p2.out" 2>&1 &
p2=$!
wait $p1 || fail "producer n1: $(cat "$TMP/p1.out")"
wait $p2 || fail "producer n2: $(cat "$TMP/p2.out")"
cat "$TMP/p1.out" "$TMP/p2.out" | sed -n 's/^produce n/1. produce n/p'
"$DRV" consume "$URL" g1 c1 4 "$TMP/c1" -i 500 >"$TMP/c1.out" || fail "consumer: $(cat "$TMP/c1.out")"
sed 's/^/1. /' "$TMP/c1.out"
grep -q "delivered 10000 corrupt 0 acked 10000 .* lag 0 pending 0$" "$TMP/c1.out" ||
	fail "1: not 10000 intact records with lag 0: $(cat "$TMP/c1.out")"
r=$(check once n1:5000,n2:5000 "$TMP/c1") || fail "1: $r"
echo "1. $r"

# ---- 2. two consumers in one group -------------------------------------
U2=$URL/1
"$DRV" consume "$U2" g2 ca 4 "$TMP/ca" -i 1000 >"$TMP/ca.out" 2>&1 &
ca=$!
"$DRV" consume "$U2" g2 cb 4 "$TMP/cb" -i 1000 >"$TMP/cb.out" 2>&1 &
cb=$!
sleep 0.2
"$DRV" produce "$U2" n1 4 10000 >"$TMP/p3.out" 2>&1 || fail "producer: $(cat "$TMP/p3.out")"
wait $ca || fail "consumer ca: $(cat "$TMP/ca.out")"
wait $cb || fail "consumer cb: $(cat "$TMP/cb.out")"
r=$(check split n1:10000 "$TMP/ca" "$TMP/cb") || fail "2: $r"
echo "2. $r"

# ---- 3. killed consumers: re-read by name, claimed by another ----------
U3=$URL/2
"$DRV" produce "$U3" n1 4 10000 >"$TMP/p4.out" 2>&1 || fail "producer: $(cat "$TMP/p4.out")"
"$DRV" consume "$U3" g3 c1 4 "$TMP/k1" -m 2000 -a even -k >/dev/null 2>"$TMP/k1.err"
rc=$?
[ $rc = 137 ] || fail "3: consumer was to die by SIGKILL, exit $rc: $(cat "$TMP/k1.err")"
"$DRV" consume "$U3" g3 c1 4 "$TMP/k2" -m 1500 -a all >"$TMP/k2.out" 2>&1 ||
	fail "3: restarted consumer: $(cat "$TMP/k2.out")"
"$DRV" consume "$U3" g3 c2 4 "$TMP/k3" -m 1500 -a even -k >/dev/null 2>"$TMP/k3.err"
rc=$?
[ $rc = 137 ] || fail "3: consumer was to die by SIGKILL, exit $rc: $(cat "$TMP/k3.err")"
sleep 0.3
"$DRV" consume "$U3" g3 c3 4 "$TMP/k4" -c 200 -a all -i 500 >"$TMP/k4.out" 2>&1 ||
	fail "3: claiming consumer: $(cat "$TMP/k4.out")"
sed 's/^/3. /' "$TMP/k4.out"
grep -q "lag 0 pending 0$" "$TMP/k4.out" || fail "3: entries left pending: $(cat "$TMP/k4.out")"
r=$(check restart n1:10000 "$TMP/k1" "$TMP/k2" "$TMP/k3" "$TMP/k4") || fail "3: $r"
echo "3. $r"

# ---- 4. Redis killed for 3 s while a producer sends ---------------------
PORT2=$(free_port)
mkdir -p "$TMP/aof"
R2ARGS=(--appendonly yes --appendfsync always --dir "$TMP/aof")
start_redis REDIS2_PID "$PORT2" "${R2ARGS[@]}"
at_exit 'kill -9 $REDIS2_PID'
# outage DB BUFBYTES: one run; leaves the driver's output in $TMP/o$DB.out
outage() {
	local db=$1 buf=$2 pid t0
	rm -f "$TMP/killed"
	t0=$(date +%s.%N)
	"$DRV" outage "redis://127.0.0.1:$PORT2/$db" n1 4 "$buf" "$REDIS2_PID" \
		"$TMP/killed" >"$TMP/o$db.out" 2>&1 &
	pid=$!
	WAIT_S=15 wait_for test -e "$TMP/killed" || fail "4: the driver did not kill Redis: $(cat "$TMP/o$db.out")"
	sleep 3
	start_redis REDIS2_PID "$PORT2" "${R2ARGS[@]}"
	wait $pid || fail "4: producer: $(cat "$TMP/o$db.out")"
	sed "s/^/4. buffer $buf: /" "$TMP/o$db.out"
	"$DRV" consume "redis://127.0.0.1:$PORT2/$db" g4 c1 4 "$TMP/o$db" -i 500 \
		>"$TMP/oc$db.out" 2>&1 || fail "4: consumer: $(cat "$TMP/oc$db.out")"
	echo "4. buffer $buf: $(cat "$TMP/oc$db.out") ($(since "$t0") s for the run)"
}
# (a) a buffer that holds the whole outage: nothing lost; a consumer that
# runs through the outage reconnects and gets everything too
"$DRV" consume "redis://127.0.0.1:$PORT2/0" glive c1 4 "$TMP/live" -i 6000 \
	>"$TMP/live.out" 2>"$TMP/live.err" &
live=$!
outage 0 67108864
during=$(grep '^outage:' "$TMP/o0.out")
after=$(grep '^after:' "$TMP/o0.out")
[ "$(field connected "$during")" = 0 ] || fail "4a: connected during the outage: $during"
awk -v b="$(field buffered "$during")" 'BEGIN { exit !(b >= 3000) }' ||
	fail "4a: expected >= 3000 records buffered 2 s into the outage: $during"
awk -v g="$(field gap "$during")" 'BEGIN { exit !(g >= 1.8) }' ||
	fail "4a: gap not reported during the outage: $during"
grep -q 'last_error ".*redis://127.0.0.1' <<<"$during" || fail "4a: no last_error: $during"
awk -v g="$(field gap "$after")" 'BEGIN { exit !(g >= 2.9 && g <= 6) }' ||
	fail "4a: gap should be 3 s to 6 s: $after"
[ "$(field dropped "$after")" = 0 ] || fail "4a: records dropped: $after"
[ "$(field buffered "$after")" = 0 ] || fail "4a: records left: $after"
[ "$(field reconnects "$after")" -ge 1 ] || fail "4a: no reconnect counted: $after"
r=$(check outage n1 "$(field accepted "$after")" 0 "$TMP/o0") || fail "4a: $r"
echo "4a. $r"
wait $live || fail "4a: live consumer: $(cat "$TMP/live.out" "$TMP/live.err")"
grep -q "reconnects [1-9]" "$TMP/live.out" || fail "4a: live consumer did not reconnect: $(cat "$TMP/live.out")"
r=$(check outage n1 "$(field accepted "$after")" 0 "$TMP/live") || fail "4a live: $r"
echo "4a. consumer through the outage: $(cat "$TMP/live.out"); $r"
# (b) 20000 bytes = 200 records of 100 bytes: the oldest are dropped
outage 1 20000
after=$(grep '^after:' "$TMP/o1.out")
grep -q 'max_buffered 200$' "$TMP/o1.out" || fail "4b: the buffer should top out at 200 records"
dropped=$(field dropped "$after")
[ "$dropped" -gt 0 ] || fail "4b: nothing dropped with a small buffer: $after"
r=$(check outage n1 "$(field accepted "$after")" "$dropped" "$TMP/o1") || fail "4b: $r"
echo "4b. $r"

# ---- 5. bad URLs: one clear line each ----------------------------------
# expect_err PATTERN CMD...: exit 1 and exactly one stderr line matching
expect_err() {
	local pattern=$1 rc
	shift
	"$@" >/dev/null 2>"$TMP/err"
	rc=$?
	[ $rc = 1 ] || fail "5: '$*': exit $rc, expected 1: $(cat "$TMP/err")"
	[ "$(wc -l <"$TMP/err")" = 1 ] || fail "5: '$*': not one stderr line: $(cat "$TMP/err")"
	grep -qE "$pattern" "$TMP/err" || fail "5: '$*': stderr lacks /$pattern/: $(cat "$TMP/err")"
	echo "5. $(cat "$TMP/err")"
}
expect_err 'redis://127\.0\.0\.1:1: cannot connect: Connection refused' \
	"$DRV" produce redis://127.0.0.1:1 n1 4 10
expect_err 'redis://127\.0\.0\.1:1: cannot connect: Connection refused' \
	"$DRV" consume redis://127.0.0.1:1 g c 4 "$TMP/none"
expect_err "unix:///nonexistent/redis.sock: cannot connect: No such file" \
	"$DRV" ping unix:///nonexistent/redis.sock
expect_err 'http://127\.0\.0\.1:6379: bad Redis URL: expected redis://HOST' \
	"$DRV" produce http://127.0.0.1:6379 n1 4 10
expect_err 'redis://127\.0\.0\.1:99999: bad Redis URL: bad port' \
	"$DRV" produce redis://127.0.0.1:99999 n1 4 10
expect_err 'redis://127\.0\.0\.1:6379/x: bad Redis URL: bad database' \
	"$DRV" consume redis://127.0.0.1:6379/x g c 4 "$TMP/none"
expect_err 'unix://redis\.sock: bad Redis URL: .*absolute' "$DRV" ping unix://redis.sock

# ---- 6. the metrics endpoint -------------------------------------------
"$DRV" metrics 127.0.0.1:0 30 >"$TMP/m.out" 2>&1 &
mpid=$!
at_exit "kill $mpid"
wait_for grep -q '^port ' "$TMP/m.out" || fail "6: metrics server: $(cat "$TMP/m.out")"
MPORT=$(sed -n 's/^port //p' "$TMP/m.out")
[ "$MPORT" -gt 0 ] || fail "6: no port"
curl -sS -D "$TMP/m.hdr" -o "$TMP/m.txt" "http://127.0.0.1:$MPORT/metrics" || fail "6: curl /metrics"
grep -qi '^content-type: text/plain; version=0.0.4' "$TMP/m.hdr" || fail "6: content type: $(cat "$TMP/m.hdr")"
if command -v promtool >/dev/null; then
	promtool check metrics <"$TMP/m.txt" || fail "6: promtool rejects the output"
fi
python3 "$PARSE" "$TMP/m.txt" >"$TMP/m.parsed" 2>"$TMP/m.err" ||
	fail "6: invalid exposition text: $(cat "$TMP/m.err")"
for want in \
	'ccld_records_sent_total {} 12345.0' \
	'ccld_buffered_records {"shard": "0"} 0.25' \
	'ccld_buffered_records {"shard": "1"} -Inf' \
	'ccld_collectives_total {"comm": "q\"uote\\back\nline", "rank": "3"} 3.0' \
	'ccld_collectives_total {"comm": "0badc0ffee", "rank": "0"} 1e+21'; do
	grep -qxF "$want" "$TMP/m.parsed" || fail "6: missing sample: $want; got: $(cat "$TMP/m.parsed")"
done
grep -qxF '# HELP ccld_buffered_records Records waiting for Redis.\nSecond line \\ here.' "$TMP/m.txt" ||
	fail "6: help text not escaped: $(cat "$TMP/m.txt")"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/")
[ "$code" = 404 ] || fail "6: GET / gave $code, expected 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$MPORT/metrics")
[ "$code" = 405 ] || fail "6: POST /metrics gave $code, expected 405"
expect_err "metrics: cannot listen on 127.0.0.1:$MPORT: Address already in use" \
	"$DRV" metrics "127.0.0.1:$MPORT" 1
expect_err "metrics: bad listen address '127.0.0.1:http9'" "$DRV" metrics 127.0.0.1:http9 1
kill -TERM $mpid
wait $mpid || fail "6: metrics server did not stop cleanly"
echo "6. /metrics on port $MPORT: $(cat "$TMP/m.err"); 404 and 405 elsewhere"

# ---- 7. verdict dedupe --------------------------------------------------
r1=$("$DRV" verdict "$URL/3" "ccld:verdict:abc:42:H1" '{"type":"verdict"}') || fail "7: $r1"
r2=$("$DRV" verdict "$URL/3" "ccld:verdict:abc:42:H1" '{"type":"verdict"}') || fail "7: $r2"
[ "$r1/$r2" = won/lost ] || fail "7: claim_once gave $r1 then $r2"
n=$(redis-cli -p "$PORT" -n 3 XLEN ccld:verdicts 2>/dev/null || echo 1)
[ "$n" = 1 ] || fail "7: $n verdicts published, expected 1"
echo "7. fs_claim_once: first replica won, second lost; 1 verdict on ccld:verdicts"

echo "all fleet checks passed in $(since "$T0") s"
