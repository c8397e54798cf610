#!/usr/bin/env bash
# Fuzzes the fleet analyzer's record decoder and the analyzer behind it for
# a bounded time (CCLD_FUZZ_SECONDS, fuzz_lib.sh's default) from seeds written by
# tests/fuzz/gen_wire_corpus.py.  A crash, leak, sanitizer report, hang, or
# a record that decodes but does not encode back to its bytes fails.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"

FUZZER=$TOP/build/tests/fuzz/fuzz_an_wire
[ -x "$FUZZER" ] || skip "$FUZZER not built (needs clang's libFuzzer runtime)"
command -v python3 >/dev/null || skip "python3 needed to write the seed corpus"

corpus=$TMP/corpus
mkdir -p "$corpus"
python3 "$TOP/tests/fuzz/gen_wire_corpus.py" "$corpus" || fail "gen_wire_corpus.py failed"
# the seeds decode: a fuzzer run over them alone keeps every record
"$FUZZER" -runs=0 "$corpus" >"$TMP/seeds.log" 2>&1 || fail "seeds: $(tail -5 "$TMP/seeds.log")"
run_fuzzer fuzz_an_wire "$FUZZ_SECONDS" 16384 "$corpus"
