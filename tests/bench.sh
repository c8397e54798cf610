#!/usr/bin/env bash
# make bench: the numbers of docs/numbers.md, measured on this machine.
#  1. added cost per traced NCCL API call: traced vs untraced in one run
#     (build/tests/bench/bench_calls, on the stand-in; on the real NCCL too
#     when /usr/local/cuda/lib/libnccl.so.2 exists)
#  2. replay throughput in records/s (a recording of (1) replayed)
#  3. capture reader/writer throughput (build/tests/bench/bench_capture)
#  4. fleet analyzer load (tests/bench/fleet_load.py)
#  5. ccld-trace -p's start and exit on the 8-rank stand-in, with uprobe_multi
#     links (the default) and with one perf-event uprobe per probe
#     (CCLD_UPROBE_MULTI=0)
set -u
cd "$(dirname "$0")/.."
BIN=build/bin
TMP=$(mktemp -d /tmp/ccld-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
N=${BENCH_CALLS:-200000}
[ "$(id -u)" = 0 ] || { echo "make bench: needs root (BPF)" >&2; exit 1; }

echo "machine: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r)"

# bench_one NAME LIBDIR: calls per second with and without probes
bench_one() {
	local name=$1 prog=$2 out=$TMP/$1.out rec=$TMP/$1.ccld tr
	rm -f "$TMP/go"
	"$prog" "$N" "$TMP/go" >"$out" 2>&1 &
	local pid=$!
	for _ in $(seq 600); do grep -qs ready "$out" && break; sleep 0.1; done
	$BIN/ccld-trace -p "$pid" -o "$rec" >"$TMP/$name.trace" 2>&1 &
	tr=$!
	for _ in $(seq 600); do grep -qs tracing "$TMP/$name.trace" && break; sleep 0.1; done
	touch "$TMP/go"
	wait "$pid"
	wait "$tr"
	echo "$name: $(grep calls "$out")"
	local t0 t1 recs
	t0=$(date +%s.%N)
	$BIN/ccld-trace replay "$rec" --json >"$TMP/$name.replay"
	t1=$(date +%s.%N)
	recs=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["events"])' "$TMP/$name.replay")
	python3 -c "import sys; r=$recs; t=$t1-$t0; print(f'$name replay: {r} records in {t:.2f} s = {r/t/1e6:.2f} M records/s ({$(stat -c %s "$rec")/r:.1f} bytes/record on disk)')"
}

bench_one standin build/tests/bench/bench_calls
if [ -x build/tests/bench/bench_calls_real ]; then
	bench_one real-nccl build/tests/bench/bench_calls_real
fi
if [ -x build/tests/bench/bench_capture ]; then
	echo "capture file reader/writer:"
	build/tests/bench/bench_capture | sed 's/^/  /'
fi
# 4. fleet: 4 synthetic agents x 64 ranks x 100 rounds/s into one analyzer
if [ -x build/tests/bench/fleet_load ] && command -v redis-server >/dev/null; then
	echo "fleet load (tests/bench/fleet_load.py):"
	python3 tests/bench/fleet_load.py | sed 's/^/  /'
fi
# 5. start (run to "tracing") and exit (SIGINT to gone) of ccld-trace -p,
#    2 runs of each link kind, alternated
link_times() {
	local mode=$1 job pids t0 t1 t2 t3 tr links
	rm -f "$TMP/pids"
	build/bin/ccld-simjob --ranks 8 --tp 2 --pp 2 --steps 100000 --compute-ms 5 \
		--timeout 60 --pidfile "$TMP/pids" >/dev/null 2>&1 &
	job=$!
	for _ in $(seq 100); do [ -f "$TMP/pids" ] && [ "$(wc -l <"$TMP/pids")" = 8 ] && break; sleep 0.1; done
	pids=$(awk '{print $2}' "$TMP/pids" | paste -sd, -)
	t0=$(date +%s%N)
	if [ "$mode" = multi ]; then
		CCLD_UPROBE_MULTI=1 $BIN/ccld-trace -p "$pids" >/dev/null 2>"$TMP/lt.err" &
	else
		CCLD_UPROBE_MULTI=0 $BIN/ccld-trace -p "$pids" >/dev/null 2>"$TMP/lt.err" &
	fi
	tr=$!
	for _ in $(seq 600); do grep -qs tracing "$TMP/lt.err" && break; sleep 0.01; done
	t1=$(date +%s%N)
	sleep 2
	links=$(ls -l "/proc/$tr/fd" 2>/dev/null | grep -c 'bpf_link\|perf_event')
	t2=$(date +%s%N)
	kill -INT "$tr"
	wait "$tr"
	t3=$(date +%s%N)
	kill "$job" 2>/dev/null
	wait "$job" 2>/dev/null
	printf '  %-6s start %5d ms, exit %5d ms, %3d link/perf-event fds\n' "$mode" \
		$(((t1 - t0) / 1000000)) $(((t3 - t2) / 1000000)) "$links"
}
echo "ccld-trace -p on the 8-rank stand-in: start and exit"
for mode in multi perf multi perf; do
	link_times "$mode"
done
