#!/usr/bin/env bash
# Tier D, TCP: the stand-in over its socket transport, each rank
# in its own network namespace, joined by veth to a bridge; after a
# baseline, 3% packet loss on rank 2's link (both directions) for 8 s.
# ccld-trace must attribute the retransmits to rank 2 and its peers and
# give S2 verdicts naming rank 2 that cite them; replay gives the same.
# Loss: tc netem where the kernel has it, else nftables (netdev ingress
# hooks on both ends of the link: a lossy cable, not a local drop).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
# the check of the verdicts is scenario "verdict" (tests/quarantine.txt,
# tests/repeat.sh); the TCP tracepoints and records are checked always
[ "${CCLD_SCENARIO:-}" = list ] && { echo "scenario: verdict"; exit 0; }
command -v ip >/dev/null || skip_bpf "no ip (iproute2)"
NS=ccldt$$
RANKS=3 BAD=2 LOSS_PCT=${CCLD_TCP_LOSS_PCT:-5}

cleanup_ns() {
	local r
	for r in $(seq 0 $((RANKS - 1))) hub; do ip netns del "$NS$r" 2>/dev/null; done
}
ip netns add "${NS}hub" || skip_bpf "cannot create network namespaces"
at_exit cleanup_ns
ip -n "${NS}hub" link add br0 type bridge || skip_bpf "no bridge support"
ip -n "${NS}hub" link set br0 up
for r in $(seq 0 $((RANKS - 1))); do
	ip netns add "$NS$r"
	ip link add eth0 netns "$NS$r" type veth peer name "r$r" netns "${NS}hub" ||
		skip_bpf "no veth support"
	ip -n "${NS}hub" link set "r$r" master br0 up
	ip -n "$NS$r" addr add "10.233.0.$((r + 1))/24" dev eth0
	ip -n "$NS$r" link set eth0 up
	ip -n "$NS$r" link set lo up
	# a datacenter's minimum RTO: a loss costs milliseconds, not 200 ms
	ip -n "$NS$r" route change 10.233.0.0/24 dev eth0 proto kernel scope link \
		src "10.233.0.$((r + 1))" rto_min 5ms
done

loss_on() {
	if ip netns exec "$NS$BAD" tc qdisc add dev eth0 root netem loss "$LOSS_PCT%" 2>/dev/null &&
	   ip netns exec "${NS}hub" tc qdisc add dev "r$BAD" root netem loss "$LOSS_PCT%" 2>/dev/null; then
		echo "loss: tc netem $LOSS_PCT% on both ends of rank $BAD's link"
		return
	fi
	ip netns exec "$NS$BAD" tc qdisc del dev eth0 root 2>/dev/null
	command -v nft >/dev/null || fail "no tc netem in this kernel and no nft"
	local end
	for end in "$NS$BAD eth0" "${NS}hub r$BAD"; do
		set -- $end
		ip netns exec "$1" nft -f - <<-EON || fail "nft: cannot add the loss rule"
		table netdev ccldloss {
		  chain in {
		    type filter hook ingress device $2 priority 0;
		    numgen random mod 1000 < $((LOSS_PCT * 10)) drop
		  }
		}
		EON
	done
	echo "loss: nftables $LOSS_PCT% on both ends of rank $BAD's link (no netem here)"
}

loss_off() {
	ip netns exec "$NS$BAD" tc qdisc del dev eth0 root 2>/dev/null
	ip netns exec "${NS}hub" tc qdisc del dev "r$BAD" root 2>/dev/null
	ip netns exec "$NS$BAD" nft delete table netdev ccldloss 2>/dev/null
	ip netns exec "${NS}hub" nft delete table netdev ccldloss 2>/dev/null
	true
}

CCLD_SIMJOB_NETNS=$NS CCLD_SIM_TRANSPORT=socket start_job --ranks $RANKS --tp 1 \
	--size 65536 --compute-ms 25 --jitter 10 --steps 800 --timeout 120 --wait-start "$TMP/go"
pids=$(rank_pids $RANKS)
# the default minimum of 1 s of slowdown: in the loss's first moments only
# one pair's connections may have retransmitted, which names no end
start_tracer tcp -p "$pids" --json -o "$TMP/tcp.ccld"
grep -q 'kernel evidence: tcp: [1-9]' "$TMP/tcp.err" ||
	fail "TCP tracepoints not attached: $(grep 'kernel evidence' "$TMP/tcp.err")"
touch "$TMP/go"
sleep 9	# the baseline: ~300 rounds of each comm
t_on=$(date +%s%N)
loss_on
sleep 8
loss_off
t_off=$(date +%s%N)
wait_job
sleep 0.5
stop_tracer tcp
grep -q 'tier D: [1-9][0-9]* TCP records' "$TMP/tcp.err" || fail "no TCP records: $(tail -3 "$TMP/tcp.err")"
bad_pid=$(awk -v r=$BAD '$1 == r {print $2}' "$TMP/pids")
check_scenario verdict || exit 0
python3 - "$TMP/tcp.jsonl" "$bad_pid" "$t_on" "$t_off" <<'EOF_PY' || fail "wrong verdicts"
import json, re, sys
path, bad, t_on, t_off = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
vs = [json.loads(l) for l in open(path) if '"type":"verdict"' in l]
if not vs:
    sys.exit("no verdict")
for v in vs:
    ev, pids = v["evidence"], [c["pid"] for c in v["culprits"]]
    if v["detected_ns"] < t_on:
        sys.exit("verdict before the loss began: %s" % ev["text"])
    if v["class"] != "S2" or pids != [bad]:
        sys.exit("expected S2 naming pid %d, got %s %s: %s" % (bad, v["class"], pids, ev["text"]))
    if ev.get("tcp_retransmits", 0) <= 0 or ev.get("tcp_links", 0) < 2:
        sys.exit("the verdict cites no retransmits: %s" % ev["text"])
    # every retransmitting link listed has the rank at one end (its rank in that comm)
    rank = v["culprits"][0]["rank"]
    links = re.search(r"TCP: \d+ retransmits [^(]*\(([^)]*)\)", ev["text"]).group(1)
    ends = [re.match(r"(\S+)->(\S+) \d+", l.strip()).groups() for l in links.split(",") if "->" in l]
    me = "r%d" % rank
    if any(me not in e for e in ends) or len({x for e in ends for x in e} - {me}) < 2:
        sys.exit("links %s are not rank %d's with two peers" % (links, rank))
first = min(v["detected_ns"] for v in vs)
print("ok: %d S2 verdicts naming rank 2's pid, first %.1f s after the loss began; links: %s"
      % (len(vs), (first - t_on) / 1e9, links))
EOF_PY
"$BIN/ccld-trace" replay "$TMP/tcp.ccld" --json >"$TMP/tcp.replay" || fail "replay failed"
diff <(grep -E '"(verdict|recovery)"' "$TMP/tcp.jsonl") \
	<(grep -E '"(verdict|recovery)"' "$TMP/tcp.replay") >/dev/null ||
	fail "replay verdicts differ"
echo "ok: TCP retransmits on rank $BAD's link give S2 verdicts that cite them; replay identical"
