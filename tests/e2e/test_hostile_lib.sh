#!/usr/bin/env bash
# A malicious or broken library never crashes ccld: `probe-check` on
# hostile libnccl.so.2 files (truncated, bogus section and program headers,
# symbols out of bounds, garbage DWARF, the fuzzers' regression inputs;
# tests/e2e/craft_elf.py) exits 0 or 1 with one line, under ASan+UBSan
# when build/asan/ccld-trace is built.  No BPF needed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
command -v python3 >/dev/null || skip "python3 needed to craft the libraries"
command -v cc >/dev/null || skip "cc needed to compile the base library"
hostile_libs "$TMP/libs"
n=0
for lib in "$TMP"/libs/*/libnccl.so.2; do
	v=$(basename "$(dirname "$lib")")
	"$HOSTILE_TRACE" probe-check "$lib" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	check_exit "probe-check $v" $rc "$TMP/err" 1
	"$HOSTILE_TRACE" probe-check --json "$lib" >"$TMP/out" 2>"$TMP/err"
	check_exit "probe-check --json $v" $? "$TMP/err" 1
	echo "$v: probe-check exit $rc $(cat "$TMP/err")"
	n=$((n + 1))
done
[ $n -ge 10 ] || fail "only $n hostile libraries"
# the base library is one ccld traces: the variants are hostile, not alien
"$HOSTILE_TRACE" probe-check "$TMP/libs/base/libnccl.so.2" >"$TMP/out" 2>&1 ||
	fail "base library: $(tail -3 "$TMP/out")"
grep -q '^layout      dwarf' "$TMP/out" || fail "base library: no DWARF layout"
echo "$n libraries, $HOSTILE_TRACE"
