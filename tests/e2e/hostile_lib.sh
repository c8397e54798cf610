# Sourced by test_hostile_lib*.sh: hostile libnccl.so.2 files and the
# ccld-trace that reads them.
#
# hostile_libs DIR: DIR/<variant>/libnccl.so.2 for every variant of
# craft_elf.py, made from a library compiled here that ccld would trace
# (every required NCCL symbol, the objects and DWARF structs it reads),
# plus the committed fuzz regression inputs that are ELF files.  DIR/base
# is the library itself.
#
# HOSTILE_TRACE: the ASan+UBSan ccld-trace when built, else the plain one.
# ASAN_OPTIONS: leaks are not looked for (a crash is what this is about),
# sanitizer reports go to stderr and exit 86.
HOSTILE_TRACE=$TOP/build/asan/ccld-trace
[ -x "$HOSTILE_TRACE" ] || HOSTILE_TRACE=$BIN/ccld-trace
[ -x "$HOSTILE_TRACE" ] || fail "no $BIN/ccld-trace: run make first"
export ASAN_OPTIONS=detect_leaks=0:exitcode=86:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86
export CCLD_CACHE_DIR=$TMP/cache

hostile_libs() {
	local d=$1 s f
	mkdir -p "$d/base"
	{
		echo 'const char nccl_version[] = "NCCL version 2.28.9+cuda13.0";'
		for s in AllReduce AllGather ReduceScatter Broadcast Reduce Send Recv GroupStart \
			 GroupEnd CommInitRank CommInitAll CommDestroy CommAbort CommGetAsyncError; do
			echo "int pnccl$s(void *a) { return a != 0; }"
			echo "int nccl$s(void *a) __attribute__((weak, alias(\"pnccl$s\")));"
		done
		echo 'typedef int (*fn_t)(void *);'
		echo 'fn_t netTransport[3] = { pnccl'"AllReduce, pncclSend, pncclRecv };"
		echo 'void *ncclComms[64];'
		echo 'struct ncclProxyArgs; struct ncclComm;'
		echo 'struct ncclComm { unsigned long startMagic; struct { unsigned long commHash; int rank; int nRanks; };'
		echo '  int cudaDev; long busId; unsigned long seqNumber[7]; unsigned long endMagic; };'
		echo 'struct ncclComm *fixture_comm(void) { static struct ncclComm c; return &c; }'
	} >"$d/base.c"
	cc -shared -fPIC -g -O1 -Wl,--build-id -o "$d/base/libnccl.so.2" "$d/base.c" ||
		fail "cannot compile the base library"
	python3 "$TOP/tests/e2e/craft_elf.py" "$d/base/libnccl.so.2" "$d" ||
		fail "craft_elf.py failed"
	for f in "$TOP"/tests/fuzz/corpus/elfsym/* "$TOP"/tests/fuzz/corpus/dwarf/*; do
		[ -f "$f" ] || continue
		mkdir -p "$d/fuzz-$(basename "$f")"
		cp "$f" "$d/fuzz-$(basename "$f")/libnccl.so.2"
	done
}

# check_exit WHAT RC ERRFILE [MAXLINES]: exited 0 or 1, never by a signal
# or with a sanitizer report; every stderr line is ccld-trace's own, at
# most MAXLINES of them when given
check_exit() {
	local what=$1 rc=$2 err=$3 max=${4:-}
	grep -q 'AddressSanitizer\|runtime error\|LeakSanitizer\|crashed; backtrace' "$err" &&
		{ head -40 "$err"; fail "$what: sanitizer report or crash"; }
	[ "$rc" = 0 ] || [ "$rc" = 1 ] || { head -20 "$err"; fail "$what: exit $rc"; }
	[ -z "$max" ] || [ "$(wc -l <"$err")" -le "$max" ] ||
		{ head -20 "$err"; fail "$what: more than $max line(s) on stderr"; }
	! grep -qv '^ccld-trace: ' "$err" || { head -20 "$err"; fail "$what: stray stderr lines"; }
}
