#!/usr/bin/env python3
"""Check ccld-trace's root verdict for a stand-in job against the job's truth.

usage: check_verdict.py TRACE.jsonl PIDFILE CALLLOG_DIR --class H1
           --culprits R[,R..] [--kind tp|dp|pp|world] [--seq auto|none]
           [--no-proxy-kind KIND] [--want-proxy]
           [--state "not delivered"] --stall SEC [--no-verdict]
           [--hosts NAME:R-R[,NAME:R-R..]]

The first verdict with "role":"root" must have the given class, culprit
set (world ranks, mapped to pids through PIDFILE's "RANK PID" lines), a
communicator that holds every culprit (of the given kind when --kind is
set: tp = all-reduce comm of nranks < world, dp = reduce-scatter comm,
pp = send/recv comm, world), and, with --seq auto, the stuck round as the
job's own call log shows it: the first seq of that communicator that not
every rank entered (H1) or whose signature differs between ranks (H2).
For H3 (all entered, consistent) the log cannot say which entered round
the GPU or the network was executing when the fault hit: the round must be
one every rank of the communicator entered with one signature, and the
evidence's Mycroft Table-4 state must be --state (or one of a
comma-separated list).  The same holds for an H1 whose culprit was stopped
with its GPU work in flight ("stopped in"): its round is one every rank
entered.  It must come within --stall + 2 s of the communicator's last
progress (detected_ns - onset_ns).  Other root verdicts must not name other
communicators with other culprits (cascades are "role":"cascade").
With --no-verdict, the trace must hold no verdict at all.  With --hosts
(fleet mode), each culprit's "host" must be the node its rank ran on.
With --attached-ns T (ccld attached to a job that was already hung at
wall-clock time T, in ns), the limit counts from T instead (detected_ns -
T <= stall + 2 s): what happened before the attach is not ccld's to time.
With --no-proxy-kind KIND (a comm whose ranks share a host: NCCL's
intra-node transports have no proxy), every verdict on a comm of that kind
must rest on tiers A/B alone (evidence_tiers without C or E); with
--want-proxy the root verdict must rest on proxy data (C or E).
"""
import argparse
import collections
import glob
import json
import os
import re
import sys

import expected_comms


