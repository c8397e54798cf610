#!/usr/bin/env bash
# NCCL's warnings, read live with NCCL_DEBUG unset: a program makes NCCL
# warn (invalid arguments: no comm, a bad unique id or, without a GPU, CUDA
# failures) and prints what ncclGetLastError says after each call.  Traced
# with -p, every one of those messages must be among the nccl_warn records,
# in order, with its file and line, none dropped; the capture replays to
# the same records.  On the stand-in always, and on the real libnccl.so.2
# 2.28.9 where it is (CI has it: there it must not skip).
. "$(dirname "$0")/../lib.sh"
require_bpf
unset NCCL_DEBUG

# run_lib NAME INCLUDE_DIR LIB_DIR
run_lib() {
	local name=$1 inc=$2 libdir=$3 prog tracer
	cc -O1 -g -Wall -Werror -I"$inc" "$TOP/tests/e2e/realnccl_prog.c" -L"$libdir" -lnccl \
		-Wl,-rpath,"$libdir" -o "$TMP/prog-$name" || fail "$name: cannot build the program"
	"$TMP/prog-$name" "$TMP/go-$name" >"$TMP/$name.expected" 2>"$TMP/$name.prog.err" &
	prog=$!
	at_exit "kill $prog 2>/dev/null"
	"$BIN/ccld-trace" -p "$prog" --json --events -o "$TMP/$name.ccld" \
		>"$TMP/$name.jsonl" 2>"$TMP/$name.err" &
	tracer=$!
	at_exit "kill $tracer 2>/dev/null"
	WAIT_S=60 wait_for grep -qs "tracing" "$TMP/$name.err" ||
		fail "$name: tracer did not start: $(cat "$TMP/$name.err")"
	touch "$TMP/go-$name"
	wait "$prog" || fail "$name: the program failed: $(cat "$TMP/$name.prog.err")"
	WAIT_S=10 wait_for grep -qs "every traced process exited" "$TMP/$name.err" ||
		fail "$name: ccld-trace did not notice the exit: $(cat "$TMP/$name.err")"
	wait "$tracer" || fail "$name: ccld-trace exited with $?: $(cat "$TMP/$name.err")"
	python3 - "$TMP/$name.expected" "$TMP/$name.jsonl" "$prog" <<'PY' ||
import json, sys
said = [json.loads(l)["last_error"] for l in open(sys.argv[1]) if '"last_error"' in l]
trace = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
pid = int(sys.argv[3])
warns = [r for r in trace if r["type"] == "nccl_warn"]
bad = []
# what the library said last after each call, in order, among the warnings
want = [m for i, m in enumerate(said) if i == 0 or said[i - 1] != m]
got = iter(w["message"] for w in warns)
for m in want:
    if not any(g == m for g in got):
        bad.append(f"NCCL said {m!r}: not traced (or out of order)")
for w in warns:
    if w["pid"] != pid or w["line"] <= 0 or not w["file"] or w["truncated"]:
        bad.append(f"bad record {w}")
summary = [r for r in trace if r["type"] == "summary"]
if not summary or summary[-1]["nccl_warnings"] != len(warns) or \
        summary[-1]["nccl_warnings_dropped"] != 0 or summary[-1]["dropped"] != 0:
    bad.append(f"summary {summary}")
if len(want) < 4:
    bad.append(f"the program made NCCL warn only {len(want)} times: {want}")
for b in bad:
    print(b)
print("warnings traced:", *[f"{w['file']}:{w['line']} {w['message']}" for w in warns],
      sep="\n  ")
sys.exit(1 if bad else 0)
PY
		fail "$name: warnings differ from what NCCL said"
	"$BIN/ccld-trace" replay "$TMP/$name.ccld" --json --events >"$TMP/$name.replay" ||
		fail "$name: replay failed"
	diff <(grep '"nccl_warn"' "$TMP/$name.jsonl") <(grep '"nccl_warn"' "$TMP/$name.replay") ||
		fail "$name: the capture replays to other warnings"
	echo "$name: $(grep -c '"nccl_warn"' "$TMP/$name.jsonl") warnings, replayed the same"
}

run_lib standin "$TOP/include" "$SIMLIB"
if [ -r "${CCLD_REAL_NCCL:-/usr/local/cuda/lib/libnccl.so.2}" ] ||
	[ "${CCLD_REQUIRE_REAL_NCCL:-0}" = 1 ]; then
	require_real_nccl
	inc=$(dirname "$REAL_NCCL")/../include
	[ -r "$inc/nccl.h" ] || fail "no nccl.h beside $REAL_NCCL"
	run_lib real "$inc" "$(dirname "$REAL_NCCL")"
else
	echo "real NCCL: not on this machine (only the stand-in checked)"
fi
echo "ok: NCCL's warnings read live without NCCL_DEBUG, and replayed the same"
