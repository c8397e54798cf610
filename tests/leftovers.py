#!/usr/bin/env python3
"""What a test or scenario left behind, for tests/run.sh and tests/lib.sh.

  leftovers.py [--tag ID] [--exe-under DIR] [--bpf] [--kill] [--wait S]

Prints one line per leftover and exits 1 if there is any, 0 if none:
  --tag ID        processes whose environment has CCLD_TEST_RUN=ID (every
                  process a test started inherits it from tests/run.sh)
  --exe-under DIR processes whose executable lies under DIR (ccld-trace,
                  ccld-analyzer, the stand-in job and its ranks)
  --bpf           ccld's BPF programs still loaded, and uprobes or kprobes
                  (perf events or uprobe_multi links) that run one of them
                  (bpftool); a ccld program is one whose
                  name is a program of build/bpf/*.bpf.o
  --kill          SIGKILL the leftover processes before reporting them
  --wait S        look again every 0.1 s for up to S seconds until nothing is
                  left (processes take a moment to exit and free their BPF)
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the kernel keeps BPF_OBJ_NAME_LEN - 1 characters of a program's name
PROG_NAME_LEN = 15


def ccld_prog_names():
    """The names of the programs in ccld's BPF objects, as the kernel keeps them."""
    names = set()
    bpf_dir = os.path.join(TOP, "build", "bpf")
    objs = [os.path.join(bpf_dir, f) for f in sorted(os.listdir(bpf_dir))
            if f.endswith(".bpf.o")] if os.path.isdir(bpf_dir) else []
    if not objs:
        return names
    out = subprocess.run(["readelf", "-sW"] + objs, capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name: a program is a global function
        if len(f) >= 8 and f[3] == "FUNC" and f[4] == "GLOBAL":
            names.add(f[7][:PROG_NAME_LEN])
    return names


def bpftool_json(*args):
    r = subprocess.run(["bpftool", "-j"] + list(args), capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        return []
    return json.loads(r.stdout)


def proc_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def leftover_processes(tag, exe_under):
    found = []
    me = os.getpid()
    want = f"CCLD_TEST_RUN={tag}".encode() if tag else None
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        pid = int(d)
        why = None
        if want is not None:
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if want in f.read().split(b"\0"):
                        why = "started by the test"
            except OSError:
                pass
        if why is None and exe_under:
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                exe = ""
            if any(exe.startswith(d.rstrip("/") + "/") for d in exe_under):
                why = "a ccld or stand-in program"
        if why:
            found.append((pid, why))
    return found


def leftover_bpf():
    names = ccld_prog_names()
    progs = {p["id"]: p for p in bpftool_json("prog", "show")
             if p.get("name", "")[:PROG_NAME_LEN] in names}
    lines = []
    for p in progs.values():
        holders = ",".join(f"{h.get('comm', '?')}/{h.get('pid', '?')}"
                           for h in p.get("pids", []))
        lines.append(f"BPF program {p['name']} (id {p['id']})"
                     + (f" held by {holders}" if holders else ""))
    for e in bpftool_json("perf", "show"):
        if e.get("prog_id") in progs:
            where = e.get("filename") or e.get("func") or e.get("tracepoint") or "?"
            lines.append(f"{e.get('fd_type', 'probe')} on {where} running {progs[e['prog_id']]['name']}"
                         f" (pid {e.get('pid', '?')})")
    # uprobe_multi links are links, not perf events (bpftool 7.1 calls
    # their type 12)
    for l in bpftool_json("link", "show"):
        if l.get("prog_id") in progs and l.get("type") not in ("perf_event", "raw_tracepoint"):
            lines.append(f"link {l.get('id')} (type {l.get('type')}) running "
                         f"{progs[l['prog_id']]['name']}")
    return lines


def survey(args, kill):
    lines = []
    for pid, why in leftover_processes(args.tag, args.exe_under):
        lines.append(f"process {pid} ({why}): {proc_cmdline(pid)[:200]}")
        if kill:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    if args.bpf:
        lines += leftover_bpf()
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tag")
    ap.add_argument("--exe-under", action="append", default=[])
    ap.add_argument("--bpf", action="store_true")
    ap.add_argument("--kill", action="store_true")
    ap.add_argument("--wait", type=float, default=0)
    args = ap.parse_args()
    deadline = time.monotonic() + args.wait
    while True:
        lines = survey(args, kill=False)
        if not lines or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    if lines and args.kill:
        survey(args, kill=True)
    for line in lines:
        print(line)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
