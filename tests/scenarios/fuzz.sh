#!/usr/bin/env bash
# Random jobs and faults, scored against the injected fault (docs/simjob.md,
# "Random jobs"): for each seed, ccld-simjob --random SEED draws a job, at
# most one fault and how to attach; the job runs on the stand-in, ccld-trace
# -p traces it live with real uprobes (attached at the start, mid run before
# the fault, or after it, as drawn), and fuzz_score.py scores its verdicts
# against the truth: right, undetermined, wrong, silent or false.
#
# usage: tests/scenarios/fuzz.sh [--results FILE] [--table FILE] SEED|FROM-TO|SEED:undetermined...
#   --results FILE  one tab-separated line per seed (appended)
#   --table FILE    the accuracy table per class, in markdown (appended)
#   SEED:undetermined  that seed's culprit cannot be told from what ccld
#                   sees (docs/simjob.md): a verdict listing it among others
#                   passes too
# Exit status 0 when every seed is right, 1 otherwise; each miss prints its
# seed and a one-line reproducer.  CCLD_FUZZ_STALL (default 3) is the stall
# threshold given to ccld-trace.  CCLD_FUZZ_KEEP=DIR keeps every seed's
# capture there as seed-N.ccld (to replay an analyzer change on them).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
STALL=${CCLD_FUZZ_STALL:-3}
RESULTS=$TMP/results.tsv
TABLE=
SEEDS=()
UNDETERMINED=' '	# seeds whose undetermined verdict passes
while [ $# -gt 0 ]; do
	case $1 in
	--results) RESULTS=$2; shift 2 ;;
	--table) TABLE=$2; shift 2 ;;
	*-*) for ((s = ${1%-*}; s <= ${1#*-}; s++)); do SEEDS+=("$s"); done; shift ;;
	[0-9]*:undetermined) SEEDS+=("${1%%:*}"); UNDETERMINED+=" ${1%%:*} "; shift ;;
	*[!0-9]*|"") fail "usage: fuzz.sh [--results FILE] [--table FILE] SEED|FROM-TO|SEED:undetermined..." ;;
	*) SEEDS+=("$1"); shift ;;
	esac
