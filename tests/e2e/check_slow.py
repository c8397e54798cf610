#!/usr/bin/env python3
"""Check ccld-trace's slow verdicts for a stand-in job against the fault.

usage: check_slow.py TRACE.jsonl PIDFILE --class S1 --culprits R[,R..]
           --onset STEP [--until STEP] [--within N]
       check_slow.py TRACE.jsonl PIDFILE --no-verdict

The first slow root verdict must have the class and culprit set (world
ranks, mapped to pids through PIDFILE's "RANK PID" lines).  On the world
communicator (one loss all-reduce per step, so its seq is the step) the
first slow verdict must come at most --within (3) steps after --onset, and
with --until (the first step back to normal) a recovery record must come at
most --within + 1 steps after it (the third clean iteration is known when
the next one starts).  No hang verdict may appear.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("pidfile")
    ap.add_argument("--class", dest="cls")
    ap.add_argument("--culprits", default="")
    ap.add_argument("--onset", type=int)
    ap.add_argument("--until", type=int)
    ap.add_argument("--within", type=int, default=3)
    ap.add_argument("--no-verdict", action="store_true")
    a = ap.parse_args()

    recs = [json.loads(l) for l in open(a.trace) if l.strip()]
    verdicts = [r for r in recs if r.get("type") in ("verdict", "recovery")]
    if a.no_verdict:
        if verdicts:
            sys.exit(f"false verdict(s): {verdicts[:3]}")
        print("ok: no verdict")
        return
    hangs = [v for v in verdicts if v["class"].startswith("H")]
    if hangs:
        sys.exit(f"hang verdict in a slow scenario: {hangs[0]}")
    pid_of = {}
    for line in open(a.pidfile):
        r, p = line.split()
        pid_of[int(r)] = int(p)
    roots = [v for v in verdicts if v["type"] == "verdict" and v.get("role") == "root"]
    if not roots:
        sys.exit("no slow root verdict")
    v = roots[0]
    print("verdict:", json.dumps(v)[:400])
    want = sorted(pid_of[int(r)] for r in a.culprits.split(","))
    got = sorted(c["pid"] for c in v["culprits"])
    bad = []
    if v["class"] != a.cls:
        bad.append(f"class {v['class']}, expected {a.cls}")
    if got != want:
        bad.append(f"culprit pids {got}, expected {want} (ranks {a.culprits})")
    # the world comm (all 8 ranks): its loss all-reduce's seq is the step
    first_world = None
    for x in verdicts:
        if x["type"] == "verdict" and not x.get("update") and \
                x["evidence"].get("nranks") == 8:
            first_world = x
            break
    if first_world is None:
        bad.append("no verdict on the world communicator")
    elif a.onset is not None and first_world["seq"] > a.onset + a.within:
        bad.append(f"world verdict at step {first_world['seq']}, onset {a.onset}: "
                   f"more than {a.within} iterations")
    elif a.onset is not None:
        print(f"ok: world comm verdict at step {first_world['seq']} (onset {a.onset})")
    if a.until is not None and first_world is not None:
        rec = [x for x in verdicts if x["type"] == "recovery" and x["comm"] == first_world["comm"]]
        if not rec:
            bad.append("no recovery on the world communicator")
        elif rec[0]["seq"] > a.until + a.within + 1:
            bad.append(f"recovery at step {rec[0]['seq']}, back to normal at {a.until}")
        else:
            print(f"ok: recovery at step {rec[0]['seq']} (normal from {a.until})")
    if bad:
        print("\n".join(bad))
        sys.exit(1)
    print(f"ok: {v['class']} culprits {got}: {v['evidence']['text'][:200]}")


if __name__ == "__main__":
    main()
