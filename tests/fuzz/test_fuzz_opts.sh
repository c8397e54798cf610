#!/usr/bin/env bash
# Fuzzes the option value parsers of ccld-trace and ccld-analyzer
# (common/optparse.c: durations, counts, PID lists, I/N, sizes) for a sixth of
# CCLD_FUZZ_SECONDS (fuzz_lib.sh's default): they are tiny.  Seeds: values as the
# docs (docs/cli.md) spell them and the awkward ones strtod and strtoul
# take (exponents, inf, nan, hex, signs, blanks).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
c=$TMP/corpus
mkdir -p "$c"
i=0
# the first byte picks the parser: 0 SEC (0 allowed), 1 SEC, 2 N, 3 PIDS, 4 I/N,
# 5 BYTES
for v in 0:30 0:0.5 0:1e300 0:inf 0:nan 0:0x1p4 0:-0 1:2 1:1e-9 1:' 5' 2:8 2:4096 2:-1 2:+3 \
	 3:4242,4243 3:1,,2, 3:-5 3:99999999999 4:0/2 4:1/1 4:3/-1 4:' 1/2' \
	 5:4K 5:8M 5:1G 5:4096 5:3K 5:2G 5:-4K 5:18446744073709551616; do
	printf "\\$(printf %03o "${v%%:*}")%s" "${v#*:}" >"$c/seed-$i"
	i=$((i + 1))
done
run_fuzzer fuzz_opts $(( $FUZZ_SECONDS / 6 + 1 )) 64 "$c"
