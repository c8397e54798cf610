#!/usr/bin/env bash
# Authenticated fleet transport against a real redis-server that wants a
# password (requirepass and an ACL user from its config file, not its
# command line), on a free loopback port:
#  1. credentials: missing, wrong, in the URL, a bad auth file: ccld-analyzer
#     and ccld-trace daemon give exactly one line each (naming the cause,
#     never the password) and exit 1; the right password and the ACL user
#     connect (transport driver)
#  2. record tags at the transport: a consumer with the key delivers the
#     tagged records only; entries XADDed by redis-cli without a tag, with a
#     made-up tag, and a producer's with a wrong key are counted and dropped
#  3. end to end (BPF): an 8-rank stand-in job whose rank 5 skips a TP
#     all-reduce, one agent (ACL user, key) and one analyzer (password,
#     key): the H1 verdict names rank 5; forged entries written meanwhile
#     are counted, warned about once, and change nothing
#  4. the same hang sent by an agent without the key and one with a wrong
#     key: the analyzer applies none of their records, prints no verdict,
#     counts every entry the agents sent as rejected
. "$(dirname "$0")/../lib.sh"
DRV=$TOP/build/tests/fleet/fleet_stream_drv
ANALYZER=$BIN/ccld-analyzer
[ -x "$DRV" ] && [ -x "$ANALYZER" ] || fail "not built: run make"
command -v redis-server >/dev/null || skip "no redis-server (deploy/install-deps.sh installs it)"
STALL=${CCLD_TEST_STALL:-3}
SHARDS=4

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL=redis://127.0.0.1:$PORT
PASS=Kq8vZr2wPzX4hT7n	# in files only; checked never to appear in output
APASS=Ag3ntPw9fLm2sQ8d
cat >"$TMP/redis.conf" <<CONF
port $PORT
bind 127.0.0.1
save ""
appendonly no
requirepass $PASS
user agent on >$APASS ~ccld:* +@all
CONF
RCLI=(redis-cli -p "$PORT" --no-auth-warning -a "$PASS")
start_redis() {
	redis-server "$TMP/redis.conf" >>"$TMP/redis.log" 2>&1 &
	REDIS=$!
	at_exit "kill $REDIS"
	WAIT_S=10 wait_for "${RCLI[@]}" ping >/dev/null 2>&1 ||
		fail "redis-server did not start: $(cat "$TMP/redis.log")"
}
start_redis
ps -o args= -p "$REDIS" | grep -q "$PASS" && fail "the password shows in ps"

echo "$PASS" >"$TMP/auth"
printf '# the agents\nagent %s\n' "$APASS" >"$TMP/auth.agent"
echo "wrong-password" >"$TMP/auth.wrong"
echo "agent wrong-password" >"$TMP/auth.agent.wrong"
printf 'a b c\n' >"$TMP/auth.bad"
head -c 32 /dev/urandom | base64 >"$TMP/key"
head -c 32 /dev/urandom | base64 >"$TMP/key.wrong"
chmod 600 "$TMP"/auth* "$TMP"/key*

# ---- 1. credentials -------------------------------------------------------
# one_line WANT CMD...: exit 1 and exactly one stderr line matching WANT,
# without the password
one_line() {
	local want=$1 rc
	shift
	"$@" >/dev/null 2>"$TMP/one.err"
	rc=$?
	[ $rc = 1 ] && [ "$(wc -l <"$TMP/one.err")" = 1 ] && grep -Eq "$want" "$TMP/one.err" &&
		! grep -q -e "$PASS" -e "$APASS" "$TMP/one.err" ||
		fail "$*: rc $rc, want one line /$want/: $(cat "$TMP/one.err")"
}
AN=("$ANALYZER" --shards $SHARDS --duration 1)
one_line "$URL: the server wants a password \(NOAUTH" "${AN[@]}" --redis "$URL"
one_line "$URL: AUTH refused: WRONGPASS" "${AN[@]}" --redis "$URL" \
	--redis-auth-file "$TMP/auth.wrong"
