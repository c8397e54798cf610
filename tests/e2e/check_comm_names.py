#!/usr/bin/env python3
"""Check the comm names ccld-trace read from creation calls against the truth.

usage: check_comm_names.py TRACE.jsonl CALLLOG_DIR

The stand-in logs each creation call (CommInitRank*, CommSplit) with the
name its config gave (ncclConfig_t.commName, "name"), or none.  Each such
call in the trace ("comm" records of the same pid, op and comm) must carry
the same name, or none where the call gave none; and at least one name must
have been seen, or the check would pass on a job that names nothing.
"""
import glob
import json
import sys

CREATE = ("CommInitRank", "CommInitRankConfig", "CommSplit")


def main():
    trace, logdir = sys.argv[1], sys.argv[2]
    truth = {}
    for path in glob.glob(f"{logdir}/calls.*.jsonl"):
        for line in open(path):
            r = json.loads(line)
            if r["op"] in CREATE and r.get("comm") and r["ret"] == 0:
                truth[(r["pid"], r["op"], r["comm"])] = r.get("name")
    bad, named, seen = [], 0, 0
    for line in open(trace):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r.get("type") != "comm" or r["op"] not in CREATE or r.get("ret") != 0:
            continue
        k = (r["pid"], r["op"], r["comm"])
        if k not in truth:
            bad.append(f"no such creation call in the job: {r}")
            continue
        seen += 1
        if r.get("name") != truth[k]:
            bad.append(f"{k}: name {r.get('name')!r}, the call gave {truth[k]!r}")
        named += r.get("name") is not None
    if seen != len(truth):
        bad.append(f"{seen} of the job's {len(truth)} creation calls traced")
    if not named:
        bad.append("no comm name seen")
    for b in bad:
        print(b)
    if not bad:
        print(f"ok: {named} comm names of {seen} creation calls as the job gave them")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
