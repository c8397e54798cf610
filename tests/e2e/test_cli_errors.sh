#!/usr/bin/env bash
# Bad input and environment: each gives one clear line on stderr and the
# documented exit status (0 normal, 1 error, 2 bad usage).
. "$(dirname "$0")/../lib.sh"
T=$BIN/ccld-trace
[ -x "$T" ] || fail "no $T: run make"

# expect STATUS PATTERN CMD...: exit status and a one-line stderr matching PATTERN
expect() {
	local want=$1 pattern=$2 rc lines
	shift 2
	"$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	lines=$(wc -l <"$TMP/err")
	[ "$rc" = "$want" ] || fail "'$*': exit $rc, expected $want; stderr: $(cat "$TMP/err")"
	grep -qE "$pattern" "$TMP/err" || fail "'$*': stderr lacks /$pattern/: $(cat "$TMP/err")"
	case "$want" in
	1) [ "$lines" = 1 ] || fail "'$*': $lines stderr lines, expected one: $(cat "$TMP/err")" ;;
	esac
}

expect 2 "choose processes" "$T"
expect 2 "bad PID list" "$T" -p abc
expect 2 "bad PID list" "$T" -p 12,-3
expect 2 "exclude each other" "$T" -p 1 --all
expect 2 "bad number of seconds" "$T" --all --stall x
expect 2 "unknown command" "$T" frobnicate
expect 2 "record needs -o" "$T" record --all
expect 2 "stop-new goes with --all" "$T" -p 1 --stop-new
expect 2 "stop-timeout goes with --stop-new" "$T" --all --stop-timeout 1
expect 2 "bad --stop-timeout" "$T" --all --stop-new --stop-timeout 0
expect 2 "bad --ring-size" "$T" --all --ring-size 5000
expect 2 "bad --ring-size" "$T" --all --ring-size 2K
expect 2 "bad --ring-size" "$T" --all --ring-size 2G
expect 2 "replay takes files" "$T" replay x.ccld --ring-size 4K
expect 2 "bad --mem-max" "$T" --all --mem-max 1M
expect 2 "bad --mem-max" "$T" --all --mem-max 2048G
expect 2 "bad --mem-max" "$T" --all --mem-max 64X
expect 2 "stop-new is for new processes" "$T" daemon --redis redis://127.0.0.1:1 -p 1 --stop-new
expect 2 "replay needs at least one FILE" "$T" replay
expect 2 "unrecognized option|invalid option" "$T" --bogus
"$T" --help | grep -q "^Usage: ccld-trace" || fail "--help prints no usage"

# replay: missing, foreign, empty files
expect 1 "cannot open|No such file" "$T" replay "$TMP/none.ccld"
expect 1 "not a ccld capture" "$T" replay /etc/passwd
: >"$TMP/empty.ccld"
expect 1 "not a ccld capture|empty|truncated" "$T" replay "$TMP/empty.ccld"

# probe-check on something that is not a library
expect 1 "cannot open|not an ELF" "$T" probe-check /etc/passwd

if [ "$(id -u)" = 0 ]; then
	# no such process; a process without NCCL
	sleep 30 &
	sl=$!
	at_exit "kill $sl"
	expect 1 "no such process: 999999" "$T" -p 999999
	expect 1 "no NCCL in process $sl \(sleep\)" "$T" -p "$sl"
	# a zombie (its parent, a sleep, never reaps it), alone and with a
	# gone pid; a gone pid beside a live one is said exited, the live
	# one is then judged (here: it has no NCCL)
	bash -c 'sleep 0.1 & exec sleep 30' &
	zp=$!
	at_exit "kill $zp"
	WAIT_S=5 wait_for bash -c "[ \"\$(awk '{print \$3}' /proc/\$(pgrep -P $zp)/stat)\" = Z ]" ||
		fail "no zombie child of $zp"
	z=$(pgrep -P $zp)
	expect 1 "process $z has exited \(a zombie" "$T" -p "$z"
	expect 1 "none of the 2 given processes is alive \(1 gone, 1 zombies\)" "$T" -p "$z,999999"
	"$T" -p "999999,$sl" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ "$rc" = 1 ] && grep -q "process 999999 has exited: not traced" "$TMP/err" &&
		grep -q "no NCCL in process $sl" "$TMP/err" ||
		fail "-p 999999,$sl: exit $rc: $(cat "$TMP/err")"
	# not root
	if command -v setpriv >/dev/null; then
		expect 1 "not root" setpriv --reuid=65534 --regid=65534 --clear-groups "$T" -p "$sl"
	fi
else
	expect 1 "not root" "$T" -p $$
fi
echo "ok: every bad input gave one clear line and the documented status"
