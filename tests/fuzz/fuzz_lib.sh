# Shared by the tests/fuzz/test_fuzz_*.sh scripts; source it after lib.sh.
# run_fuzzer NAME SECONDS MAX_LEN CORPUS_DIR: runs build/tests/fuzz/NAME
# over the committed regression inputs (tests/fuzz/corpus/NAME, which must
# all pass) and then for SECONDS from CORPUS_DIR.  A crash, leak, sanitizer
# report, hang (10 s an input) or RSS above 2 GiB fails; its reproducer is
# kept in build/tests/fuzz/artifacts/.  Prints the fuzzer's last lines.
# Each script fuzzes for FUZZ_SECONDS (or a third or a sixth of it for the
# small parsers): CCLD_FUZZ_SECONDS, 10 by default (make test), 120 in make
# soak.
FUZZ_SECONDS=${CCLD_FUZZ_SECONDS:-10}
run_fuzzer() {
	local name=$1 secs=$2 maxlen=$3 corpus=$4 fuzzer=$TOP/build/tests/fuzz/$1 rc a
	local regress=$TOP/tests/fuzz/corpus/${1#fuzz_}

	[ -x "$fuzzer" ] || skip "$fuzzer not built (needs clang's libFuzzer runtime)"
	if [ -d "$regress" ]; then
		"$fuzzer" -runs=0 -timeout=10 -rss_limit_mb=2048 "$regress" >"$TMP/regress.log" 2>&1 ||
			{ tail -30 "$TMP/regress.log"; fail "$name: a regression input of $regress fails"; }
		cp "$regress"/* "$corpus"/
	fi
	"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="$maxlen" \
		-print_final_stats=1 -artifact_prefix="$TMP/" "$corpus" >"$TMP/fuzz.log" 2>&1
	rc=$?
	tail -n 12 "$TMP/fuzz.log"
	if [ $rc -ne 0 ]; then
		for a in "$TMP"/crash-* "$TMP"/leak-* "$TMP"/timeout-* "$TMP"/oom-*; do
			[ -e "$a" ] || continue
			mkdir -p "$TOP/build/tests/fuzz/artifacts"
			cp "$a" "$TOP/build/tests/fuzz/artifacts/$name-$(basename "$a")"
			echo "reproducer: build/tests/fuzz/artifacts/$name-$(basename "$a")"
		done
		fail "$name exited $rc"
	fi
	grep -q 'Done [0-9]* runs' "$TMP/fuzz.log" || fail "$name did not finish its runs"
}
