#!/usr/bin/env bash
# Runs every test of the project and ends with "N passed, N failed, N skipped".
# A test is an executable: build/tests/bin/test_* (compiled, ASan/UBSan) or
# tests/*/test_*.sh (scripts).  Exit 0 = pass, 77 = skip, anything else = fail.
# CCLD_REQUIRE_BPF=1 (set by .ci/run) makes tests/lib.sh turn a skipped BPF
# test into a failure.  Usage: tests/run.sh [PATTERN]  (substring filter)
set -u
cd "$(dirname "$0")/.."
filter=${1:-}
logdir=build/tests/logs
mkdir -p "$logdir"
pass=0 fail=0 skip=0 failed=()
tests=()
for t in build/tests/bin/test_* tests/*/test_*.sh; do
	[ -x "$t" ] || continue
	case "$t" in *.d|*.o) continue ;; esac
	[ -n "$filter" ] && [[ "$t" != *"$filter"* ]] && continue
	tests+=("$t")
done
for t in "${tests[@]}"; do
	name=$(basename "$t")
	start=$(date +%s)
	timeout "${CCLD_TEST_TIMEOUT:-600}" "$t" >"$logdir/$name.log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) pass=$((pass + 1)); printf 'PASS %-40s %4ss\n' "$name" "$secs" ;;
	77) skip=$((skip + 1)); printf 'SKIP %-40s %4ss  %s\n' "$name" "$secs" "$(tail -n 1 "$logdir/$name.log")" ;;
	*) fail=$((fail + 1)); failed+=("$name")
	   printf 'FAIL %-40s %4ss  (exit %d)\n' "$name" "$secs" "$rc"
	   sed 's/^/    | /' "$logdir/$name.log" | tail -n 40 ;;
	esac
done
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
