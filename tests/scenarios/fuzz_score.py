#!/usr/bin/env python3
"""Score ccld-trace's verdicts on a random job against its drawn fault.

usage: fuzz_score.py DRAW.json TRACE.jsonl PIDFILE CALLLOG_DIR
           --attach-ns MONO_NS REAL_NS --stall SEC [--commit C]
       fuzz_score.py --table RESULTS.tsv
       fuzz_score.py --onset CALLLOG_DIR

The first form prints one tab-separated line: seed, class, fault, job,
attach, outcome, latency in seconds, detail, commit.  The outcome:

  right         the first root verdict after the fault has the fault's class
                and names exactly the culprit rank's process
  undetermined  that verdict has the class and lists the culprit among
                others (it says it cannot tell which)
  wrong         another class, or culprits without the culprit
  silent        no root verdict; for a hang also one that came later than
                the stall threshold + 2 s after the job stopped moving (its
                last call, or the attach if later)
  false         a verdict on a job without a fault, or before the fault
  no-effect     a slowdown with no root verdict, where the fault did not
                slow the job: the culprit's calls per second 1-4 s after the
                onset were 90% or more of those in the 3 s before it (a
                fault that costs nothing is not a slowdown to diagnose;
                both windows after the attach, or both before it)
  invalid       the fault never took effect (the harness's failure)

Latency counts from the fault's onset, or from the attach when ccld came
later.  The call logs count in CLOCK_MONOTONIC, the verdicts in wall-clock
time: the attach time in both converts them.  The second form prints the
accuracy table per class (markdown); the third the fault's onset (ns,
CLOCK_MONOTONIC) once it has come, nothing before (the runner waits for it).
"""
import argparse
import collections
import glob
import json
import os
import sys
import time


def load_jsonl(path):
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def onset_ns(logdir, reached_by=None):
    """The monotonic time the drawn fault took effect: the rank's marker, or
    the stand-in's Fault line (written at init with the time to come);
    with REACHED_BY (ns) None while that time is still ahead."""
    for p in glob.glob(os.path.join(logdir, "appfault.*.json")):
        return json.load(open(p))["t_ns"]
    for p in glob.glob(os.path.join(logdir, "calls.*.jsonl")):
        for c in load_jsonl(p):
            if c.get("op") == "Fault":
                t = c["fault_at_ns"]
                return None if reached_by is not None and t > reached_by else t
    return None


def last_progress_ns(logdir):
    last = 0
    for p in glob.glob(os.path.join(logdir, "calls.*.jsonl")):
        for c in load_jsonl(p):
            if c.get("op") != "Fault":
                last = max(last, c.get("t_ns", 0))
    return last


def pace(logdir, pid, onset, attach):
    """PID's calls per second in the 3 s before ONSET and 1-4 s after it
    (None where its log has no calls in a window, or no window is left).
    Both windows lie on one side of the ATTACH: the probes cost each call
    some microseconds, so a window before it and one after it differ by
    the tracer's own cost (random job 207's 8 ranks: 340 calls/s in the
    2 s before the attach, 293 after it, 14% less with no fault yet)."""
    ts = [c["t_ns"] for c in load_jsonl(os.path.join(logdir, "calls.%d.jsonl" % pid))
          if c.get("op") != "Fault" and "t_ns" in c]
    lo0, hi0, lo1, hi1 = onset - 3e9, onset, onset + 1e9, onset + 4e9
    if attach <= onset:
        lo0 = max(lo0, attach)
    else:
        hi1 = min(hi1, attach)

    def rate(lo, hi):
        n = sum(1 for t in ts if lo <= t < hi)
        return n / ((hi - lo) / 1e9) if n and hi - lo >= 1e9 else None
    return rate(lo0, hi0), rate(lo1, hi1)


