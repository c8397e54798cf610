"""The comms a check expects its verdict on, written beside the trace as
expected-comms (one line, hashes separated by spaces) so that a failed
scenario's diagnosis (tests/lib.sh) can print the analyzer's debug lines on
them."""
import collections
import glob
import json
import os


def comm_members(logdir):
    """comm hash -> the pids that called on it, from the job's call logs."""
    members = collections.defaultdict(set)
    for path in glob.glob(os.path.join(logdir, "calls.*.jsonl")):
        with open(path) as f:
            for line in f:
                c = json.loads(line) if line.strip() else {}
                if c.get("comm") is not None and "pid" in c:
                    members[c["comm"]].add(c["pid"])
    return members


def write(trace, logdir, pids, keep=lambda comm: True):
    """Writes the comms that hold every pid of PIDS (and pass KEEP)."""
    pids = set(pids)
    comms = sorted(c for c, m in comm_members(logdir).items() if pids and pids <= m and keep(c))
    with open(os.path.join(os.path.dirname(os.path.abspath(trace)), "expected-comms"), "w") as f:
        f.write(" ".join(comms) + "\n")