one_line "$URL: AUTH as user 'agent' refused: WRONGPASS" "${AN[@]}" --redis "$URL" \
	--redis-auth-file "$TMP/auth.agent.wrong"
one_line "redis://\.\.\.@127\.0\.0\.1:$PORT: bad Redis URL: no user or password" \
	"${AN[@]}" --redis "redis://:$PASS@127.0.0.1:$PORT"
one_line "Redis auth file $TMP/auth.bad: line 1: more than two words" \
	"${AN[@]}" --redis "$URL" --redis-auth-file "$TMP/auth.bad"
one_line "HMAC key file $TMP/nokey: cannot open" "${AN[@]}" --redis "$URL" \
	--redis-auth-file "$TMP/auth" --hmac-key-file "$TMP/nokey"
one_line "rediss://x: bad Redis URL: TLS" "${AN[@]}" --redis rediss://x
if [ "$(id -u)" = 0 ]; then
	one_line "$URL: the server wants a password \(NOAUTH" \
		"$BIN/ccld-trace" daemon --redis "$URL" --node x -p $$
	one_line "$URL: AUTH refused: WRONGPASS" env CCLD_REDIS_AUTH_FILE="$TMP/auth.wrong" \
		"$BIN/ccld-trace" daemon --redis "$URL" --node x -p $$
	one_line "redis://\.\.\.@127\.0\.0\.1:$PORT: bad Redis URL" \
		"$BIN/ccld-trace" daemon --redis "redis://agent:$APASS@127.0.0.1:$PORT" --node x -p $$
fi
CCLD_REDIS_AUTH_FILE=$TMP/auth "$DRV" ping "$URL" || fail "the password does not connect"
CCLD_REDIS_AUTH_FILE=$TMP/auth.agent "$DRV" ping "$URL/1" ||
	fail "the ACL user does not connect (with SELECT)"
echo "1. credentials: missing, wrong, in the URL, bad file: one line each, exit 1"

# ---- 2. record tags at the transport --------------------------------------
export CCLD_REDIS_AUTH_FILE=$TMP/auth
CCLD_HMAC_KEY_FILE=$TMP/key "$DRV" produce "$URL" good $SHARDS 1000 >/dev/null ||
	fail "tagged producer failed"
CCLD_HMAC_KEY_FILE=$TMP/key.wrong "$DRV" produce "$URL" wrongkey $SHARDS 100 >/dev/null ||
	fail "wrong-key producer failed"
"$DRV" produce "$URL" nokey $SHARDS 50 >/dev/null || fail "untagged producer failed"
"${RCLI[@]}" xadd ccld:rec:0 '*' node good inst 1 seq 1 data forged >/dev/null
"${RCLI[@]}" xadd ccld:rec:1 '*' node good inst 1 seq 2 data forged \
	mac 0123456789abcdef0123456789abcdef >/dev/null
CCLD_HMAC_KEY_FILE=$TMP/key "$DRV" consume "$URL" g c1 $SHARDS "$TMP/tags.out" -i 500 \
	>"$TMP/tags.stats" || fail "consumer failed: $(cat "$TMP/tags.stats")"
grep -q "delivered 1000 corrupt 0 acked 1152 malformed 0 untagged 51 bad_tag 101 " \
	"$TMP/tags.stats" || fail "2: $(cat "$TMP/tags.stats")"
