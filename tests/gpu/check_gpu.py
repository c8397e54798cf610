#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Checks one scenario of ccld's real-GPU acceptance run against what the
job itself logged, and writes the results (docs/gpu.md).

usage: check_gpu.py check SCENARIO RUNDIR [--stall SEC] [--max-overhead PCT]
       check_gpu.py report --env ENV.json --out RESULTS.md RUNDIR..

SCENARIO: healthy, sleep (H1), size (H2) or compute (S1).  RUNDIR holds
the job's files (tests/gpu/workload.py: pids, calls.R.jsonl, steps.R.jsonl,
fault.json; the stand-in's logs converted by tests/e2e/gpu_standin_run.py
look the same) and ccld-trace's: trace.jsonl (--json --events), trace.err,
run.ccld (-o), replay.jsonl (`replay run.ccld --json`), tracer.env
(started_rt_ns: ccld-trace started, attached_rt_ns: it said "tracing",
detached_rt_ns: it was stopped, all CLOCK_REALTIME ns; tracer_cpu_s).

Times: the job logs CLOCK_MONOTONIC ns; ccld's JSON t_ns is its monotonic
probe time plus the realtime offset written in run.ccld's header, which is
subtracted here, so the two are compared on one clock.

`check` prints one PASS/FAIL/INFO line per check, writes RUNDIR/checks.json
and exits 1 when a check failed.  `report` writes the markdown fragment for
docs/numbers.md from every RUNDIR's checks.json and ENV.json.
"""
import argparse
import bisect
import collections
import json
import os
import re
import statistics
import struct
import sys
import zlib

COLL_OPS = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
            "AlltoAll", "Gather", "Scatter"}
P2P_OPS = {"Send", "Recv"}
CHECKED_OPS = ("AllReduce", "AllGather", "ReduceScatter", "Send", "Recv")

# docs/formats.md section 2
EV_CALL, EV_CUDA, EV_PROXY = 1, 7, 9
FN_CUDA_EVENT_RECORD, FN_CUDA_EVENT_QUERY, FN_CUDA_EVENT_SYNC = 23, 24, 25
FN_CUDA_STREAM_SYNC, FN_CUDA_STREAM_QUERY = 26, 27
FN_PROXY_FIRST, FN_PROXY_SNAPSHOT = 28, 35
F_IDENT, F_PROXY_RECV, F_PROXY_DIR = 1, 1 << 5, 1 << 6


# ------------------------------------------------------------------ inputs

def read_capture(path):
    """A .ccld file (docs/formats.md section 1): the header's realtime
    offset and the records of the types asked for, as dicts."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"CCLDCAP\0":
        raise ValueError(f"{path}: not a ccld capture file")
    (ver, hlen, evsize, abi) = struct.unpack_from("<HHHB", data, 8)
    if ver != 1 or evsize != 128:
        raise ValueError(f"{path}: capture version {ver}, record size {evsize}")
    (offset,) = struct.unpack_from("<q", data, 16)
    recs = []
    pos = hlen
    while pos + 32 <= len(data):
        if data[pos:pos + 8] != b"CCLDBLK\0":
            raise ValueError(f"{path}: no block at offset {pos}")
        btype, _codec, count, clen, rlen = struct.unpack_from("<HHIII", data, pos + 8)
        payload = data[pos + 32:pos + 32 + clen]
        pos += 32 + clen
        if len(payload) < clen:
            break  # cut short: a tracer killed mid-write
        if btype != 1:
            continue
        raw = zlib.decompress(payload)
        for i in range(count):
            ev = raw[i * 128:(i + 1) * 128]
            etype, _v, fn, flags, pid, tid, ts, comm, hsh, rank, nranks, seq = \
                struct.unpack_from("<HBBIIIQQQiiQ", ev, 0)
            r = {"type": etype, "fn": fn, "flags": flags, "pid": pid, "tid": tid,
                 "ts": ts, "comm": comm, "hash": hsh, "rank": rank, "nranks": nranks}
            if etype == EV_CUDA:
                r["event"], r["stream"], r["ret"] = struct.unpack_from("<QQq", ev, 56)
            elif etype == EV_PROXY:
                (r["op_count"], r["progress"], r["nbytes"], r["posted"], r["transmitted"],
                 r["received"], r["done"], r["nsteps"], r["peer"], r["sub_rank"],
                 r["step"], r["channel"]) = struct.unpack_from("<QQQIIIIIiiiH", ev, 56)
            elif etype != EV_CALL:
                continue
            recs.append(r)
    return offset, recs


