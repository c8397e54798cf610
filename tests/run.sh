#!/usr/bin/env bash
# Runs every test of the project and ends with "N passed, N failed, N skipped".
# A test is an executable: build/tests/bin/test_* (compiled, ASan/UBSan) or
# tests/*/test_*.sh (scripts).  Exit 0 = pass, 77 = skip, anything else = fail.
# CCLD_REQUIRE_BPF=1 (set by .ci/run) makes tests/lib.sh turn a skipped BPF
# test into a failure.  Usage: tests/run.sh [PATTERN]  (substring filter)
#
# Two phases:
#  1. tests that time nothing and load no BPF (unit tests, fuzzers, the
#     manifests, and the scripts with a line "# run.sh: parallel": the
#     stand-in's own and the fleet transport's) run CCLD_TEST_JOBS at a
#     time (default: one per CPU);
#  2. the others, one at a time: they trace jobs and time them.
# Isolation: every process a test starts inherits CCLD_TEST_RUN; a test
# that leaves one behind, or (phase 2) leaves a ccld BPF program, a uprobe
# or a ccld/stand-in process, fails, and what it left is killed before the
# next test starts (tests/leftovers.py).
# At the end: the 10 slowest tests, the failure lines of each failed test
# (FAIL, MISS, verdict:, capture:), and a summary with the commit in
# build/tests/last-run.txt.
set -u
cd "$(dirname "$0")/.."
TOP=$PWD
filter=${1:-}
logdir=build/tests/logs
mkdir -p "$logdir"
rm -f "$logdir"/*.log
results=$(mktemp /tmp/ccld-run.XXXXXX)
trap 'rm -f "$results"' EXIT
jobs_n=${CCLD_TEST_JOBS:-$(nproc)}
run_start=$(date +%s)

# phase 1's longest first (the scripts, then the fuzzers, then the unit
# tests): none is left running alone at the end
parallel=() serial=()
for t in tests/*/test_*.sh build/tests/bin/test_*; do
	[ -x "$t" ] || continue
	case "$t" in *.d|*.o) continue ;; esac
	[ -n "$filter" ] && [[ "$t" != *"$filter"* ]] && continue
	case "$t" in
	build/tests/bin/* | tests/fuzz/* | tests/deploy/*) parallel+=("$t") ;;
	*)
		# a script that loads no BPF and whose time bounds are loose
		# enough for a shared CPU says so in a line of its own
		if grep -q '^# run.sh: parallel$' "$t"; then
			parallel+=("$t")
		else
			serial+=("$t")
		fi ;;
	esac
done

leftovers() { python3 "$TOP/tests/leftovers.py" "$@"; }
LEFT_ALL=(--exe-under "$TOP/build/bin" --exe-under "$TOP/build/sim" --exe-under "$TOP/build/asan" --bpf)

# run_one TEST [CHECKS...]: runs TEST with its own CCLD_TEST_RUN tag, then
# looks for what it left (tagged processes, and CHECKS); appends
# "rc secs name" to the results
run_one() {
	local t=$1 name rc start secs tag left
	shift
	name=$(basename "$t")
	tag="$name.$$.$RANDOM"
	start=$(date +%s)
	CCLD_TEST_RUN=$tag timeout "${CCLD_TEST_TIMEOUT:-600}" "$t" >"$logdir/$name.log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	left=$(leftovers --tag "$tag" "$@" --wait 10 --kill)
	LEFT_FOUND=0
	if [ -n "$left" ]; then
		LEFT_FOUND=1
		printf 'FAIL: the test left behind (now killed):\n%s\n' "$left" >>"$logdir/$name.log"
		[ "$rc" = 0 ] || [ "$rc" = 77 ] && rc=98
	fi
	echo "$rc $secs $name" >>"$results"
}

report() {
	local rc=$1 secs=$2 name=$3
	case $rc in
	0) printf 'PASS %-40s %4ss\n' "$name" "$secs"
	   grep '^--- quarantined' "$logdir/$name.log" | sed 's/^--- /    | /' ;;
	77) printf 'SKIP %-40s %4ss  %s\n' "$name" "$secs" "$(tail -n 1 "$logdir/$name.log")" ;;
	*) printf 'FAIL %-40s %4ss  (exit %d)\n' "$name" "$secs" "$rc"
	   sed 's/^/    | /' "$logdir/$name.log" | tail -n "${CCLD_FAIL_LINES:-150}" ;;
	esac
}

# phase 1: a pool of jobs_n
running=0
for t in "${parallel[@]}"; do
	if [ "$running" -ge "$jobs_n" ]; then
		wait -n
		running=$((running - 1))
	fi
	run_one "$t" &
	running=$((running + 1))
done
wait
sort -k3 "$results" | while read -r rc secs name; do report "$rc" "$secs" "$name"; done

# phase 2: one at a time, each starting on a clean machine
nparallel=$(wc -l <"$results")
# (each test's own check after it, with the same checks, found the machine
# clean for the next, or killed what it found: checked again before the next)
LEFT_FOUND=1
for t in "${serial[@]}"; do
	if [ "$LEFT_FOUND" = 1 ]; then
		left=$(leftovers "${LEFT_ALL[@]}" --wait 10 --kill)
		[ -n "$left" ] && printf 'note: killed what was running before %s:\n%s\n' "$(basename "$t")" "$left"
	fi
	run_one "$t" "${LEFT_ALL[@]}"
	report $(tail -n 1 "$results")
done

pass=$(awk '$1 == 0' "$results" | wc -l)
skip=$(awk '$1 == 77' "$results" | wc -l)
fail=$(awk '$1 != 0 && $1 != 77' "$results" | wc -l)
failed=$(awk '$1 != 0 && $1 != 77 { print $3 }' "$results" | sort | paste -sd' ')
total=$(($(date +%s) - run_start))
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit+changes"
slowest=$(sort -k2 -n -r "$results" | head -n 10 | awk '{ printf "  %5ss %s\n", $2, $3 }')
printf 'slowest tests:\n%s\nwall time: %ss (%s tests %s at a time, then %s one at a time)\n' \
	"$slowest" "$total" "$nparallel" "$jobs_n" "${#serial[@]}"
summary="$pass passed, $fail failed, $skip skipped"
{
	echo "commit $commit, $(date -u +%Y-%m-%dT%H:%M:%SZ), ${total}s${filter:+, filter '$filter'}"
	sort -k3 "$results" | awk '{ printf "%-4s %5ss %s\n", ($1 == 0 ? "PASS" : ($1 == 77 ? "SKIP" : "FAIL")), $2, $3 }'
	printf 'slowest tests:\n%s\n' "$slowest"
	[ -n "$failed" ] && echo "failed: $failed"
	echo "$summary"
} >build/tests/last-run.txt
# why each failed, again at the very end: a CI log shown by its head and
# tail alone still says which scenario missed and how
for name in $failed; do
	echo "why $name failed:"
	grep -E '^(FAIL|MISS|verdict:|capture:)' "$logdir/$name.log" | head -n 12 |
		cut -c1-400 | sed 's/^/    > /'
done
[ -n "$failed" ] && echo "failed: $failed"
echo "$summary"
[ "$fail" -eq 0 ]
