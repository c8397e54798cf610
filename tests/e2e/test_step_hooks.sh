#!/usr/bin/env bash
# Tier C step hooks on demand: a rank stopped for 2.5 s
# (stall threshold 3 s) makes its comms suspected at 1.5 s; ccld attaches
# the step hooks to their processes, the rank resumes, steps flow through
# the hooks, the comms move again and the hooks are detached, with their
# measured cost reported.  No verdict: the job never hung for 3 s.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf

rm -rf "$TMP/log" "$TMP/pids" "$TMP/go"
start_job --ranks 8 --tp 2 --pp 2 --compute-ms 5 --steps 100000 --timeout 120 \
	--wait-start "$TMP/go"
start_tracer brief -p "$(rank_pids 8)" --json --stall 3 -v -o "$TMP/brief.ccld"
touch "$TMP/go"
sleep 2
victim=$(awk '$1 == 5 {print $2}' "$TMP/pids")
kill -STOP "$victim"
sleep 2.5
kill -CONT "$victim"
sleep 3
stop_tracer brief
stop_job "$JOB"

grep -q "suspected stuck: [0-9]* step hooks on pid" "$TMP/brief.err" ||
	fail "step hooks were never attached: $(cat "$TMP/brief.err")"
line=$(grep "step hooks were on for" "$TMP/brief.err" | head -1)
[ -n "$line" ] || fail "no step hook report: $(cat "$TMP/brief.err")"
hits=$(sed -n 's/.*process(es): \([0-9]*\) hits.*/\1/p' <<<"$line")
[ "${hits:-0}" -gt 0 ] || fail "the step hooks never fired: $line"
grep -q "step hooks on .* time(s)" "$TMP/brief.err" || fail "no tier C summary"
# detached once the comm moved: the report came before the end of the run
first=$(grep -n "step hooks were on for" "$TMP/brief.err" | head -1 | cut -d: -f1)
last=$(grep -n "tier C:" "$TMP/brief.err" | cut -d: -f1)
[ "$first" -lt "$last" ] || fail "step hooks stayed on until the end"
python3 "$TOP/tests/e2e/check_verdict.py" "$TMP/brief.jsonl" "$TMP/pids" "$TMP/log" \
	--no-verdict || fail "a verdict for a 2.5 s stop"
echo "ok: $line"
