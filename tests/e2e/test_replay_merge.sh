#!/usr/bin/env bash
# Capture files of several hosts merge into one view: two tracers, each in
# its own UTS namespace (host names node-a, node-b) tracing half the ranks
# of one job with -o; replaying both files gives every call of the job,
# each under the right host; a truncated copy still gives its intact part
# plus one error line and exit status 1.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
command -v unshare >/dev/null || skip_bpf "no unshare(1)"

start_job --ranks 8 --tp 2 --pp 2 --steps 20 --compute-ms 2 --wait-start "$TMP/go"
rank_pids 8 >/dev/null
half_a=$(awk '$1 < 4 {print $2}' "$TMP/pids" | paste -sd, -)
half_b=$(awk '$1 >= 4 {print $2}' "$TMP/pids" | paste -sd, -)
for n in a b; do
	pids=$half_a
	[ $n = b ] && pids=$half_b
	unshare --uts sh -c "hostname node-$n && exec '$BIN/ccld-trace' -p $pids -o '$TMP/$n.ccld' --json" \
		>"$TMP/$n.out" 2>"$TMP/$n.err" &
	eval "tracer_$n=\$!"
	at_exit "kill -9 \$tracer_$n"
done
WAIT_S=60 wait_for grep -qs tracing "$TMP/a.err" || fail "tracer a: $(cat "$TMP/a.err")"
WAIT_S=60 wait_for grep -qs tracing "$TMP/b.err" || fail "tracer b: $(cat "$TMP/b.err")"
touch "$TMP/go"
wait_job
wait "$tracer_a" || fail "tracer a exited $?: $(cat "$TMP/a.err")"
wait "$tracer_b" || fail "tracer b exited $?: $(cat "$TMP/b.err")"

"$BIN/ccld-trace" replay "$TMP/a.ccld" "$TMP/b.ccld" --json --events >"$TMP/merged.jsonl" ||
	fail "replay of two files failed"
python3 "$TOP/tests/e2e/compare_calls.py" "$TMP/merged.jsonl" "$TMP/log" ||
	fail "merged replay differs from the job's calls"
python3 - "$TMP/merged.jsonl" "$half_a" "$half_b" <<'PY' || fail "hosts wrong in the merged view"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
a = {int(p) for p in sys.argv[2].split(",")}
b = {int(p) for p in sys.argv[3].split(",")}
for r in recs:
    if r["type"] != "call":
        continue
    want = "node-a" if r["pid"] in a else "node-b"
    assert r["host"] == want, r
s = [r for r in recs if r["type"] == "summary"][-1]
assert s["processes"] == 8, s
print("ok: hosts", sorted({r["host"] for r in recs if r["type"] == "call"}))
PY

# a truncated copy: intact blocks, one error line, exit status 1
size=$(stat -c %s "$TMP/a.ccld")
head -c $((size - 100)) "$TMP/a.ccld" >"$TMP/cut.ccld"
"$BIN/ccld-trace" replay "$TMP/cut.ccld" --json --events >"$TMP/cut.jsonl" 2>"$TMP/cut.err"
rc=$?
[ "$rc" = 1 ] || fail "truncated file: exit $rc, expected 1"
[ "$(wc -l <"$TMP/cut.err")" = 1 ] && grep -q "truncated" "$TMP/cut.err" ||
	fail "truncated file: expected one error line: $(cat "$TMP/cut.err")"
grep -q '"type":"summary"' "$TMP/cut.jsonl" || fail "truncated file: no summary of the intact part"
echo "ok: two hosts' captures merge; a truncated one gives its intact part and one error"