[ "$(awk '{print $4}' "$TMP/tags.out" | sort -u)" = good ] || fail "2: a rejected record was delivered"
echo "2. tags: 1000 tagged records delivered; 51 untagged and 101 wrongly tagged entries dropped and counted"
# reconnects authenticate too: Redis killed for 3 s under a tagging producer
export CCLD_HMAC_KEY_FILE=$TMP/key
"${RCLI[@]}" flushall >/dev/null
"$DRV" outage "$URL" n1 $SHARDS 67108864 "$REDIS" "$TMP/killed" >"$TMP/outage.out" 2>&1 &
pid=$!
WAIT_S=15 wait_for test -e "$TMP/killed" || fail "2: the driver did not kill Redis: $(cat "$TMP/outage.out")"
sleep 3
start_redis
wait $pid || fail "2: producer through the outage: $(cat "$TMP/outage.out")"
after=$(grep '^after:' "$TMP/outage.out")
grep -q "buffered 0 .*reconnects [1-9]" <<<"$after" || fail "2: after the outage: $after"
"$DRV" consume "$URL" g c1 $SHARDS "$TMP/outage.recs" -i 500 >"$TMP/outage.stats" ||
	fail "2: consumer after the outage: $(cat "$TMP/outage.stats")"
grep -Eq "delivered [1-9][0-9]+ corrupt 0 .* untagged 0 bad_tag 0 " "$TMP/outage.stats" ||
	fail "2: after the outage: $(cat "$TMP/outage.stats")"
unset CCLD_HMAC_KEY_FILE
echo "2. reconnect: $after; $(cat "$TMP/outage.stats")"

# ---- 3. and 4. end to end -------------------------------------------------
require_bpf
. "$TOP/tests/e2e/simjob_lib.sh"
unset CCLD_REDIS_AUTH_FILE

