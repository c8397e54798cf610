#!/usr/bin/env bash
# Fuzzes the capture reader for a bounded time (CCLD_FUZZ_SECONDS,
# fuzz_lib.sh's default) from a seed corpus: the committed seeds plus files that
# tests/fuzz/gen_corpus.py writes from the format spec.  Any crash, leak,
# sanitizer report, hang or disagreement between the memory and file readers
# fails.  Builds nothing: `make` builds build/tests/fuzz/fuzz_capture.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"

FUZZER=$TOP/build/tests/fuzz/fuzz_capture
[ -x "$FUZZER" ] || skip "$FUZZER not built (needs clang's libFuzzer runtime)"
command -v python3 >/dev/null || skip "python3 needed to write the seed corpus"

corpus=$TMP/corpus
seeds=$TMP/seeds
mkdir -p "$corpus" "$seeds"
python3 "$TOP/tests/fuzz/gen_corpus.py" "$seeds" || fail "gen_corpus.py failed"
cp "$TOP"/tests/fuzz/corpus/*.ccld "$seeds"/
# the flag byte first: 0 checks CRCs, 1 lets forged blocks through
for f in "$seeds"/*; do
	name=$(basename "$f")
	{ printf '\0'; cat "$f"; } >"$corpus/crc-$name"
	{ printf '\1'; cat "$f"; } >"$corpus/nocrc-$name"
done

# a block is at most 16 MiB, decoded once per reader: 2 GiB RSS bounds it
run_fuzzer fuzz_capture "$FUZZ_SECONDS" 65536 "$corpus"
