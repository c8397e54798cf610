#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A small PyTorch training-like job for ccld's real-GPU acceptance run
(tests/gpu/run_acceptance.sh, docs/gpu.md).

usage: workload.py launch --dir DIR [--ranks 2] [--fault none|sleep|size|compute]
                          [--fault-rank 1] [--compute-ms 8] [--timeout SEC] ...

`launch` starts --ranks rank processes (this file, `rank` mode) like
torchrun, all on one GPU (--device).  Each rank gets its own NCCL_HOSTID, so
NCCL takes the ranks for different hosts and connects them through its
network transport (NCCL_NET=Socket over lo) with its proxy thread running,
as between nodes.  The launcher calls setsid(): the job is one process group
(kill -- -PGID ends it), and the ranks die with it (PR_SET_PDEATHSIG).

Per step, each after a fifth of the step's GPU compute (matmuls,
calibrated to --compute-ms): all_reduce of the gradient buffer,
all_gather_into_tensor, reduce_scatter_tensor, a batch_isend_irecv ring
exchange (send to rank+1, receive from rank-1) and the loss all_reduce of 2
floats, whose value the CPU reads (the step's only wait for the GPU).  Rank 0 puts a stop flag in
the loss when DIR/stop exists, so every rank ends at the same step.

Files in DIR (times are CLOCK_MONOTONIC ns, as ccld's own records):
  pids               "RANK PID" lines, once every rank runs
  calls.R.jsonl      every collective / p2p call of rank R when it returned:
                     op, count, dtype, redop, root, peer, rank, nranks (of
                     the default process group's communicator), step, t_ns
  steps.R.jsonl      step, t0_ns, t1_ns (start, after the loss was read)
  info.R.json        versions, GPU, calibration; "done" at a clean end
  fault.json         written by the fault rank when its fault starts
                     (kind, rank, step, t_ns; size: count, normal_count;
                     compute: factor, end_t_ns/end_step once it ended)
  rank.R.log         the rank's stdout and stderr (NCCL_DEBUG=INFO)

Faults (--fault, rank --fault-rank only, from the first step at which
DIR/go exists): sleep: sleeps --sleep-s in Python before the step's
gradient all_reduce (H1); size: calls the loss all_reduce with
--bad-count elements instead of 2 (H2, field count); compute: 3x the
matmuls for --fault-s seconds (S1).
"""
import argparse
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time

def mono_ns():
    return time.monotonic_ns()


def write_json_atomic(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
        f.write("\n")
    os.rename(tmp, path)


# ---------------------------------------------------------------- launcher

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def die_with_parent():
    # the ranks never outlive the launcher (1 = PR_SET_PDEATHSIG)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)


def launch(a):
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader: still our own process group
    os.makedirs(a.dir, exist_ok=True)
    port = free_port()
    procs = []
    for r in range(a.ranks):
        env = dict(os.environ)
        env.update({
            "RANK": str(r), "WORLD_SIZE": str(a.ranks),
            "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
            # one "host" per rank: NCCL's network transport between them
            "NCCL_HOSTID": f"ccld-gpu-accept-{r}",
            "NCCL_NET": "Socket", "NCCL_SOCKET_IFNAME": "lo",
            "NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1",
            "NCCL_SHM_DISABLE": "1", "NCCL_NVLS_ENABLE": "0",
            "NCCL_DEBUG": env.get("NCCL_DEBUG", "INFO"),
        })
        log = open(os.path.join(a.dir, f"rank.{r}.log"), "w")
        argv = [sys.executable, os.path.abspath(__file__), "rank"] + a.rank_argv
        procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      preexec_fn=die_with_parent))
        log.close()
    tmp = os.path.join(a.dir, "pids.tmp")
    with open(tmp, "w") as f:
        for r, p in enumerate(procs):
            f.write(f"{r} {p.pid}\n")
    os.rename(tmp, os.path.join(a.dir, "pids"))
    for r, p in enumerate(procs):
        print(f"rank {r} pid {p.pid}", file=sys.stderr, flush=True)

    stop = {"sig": 0}

    def on_signal(sig, _frame):
        stop["sig"] = sig

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    deadline = time.monotonic() + a.timeout if a.timeout else None
    rc = None
    while any(p.poll() is None for p in procs):
        # a rank that failed leaves the others waiting for it: end them (torchrun does)
        failed = any(p.returncode not in (None, 0) for p in procs)
        if stop["sig"] or failed or (deadline and time.monotonic() > deadline):
            rc = 1 if failed else 124 if not stop["sig"] else 128 + stop["sig"]
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for p in procs:
                p.wait()
            break
        time.sleep(0.1)
    for r, p in enumerate(procs):
        print(f"rank {r} pid {p.pid}: exited {p.returncode}", file=sys.stderr, flush=True)
    if rc is None:
        rc = 0 if all(p.returncode == 0 for p in procs) else 1
    return rc


# ------------------------------------------------------------------- ranks

class Log:
    def __init__(self, d, rank):
        # line buffered: a rank killed in a hang leaves every line written
        self.calls = open(os.path.join(d, f"calls.{rank}.jsonl"), "w", buffering=1)
        self.steps = open(os.path.join(d, f"steps.{rank}.jsonl"), "w", buffering=1)

    def call(self, **kw):
        self.calls.write(json.dumps(kw) + "\n")

    def step(self, **kw):
        self.steps.write(json.dumps(kw) + "\n")


def rank_main(a):
    import datetime
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", a.device)
    torch.cuda.set_device(dev)
    log = Log(a.dir, rank)
    kw = {"backend": "nccl", "rank": rank, "world_size": world,
          "timeout": datetime.timedelta(seconds=a.nccl_timeout)}
    try:
        # eager init: the communicator exists before the first step
        dist.init_process_group(device_id=dev, **kw)
    except TypeError:
        dist.init_process_group(**kw)

    f32 = torch.float32
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    q = a.size // (2 * world)  # all-gather / reduce-scatter shard
    m = a.matrix
    x = torch.randn(m, m, device=dev, dtype=f32)
    w = torch.randn(m, m, device=dev, dtype=f32) / m ** 0.5
    y = torch.empty(m, m, device=dev, dtype=f32)
    if a.size > m * m:
        sys.exit("--size must be at most --matrix squared")

    def called(step, op, count, redop=None, peer=None, t_ns=None):
        log.call(op=op, count=count, dtype="float32", redop=redop, root=None, peer=peer,
                 rank=rank, nranks=world, step=step, t_ns=t_ns or mono_ns())

    # calibration: matmuls per step for --compute-ms, the same on every rank
    for _ in range(5):
        torch.mm(x, w, out=y)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(20):
        torch.mm(x, w, out=y)
    torch.cuda.synchronize()
    per_mm_ms = (time.perf_counter() - t) * 1e3 / 20
    n = torch.tensor([max(1.0, round(a.compute_ms / per_mm_ms))], device=dev, dtype=f32)
    dist.all_reduce(n, op=dist.ReduceOp.MAX)
    called(-1, "AllReduce", 1, redop="max")
    n_mm = int(n.item())
    # the step's compute in 5 parts, one before each communication op (as
    # layers' compute between a model's collectives): every op has a compute
    # before it, so a rank that computes longer reaches each op last
    chunk = max(1, round(n_mm / 5))

    def compute(k):
        for _ in range(chunk * k):
            torch.mm(x, w, out=y)

    info = {"rank": rank, "pid": os.getpid(), "torch": torch.__version__,
            "torch_cuda": torch.version.cuda, "python": sys.version.split()[0],
            "gpu": torch.cuda.get_device_name(dev), "device": a.device,
            "per_mm_ms": round(per_mm_ms, 4), "matmuls_per_step": 5 * chunk,
            "matrix": m, "size": a.size, "p2p": a.p2p}
    try:
        v = torch.cuda.nccl.version()  # a tuple; an int in old releases
        info["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception as e:  # noqa: BLE001 (reported, not fatal)
        info["nccl"] = f"unknown ({e})"
    write_json_atomic(os.path.join(a.dir, f"info.{rank}.json"), info)

    grad = torch.empty(a.size, device=dev, dtype=f32)
    ag_in = torch.empty(q, device=dev, dtype=f32)
    ag_out = torch.empty(world * q, device=dev, dtype=f32)
    rs_in = torch.empty(world * q, device=dev, dtype=f32)
    rs_out = torch.empty(q, device=dev, dtype=f32)
    act_out = torch.full((a.p2p,), float(rank), device=dev, dtype=f32)
    act_in = torch.empty(a.p2p, device=dev, dtype=f32)
    loss = torch.zeros(2, device=dev, dtype=f32)
    want_loss = world * (world + 1) / 2

    mine = a.fault != "none" and rank == a.fault_rank
    go = os.path.join(a.dir, "go")
    stop_file = os.path.join(a.dir, "stop")
    fault_path = os.path.join(a.dir, "fault.json")
    fault = None
    wrong = 0
    step = 0
    while not a.max_steps or step < a.max_steps:
        t0 = mono_ns()
        if mine and fault is None and os.path.exists(go):
            fault = {"kind": a.fault, "rank": rank, "pid": os.getpid(), "step": step,
                     "t_ns": mono_ns()}
            if a.fault == "size":
                fault.update(count=a.bad_count, normal_count=2)
            elif a.fault == "compute":
                fault.update(factor=3, seconds=a.fault_s)
            elif a.fault == "sleep":
                fault.update(sleep_s=a.sleep_s)
            write_json_atomic(fault_path, fault)
        slow = (fault is not None and a.fault == "compute" and "end_t_ns" not in fault)
        if slow and mono_ns() - fault["t_ns"] >= a.fault_s * 1e9:
            fault.update(end_t_ns=mono_ns(), end_step=step)
            write_json_atomic(fault_path, fault)
            slow = False

        k = 3 if slow else 1
        compute(k)
        grad.copy_(y.view(-1)[:a.size])
        if fault is not None and a.fault == "sleep" and fault["step"] == step:
            time.sleep(a.sleep_s)  # in Python, before a collective: H1
        dist.all_reduce(grad)
        called(step, "AllReduce", a.size, redop="sum")
        compute(k)
        ag_in.copy_(grad[:q])
        dist.all_gather_into_tensor(ag_out, ag_in)
        called(step, "AllGather", q)
        compute(k)
        rs_in.copy_(grad[:world * q])
        dist.reduce_scatter_tensor(rs_out, rs_in)
        called(step, "ReduceScatter", q, redop="sum")
        compute(k)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, act_out, nxt),
                                       dist.P2POp(dist.irecv, act_in, prv)])
        t = mono_ns()  # one return for both calls of the batch
        called(step, "Send", a.p2p, peer=nxt, t_ns=t)
        called(step, "Recv", a.p2p, peer=prv, t_ns=t)
        for r in reqs:
            r.wait()
        compute(k)
        # filled by kernels: nothing here waits for the GPU before the read
        lt = loss
        if fault is not None and a.fault == "size" and fault["step"] == step:
            lt = torch.zeros(a.bad_count, device=dev, dtype=f32)  # H2: another count
        lt[0] = rank + 1.0
        lt[1] = 1.0 if rank == 0 and os.path.exists(stop_file) else 0.0
        dist.all_reduce(lt)
        called(step, "AllReduce", lt.numel(), redop="sum")
        vals = lt[:2].tolist()  # the step's wait for its GPU
        if vals[0] != want_loss:
            wrong += 1
        log.step(step=step, t0_ns=t0, t1_ns=mono_ns())
        step += 1
        if vals[1] > 0:
            break
    torch.cuda.synchronize()
    dist.destroy_process_group()
    info.update(done=True, steps=step, wrong_results=wrong)
    write_json_atomic(os.path.join(a.dir, f"info.{rank}.json"), info)
    print(f"rank {rank}: {step} steps, {'results ok' if not wrong else f'{wrong} WRONG RESULTS'}",
          flush=True)
    return 1 if wrong else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("launch", "rank"))
    ap.add_argument("--dir", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--fault", choices=("none", "sleep", "size", "compute"), default="none")
    ap.add_argument("--fault-rank", type=int, default=1)
    ap.add_argument("--sleep-s", type=float, default=600)
    ap.add_argument("--bad-count", type=int, default=262144)
    ap.add_argument("--fault-s", type=float, default=8)
    ap.add_argument("--compute-ms", type=float, default=8)
    ap.add_argument("--matrix", type=int, default=2048)
    ap.add_argument("--size", type=int, default=1 << 20, help="gradient elements")
    ap.add_argument("--p2p", type=int, default=65536, help="elements sent and received")
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--nccl-timeout", type=float, default=300)
    ap.add_argument("--timeout", type=float, default=0, help="launcher: kill the ranks after SEC")
    a, rest = ap.parse_known_args()
    if rest:
        ap.error(f"unknown arguments {rest}")
    if a.size < 8 or a.size % 8:
        ap.error("--size must be a multiple of 8")
    if a.mode == "launch":
        if a.ranks < 2:
            ap.error("--ranks must be 2 or more")
        # the ranks get every option but the launcher's own
        argv, skip = [], False
        for s in sys.argv[2:]:
            if skip:
                skip = False
                continue
            if s in ("--timeout",):
                skip = True
                continue
            if s.startswith("--timeout="):
                continue
            argv.append(s)
        a.rank_argv = argv
        return launch(a)
    return rank_main(a)


if __name__ == "__main__":
    sys.exit(main())
