#!/usr/bin/env bash
# Fuzzes the capture reader for a bounded time (CCLD_FUZZ_SECONDS, default
# 30) from a seed corpus: the committed seeds plus files that
# tests/fuzz/gen_corpus.py writes from the format spec.  Any crash, leak,
# sanitizer report, hang or disagreement between the memory and file readers
# fails.  Builds nothing: `make` builds build/tests/fuzz/fuzz_capture.
. "$(dirname "$0")/../lib.sh"

FUZZER=$TOP/build/tests/fuzz/fuzz_capture
[ -x "$FUZZER" ] || skip "$FUZZER not built (needs clang's libFuzzer runtime)"
command -v python3 >/dev/null || skip "python3 needed to write the seed corpus"

corpus=$TMP/corpus
seeds=$TMP/seeds
mkdir -p "$corpus" "$seeds"
python3 "$TOP/tests/fuzz/gen_corpus.py" "$seeds" || fail "gen_corpus.py failed"
cp "$TOP"/tests/fuzz/corpus/* "$seeds"/ 2>/dev/null
# the flag byte first: 0 checks CRCs, 1 lets forged blocks through
for f in "$seeds"/*; do
	name=$(basename "$f")
	{ printf '\0'; cat "$f"; } >"$corpus/crc-$name"
	{ printf '\1'; cat "$f"; } >"$corpus/nocrc-$name"
done

# 2 GiB RSS bound: a block is at most 16 MiB, decoded once per reader
"$FUZZER" -max_total_time="${CCLD_FUZZ_SECONDS:-30}" -timeout=10 \
	-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
	-artifact_prefix="$TMP/" "$corpus" >"$TMP/fuzz.log" 2>&1
rc=$?
tail -n 15 "$TMP/fuzz.log"
if [ $rc -ne 0 ]; then
	for a in "$TMP"/crash-* "$TMP"/leak-* "$TMP"/timeout-* "$TMP"/oom-*; do
		[ -e "$a" ] || continue
		mkdir -p "$TOP/build/tests/fuzz/artifacts"
		cp "$a" "$TOP/build/tests/fuzz/artifacts/"
		echo "reproducer: build/tests/fuzz/artifacts/$(basename "$a")"
	done
	fail "fuzz_capture exited $rc"
fi
grep -q 'Done [0-9]* runs' "$TMP/fuzz.log" || fail "fuzzer did not finish its runs"
