#!/usr/bin/env bash
# Fuzzes the /proc/net/tcp{,6} line parser (CCLD_FUZZ_SECONDS, default 30,
# here a third of it: the parser is small) from real kernel lines.
. "$(dirname "$0")/../lib.sh"
FUZZER=$TOP/build/tests/fuzz/fuzz_procnet
[ -x "$FUZZER" ] || skip "$FUZZER not built (needs clang's libFuzzer runtime)"
mkdir -p "$TMP/corpus"
printf '   3: 0300E90A:AEFD 0100E90A:C59A 01 00000000:00000000 00:00000000 00000000     0        0 81234 1 0000000000000000 20 4 30 10 -1\n' >"$TMP/corpus/v4"
printf '\x31 1: 0000000000000000FFFF00000200E90A:1F90 0000000000000000FFFF00000100E90A:D431 01 00000000:00000000 00:00000000 00000000     0        0 777 1 0\n' >"$TMP/corpus/v6"
"$FUZZER" -max_total_time=$(( ${CCLD_FUZZ_SECONDS:-30} / 3 + 1 )) -timeout=10 -max_len=512 \
	-print_final_stats=1 -artifact_prefix="$TMP/" "$TMP/corpus" >"$TMP/fuzz.log" 2>&1 ||
	{ tail -20 "$TMP/fuzz.log"; fail "fuzz_procnet failed"; }
grep -q 'Done [0-9]* runs' "$TMP/fuzz.log" || fail "fuzzer did not finish its runs"
tail -n 3 "$TMP/fuzz.log"