done
[ ${#SEEDS[@]} -gt 0 ] || fail "no seed given"
mkdir -p "$(dirname "$RESULTS")"
touch "$RESULTS"
COMMIT=$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo "?")

# the monotonic clock (the stand-in's call logs) and the wall clock
# (ccld's verdicts) at once
clocks_ns() { python3 -c 'import time; print(time.monotonic_ns(), time.time_ns())'; }

# the monotonic time the drawn fault took effect, empty while it has not
onset_ns() { python3 "$TOP/tests/scenarios/fuzz_score.py" --onset "$TMP/log"; }
have_onset() { [ -n "$(onset_ns)" ]; }

# has_root: a root verdict is in the trace (SLOW_ONLY=1: a slow one)
has_root() {
	if [ "${SLOW_ONLY:-0}" = 1 ]; then
		grep -qs '"role":"root"' "$TMP/trace.jsonl" &&
			grep '"role":"root"' "$TMP/trace.jsonl" | grep -qs '"class":"S'
	else
		grep -qs '"role":"root"' "$TMP/trace.jsonl"
	fi
}

run_seed() {
	local seed=$1 draw cls n attach attach_s zombie pids onset='' mono real
	begin_scenario "seed-$seed" || return 0
	RAN=$((RAN + 1))
	rm -rf "$TMP/log" "$TMP/pids" "$TMP/go" "$TMP"/trace.* "$TMP/attach_ns"
	draw=$("$SIMJOB" --random "$seed" --dry-run | head -1) || fail "seed $seed: no draw"
	echo "$draw" >"$TMP/draw.json"
	read -r cls n attach attach_s zombie < <(python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(d["class"], d["ranks"], d["attach"], d["attach_s"], d["zombie"])' "$draw")
	echo "draw: $draw"
	local extra=()
	[ "$attach" = start ] && extra=(--wait-start "$TMP/go")
	start_job --random "$seed" --timeout 300 "${extra[@]}"
	pids=$(rank_pids "$n")
	# a rank that exits stays a zombie while its launcher is stopped
	[ "$zombie" = 1 ] && kill -STOP "$JOB"
	case $attach in
	midrun) sleep "$attach_s" ;;
	late)
		WAIT_S=60 wait_for have_onset || fail "seed $seed: the fault never came"
		sleep "$attach_s" ;;
	esac
	start_tracer trace -p "$pids" --json --stall "$STALL" -o "$TMP/trace.ccld"
	clocks_ns >"$TMP/attach_ns"
	[ "$attach" = start ] && touch "$TMP/go"
	# a hang: the stall threshold and 8 s after the fault; a slowdown: 20 s
	# after the onset; no fault: 15 s.  Sooner once a root verdict came.
	local t_end=$((SECONDS + 60)) after=$((STALL + 8)) slow=0
	case $cls in
	S*) after=20; slow=1 ;;
	none) t_end=$((SECONDS + 15)) ;;
	esac
	while ! SLOW_ONLY=$slow has_root && [ $SECONDS -lt $t_end ]; do
		if [ "$cls" != none ] && [ -z "$onset" ]; then
			onset=$(onset_ns)
			[ -n "$onset" ] && t_end=$((SECONDS + after))
		fi
		sleep 0.2
	done
	# the score reads the first root verdict: nothing after it is waited for
	stop_tracer trace
	[ "$zombie" = 1 ] && kill -CONT "$JOB"
	stop_job "$JOB"
	local line
	read -r mono real <"$TMP/attach_ns"
	line=$(python3 "$TOP/tests/scenarios/fuzz_score.py" "$TMP/draw.json" "$TMP/trace.jsonl" \
		"$TMP/pids" "$TMP/log" --attach-ns "$mono" "$real" --stall "$STALL" \
		--commit "$COMMIT") || fail "seed $seed: scoring failed"
	echo "$line" >>"$RESULTS"
	if [ -n "${CCLD_FUZZ_KEEP:-}" ]; then
		mkdir -p "$CCLD_FUZZ_KEEP" && cp "$TMP/trace.ccld" "$CCLD_FUZZ_KEEP/seed-$seed.ccld" ||
			fail "seed $seed: cannot keep the capture in $CCLD_FUZZ_KEEP"
	fi
	echo "result: $line"
	case $line in
	*$'\t'right$'\t'*) ;;
	*$'\t'undetermined$'\t'*)
		if [[ $UNDETERMINED == *" $seed "* ]]; then
			echo "seed $seed: undetermined, the best ccld can see here"
		else
			miss "$seed" "$line"
		fi ;;
	*) miss "$seed" "$line" ;;
	esac
}

# miss SEED RESULT: counted, with its score, reproducer, verdicts and capture
miss() {
	local seed=$1 result

	result=$(echo "$2" | cut -f2-8 | tr '\t' ' ')
	MISSES=$((MISSES + 1))
	echo "MISS seed $seed ($result): reproduce with: tests/scenarios/fuzz.sh $seed" \
		"(the job alone: build/bin/ccld-simjob --random $seed)"
	grep -h '"type":"verdict"' "$TMP/trace.jsonl" | head -4 | cut -c1-400 |
		sed 's/^/verdict: /'
	cp "$TMP/trace.ccld" "$TMP/seed-$seed.ccld" 2>/dev/null &&
		echo "capture: $TMP/seed-$seed.ccld"
}

MISSES=0
RAN=0	# seeds run (a quarantined one is not)
for s in "${SEEDS[@]}"; do
	run_seed "$s"
done
if [ -n "$TABLE" ]; then
	python3 "$TOP/tests/scenarios/fuzz_score.py" --table "$RESULTS" >>"$TABLE" ||
		fail "no table"
fi
python3 "$TOP/tests/scenarios/fuzz_score.py" --table "$RESULTS"
if [ "$MISSES" -gt 0 ]; then
	echo "FAIL: $MISSES of $RAN seeds missed; files in $TMP" >&2
	exit 1
fi
echo "ok: $RAN seeds right (or undetermined where so marked)$([ "$RAN" -lt ${#SEEDS[@]} ] &&
	echo ", $((${#SEEDS[@]} - RAN)) not run (quarantined, or not in CCLD_SCENARIO)")"
