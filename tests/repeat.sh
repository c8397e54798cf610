#!/usr/bin/env bash
# Runs tests or single scenarios of them again and again, and prints the
# pass rate of each.
#
#   tests/repeat.sh [-n N] [--noise] [--table FILE] TEST[:SCENARIO]...
#
# TEST is a test's name (test_slow_scenarios, with or without .sh) or path;
# TEST:SCENARIO one scenario of it (CCLD_SCENARIO, tests/lib.sh); TEST
# alone each of its scenarios in turn (a test without scenarios: the test).
# Each run starts on a clean machine (tests/leftovers.py, as tests/run.sh)
# and gets CCLD_TEST_TIMEOUT (600 s).  --noise runs them under a bounded
# CPU load on every core (tests/noise.py).  The log of a failed run is kept
# in build/tests/repeat/.  --table FILE appends one markdown row per
# scenario: | test:scenario | plain or noise | passed/runs | commit |.
# Exit 0 when every run passed.
set -u
cd "$(dirname "$0")/.."
TOP=$PWD
n=5 noise=0 table=
while [ $# -gt 0 ]; do
	case $1 in
	-n) n=$2; shift 2 ;;
	--noise) noise=1; shift ;;
	--table) table=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) echo "repeat.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: tests/repeat.sh [-n N] [--noise] [--table FILE] TEST[:SCENARIO]..." >&2; exit 2; }
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "repeat.sh: -n wants a positive count, not '$n'" >&2; exit 2; }

# test_path NAME: the test's executable
test_path() {
	local t=${1%.sh} p
	for p in "$t" "$t.sh" build/tests/bin/"$t" tests/*/"$t".sh; do
		[ -x "$p" ] && [ -f "$p" ] && { echo "$p"; return 0; }
	done
	echo "repeat.sh: no test named '$1'" >&2
	return 1
}
LEFT_ALL=(--exe-under "$TOP/build/bin" --exe-under "$TOP/build/sim" --exe-under "$TOP/build/asan" --bpf)
outdir=build/tests/repeat
mkdir -p "$outdir"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit+changes"
mode=$([ $noise = 1 ] && echo noise || echo plain)

# the units: "PATH SCENARIO" ('-' for the whole test)
units=()
for arg in "$@"; do
	path=$(test_path "${arg%%:*}") || exit 2
	if [[ "$arg" == *:* ]]; then
		units+=("$path ${arg#*:}")
		continue
	fi
	list=$(CCLD_SCENARIO=list timeout 120 "$path" 2>/dev/null | sed -n 's/^scenario: //p')
	if [ -z "$list" ]; then
		units+=("$path -")
	else
		for s in $list; do units+=("$path $s"); done
	fi
done

noise_pid=
stop_noise() { [ -n "$noise_pid" ] && kill "$noise_pid" 2>/dev/null && wait "$noise_pid" 2>/dev/null; noise_pid=; }
trap stop_noise EXIT
all_ok=0
declare -a rows
for u in "${units[@]}"; do
	read -r path scen <<<"$u"
	name=$(basename "${path%.sh}")
	label=$name$([ "$scen" != - ] && echo ":$scen")
	pass=0 times=()
	for ((i = 1; i <= n; i++)); do
		left=$(python3 tests/leftovers.py "${LEFT_ALL[@]}" --wait 10 --kill)
		[ -n "$left" ] && printf 'note: killed what was running before %s:\n%s\n' "$label" "$left"
		[ $noise = 1 ] && { python3 tests/noise.py 900 & noise_pid=$!; }
		# a log per run, never one of an earlier repeat.sh's (kept when it failed)
		log=$outdir/${label//:/-}.$mode.$(date +%s).$i.log
		start=$(date +%s)
		if [ "$scen" = - ]; then
			timeout "${CCLD_TEST_TIMEOUT:-600}" "$path" >"$log" 2>&1
		else
			CCLD_SCENARIO=$scen timeout "${CCLD_TEST_TIMEOUT:-600}" "$path" >"$log" 2>&1
		fi
		rc=$?
		stop_noise
		secs=$(($(date +%s) - start))
		if [ $rc = 0 ] && ! grep -q '^--- scenario' "$log" && [ "$scen" != - ]; then
			rc=99 # the scenario did not run: a wrong name
			echo "FAIL: no scenario '$scen' ran" >>"$log"
		fi
		if [ $rc = 0 ]; then
			pass=$((pass + 1))
			rm -f "$log"
			times+=("${secs}s")
		else
			times+=("FAIL(${secs}s)")
			all_ok=1
		fi
	done
	line=$(printf '%-50s %-5s %d/%d  %s' "$label" "$mode" "$pass" "$n" "${times[*]}")
	echo "$line"
	rows+=("| $label | $mode | $pass/$n | $commit |")
	[ $pass = "$n" ] || echo "    failed runs' logs: $outdir/${label//:/-}.$mode.*.log"
done
if [ -n "$table" ]; then
	printf '%s\n' "${rows[@]}" >>"$table"
fi
exit $all_ok
