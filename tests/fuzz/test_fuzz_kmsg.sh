#!/usr/bin/env bash
# Fuzzes the kernel log's Xid line parser (CCLD_FUZZ_SECONDS, default 30,
# here a third of it: the parser is small) from real driver lines.
. "$(dirname "$0")/../lib.sh"
FUZZER=$TOP/build/tests/fuzz/fuzz_kmsg
[ -x "$FUZZER" ] || skip "$FUZZER not built (needs clang's libFuzzer runtime)"
mkdir -p "$TMP/corpus"
printf 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.' >"$TMP/corpus/79"
printf '[ 5.1] NVRM: Xid (PCI:0001:af:1f): 48, An uncorrectable double bit error' >"$TMP/corpus/48"
printf 'NVRM: Xid (PCI:0000:1a:00): 13, Graphics Exception: ESR 0x404600=0x80000002' >"$TMP/corpus/13"
"$FUZZER" -max_total_time=$(( ${CCLD_FUZZ_SECONDS:-30} / 3 + 1 )) -timeout=10 -max_len=512 \
	-print_final_stats=1 -artifact_prefix="$TMP/" "$TMP/corpus" >"$TMP/fuzz.log" 2>&1 ||
	{ tail -20 "$TMP/fuzz.log"; fail "fuzz_kmsg failed"; }
grep -q 'Done [0-9]* runs' "$TMP/fuzz.log" || fail "fuzzer did not finish its runs"
tail -n 3 "$TMP/fuzz.log"
