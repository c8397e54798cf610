# Shared helpers for the shell tests; source it: . "$(dirname "$0")/../lib.sh"
# Sets TOP (repository root), BIN, SIMLIB; offers skip/fail/require_* helpers.
#
# CCLD_ASAN=1: the script runs ccld-trace and ccld-analyzer built with
# ASan+UBSan (build/asan/): BIN is a folder of links to them and to the
# rest of build/bin.  ASan's reports, leaks at exit included, go to files
# (log_path), not to the programs' stderr, which the tests parse; UBSan's
# go to stderr (next to ASan it ignores log_path), where the end of the
# test looks for them in $TMP.  Any report makes the test fail and is
# printed.  ASAN_OPTIONS / UBSAN_OPTIONS given are kept after these.
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$TOP/build/bin
SIMLIB=$TOP/build/sim/lib
TMP=$(mktemp -d /tmp/ccld-test.XXXXXX)
_cleanup_fns=()
at_exit() { _cleanup_fns+=("$*"); }
# the sanitizer reports of a CCLD_ASAN=1 run: printed, status 0 if any
_san_reports() {
	local f found=1
	for f in "$TMP"/san/* $(grep -rIl "runtime error:" "$TMP" 2>/dev/null); do
		[ -s "$f" ] || continue
		echo "FAIL: sanitizer report in ${f#"$TMP"/}:" >&2
		grep -A 30 "runtime error:" "$f" >&2 || cat "$f" >&2
		found=0
	done
	return $found
}
_run_cleanup() {
	local rc=$? f
	for f in "${_cleanup_fns[@]}"; do eval "$f" >/dev/null 2>&1; done
	# killed processes may leave their reports a moment later
	if [ "${CCLD_ASAN:-0}" = 1 ]; then
		sleep 0.2
		_san_reports && rc=1
	fi
	if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
		_diagnose >&2
	elif [ -z "${CCLD_KEEP_TMP:-}" ]; then
		rm -rf "$TMP"
	fi
	exit $rc
}
# _diagnose: a failed test keeps its files and prints what the CI log needs
# to find the cause: the failing scenario's verdicts, the analyzer's debug
# lines (its capture replayed with CCLD_AN_DEBUG=1) on the comms the check
# expected (the check scripts write them to $TMP/expected-comms), and where
# its captures are
_diagnose() {
	local cap comms
	echo "--- diagnosis${SCENARIO:+ of scenario $SCENARIO}; files kept in $TMP"
	[ -n "${SCENARIO:-}" ] || return 0
	python3 "$TOP/tests/e2e/verdict_lines.py" "$TMP/$SCENARIO".jsonl 2>/dev/null |
		tail -n 12 | sed 's/^/verdict: /'
	# the comms the check expected, and every root's
	comms=$( (cat "$TMP/expected-comms" 2>/dev/null
		  python3 "$TOP/tests/e2e/verdict_lines.py" --root-comms \
			"$TMP/$SCENARIO".jsonl 2>/dev/null) | sort -u)
	# a fleet analyzer's own debug lines (no capture to replay): the
	# evaluation that first made one of those comms a root
	if [ -s "$TMP/$SCENARIO.adebug" ] && [ -n "$comms" ]; then
		echo "the analyzer's picture (live) when one of" $comms "first stood as a root:"
		python3 "$TOP/tests/e2e/verdict_lines.py" --debug-at "${STALL:-3}" \
			"$TMP/$SCENARIO.adebug" $comms
	fi
	for cap in "$TMP/$SCENARIO"*.ccld; do
		[ -s "$cap" ] || continue
		echo "capture: $cap"
		[ -n "$comms" ] || continue
		echo "analyzer debug lines on the expected comm(s) $comms (replay):"
		CCLD_AN_DEBUG=1 timeout 60 "$BIN/ccld-trace" replay "$cap" --json \
			${SCENARIO_REPLAY_ARGS:-} 2>&1 >/dev/null |
			grep -F "$(printf '%s\n' $comms)" |
			grep -vE ' dur_ms |judged under step hooks|not judged|gpu\?' |
			tail -n 40 | cut -c1-300
	done
}

# begin_scenario NAME: the start of one scenario of a script; its caller
# returns when it returns 1: CCLD_SCENARIO (a comma-separated list) does not
# name it, or is "list" (the name is printed: tests/repeat.sh), or it is
# quarantined (tests/quarantine.txt) and CCLD_SCENARIO does not name it.  Otherwise
# it waits (10 s at most) until what ran before has gone: no ccld or
# stand-in process and no ccld BPF program or probe left, and fails if
# something stays.
begin_scenario() {
	local q
	case ${CCLD_SCENARIO:-} in
	"")
		q=$(awk -v k="${CCLD_TEST_NAME:-$(basename "$0" .sh)}:$1" '$1 == k' "$TOP/tests/quarantine.txt")
		if [ -n "$q" ]; then
			echo "--- quarantined, not run (tests/quarantine.txt): $q"
			return 1
		fi ;;
	list) echo "scenario: $1"; return 1 ;;
	*) [[ ",$CCLD_SCENARIO," == *",$1,"* ]] || return 1 ;;
	esac
	local left
	left=$(python3 "$TOP/tests/leftovers.py" --exe-under "$TOP/build/bin" \
		--exe-under "$TOP/build/sim" --exe-under "$TOP/build/asan" --bpf --wait 10) ||
		fail "$1: what ran before it is still there:"$'\n'"$left"
	SCENARIO=$1
	rm -f "$TMP/expected-comms"
	echo "--- scenario $1 (at ${SECONDS}s)"
}
# check_scenario NAME: for a script that runs one job and checks several
# things of it: whether the check NAME runs (0, "--- scenario NAME"), or is
# quarantined and CCLD_SCENARIO does not name it (1); the job and the other
# checks run either way
check_scenario() {
	local q
	if [ -z "${CCLD_SCENARIO:-}" ]; then
		q=$(awk -v k="${CCLD_TEST_NAME:-$(basename "$0" .sh)}:$1" '$1 == k' "$TOP/tests/quarantine.txt")
		if [ -n "$q" ]; then
			echo "--- quarantined, not run (tests/quarantine.txt): $q"
			return 1
		fi
	fi
	echo "--- scenario $1 (at ${SECONDS}s)"
}
trap _run_cleanup EXIT
if [ "${CCLD_ASAN:-0}" = 1 ]; then
	mkdir -p "$TMP/bin" "$TMP/san"
	for _f in "$TOP"/build/bin/*; do
		[ -e "$_f" ] && ln -s "$_f" "$TMP/bin/${_f##*/}"
	done
	for _f in ccld-trace ccld-analyzer; do
		[ -x "$TOP/build/asan/$_f" ] || { echo "FAIL: no build/asan/$_f: run make" >&2; exit 1; }
		ln -sf "$TOP/build/asan/$_f" "$TMP/bin/$_f"
	done
	BIN=$TMP/bin
	export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:log_path=$TMP/san/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
	export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
