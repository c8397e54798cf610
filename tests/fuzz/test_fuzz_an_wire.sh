#!/usr/bin/env bash
# Fuzzes the fleet analyzer's record decoder and the analyzer behind it for
# a bounded time (CCLD_FUZZ_SECONDS, default 30) from seeds written by
# tests/fuzz/gen_wire_corpus.py.  A crash, leak, sanitizer report, hang, or
# a record that decodes but does not encode back to its bytes fails.
. "$(dirname "$0")/../lib.sh"

FUZZER=$TOP/build/tests/fuzz/fuzz_an_wire
[ -x "$FUZZER" ] || skip "$FUZZER not built (needs clang's libFuzzer runtime)"
command -v python3 >/dev/null || skip "python3 needed to write the seed corpus"

corpus=$TMP/corpus
mkdir -p "$corpus"
python3 "$TOP/tests/fuzz/gen_wire_corpus.py" "$corpus" || fail "gen_wire_corpus.py failed"
# the seeds decode: a fuzzer run over them alone keeps every record
"$FUZZER" -runs=0 "$corpus" >"$TMP/seeds.log" 2>&1 || fail "seeds: $(tail -5 "$TMP/seeds.log")"
"$FUZZER" -max_total_time="${CCLD_FUZZ_SECONDS:-30}" -timeout=10 -rss_limit_mb=2048 \
	-max_len=16384 -print_final_stats=1 -artifact_prefix="$TMP/" "$corpus" \
	>"$TMP/fuzz.log" 2>&1
rc=$?
tail -n 8 "$TMP/fuzz.log"
if [ $rc -ne 0 ]; then
	for a in "$TMP"/crash-* "$TMP"/leak-* "$TMP"/timeout-* "$TMP"/oom-*; do
		[ -e "$a" ] || continue
		mkdir -p "$TOP/build/tests/fuzz/artifacts"
		cp "$a" "$TOP/build/tests/fuzz/artifacts/"
		echo "reproducer: build/tests/fuzz/artifacts/$(basename "$a")"
	done
	fail "fuzz_an_wire exited $rc"
fi
grep -q 'Done [0-9]* runs' "$TMP/fuzz.log" || fail "fuzzer did not finish its runs"
