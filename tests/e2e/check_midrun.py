#!/usr/bin/env python3
"""Check ccld-trace's "call" records of a job it attached to mid-run.

usage: check_midrun.py TRACE.jsonl CALLLOG_DIR --group PIDS@MONO_NS
           [--group PIDS@MONO_NS ..] [--min-before N]

Each --group names the processes one tracer attached to and the
CLOCK_MONOTONIC time (ns) by which it said "tracing".  The stand-in's call
log (CCLD_SIM_CALLLOG=DIR, one line per call at its return, with the
return's CLOCK_MONOTONIC "t_ns") is the truth.  For every process:

- the traced collective and p2p calls are, record for record (pid, comm,
  rank, nranks, op, count, dtype, redop, root, peer, ret, and NCCL's seq
  for collectives), a contiguous suffix of its call log: every call from
  some point on exactly once, nothing before it, nothing twice;
- that suffix holds every call that returned more than SLACK (1 s) after
  the group's time (a call that entered before the probes were in place
  may be missing only at the very start);
- at least --min-before calls (default 300) came before the suffix: the
  job really was mid-run;
- collectives carry "seq_source":"nccl" (NCCL's counter, equal on every
  rank), p2p calls "aligned" (counted from the attach, never "local",
  which would claim they are counted from the comm's creation), numbered
  0, 1, 2.. per (comm, peer, direction).

And the summary reports no drops.
"""
import argparse
import collections
import glob
import json
import os
import sys

COLL_OPS = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
            "AlltoAll", "Gather", "Scatter"}
P2P_OPS = {"Send", "Recv"}
SLACK_NS = 1_000_000_000


def key(rec):
    k = (rec["pid"], rec["comm"], rec["rank"], rec["nranks"], rec["op"],
         rec["count"], rec["dtype"], rec["redop"], rec["root"], rec["peer"],
         rec["ret"])
    return k + ((rec["seq"],) if rec["op"] in COLL_OPS else ())


def load_jsonl(path):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{n}: not JSON: {e}")
    return out


def check_pid(pid, truth, calls, t_attach, min_before):
    """Errors for one process; truth in log order."""
    errors = []
    got = collections.Counter(key(c) for c in calls)
    if not got:
        return [f"pid {pid}: no call traced"], 0
    # a contiguous suffix holds as many calls as were traced
    i = max(len(truth) - sum(got.values()), 0)
    want = collections.Counter(key(t) for t in truth[i:])
    missing, extra = want - got, got - want
    if missing or extra:
        errors.append(f"pid {pid}: the {sum(got.values())} traced calls are not"
                      f" the last {len(truth) - i} of its log of {len(truth)}:"
                      f" {sum(missing.values())} missing (e.g."
                      f" {list(missing.items())[:2]}), {sum(extra.values())}"
                      f" not in that suffix (e.g. {list(extra.items())[:2]})")
    late = [t for t in truth[:i] if t["t_ns"] > t_attach + SLACK_NS]
    if late:
        errors.append(f"pid {pid}: {len(late)} call(s) returned more than 1 s"
                      f" after the attach but are missing, first {late[0]}")
    if i < min_before:
        errors.append(f"pid {pid}: only {i} calls before the attach (want"
                      f" >= {min_before}): not a mid-run attach")
    return errors, i


def check_labels(calls):
    errors = []
    p2p = collections.defaultdict(list)
    for c in calls:
        if c["op"] in COLL_OPS and c.get("seq_source") != "nccl":
            errors.append(f"collective without NCCL's seq: {c}")
        if c["op"] in P2P_OPS:
            if c.get("seq_source") != "aligned":
                errors.append(f"p2p counted from the attach labelled"
                              f" {c.get('seq_source')!r}: {c}")
            p2p[(c["pid"], c["comm"], c["peer"], c["op"])].append(c["seq"])
    for k, seqs in p2p.items():
        if sorted(seqs) != list(range(len(seqs))):
            errors.append(f"p2p seqs of {k} are not 0..{len(seqs) - 1}:"
                          f" {sorted(seqs)[:8]}..")
    return errors[:10]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("logdir")
    ap.add_argument("--group", action="append", required=True)
    ap.add_argument("--min-before", type=int, default=300)
    a = ap.parse_args()

    trace = load_jsonl(a.trace)
    calls = [r for r in trace if r.get("type") == "call"]
    summaries = [r for r in trace if r.get("type") == "summary"]
    errors = []
    total = skipped = 0
    for g in a.group:
        pids, _, t = g.partition("@")
        for pid in (int(p) for p in pids.split(",")):
            path = os.path.join(a.logdir, f"calls.{pid}.jsonl")
            if not glob.glob(path):
                errors.append(f"no call log {path}")
                continue
            truth = [r for r in load_jsonl(path) if r["op"] in COLL_OPS | P2P_OPS]
            mine = [c for c in calls if c["pid"] == pid]
            e, before = check_pid(pid, truth, mine, int(t), a.min_before)
            errors += e
            total += len(mine)
            skipped += before
    errors += check_labels(calls)
    if not summaries:
        errors.append("no summary line")
    elif any(s.get("dropped", -1) != 0 for s in summaries):
        errors.append(f"drops reported: {summaries}")
    if errors:
        print("\n".join(errors[:20]))
        sys.exit(1)
    print(f"ok: {total} calls after the attach, each exactly once, none"
          f" missing ({skipped} before it); seqs and labels right")


if __name__ == "__main__":
    main()
