#!/usr/bin/env bash
# A process that maps hostile libnccl.so.2 files (tests/e2e/hostile_lib.sh:
# truncated, bogus headers, symbols out of bounds, garbage DWARF; mapped
# executable, as the loader would, but without running them) traced with
# `ccld-trace -p PID` for a few seconds: ccld-trace exits 0 or 1 (its
# error the last line), never by a signal or a sanitizer report (ASan+UBSan
# build when built), and the process lives on.  Then the same with the well-formed base library mapped too.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
require_bpf
command -v python3 >/dev/null || skip "python3 needed to craft and map the libraries"
command -v cc >/dev/null || skip "cc needed to compile the base library"
hostile_libs "$TMP/libs"

# maps each file given read+exec at its own address, then sleeps
cat >"$TMP/mapper.py" <<'PY'
import mmap, os, sys, time
maps = []
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    if os.fstat(fd).st_size:
        maps.append(mmap.mmap(fd, 0, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_EXEC))
    os.close(fd)
sys.stdout.write("mapped\n")
sys.stdout.flush()
time.sleep(60)
PY

# trace_mapper WHAT FILE..: a mapper of FILE.. traced for 3 s
trace_mapper() {
	local what=$1 pid rc
	shift
	python3 "$TMP/mapper.py" "$@" >"$TMP/mapper.out" &
	pid=$!
	at_exit "kill $pid"
	WAIT_S=10 wait_for grep -q mapped "$TMP/mapper.out" || fail "$what: mapper did not start"
	"$HOSTILE_TRACE" -p "$pid" --json -d 3 >"$TMP/out" 2>"$TMP/err"
	rc=$?
	kill -0 "$pid" 2>/dev/null || fail "$what: the traced process died"
	kill "$pid"
	wait "$pid" 2>/dev/null
	check_exit "$what" $rc "$TMP/err"
	echo "$what: exit $rc: $(tail -n 1 "$TMP/err")"
}

# one process maps them all with the well-formed base library (ccld reads
# every NCCL-named file a process maps, and attaches to those it can): one
# run, as each attach costs seconds of uprobe registration
hostile=()
for lib in "$TMP"/libs/*/libnccl.so.2; do
	case $lib in */base/*) continue ;; esac
	hostile+=("$lib")
done
trace_mapper "${#hostile[@]} hostile libraries and the base one" "${hostile[@]}" \
	"$TMP/libs/base/libnccl.so.2"
grep -q 'libs/base/libnccl.so.2' "$TMP/err" || grep -q '"type"' "$TMP/out" ||
	fail "nothing says the base library was read: $(tail -3 "$TMP/err")"
