#!/usr/bin/env bash
# Fuzzes the fleet transport's Redis URL parser and its handlers of Redis
# replies (tests/fuzz/fuzz_redis.c) for a third of CCLD_FUZZ_SECONDS
# (fuzz_lib.sh's default) from the RESP bytes of real replies that
# tests/fuzz/gen_redis_corpus.py writes.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
command -v python3 >/dev/null || skip "python3 needed to write the seed corpus"
c=$TMP/corpus
mkdir -p "$c"
python3 "$TOP/tests/fuzz/gen_redis_corpus.py" "$c" || fail "gen_redis_corpus.py failed"
run_fuzzer fuzz_redis $(( $FUZZ_SECONDS / 3 + 1 )) 8192 "$c"
