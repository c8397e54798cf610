#!/usr/bin/env python3
"""Lays out a stand-in job's files the way tests/gpu/workload.py writes a
real one, so that tests/gpu/check_gpu.py checks a ccld-simjob run too.

usage: gpu_standin_run.py PIDFILE CALLLOG_DIR RUNDIR
           [--fault sleep|size|compute --fault-rank R --fault-step S [--fault-steps N]]

Writes RUNDIR/pids (a copy), RUNDIR/calls.R.jsonl (the stand-in's call log
of rank R: its collective and p2p calls, each with its step; times are
CLOCK_MONOTONIC at the return, as the workload's) and, with --fault, the
fault.json that the workload's fault rank would have written.  A step ends
with the job's loss all-reduce (the comm of the 2-element all-reduces).
--fault-step S: the fault began when rank R ended step S-1 (ccld-simjob's
--hang R:S, --mismatch R:S:count, --slow R:S:F:N with --fault-steps N).
"""
import argparse
import json
import os
import sys

OPS = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "AlltoAll",
       "Gather", "Scatter", "Send", "Recv"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pidfile")
    ap.add_argument("logdir")
    ap.add_argument("rundir")
    ap.add_argument("--fault", choices=("sleep", "size", "compute"))
    ap.add_argument("--fault-rank", type=int)
    ap.add_argument("--fault-step", type=int)
    ap.add_argument("--fault-steps", type=int)
    a = ap.parse_args()
    os.makedirs(a.rundir, exist_ok=True)
    pid_of = {}
    for line in open(a.pidfile):
        r, p = line.split()
        pid_of[int(r)] = int(p)
    with open(os.path.join(a.rundir, "pids"), "w") as f:
        for r in sorted(pid_of):
            f.write(f"{r} {pid_of[r]}\n")
    logs = {}
    for r, p in pid_of.items():
        path = os.path.join(a.logdir, f"calls.{p}.jsonl")
        calls = [json.loads(x) for x in open(path) if x.strip()] if os.path.exists(path) else []
        logs[r] = [c for c in calls if c["op"] in OPS and c.get("comm")]
    # the loss all-reduce: 2 elements; its comm is the world's
    world = {c["comm"] for cs in logs.values() for c in cs
             if c["op"] == "AllReduce" and c["count"] == 2}
    ends = {}
    for r, cs in logs.items():
        step, ends[r] = 0, []
        with open(os.path.join(a.rundir, f"calls.{r}.jsonl"), "w") as f:
            for c in cs:
                c["step"] = step
                f.write(json.dumps(c) + "\n")
                if c["op"] == "AllReduce" and c["comm"] in world:
                    ends[r].append(c)
                    step += 1
    if not a.fault:
        return 0
    r, s = a.fault_rank, a.fault_step
    if len(ends[r]) < s:
        sys.exit(f"rank {r} never reached step {s}")
    fault = {"kind": a.fault, "rank": r, "pid": pid_of[r], "step": s,
             "t_ns": ends[r][s - 1]["t_ns"] if s else logs[r][0]["t_ns"]}
    if a.fault == "size":
        if len(ends[r]) <= s:
            sys.exit(f"rank {r} never called step {s}'s loss all-reduce")
        other = next(x for x in pid_of if x != r)
        fault.update(count=ends[r][s]["count"], normal_count=ends[other][s]["count"])
    elif a.fault == "compute" and a.fault_steps:
        e = s + a.fault_steps
        if len(ends[r]) >= e:
            fault.update(end_t_ns=ends[r][e - 1]["t_ns"], end_step=e)
    with open(os.path.join(a.rundir, "fault.json"), "w") as f:
        json.dump(fault, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