def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("pidfile")
    ap.add_argument("logdir")
    ap.add_argument("--class", dest="cls")
    ap.add_argument("--culprits", default="")
    ap.add_argument("--kind")
    ap.add_argument("--seq", default="auto")
    ap.add_argument("--stall", type=float, default=30)
    ap.add_argument("--state")
    ap.add_argument("--no-verdict", action="store_true")
    ap.add_argument("--hosts")
    # slow verdicts are another question: a test that perturbs the machine
    # itself (Redis stopped and restarted, a burst of catch-up) may check
    # only the hang verdict
    ap.add_argument("--ignore-slow", action="store_true")
    ap.add_argument("--attached-ns", type=int)
    # intra-node comms: their verdicts rest on calls and GPU completions only
    ap.add_argument("--no-proxy-kind")
    # the root verdict rests on proxy data (tier C or E)
    ap.add_argument("--want-proxy", action="store_true")
    # what the culprit is doing, as the root verdict's text must say it
    # ("in_write()_on_%TMP%/x.fifo": _ for a space, %TMP% the test's $TMP)
    ap.add_argument("--evidence-has", action="append", default=[])
    # a function the culprit's main thread's native stack holds ("(stack:
    # write+0x17 < FN+0x2e < ...)" in the root verdict's text)
    ap.add_argument("--stack-has", action="append", default=[])
    # every culprit must carry its launcher's global rank (RANK), the job's
    # rank of that pid; where any culprit has one, it must be that one
    ap.add_argument("--want-global-rank", action="store_true")
    ap.add_argument("--want-gpu", action="store_true",
                    help="each culprit names its GPU (cuda_dev, PCI address)")
    # the root's comm described by the name its creation call's config gave
    # it (and its split color); without this, a name given must still be it
    ap.add_argument("--want-comm-name", action="store_true")
    a = ap.parse_args()

    trace = load(a.trace)
    verdicts = [r for r in trace if r.get("type") == "verdict"]
    if a.ignore_slow:
        verdicts = [r for r in verdicts if not r["class"].startswith("S")]
    if a.no_verdict:
        if verdicts:
            sys.exit(f"false verdict(s): {verdicts}")
        print("ok: no verdict")
        return
    pid_of = {}
    for line in open(a.pidfile):
        r, p = line.split()
        pid_of[int(r)] = int(p)
    want_pids = {pid_of[int(r)] for r in a.culprits.split(",") if r}

    calls = []
    for path in glob.glob(os.path.join(a.logdir, "calls.*.jsonl")):
        calls += load(path)
    world = len(pid_of)
    comm_ops = collections.defaultdict(set)
    comm_pids = collections.defaultdict(set)
    comm_nranks = {}
    for c in calls:
        if c.get("comm") is None:
            continue
        comm_ops[c["comm"]].add(c["op"])
        comm_pids[c["comm"]].add(c["pid"])
        if c.get("nranks") is not None:
            comm_nranks[c["comm"]] = c["nranks"]

    def kind_of(comm):
        ops = comm_ops[comm]
        if comm_nranks.get(comm) == world:
            return "world"
        if "ReduceScatter" in ops:
            return "dp"
        if "Send" in ops or "Recv" in ops:
            return "pp"
        if "AllReduce" in ops:
            return "tp"
        return "?"

    expected_comms.write(a.trace, a.logdir, want_pids,
                         lambda c: a.kind is None or kind_of(c) == a.kind)
    roots = [v for v in verdicts if v.get("role") == "root"]
    if not roots:
        sys.exit(f"no root verdict; verdicts: {verdicts}\ntrace tail: {trace[-3:]}")
    v = roots[0]
    errs = []
    if v.get("schema") != 1:
        errs.append("verdict without schema 1")
    if v["class"] != a.cls:
        errs.append(f"class {v['class']}, expected {a.cls}")
    got_pids = {c["pid"] for c in v["culprits"]}
    if got_pids != want_pids:
        errs.append(f"culprit pids {sorted(got_pids)}, expected {sorted(want_pids)} "
                    f"(ranks {a.culprits})")
    if a.hosts:
        host_of = {}
        for part in a.hosts.split(","):
            name, rng = part.rsplit(":", 1)
            lo, hi = (int(x) for x in rng.split("-"))
            for r in range(lo, hi + 1):
                host_of[pid_of[r]] = name
        for c in v["culprits"]:
            if c["pid"] in host_of and c["host"] != host_of[c["pid"]]:
                errs.append(f"culprit pid {c['pid']} on host {c['host']}, "
                            f"expected {host_of[c['pid']]}")
    comm = v["comm"]
    if not want_pids <= comm_pids.get(comm, set()):
        errs.append(f"comm {comm} does not hold the culprits")
    if a.kind and kind_of(comm) != a.kind:
        errs.append(f"comm {comm} is a {kind_of(comm)} communicator, expected {a.kind}")
    if a.seq == "auto" and v.get("p2p") and a.cls == "H3":
        # all entered: the culprit posted its side of that seq, the waiter its
        other = {"Send": "Recv", "Recv": "Send"}[v["op"]]
        cpid = v["culprits"][0]["pid"]
        posted = sum(1 for c in calls if c.get("comm") == comm and c["pid"] == cpid
                     and c["op"] == other)
        waited = max((sum(1 for c in calls if c.get("comm") == comm and c["pid"] == w
                          and c["op"] == v["op"]) for w in comm_pids[comm] if w != cpid),
                     default=0)
        if not (v["seq"] < posted and v["seq"] < waited):
            errs.append(f"H3 p2p seq {v['seq']}: the culprit posted {posted} {other}s, "
                        f"the waiter {waited} {v['op']}s: not both entered")
        if a.state and v["evidence"].get("state") not in a.state.replace("_", " ").split(","):
            errs.append(f"Table-4 state {v['evidence'].get('state')!r}, expected {a.state!r}")
    elif a.seq == "auto" and v.get("p2p") and "stopped in" in v["evidence"].get("text", ""):
        # a culprit stopped with its GPU in its own op (v["op"]) toward the
        # waiter (evidence peer), numbered per (comm, peer, direction): both
        # sides posted that seq; the stopped GPU never finishes it
        other = {"Send": "Recv", "Recv": "Send"}[v["op"]]
        crank, cpid = v["culprits"][0]["rank"], v["culprits"][0]["pid"]
        peer = v["evidence"].get("peer")
        rank_of = {c["pid"]: c["rank"] for c in calls if c.get("comm") == comm}
        wpid = next((p for p, r in rank_of.items() if r == peer), None)
        mine = sum(1 for c in calls if c.get("comm") == comm and c["pid"] == cpid
                   and c["op"] == v["op"] and c["peer"] == peer)
        theirs = sum(1 for c in calls if c.get("comm") == comm and c["pid"] == wpid
                     and c["op"] == other and c["peer"] == crank)
        if not (v["seq"] < mine and v["seq"] < theirs):
            errs.append(f"p2p seq {v['seq']} stopped in: the culprit posted {mine} "
                        f"{v['op']}s toward rank {peer}, that rank {theirs} {other}s "
                        f"(ranks {rank_of}): not both entered")
    elif a.seq == "auto" and v.get("p2p"):
        # p2p: the waiter's op (v["op"]) toward the culprit, numbered per
        # (comm, peer, direction): the culprit never posted the matching one
        other = {"Send": "Recv", "Recv": "Send"}[v["op"]]
        crank = v["culprits"][0]["rank"]
        cpid = v["culprits"][0]["pid"]
        rank_of = {c["pid"]: c["rank"] for c in calls if c.get("comm") == comm}
        posted = sum(1 for c in calls if c.get("comm") == comm and c["pid"] == cpid
                     and c["op"] == other)
        waited = max((sum(1 for c in calls if c.get("comm") == comm and c["pid"] == w
                          and c["op"] == v["op"] and c["peer"] == crank)
                      for w in comm_pids[comm] if w != cpid), default=0)
        if not (v["seq"] == posted and waited > posted):
            errs.append(f"p2p seq {v['seq']}: the culprit posted {posted} {other}s, "
                        f"the waiter {waited} {v['op']}s (ranks {rank_of})")
    elif a.seq == "auto" and a.cls == "H3":
        entered = collections.defaultdict(set)
        sigs = collections.defaultdict(set)
        for c in calls:
            if c.get("comm") == comm and c.get("seq") == v["seq"]:
                entered[c["seq"]].add(c["pid"])
                sigs[c["seq"]].add((c["op"], c["count"], c["dtype"], c["redop"], c["root"]))
        if entered[v["seq"]] != comm_pids[comm] or len(sigs[v["seq"]]) != 1:
            errs.append(f"H3 seq {v['seq']} was not entered by every rank with one signature")
        if a.state and v["evidence"].get("state") not in a.state.replace("_", " ").split(","):
            errs.append(f"Table-4 state {v['evidence'].get('state')!r}, expected {a.state!r}")
    elif a.seq == "auto":
        # the stuck round: the first seq of the comm that not every rank
        # entered, or whose signature differs between ranks
        entered = collections.defaultdict(set)
        sigs = collections.defaultdict(set)
        for c in calls:
            if c.get("comm") == comm and c.get("seq") is not None:
                entered[c["seq"]].add(c["pid"])
                sigs[c["seq"]].add((c["op"], c["count"], c["dtype"], c["redop"], c["root"]))
        bad = [q for q in entered
               if len(entered[q]) != len(comm_pids[comm]) or len(sigs[q]) > 1]
        stopped_in = "stopped in" in v["evidence"].get("text", "")
        if not bad and stopped_in and v["seq"] in entered:
            # a culprit stopped after its calls returned, its GPU work in
            # flight (frozen with the process): every rank entered that
            # round and the ones queued behind it; as for H3, the log
            # cannot say which of them the GPU was executing
            pass
        elif not bad:
            errs.append(f"the job's log shows no stuck round in comm {comm}")
        elif v["seq"] != min(bad):
            errs.append(f"seq {v['seq']}, expected the stuck round {min(bad)}")
    if a.attached_ns is not None:
        latency = (v["detected_ns"] - a.attached_ns) / 1e9
        if latency > a.stall + 2:
            errs.append(f"verdict {latency:.1f} s after the attach (limit {a.stall + 2})")
    else:
        latency = (v["detected_ns"] - v["onset_ns"]) / 1e9
        if latency > a.stall + 2:
            errs.append(f"verdict {latency:.1f} s after the last progress (limit {a.stall + 2})")
    for o in roots[1:]:
        if o["comm"] != comm and {c["pid"] for c in o["culprits"]} != got_pids:
            errs.append(f"a second root cause: {o}")
    def tiers(x):
        return set(x["evidence"].get("evidence_tiers", "").split(","))
    if a.no_proxy_kind:
        for o in verdicts:
            if kind_of(o["comm"]) == a.no_proxy_kind and tiers(o) & {"C", "E", ""}:
                errs.append(f"verdict on {a.no_proxy_kind} comm {o['comm']} rests on "
                            f"tiers {o['evidence'].get('evidence_tiers')}: proxy data "
                            f"attributed to an intra-node comm")
    rank_of = {p: r for r, p in pid_of.items()}
    for c in v["culprits"]:
        if "global_rank" in c and c["global_rank"] != rank_of.get(c["pid"]):
            errs.append(f"culprit pid {c['pid']}: global_rank {c['global_rank']}, "
                        f"the job's rank {rank_of.get(c['pid'])}")
        elif a.want_global_rank and "global_rank" not in c:
            errs.append(f"culprit pid {c['pid']}: no global_rank")
        if a.want_gpu and not (isinstance(c.get("cuda_dev"), int) and
                               re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]",
                                            c.get("gpu", ""))):
            errs.append(f"culprit pid {c['pid']}: no GPU (cuda_dev, gpu): {c}")
    # what the job's creation calls of the root's comm said of it
    made = [c for c in calls if c.get("comm") == comm and c.get("ret") == 0 and
            c["op"] in ("CommInitRank", "CommInitRankConfig", "CommSplit")]
    info = v.get("comm_info", {})
    names = {c.get("name") for c in made}
    colors = {c.get("color") for c in made if c["op"] == "CommSplit"}
    if "name" in info and {info["name"]} != names:
        errs.append(f"comm name {info['name']!r}, its creation calls gave {names}")
    if "split_color" in info and {info["split_color"]} != colors:
        errs.append(f"split color {info['split_color']}, its splits had {colors}")
    if a.want_comm_name:
        if "name" not in info or (colors and "split_color" not in info):
            errs.append(f"comm_info {info}: not the name {names} and color {colors} "
                        f"its creation calls gave")
    for want in a.evidence_has:
        want = want.replace("_", " ").replace("%TMP%", os.environ.get("TMP", ""))
        if want not in v["evidence"].get("text", ""):
            errs.append(f"root verdict's text does not say {want!r}")
    stack = re.search(r"\(stack: ([^)]*)\)", v["evidence"].get("text", ""))
    for fn in a.stack_has:
        if not stack or not re.search(r"(^| )" + re.escape(fn) + r"\+0x", stack.group(1)):
            errs.append(f"root verdict's text has no stack with {fn!r}: "
                        f"{stack.group(1) if stack else 'no stack'}")
    if a.want_proxy and not tiers(v) & {"C", "E"}:
        errs.append(f"root verdict rests on tiers {v['evidence'].get('evidence_tiers')}, "
                    f"expected proxy data (C or E)")
    if errs:
        print("verdict:", json.dumps(v))
        sys.exit("\n".join(errs))
    print(f"ok: {v['class']} comm {comm} ({kind_of(comm)}) seq {v['seq']} culprits "
          f"{sorted(got_pids)} after {latency:.1f} s: {v['evidence'].get('text', '')}")


if __name__ == "__main__":
    main()
