#!/usr/bin/env python3
"""What a failed scenario's diagnosis prints (tests/lib.sh _diagnose).

  verdict_lines.py JSONL                 one line per verdict or recovery:
                                         class, role, comm, its ranks, seq,
                                         culprits' global ranks, blocked_by,
                                         seconds from onset, evidence text
  verdict_lines.py --root-comms JSONL    the comms of the root verdicts
  verdict_lines.py --debug-at STALL DEBUG COMM...
                                         of an analyzer's CCLD_AN_DEBUG lines,
                                         the evaluation where a node of one
                                         of COMMS first stood as a root past
                                         STALL seconds: the picture behind
                                         that verdict (at most 120 lines)
"""
import json
import re
import sys


def records(path):
    for line in open(path):
        if not line.startswith("{"):
            continue
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("type") in ("verdict", "recovery"):
            yield r


def summary(r):
    cul = [c.get("global_rank", c.get("rank")) for c in r.get("culprits", [])]
    info = r.get("comm_info", {})
    blk = r.get("blocked_by") or {}
    age = (r.get("detected_ns", 0) - r.get("onset_ns", 0)) / 1e9
    text = (r.get("evidence") or {}).get("text", "")
    return (f"{r['type']} {r.get('class', '')} {r.get('role', '')} comm {r.get('comm')} "
            f"ranks {info.get('global_ranks', '?')} seq {r.get('seq')} culprits {cul} "
            f"blocked_by {blk.get('comm', '-')}:{blk.get('seq', '-')} after {age:.2f} s: "
            f"{text[:500]}")


def debug_at(stall, path, comms):
    """the evaluation blocks: gpu? lines open one, node lines end it"""
    blocks, cur, in_nodes = [], [], False
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        node = line.startswith("an: node ")
        if (line.startswith("an: gpu? ") and in_nodes) or (node and line.startswith("an: node 0 ") and in_nodes):
            blocks.append(cur)
            cur, in_nodes = [], False
        cur.append(line)
        in_nodes = in_nodes or node
    blocks.append(cur)
    pat = re.compile(r"^an: node \d+ comm ([0-9a-f]+) .* edge (-?\d+).* quiet ([0-9.]+)")
    for b in blocks:
        for line in b:
            m = pat.match(line)
            if m and m.group(1) in comms and m.group(2) == "-1" and float(m.group(3)) >= stall:
                for x in b[:120]:
                    print(x[:300])
                return


def main():
    a = sys.argv[1:]
    if a and a[0] == "--root-comms":
        for c in sorted({r["comm"] for r in records(a[1])
                         if r["type"] == "verdict" and r.get("role") == "root"}):
            print(c)
    elif a and a[0] == "--debug-at":
        debug_at(float(a[1]), a[2], set(a[3:]))
    elif len(a) == 1:
        for r in records(a[0]):
            print(summary(r))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
