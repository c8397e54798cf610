#!/usr/bin/env bash
# Fuzzes the kernel log's Xid line parser (CCLD_FUZZ_SECONDS, fuzz_lib.sh's default,
# here a third of it: the parser is small) from real driver lines.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
mkdir -p "$TMP/corpus"
printf 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.' >"$TMP/corpus/79"
printf '[ 5.1] NVRM: Xid (PCI:0001:af:1f): 48, An uncorrectable double bit error' >"$TMP/corpus/48"
printf 'NVRM: Xid (PCI:0000:1a:00): 13, Graphics Exception: ESR 0x404600=0x80000002' >"$TMP/corpus/13"
run_fuzzer fuzz_kmsg $(( $FUZZ_SECONDS / 3 + 1 )) 512 "$TMP/corpus"