fi

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
# A BPF test that cannot run is a failure when CCLD_REQUIRE_BPF=1 (CI).
skip_bpf() {
	if [ "${CCLD_REQUIRE_BPF:-0}" = 1 ]; then
		fail "BPF test cannot run and CCLD_REQUIRE_BPF=1: $*"
	fi
	skip "$*"
}
require_bpf() {
	[ "$(id -u)" = 0 ] || skip_bpf "needs root"
	[ -r /sys/kernel/btf/vmlinux ] || skip_bpf "kernel has no BTF"
}
# The real libnccl.so.2: skipped where absent, a failure where it must be
# there (CCLD_REQUIRE_REAL_NCCL=1: CI, whose machines have it).
require_real_nccl() {
	REAL_NCCL=${CCLD_REAL_NCCL:-/usr/local/cuda/lib/libnccl.so.2}
	[ -r "$REAL_NCCL" ] && return 0
	[ "${CCLD_REQUIRE_REAL_NCCL:-0}" = 1 ] &&
		fail "no real libnccl.so.2 at $REAL_NCCL and CCLD_REQUIRE_REAL_NCCL=1"
	skip "no real libnccl.so.2 at $REAL_NCCL"
}
# wait_for CMD... : retry CMD for up to $WAIT_S seconds (default 10)
wait_for() {
	local i
	for ((i = 0; i < ${WAIT_S:-10} * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