def load_jsonl(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line cut by a kill
    return out


def load_env(path):
    env = {}
    if os.path.exists(path):
        for line in open(path):
            k, _, v = line.strip().partition("=")
            if k:
                env[k] = v
    return env


class Run:
    def __init__(self, d):
        self.dir = d
        self.pid_of = {}
        for line in open(os.path.join(d, "pids")):
            r, p = line.split()
            self.pid_of[int(r)] = int(p)
        self.rank_of = {p: r for r, p in self.pid_of.items()}
        self.calls = {r: sorted(load_jsonl(os.path.join(d, f"calls.{r}.jsonl")),
                                key=lambda c: c["t_ns"]) for r in self.pid_of}
        self.steps = {r: load_jsonl(os.path.join(d, f"steps.{r}.jsonl")) for r in self.pid_of}
        fp = os.path.join(d, "fault.json")
        self.fault = json.load(open(fp)) if os.path.exists(fp) else None
        self.trace = load_jsonl(os.path.join(d, "trace.jsonl"))
        self.err = open(os.path.join(d, "trace.err")).read() \
            if os.path.exists(os.path.join(d, "trace.err")) else ""
        self.env = load_env(os.path.join(d, "tracer.env"))
        self.offset, self.recs = read_capture(os.path.join(d, "run.ccld"))
        self.tcalls = sorted((r for r in self.trace if r.get("type") == "call"),
                             key=lambda c: c["t_ns"])
        for c in self.tcalls:
            c["mono"] = c["t_ns"] - self.offset
        self.verdicts = [r for r in self.trace if r.get("type") in ("verdict", "recovery")]

    def mono(self, rt_ns):
        return rt_ns - self.offset

    def env_mono(self, key):
        v = self.env.get(key)
        return self.mono(int(v)) if v else None


# ------------------------------------------------------------------ checks

class Checks:
    def __init__(self):
        self.items = []

    def add(self, name, ok, detail, required=True):
        self.items.append({"check": name, "ok": bool(ok), "detail": detail,
                           "required": required})
        tag = ("PASS" if ok else "FAIL") if required else "INFO"
        print(f"{tag} {name}: {detail}")

    def info(self, name, detail):
        self.add(name, True, detail, required=False)


def sig_of(c):
    return (c["op"], c.get("count"), c.get("dtype"), c.get("redop"), c.get("root"),
            c.get("peer"))


def checked_range(run):
    """[start, end] in monotonic ns where every traced process's every
    call must be in the trace: from 1 s after the first traced call (the
    probes attach one by one) to 0.5 s before the last one, or before the
    fault."""
    if not run.tcalls:
        return None
    start = run.tcalls[0]["mono"] + 1_000_000_000
    end = run.tcalls[-1]["mono"] - 500_000_000
    if run.fault:
        end = min(end, run.fault["t_ns"] - 1)
    return (start, end) if end > start else None


def check_calls(run, ck):
    """Every logged call in the range appears once in the trace with its
    arguments, and the trace holds no other call there."""
    rng = checked_range(run)
    if not rng:
        ck.add("calls", False, "no traced call, or too short a trace to check")
        return None
    start, end = rng
    bad, n_ok, per_op = [], 0, collections.Counter()
    checked = []
    for r, pid in run.pid_of.items():
        logged = [c for c in run.calls[r] if c["op"] in COLL_OPS | P2P_OPS]
        traced = [c for c in run.tcalls if c["pid"] == pid]
        tmono = [c["mono"] for c in traced]
        # windows (t of the previous return, t of this return]: the call
        # entered NCCL after the one before returned (one thread per rank);
        # calls logged with one time (a batch) share a window
        groups = []
        for c in logged:
            if groups and groups[-1][0] == c["t_ns"]:
                groups[-1][1].append(c)
            else:
                groups.append((c["t_ns"], [c]))
        covered = []
        for i in range(1, len(groups)):
            lo, hi = groups[i - 1][0], groups[i][0]
            if lo < start or hi > end:
                continue
            a, b = bisect.bisect_right(tmono, lo), bisect.bisect_right(tmono, hi)
            covered.append((lo, hi))
            want = groups[i][1]
            got = traced[a:b]
            # the communicator's rank where the job's log knows it
            with_rank = all(w.get("rank") is not None for w in want)

            def key(c):
                return (sig_of(c),) + ((c.get("rank"), c.get("nranks")) if with_rank else ())
            ws, gs = sorted(map(key, want)), sorted(map(key, got))
            if ws != gs:
                bad.append(f"rank {r} step {want[0].get('step')}: logged {ws}, traced {gs}")
                continue
            rets = [c.get("ret") for c in got]
            if any(x != 0 for x in rets):
                bad.append(f"rank {r} step {want[0].get('step')}: return codes {rets}")
                continue
            n_ok += len(want)
            for c in got:
                per_op[c["op"]] += 1
                checked.append(c)
        if not covered:
            bad.append(f"rank {r}: no logged call inside the checked range")
    missing_ops = [op for op in CHECKED_OPS if not per_op[op]]
    ok = not bad and not missing_ops and n_ok > 0
    detail = (f"{n_ok} calls of {len(run.pid_of)} ranks matched record for record over "
              f"{(end - start) / 1e9:.1f} s (" +
              ", ".join(f"{op} {per_op[op]}" for op in CHECKED_OPS) + ")")
    if missing_ops:
        detail += f"; never seen: {missing_ops}"
    if bad:
        detail += f"; {len(bad)} mismatches, first: " + "; ".join(bad[:3])
    ck.add("calls", ok, detail)
    return checked


def check_seqs(run, ck, checked):
    """Collectives: NCCL's own seq, equal on every rank for the same
    collective (same signature), no gaps; p2p: rank a's n-th send to b
    pairs with b's n-th receive from a under the same seq."""
    if not checked:
        ck.add("collective seqs", False, "no checked call")
        ck.add("p2p seqs", False, "no checked call")
        return
    colls = [c for c in checked if c["op"] in COLL_OPS]
    sources = collections.Counter(c.get("seq_source") for c in colls)
    members = collections.defaultdict(set)
    for c in run.tcalls:
        if c.get("comm"):
            members[c["comm"]].add(c["pid"])
    by_key = collections.defaultdict(list)
    for c in run.tcalls:
        if c["op"] in COLL_OPS:
            by_key[(c["comm"], c["seq"])].append(c)
    bad = []
    for c in colls:
        others = by_key[(c["comm"], c["seq"])]
        pids = {o["pid"] for o in others}
        if pids != members[c["comm"]]:
            bad.append(f"comm {c['comm']} seq {c['seq']} ({c['op']}) traced on pids "
                       f"{sorted(pids)} of {sorted(members[c['comm']])}")
        elif len({sig_of(o) for o in others}) != 1 or len(others) != len(pids):
            bad.append(f"comm {c['comm']} seq {c['seq']}: "
                       f"{[(o['pid'], sig_of(o)) for o in others]}")
    gaps = 0
    per = collections.defaultdict(list)
    for c in colls:
        per[(c["pid"], c["comm"])].append(c["seq"])
    for seqs in per.values():
        seqs.sort()
        gaps += sum(1 for x, y in zip(seqs, seqs[1:]) if y != x + 1)
    ok = not bad and not gaps and set(sources) == {"nccl"}
    detail = (f"{len(colls)} collectives in {len(per)} (process, comm) series; seq_source "
              f"{dict(sources)}; {gaps} gaps")
    if bad:
        detail += f"; {len(bad)} unequal, first: " + "; ".join(bad[:3])
    ck.add("collective seqs", ok, detail)

    # p2p: (comm, sender rank, receiver rank, seq) of both sides.  NCCL
    # keeps no p2p counter: ccld counts from the comm's creation ("local",
    # then equal on both sides) or from the attach ("aligned": each side
    # from its own attach, so one pair's seqs may differ by a constant, the
    # ops the first-attached side saw before the other was traced).  Every
    # send must pair with a receive of the same count and type at seq + k,
    # one k per pair of ranks, k = 0 where the seqs claim to be exact.
    recvs = {}
    for c in run.tcalls:
        if c["op"] == "Recv":
            recvs[(c["comm"], c["peer"], c["rank"], c["seq"])] = c
    sends = [c for c in checked if c["op"] == "Send"]
    by_pair = collections.defaultdict(list)
    for sd in sends:
        by_pair[(sd["comm"], sd["rank"], sd["peer"])].append(sd)
    unmatched, offsets = [], {}
    for pair, ss in by_pair.items():
        exact = any(x.get("seq_source") == "local" for x in ss)
        cands = [0] if exact else range(-3, 4)

        def misses(k):
            return [x for x in ss
                    if (rv := recvs.get((pair[0], pair[1], pair[2], x["seq"] + k))) is None
                    or (rv["count"], rv["dtype"]) != (x["count"], x["dtype"])]
        best = min(cands, key=lambda k: (len(misses(k)), abs(k)))
        offsets[f"{pair[1]}->{pair[2]}"] = best
        unmatched += misses(best)
    detail = (f"{len(sends) - len(unmatched)} of {len(sends)} sends paired with their "
              f"receive, one seq offset per pair of ranks: {offsets} (0 where "
              f"ccld counted from the comm's creation)")
    ck.add("p2p seqs", bool(sends) and not unmatched, detail)


def check_tier_b(run, ck, checked):
    """Tier B: replays docs/architecture.md's binding over the capture's
    CUDA records: an event recorded on a stream completes the collectives
    queued on that stream before it once a query or synchronize says it
    is done; every checked collective must be completed so."""
    colls = [c for c in checked if c["op"] in COLL_OPS]
    if not colls:
        ck.add("tier B completions", False, "no checked collective")
        return
    items = [("call", c["mono"], c) for c in run.tcalls if c["op"] in COLL_OPS]
    cuda = [r for r in run.recs if r["type"] == EV_CUDA]
    items += [("cuda", r["ts"], r) for r in cuda]
    items.sort(key=lambda x: (x[1], x[0] == "cuda"))
    streams = collections.defaultdict(dict)   # (pid, stream) -> {comm: seq}
    events = {}                               # (pid, event) -> {comm: seq}
    done = collections.defaultdict(lambda: -1)
    done_t = {}                               # (pid, comm, seq) -> completion time
    per_fn = collections.Counter()

    def complete(pid, ops, t):
        for comm, seq in ops.items():
            k = (pid, comm)
            while done[k] < seq:
                done[k] += 1
                done_t.setdefault((pid, comm, done[k]), t)

    for kind, t, x in items:
        if kind == "call":
            streams[(x["pid"], int(x["stream"], 16))][x["comm"]] = x["seq"]
            continue
        if x["ret"] != 0:
            continue
        per_fn[x["fn"]] += 1
        if x["fn"] == FN_CUDA_EVENT_RECORD:
            events[(x["pid"], x["event"])] = dict(streams.get((x["pid"], x["stream"]), {}))
        elif x["fn"] in (FN_CUDA_EVENT_QUERY, FN_CUDA_EVENT_SYNC):
            complete(x["pid"], events.get((x["pid"], x["event"]), {}), t)
        elif x["fn"] in (FN_CUDA_STREAM_SYNC, FN_CUDA_STREAM_QUERY):
            complete(x["pid"], streams.get((x["pid"], x["stream"]), {}), t)
    # seqs of one comm before the first checked one count from there
    missing, lat = [], []
    for c in colls:
        t = done_t.get((c["pid"], c["comm"], c["seq"]))
        if t is None:
            missing.append(c)
        else:
            lat.append((t - c["mono"]) / 1e6)
    names = {23: "event record", 24: "event query", 25: "event sync",
             26: "stream sync", 27: "stream query"}
    detail = (f"{len(colls) - len(missing)} of {len(colls)} checked collectives completed "
              f"by tier B ({', '.join(f'{names[k]} {v}' for k, v in sorted(per_fn.items()))})")
    if lat:
        detail += (f"; completion seen {statistics.median(lat):.1f} ms after the call "
                   f"(median), max {max(lat):.1f} ms")
    if missing:
        m = missing[0]
        detail += f"; first not completed: pid {m['pid']} {m['op']} seq {m['seq']}"
    per_rank = {run.rank_of.get(c["pid"]) for c in colls if c not in missing}
    ok = not missing and per_rank == set(run.pid_of)
    ck.add("tier B completions", ok, detail)


def check_tier_c(run, ck):
    """Tier C: proxy records, mapped by ccld-trace to their communicator
    (flag IDENT, the comm's hash) with a direction, for every rank, both
    directions, in communicators the ranks' calls use; none unattributed."""
    prox = [r for r in run.recs if r["type"] == EV_PROXY and r["fn"] < FN_PROXY_SNAPSHOT]
    comms = collections.defaultdict(set)
    for c in run.tcalls:
        comms[c["pid"]].add(int(c["comm"], 16))
    per = collections.defaultdict(collections.Counter)
    bad = 0
    for r in prox:
        if not (r["flags"] & F_IDENT and r["flags"] & F_PROXY_DIR) or \
                r["hash"] not in comms.get(r["pid"], ()):
            bad += 1
            continue
        per[r["pid"]]["recv" if r["flags"] & F_PROXY_RECV else "send"] += 1
    summ = [r for r in run.trace if r.get("type") == "summary"]
    unattr = summ[-1].get("proxy_unattributed") if summ else None
    m = re.search(r"tier C: (\d+) proxy records mapped to comms, (\d+) unmapped", run.err)
    t = re.search(r"proxy records by transport:([^;\n]*)", run.err)
    transports = t.group(1).strip() if t else "?"
    ranks_ok = all(per[p]["send"] and per[p]["recv"] for p in run.pid_of.values())
    ok = bool(prox) and not bad and ranks_ok and unattr == 0 and "NET" in transports
    detail = (f"{len(prox)} proxy op records in the capture, {bad} not mapped to a traced comm; "
              + ", ".join(f"rank {run.rank_of[p]}: send {per[p]['send']} recv {per[p]['recv']}"
                          for p in sorted(per, key=lambda p: run.rank_of.get(p, -1))
                          if p in run.rank_of)
              + f"; summary proxy_unattributed {unattr}; stderr: "
              + (f"{m.group(1)} mapped, {m.group(2)} unmapped" if m else "no tier C line")
              + f"; by transport: {transports}")
    ck.add("tier C proxy records", ok, detail)


def check_drops(run, ck):
    summ = [r for r in run.trace if r.get("type") == "summary"]
    if not summ:
        ck.add("no records lost", False, "no summary line (ccld-trace did not end cleanly)")
        return
    s = summ[-1]
    bad_schema = sum(1 for r in run.trace if r.get("schema") != 1)
    ck.add("no records lost", s.get("dropped") == 0 and not bad_schema,
           f"summary: {s.get('events')} events, {s.get('calls')} calls, dropped "
           f"{s.get('dropped')}; {bad_schema} lines without schema 1")


def check_replay(run, ck):
    path = os.path.join(run.dir, "replay.jsonl")
    if not os.path.exists(path):
        ck.add("replay", False, "no replay.jsonl")
        return
    rep = [r for r in load_jsonl(path) if r.get("type") in ("verdict", "recovery")]
    ck.add("replay gives the same verdicts", rep == run.verdicts,
           f"{len(run.verdicts)} verdict/recovery records live, {len(rep)} from the capture")


def median_step_ms(steps, lo, hi):
    d = [(s["t1_ns"] - s["t0_ns"]) / 1e6 for s in steps
         if s["step"] >= 10 and s["t0_ns"] >= lo and s["t1_ns"] <= hi]
    return (statistics.median(d), len(d)) if d else (None, 0)


def check_overhead(run, ck, max_pct):
    """Step time traced vs untraced in the same run: before the attach,
    while traced (from 2 s after the attach), after the detach."""
    att, det = run.env_mono("attached_rt_ns"), run.env_mono("detached_rt_ns")
    started = run.env_mono("started_rt_ns") or att
    if att is None or det is None or not any(run.steps.values()):
        ck.add("step overhead", False, "no step log or no attach/detach times")
        return None
    res = {}
    for r, steps in run.steps.items():
        b = median_step_ms(steps, 0, started)
        t = median_step_ms(steps, att + 2_000_000_000, det)
        a = median_step_ms(steps, det + 1_000_000_000, 1 << 62)
        res[r] = (b, t, a)
    parts, worst, noise_max = [], None, 0.0
    for r, (b, t, a) in sorted(res.items()):
        if None in (b[0], t[0], a[0]) or min(b[1], t[1], a[1]) < 20:
            parts.append(f"rank {r}: too few steps (untraced {b[1]}, traced {t[1]}, after {a[1]})")
            worst = float("inf")
            continue
        base = (b[0] + a[0]) / 2
        pct = (t[0] / base - 1) * 100
        noise = abs(a[0] / b[0] - 1) * 100
        noise_max = max(noise_max, noise)
        worst = pct if worst is None else max(worst, pct)
        parts.append(f"rank {r}: median step {b[0]:.2f} ms untraced ({b[1]} steps), "
                     f"{t[0]:.2f} ms traced ({t[1]}), {a[0]:.2f} ms after the detach ({a[1]}): "
                     f"{pct:+.2f}%")
    limit = max(max_pct, noise_max)
    cpu = run.env.get("tracer_cpu_s")
    if cpu and att and det:
        parts.append(f"ccld-trace used {float(cpu):.2f} s of CPU in {(det - att) / 1e9:.1f} s "
                     f"({100 * float(cpu) / ((det - att) / 1e9):.1f}% of one core)")
    ok = worst is not None and worst <= limit
    ck.add("step overhead", ok, "; ".join(parts) +
           f"; limit {limit:.2f}% (the larger of {max_pct}% and the untraced windows' "
           f"difference, {noise_max:.2f}%)")
    return res


def check_job(run, ck):
    """The job's own account: every rank ended at the stop file with right
    results (tests/gpu/workload.py; the stand-in's runs have no info)."""
    infos = {r: os.path.join(run.dir, f"info.{r}.json") for r in run.pid_of}
    if not all(os.path.exists(p) for p in infos.values()):
        ck.info("job ran clean", "no info.R.json from the job")
        return
    bad = []
    for r, p in infos.items():
        i = json.load(open(p))
        if not i.get("done") or i.get("wrong_results"):
            bad.append(f"rank {r}: done {i.get('done')}, wrong results {i.get('wrong_results')}")
    rc = run.env.get("job_rc")
    if rc != "0":
        bad.append(f"job exit status {rc}")
    steps = {r: json.load(open(p)).get("steps") for r, p in infos.items()}
    ck.add("job ran clean", not bad, f"steps {steps}, results right, exit status {rc}"
           if not bad else "; ".join(bad))


def fault_pid(run):
    return run.pid_of[run.fault["rank"]]


def no_early_verdict(run, ck):
    t = run.fault["t_ns"]
    early = [v for v in run.verdicts if run.mono(v["detected_ns"]) < t]
    ck.add("no verdict before the fault", not early,
           f"{len(early)} before the fault" + (f": {early[0]}" if early else ""))


def first_root(run, classes):
    for v in run.verdicts:
        if v["type"] == "verdict" and v.get("role") == "root" and v["class"] in classes:
            return v
    return None


def describe(v):
    return (f"{v['class']} comm {v['comm']} {v.get('op')} seq {v.get('seq')} culprits "
            f"{[(c['rank'], c['pid']) for c in v.get('culprits', [])]}")


def check_hang(run, ck, cls, stall):
    if not run.fault:
        ck.add(f"{cls} verdict", False, "the fault never started (no fault.json)")
        return
    no_early_verdict(run, ck)
    v = first_root(run, {"H1", "H2", "H3"})
    if v is None:
        ck.add(f"{cls} verdict", False, f"no hang verdict; verdicts: "
               f"{[describe(x) for x in run.verdicts[:4]]}")
        return
    cpid = fault_pid(run)
    errs = []
    if v["class"] != cls:
        errs.append(f"class {v['class']}")
    if {c["pid"] for c in v["culprits"]} != {cpid}:
        errs.append(f"culprits {[c['pid'] for c in v['culprits']]}, expected [{cpid}] "
                    f"(rank {run.fault['rank']})")
    mine = [c for c in run.tcalls if c["pid"] == cpid and c["comm"] == v["comm"]]
    if not mine:
        errs.append(f"comm {v['comm']} has no call of pid {cpid}")
    if v.get("p2p"):
        errs.append("a p2p verdict: the fault is in a collective")
    elif cls == "H1" and mine:
        last = max((c["seq"] for c in mine if c["op"] in COLL_OPS), default=None)
        if last is None or v["seq"] != last + 1:
            errs.append(f"seq {v['seq']}, the culprit's last traced seq is {last}")
        others = [c["seq"] for c in run.tcalls if c["comm"] == v["comm"]
                  and c["pid"] != cpid and c["op"] in COLL_OPS]
        if not others or max(others) < v["seq"]:
            errs.append(f"no other rank entered seq {v['seq']}")
    elif cls == "H2" and mine:
        want = run.fault["count"]
        # the loss all-reduce with the wrong count (an all-gather or
        # reduce-scatter shard may have that count too: 262,144 on a GPU)
        bad = [c for c in mine if c["op"] == "AllReduce" and c["count"] == want]
        if not bad:
            errs.append(f"the culprit's call with count {want} is not in the trace")
        elif v["seq"] != bad[0]["seq"]:
            errs.append(f"seq {v['seq']}, the mismatched call has seq {bad[0]['seq']}")
        ev = v.get("evidence", {})
        if ev.get("field") != "count":
            errs.append(f"field {ev.get('field')!r}, expected 'count'")

        def num(s):
            m = re.match(r"(\d+)", str(s))
            return int(m.group(1)) if m else None
        norm = run.fault["normal_count"]
        if num(ev.get("majority")) not in (norm, norm * 4) or \
                num(ev.get("minority")) not in (want, want * 4):
            errs.append(f"majority {ev.get('majority')!r} / minority {ev.get('minority')!r}, "
                        f"expected count {norm} / {want} (or their bytes)")
    lat = (v["detected_ns"] - v["onset_ns"]) / 1e9
    if lat > stall + 2:
        errs.append(f"detected {lat:.1f} s after the last progress (limit {stall + 2} s)")
    ev = v.get("evidence", {})
    extra = ""
    if ev.get("main_syscall") or ev.get("main_state"):
        extra = f"; culprit's main thread {ev.get('main_state')} in {ev.get('main_syscall')}"
    ck.add(f"{cls} verdict", not errs,
           f"{describe(v)}, {lat:.1f} s after the last progress{extra}: "
           f"{ev.get('text', '')[:300]}" + (f"; WRONG: {'; '.join(errs)}" if errs else ""))


def check_slow(run, ck):
    if not run.fault:
        ck.add("S1 verdict", False, "the fault never started (no fault.json)")
        return
    no_early_verdict(run, ck)
    hangs = [v for v in run.verdicts if v["class"].startswith("H")]
    ck.add("no hang verdict", not hangs, f"{len(hangs)} hang verdicts" +
           (f", first: {describe(hangs[0])}" if hangs else ""))
    v = first_root(run, {"S1", "S2", "S3"})
    if v is None:
        ck.add("S1 verdict", False, f"no slow root verdict; records: "
               f"{[describe(x) for x in run.verdicts[:4]]}")
        return
    cpid = fault_pid(run)
    t0 = run.fault["t_ns"]
    t1 = run.fault.get("end_t_ns")
    det = run.mono(v["detected_ns"])
    errs = []
    if v["class"] != "S1":
        errs.append(f"class {v['class']}")
    if {c["pid"] for c in v["culprits"]} != {cpid}:
        errs.append(f"culprits {[c['pid'] for c in v['culprits']]}, expected [{cpid}] "
                    f"(rank {run.fault['rank']})")
    if det < t0:
        errs.append("detected before the fault")
    elif t1 is not None and det > t1 + 2_000_000_000:
        errs.append(f"detected {(det - t1) / 1e9:.1f} s after the fault ended")
    # iterations of rank 0 between the fault and the verdict
    steps0 = run.steps.get(0, [])
    n_it = (f"{sum(1 for s in steps0 if t0 <= s['t1_ns'] <= det)} steps of rank 0"
            if steps0 else "no step log")
    rec = [x for x in run.verdicts if x["type"] == "recovery" and x["comm"] == v["comm"]]
    ev = v.get("evidence", {})
    detail = (f"{describe(v)} {(det - t0) / 1e9:.1f} s ({n_it}) after the "
              f"fault began; lost_s {ev.get('lost_s')}; "
              + (f"recovery {(run.mono(rec[0]['detected_ns']) - (t1 or t0)) / 1e9:+.1f} s "
                 f"after the fault ended" if rec else "no recovery record")
              + f": {ev.get('text', '')[:300]}")
    if errs:
        detail += f"; WRONG: {'; '.join(errs)}"
    ck.add("S1 verdict", not errs, detail)


def cmd_check(a):
    run = Run(a.rundir)
    ck = Checks()
    ck.info("job", f"{len(run.pid_of)} ranks, pids {sorted(run.pid_of.values())}, "
            f"{len(run.tcalls)} calls traced"
            + (f", fault {run.fault['kind']} on rank {run.fault['rank']} at step "
               f"{run.fault.get('step')}" if run.fault else ""))
    check_drops(run, ck)
    if a.scenario == "healthy":
        checked = check_calls(run, ck)
        check_seqs(run, ck, checked)
        check_tier_b(run, ck, checked)
        check_tier_c(run, ck)
        ck.add("no verdict", not run.verdicts,
               f"{len(run.verdicts)} verdict/recovery records" +
               (f", first: {describe(run.verdicts[0])}" if run.verdicts else ""))
        if not a.no_overhead:
            check_overhead(run, ck, a.max_overhead)
        check_job(run, ck)
    elif a.scenario == "sleep":
        check_hang(run, ck, "H1", a.stall)
    elif a.scenario == "size":
        check_hang(run, ck, "H2", a.stall)
    elif a.scenario == "compute":
        check_slow(run, ck)
    check_replay(run, ck)
    with open(os.path.join(a.rundir, "checks.json"), "w") as f:
        json.dump({"scenario": a.scenario, "checks": ck.items}, f, indent=1)
    failed = [c for c in ck.items if c["required"] and not c["ok"]]
    print(f"{a.scenario}: {len(ck.items) - len(failed)} ok, {len(failed)} failed")
    return 1 if failed else 0


def md_cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def cmd_report(a):
    env = json.load(open(a.env)) if os.path.exists(a.env) else {}
    lines = ["## Real-GPU acceptance run (tests/gpu/run_acceptance.sh)", ""]
    lines.append(f"Run on {env.get('date', '?')} with ccld {env.get('ccld', '?')}: "
                 f"{env.get('gpu', '?')} (driver {env.get('driver', '?')}), "
                 f"{env.get('cpus', '?')} CPUs, kernel {env.get('kernel', '?')}, "
                 f"{env.get('os', '?')}; Python {env.get('python', '?')}, "
                 f"PyTorch {env.get('torch', '?')} (CUDA {env.get('torch_cuda', '?')}), "
                 f"NCCL {env.get('nccl', '?')} ({env.get('libnccl', '?')}"
                 f"{', ' + env['probe_check'] if env.get('probe_check') else ''}).")
    lines.append("")
    lines.append("Job: tests/gpu/workload.py, 2 ranks on the one GPU, each with its own "
                 "NCCL_HOSTID (NCCL_NET=Socket over lo: the network transport, proxy "
                 f"thread running){'; ' + env['step'] if env.get('step') else ''}. "
                 "ccld-trace attached with "
                 f"`-p` after step {env.get('attach_step', '?')}, `--stall "
                 f"{env.get('stall', '?')}`.")
    lines.append("")
    lines.append("| scenario | check | result | detail |")
    lines.append("|---|---|---|---|")
    total = failed = 0
    for d in a.rundirs:
        p = os.path.join(d, "checks.json")
        name = os.path.basename(os.path.normpath(d))
        if not os.path.exists(p):
            lines.append(f"| {name} | (not checked) | FAIL | "
                         f"{md_cell(open(os.path.join(d, 'error')).read().strip()) if os.path.exists(os.path.join(d, 'error')) else 'no checks.json'} |")
            total += 1
            failed += 1
            continue
        res = json.load(open(p))
        for c in res["checks"]:
            tag = ("pass" if c["ok"] else "FAIL") if c["required"] else "info"
            if c["required"]:
                total += 1
                failed += not c["ok"]
            lines.append(f"| {res['scenario']} | {c['check']} | {tag} | {md_cell(c['detail'])} |")
    lines.append("")
    lines.append(f"{total - failed} of {total} checks passed.")
    lines.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("scenario", choices=("healthy", "sleep", "size", "compute"))
    c.add_argument("rundir")
    c.add_argument("--stall", type=float, default=4)
    c.add_argument("--max-overhead", type=float, default=1.0,
                   help="percent; the project's target for added step time")
    c.add_argument("--no-overhead", action="store_true",
                   help="no step log with attach and detach (the stand-in)")
    r = sub.add_parser("report")
    r.add_argument("--env", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("rundirs", nargs="+")
    a = ap.parse_args()
    return cmd_check(a) if a.cmd == "check" else cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
