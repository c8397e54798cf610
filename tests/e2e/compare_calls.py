#!/usr/bin/env python3
"""Compare ccld-trace's "call" JSON lines with the stand-in's ground-truth logs.

usage: compare_calls.py TRACE.jsonl CALLLOG_DIR [--pids P,P] [--no-dwarf]

The stand-in library (CCLD_SIM_CALLLOG=DIR) writes one JSON line per API call
into DIR/calls.<pid>.jsonl.  Every collective and p2p call there must appear
exactly once in the trace with the same pid, comm hash, rank, nranks, op,
count, dtype, redop, root, peer and return code (and seq for collectives),
and the trace must hold nothing else.  Also checks that seq is equal across
ranks for the same collective (same comm, same seq => same signature) and
that the summary reports zero drops.

--no-dwarf: the library had no DWARF, so ccld identified communicators from
their init calls: its comm ids must map one to one onto NCCL's commHash,
rank/nranks must be right wherever ccld gives them (not -1), and they must
be given for every communicator made by ncclCommInitRank*.
"""
import collections
import glob
import json
import os
import sys

COLL_OPS = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
            "AlltoAll", "Gather", "Scatter"}
P2P_OPS = {"Send", "Recv"}


def key(rec, with_seq):
    k = (rec["pid"], rec["comm"], rec["rank"], rec["nranks"], rec["op"],
         rec["count"], rec["dtype"], rec["redop"], rec["root"], rec["peer"],
         rec["ret"])
    return k + ((rec["seq"],) if with_seq else ())


def translate_ids(truth, calls, trace):
    """Maps ccld's comm ids onto NCCL's; fills rank/nranks ccld could not know."""
    errors = []
    by_call = {}
    for r in truth:
        by_call.setdefault((r["pid"], r["tid"], r["op"], r["count"], r["seq"]
                            if r["op"] in COLL_OPS else None), []).append(r)
    id_map, back = {}, {}
    for c in calls:
        k = (c["pid"], c["tid"], c["op"], c["count"], c["seq"] if c["op"] in COLL_OPS else None)
        cands = by_call.get(k) or []
        if not cands:
            continue
        t = cands[0]
        if id_map.setdefault(c["comm"], t["comm"]) != t["comm"]:
            errors.append(f"ccld comm {c['comm']} stands for two NCCL comms")
        if back.setdefault(t["comm"], c["comm"]) != c["comm"]:
            errors.append(f"NCCL comm {t['comm']} got two ccld ids")
        for f in ("rank", "nranks"):
            if c[f] != -1 and c[f] != t[f]:
                errors.append(f"{f} {c[f]} for {t}")
        c["comm"] = t["comm"]
        c["rank"], c["nranks"] = t["rank"], t["nranks"]
    for r in [r for r in trace if r.get("type") == "comm" and r["op"].startswith("CommInitRank")]:
        if r["rank"] < 0:
            errors.append(f"init call without rank: {r}")
    return errors[:10]


def load_jsonl(path):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: not JSON: {e}")
    return out


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    trace_path, logdir = args[0], args[1]
    pids = None
    if "--pids" in args:
        pids = {int(p) for p in args[args.index("--pids") + 1].split(",")}
    trace = load_jsonl(trace_path)
    truth = []
    for path in sorted(glob.glob(os.path.join(logdir, "calls.*.jsonl"))):
        truth += load_jsonl(path)
    truth = [r for r in truth if r["op"] in COLL_OPS | P2P_OPS]
    if pids is not None:
        truth = [r for r in truth if r["pid"] in pids]
    calls = [r for r in trace if r.get("type") == "call"]
    summaries = [r for r in trace if r.get("type") == "summary"]
    errors = []

    for r in trace:
        if r.get("schema") != 1:
            errors.append(f"record without schema 1: {r}")
            break
    if not truth:
        errors.append("ground-truth log is empty")
    if "--no-dwarf" in args:
        calls = [r for r in trace if r.get("type") == "call"]
        errors += translate_ids(truth, calls, trace)
    want = collections.Counter(key(r, r["op"] in COLL_OPS) for r in truth)
    got = collections.Counter(key(r, r["op"] in COLL_OPS) for r in calls)
    missing = want - got
    extra = got - want
    for k, n in list(missing.items())[:10]:
        errors.append(f"missing {n}x: {k}")
    for k, n in list(extra.items())[:10]:
        errors.append(f"unexpected {n}x: {k}")
    if missing or extra:
        errors.append(f"{sum(missing.values())} missing, "
                      f"{sum(extra.values())} unexpected of {len(truth)} calls")

    # same (comm, seq) => same op signature on every rank
    sig = {}
    for r in calls:
        if r["op"] not in COLL_OPS:
            continue
        s = (r["op"], r["count"], r["dtype"], r["redop"], r["root"])
        k = (r["comm"], r["seq"])
        if sig.setdefault(k, s) != s:
            errors.append(f"seq {k} has two signatures: {sig[k]} vs {s}")
            break
    if not summaries:
        errors.append("no summary line")
    elif summaries[-1].get("dropped", -1) != 0:
        errors.append(f"drops reported: {summaries[-1]}")

    if errors:
        print("\n".join(errors))
        sys.exit(1)
    print(f"ok: {len(truth)} calls matched record for record "
          f"({len(set(r['comm'] for r in calls))} communicators, "
          f"{len(set(r['pid'] for r in calls))} processes)")


if __name__ == "__main__":
    main()