def score(a):
    d = json.load(open(a.draw))
    pid_of = {}
    for line in open(a.pidfile):
        r, p = line.split()
        pid_of[int(r)] = int(p)
    verdicts = [v for v in load_jsonl(a.trace) if v.get("type") == "verdict"]
    for v in verdicts:
        v["detected_ns"] -= a.wall_off  # to the call logs' clock
    roots = [v for v in verdicts if v.get("role") == "root"]
    job = "%s %dr tp%d pp%d dp%d%s" % (d["pattern"], d["ranks"], d["tp"], d["pp"], d["dp"],
                                       " h%d" % d["ranks_per_host"] if d["ranks_per_host"]
                                       else "")
    fault = d["fault"] + (":" + d["which"] if d["which"] else "")
    if d["fault"] == "none":
        out, lat, detail = "right", "", "no verdict"
        if verdicts:
            v = verdicts[0]
            out, detail = "false", "%s %s naming pids %s" % (
                v["class"], v.get("role"), [c["pid"] for c in v.get("culprits", [])])
        return d, fault, job, out, lat, detail
    on = onset_ns(a.logdir)
    if on is None:
        return d, fault, job, "invalid", "", "the fault never took effect"
    want = pid_of[d["culprit"]]
    ref = max(on, a.attach_ns)
    pre = [v for v in roots if v["detected_ns"] < on]
    if pre:
        v = pre[0]
        return d, fault, job, "false", "", "%s root %.1f s before the fault" % (
            v["class"], (on - v["detected_ns"]) / 1e9)
    if not roots:
        if d["class"].startswith("S"):
            before, after = pace(a.logdir, want, on, a.attach_ns)
            if before and after and after >= 0.9 * before:
                return d, fault, job, "no-effect", "", (
                    "no root verdict; the job's pace did not change: %.0f calls/s"
                    " before the fault, %.0f after" % (before, after))
        return d, fault, job, "silent", "", "no root verdict (%d cascades)" % len(verdicts)
    v = roots[0]
    lat = (v["detected_ns"] - ref) / 1e9
    got = {c["pid"] for c in v.get("culprits", [])}
    named = "%s naming %s" % (v["class"], ",".join(
        "r%d" % r for r, p in sorted(pid_of.items()) if p in got) or "nobody")
    if d["class"].startswith("H"):
        due = max(last_progress_ns(a.logdir), a.attach_ns) + (a.stall + 2) * 1e9
        if v["detected_ns"] > due:
            return d, fault, job, "silent", "%.2f" % lat, "late by %.1f s: %s" % (
                (v["detected_ns"] - due) / 1e9, named)
    if v["class"] != d["class"]:
        return d, fault, job, "wrong", "%.2f" % lat, named
    if got == {want}:
        return d, fault, job, "right", "%.2f" % lat, named
    if want in got:
        return d, fault, job, "undetermined", "%.2f" % lat, named
    return d, fault, job, "wrong", "%.2f" % lat, named


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def table(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    outcomes = ["right", "undetermined", "wrong", "silent", "false", "no-effect", "invalid"]
    by = collections.defaultdict(lambda: collections.Counter())
    lat = collections.defaultdict(list)
    commits = sorted({r[8] for r in rows if len(r) > 8})
    for r in rows:
        by[r[1]][r[5]] += 1
        by["all"][r[5]] += 1
        if r[5] == "right" and r[6]:
            lat[r[1]].append(float(r[6]))
            lat["all"].append(float(r[6]))
    print("\n%d seeds (%s) on %s\n" % (len(rows), ", ".join(sorted({r[0] for r in rows},
                                                                   key=int)[:3]) + (
        ", ..." if len(rows) > 3 else ""), ", ".join(commits)))
    print("| class | seeds | " + " | ".join(outcomes) + " | right % | latency p50 / p90 (s) |")
    print("|---|---:|" + "---:|" * len(outcomes) + "---:|---|")
    for cls in sorted(by, key=lambda c: (c == "all", c)):
        c = by[cls]
        n = sum(c.values())
        ls = lat.get(cls, [])
        # a fault that did not take effect, or cost nothing, tests nothing
        judged = n - c["no-effect"] - c["invalid"]
        print("| %s | %d | %s | %s | %s |" % (
            cls, n, " | ".join(str(c[o]) for o in outcomes),
            "%.0f" % (100.0 * c["right"] / judged) if judged else "-",
            "%.2f / %.2f" % (pct(ls, 0.5), pct(ls, 0.9)) if ls else "-"))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        table(sys.argv[2])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--onset":
        t = onset_ns(sys.argv[2], time.monotonic_ns())
        if t is not None:
            print(t)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("draw")
    ap.add_argument("trace")
    ap.add_argument("pidfile")
    ap.add_argument("logdir")
    ap.add_argument("--attach-ns", type=int, nargs=2, required=True)
    ap.add_argument("--stall", type=float, required=True)
    ap.add_argument("--commit", default="?")
    a = ap.parse_args()
    a.wall_off = a.attach_ns[1] - a.attach_ns[0]
    a.attach_ns = a.attach_ns[0]
    d, fault, job, out, lat, detail = score(a)
    print("\t".join(str(x) for x in (d["seed"], d["class"], fault, job, d["attach"] + (
        " zombie" if d["zombie"] else ""), out, lat, detail, a.commit)))


if __name__ == "__main__":
    main()