# run NAME AGENT-SPEC...: the job (rank 5 skips a TP all-reduce at step 20),
# one agent per spec "node:ranks:authfile:keyfile" (keyfile may be -), the
# analyzer with the password and the key
run() {
	local name=$1 spec node ranks auth key pids i=0
	shift
	rm -rf "$TMP/log" "$TMP/pids" "$TMP/go"
	"${RCLI[@]}" flushall >/dev/null
	start_job --ranks 8 --tp 2 --pp 2 --compute-ms 25 --timeout 120 --steps 100000 \
		--skip 5:20:tp --wait-start "$TMP/go"
	rank_pids 8 >/dev/null
	AGENTS=()
	for spec in "$@"; do
		IFS=: read -r node ranks auth key <<<"$spec"
		pids=$(awk -v r="$ranks" 'BEGIN { split(r, a, "-") } $1 >= a[1] && $1 <= a[2] {print $2}' \
			"$TMP/pids" | paste -sd,)
		CCLD_HMAC_KEY_FILE=$([ "$key" = - ] || echo "$key") "$BIN/ccld-trace" daemon \
			--redis "$URL" --redis-auth-file "$auth" --node "$node" --shards $SHARDS \
			-p "$pids" --stall "$STALL" 2>"$TMP/$name.agent$i" &
		AGENTS+=($!)
		at_exit "kill -9 $!"
		i=$((i + 1))
	done
	"$ANALYZER" --redis "$URL" --redis-auth-file "$TMP/auth" --hmac-key-file "$TMP/key" \
		--json --stall "$STALL" --shards $SHARDS --name an1 --metrics "127.0.0.1:$MPORT" \
		>"$TMP/$name.jsonl" 2>"$TMP/$name.aerr" &
	AN_PID=$!
	at_exit "kill -9 $AN_PID"
	for ((i = 0; i < ${#AGENTS[@]}; i++)); do
		WAIT_S=60 wait_for grep -qs "tracing" "$TMP/$name.agent$i" ||
			fail "$name: agent $i did not start: $(cat "$TMP/$name.agent$i")"
	done
	touch "$TMP/go"
}

# stop NAME: agents, job, then the analyzer once it has read everything
stop() {
	local name=$1 a
	kill -INT "${AGENTS[@]}" 2>/dev/null
	for a in "${AGENTS[@]}"; do
		wait "$a" || fail "$name: an agent exited $?: $(cat "$TMP/$name".agent*)"
	done
	stop_job "$JOB"
	sleep 1.5
	kill -INT "$AN_PID"
	wait "$AN_PID" || fail "$name: ccld-analyzer exited $?: $(cat "$TMP/$name.aerr")"
}

# sent NAME: records all agents of NAME said they sent to Redis
sent() {
	cat "$TMP/$1".agent* | sed -n 's/.* \([0-9]*\) sent to Redis.*/\1/p' |
		awk '{s += $1} END {print s + 0}'
}

MPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
name=signed
run $name "nodeA:0-7:$TMP/auth.agent:$TMP/key"
sleep 1
# forged while the job runs: a record that would name rank 0 if applied is
# beyond a redis-cli user; these are the shapes one can write
"${RCLI[@]}" xadd ccld:rec:0 '*' node nodeA inst 1 seq 1 data forged >/dev/null
"${RCLI[@]}" xadd ccld:rec:2 '*' node nodeB inst 7 seq 9 data forged \
	mac ffffffffffffffffffffffffffffffff >/dev/null
WAIT_S=$((STALL + 40)) wait_for grep -qs '"role":"root"' "$TMP/$name.jsonl" ||
	fail "$name: no verdict: $(cat "$TMP/$name.aerr" "$TMP/$name.agent0")"
sleep 1
stop $name
python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/$name.jsonl" "$TMP/pids" "$TMP/log" \
	--stall "$STALL" --hosts nodeA:0-7 --class H1 --culprits 5 --kind tp ||
	fail "$name: wrong verdict"
grep -q "rejected (1 untagged, 1 bad tag)" "$TMP/$name.aerr" ||
	fail "$name: forged entries not counted: $(cat "$TMP/$name.aerr")"
[ "$(grep -c "dropped a record with" "$TMP/$name.aerr")" = 1 ] ||
	fail "$name: want one warning: $(cat "$TMP/$name.aerr")"
applied=$(sed -n 's/.*: \([0-9]*\) records applied.*/\1/p' "$TMP/$name.aerr")
[ "$applied" = "$(sent $name)" ] ||
	fail "$name: the agent sent $(sent $name) records, the analyzer applied $applied"
echo "3. signed: H1 names rank 5; $applied records applied; 2 forged entries counted, one warning"

name=forger
run $name "nodeA:0-3:$TMP/auth.agent:$TMP/key.wrong" "nodeB:4-7:$TMP/auth.agent:-"
# the signed run's verdict came within STALL + 1 s of the start (the skip
# at step 20, about 0.6 s in): had these records been applied, one would
# have come by now
sleep $((STALL + 4))
curl -sf "http://127.0.0.1:$MPORT/metrics" >"$TMP/$name.prom" || fail "$name: no /metrics"
python3 "$TOP/tests/fleet/prom_parse.py" "$TMP/$name.prom" >"$TMP/$name.samples" ||
	fail "$name: /metrics does not parse"
for r in untagged bad_tag; do
	grep -Eq "^ccld_analyzer_rejected_total \{\"reason\": \"$r\"\} [1-9]" "$TMP/$name.samples" ||
		fail "$name: /metrics: $(grep rejected "$TMP/$name.samples")"
done
stop $name
grep -q '"type"' "$TMP/$name.jsonl" && fail "$name: a verdict from unkeyed records: $(head -2 "$TMP/$name.jsonl")"
total=$(sent $name)
[ "$total" -gt 100 ] || fail "$name: the agents sent only $total records"
grep -Eq ": 0 records applied, .* $total rejected \([1-9][0-9]* untagged, [1-9][0-9]* bad tag\)" \
	"$TMP/$name.aerr" || fail "$name: the agents sent $total records: $(cat "$TMP/$name.aerr")"
[ "$(grep -c "dropped a record with" "$TMP/$name.aerr")" = 1 ] ||
	fail "$name: want one warning: $(cat "$TMP/$name.aerr")"
echo "4. no key, wrong key: all $total records rejected, no verdict"
echo "ok: authenticated transport"
