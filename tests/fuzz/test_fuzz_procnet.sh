#!/usr/bin/env bash
# Fuzzes the /proc/net/tcp{,6} line parser (CCLD_FUZZ_SECONDS, fuzz_lib.sh's default,
# here a third of it: the parser is small) from real kernel lines.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
mkdir -p "$TMP/corpus"
printf '   3: 0300E90A:AEFD 0100E90A:C59A 01 00000000:00000000 00:00000000 00000000     0        0 81234 1 0000000000000000 20 4 30 10 -1\n' >"$TMP/corpus/v4"
printf '\x31 1: 0000000000000000FFFF00000200E90A:1F90 0000000000000000FFFF00000100E90A:D431 01 00000000:00000000 00:00000000 00000000     0        0 777 1 0\n' >"$TMP/corpus/v6"
run_fuzzer fuzz_procnet $(( $FUZZ_SECONDS / 3 + 1 )) 512 "$TMP/corpus"
