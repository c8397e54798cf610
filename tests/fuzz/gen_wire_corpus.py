#!/usr/bin/env python3
"""Seed corpus for fuzz_an_wire: sequences of analyzer input records as
docs/fleet.md section 6 lays them out (little endian), each record behind
its 2-byte length: a 4-rank all-reduce entered, returned and completed with
proxy progress and a snapshot, clocks and process states (version 1
records, which a version-2 decoder still reads); and a job seen only from
memory at attach (version 2: launch counters, snapshots with the op's
arguments, thread states), and a hang with one of NCCL's warnings, two NCCL
builds and an NCCL_* variable (version 9), and an init hang read in
memory at attach (version 13)."""
import struct
import sys

CLOCK, RANK, GONE, ENTER, RETURN, UPTO, PROGRESS, SNAPSHOT, PROC, LABEL, XID = range(1, 12)
TCP, RDMA, LAUNCHED, THREAD = 12, 13, 14, 15
NCCL_WARN, SETUP, ENDPOINT = 18, 19, 20
LOST, SCHED = 17, 21


def tcp(ts, pid, peer, kind, old=0, new=0, remote=b""):
    """AW_TCP: pid, peer pid, kind, old/new state, remote (u8 length + bytes)"""
    return hdr(TCP, ts) + struct.pack("<IIBBBB", pid, peer, kind, old, new, len(remote)) + remote


def rdma(ts, pid, port, qp, source, event, new_state, dev=b"mlx5_0"):
    """AW_RDMA: device (u8 length + bytes), port, QP, source, event, states, pid"""
    return (hdr(RDMA, ts) + struct.pack("<B", len(dev)) + dev
            + struct.pack("<IIBBBBI", port, qp, source, event, 0xff, new_state, pid))


def hdr(t, ts, ver=1):
    return struct.pack("<BBQ", ver, t, ts)


def launched(ts, pid, comm, rank, nranks, ncoll, per_fn, dead=False):
    """AW_LAUNCHED (v2): key, ncoll, flags (1 coll_ops, 2 dead), coll_ops, nfn, per_fn"""
    return (hdr(LAUNCHED, ts, 2) + key(pid, comm, rank, nranks)
            + struct.pack("<qBQB", ncoll, 2 if dead else 1, max(ncoll, 0), len(per_fn))
            + b"".join(struct.pack("<Q", v) for v in per_fn))


def thread(ts, pid, tid, state, syscall, name=b"python", wchan=b"futex_do_wait", path=None,
           stack=None):
    """AW_THREAD (v2): pid, tid, state, main, syscall, arg0, name, wchan;
    (v6) then the path of the call's fd; (v14) after the CUDA synchronize
    (u8 function, u64 entry, v7) and its stack flag (u8, v8), the native
    stack's text"""
    ver = 14 if stack is not None else 6 if path is not None else 2
    out = (hdr(THREAD, ts, ver)
           + struct.pack("<IIBBiQ", pid, tid, state, int(pid == tid), syscall, 0)
           + struct.pack("<B", len(name)) + name + struct.pack("<B", len(wchan)) + wchan)
    if ver >= 6:
        out += struct.pack("<B", len(path or b"")) + (path or b"")
    if ver >= 14:
        out += struct.pack("<BQB", 0, 0, 0) + struct.pack("<B", len(stack)) + stack
    return out


def nccl_warn(ts, pid, line, file, msg):
    """AW_NCCL_WARN (v9): pid, line, file (u8 length + bytes), message (u16 length + bytes)"""
    return (hdr(NCCL_WARN, ts, 9) + struct.pack("<IIB", pid, line, len(file)) + file
            + struct.pack("<H", len(msg)) + msg)


def setup(ts, pid, group, kind, fn, nranks, rank, returned=0, ret=0):
    """AW_SETUP (v9): pid, group, kind (1 init, 2 teardown), fn, nranks, rank, returned, ret"""
    return hdr(SETUP, ts, 9) + struct.pack("<IQBBiiBq", pid, group, kind, fn, nranks, rank,
                                           returned, ret)


def setup_split(ts, pid, group, parent, fn, nranks, rank, name=b""):
    """AW_SETUP (v11): the v10 fields, the comm name (text), then kind 3's parent comm"""
    return (hdr(SETUP, ts, 11) + struct.pack("<IQBBiiBq", pid, group, 3, fn, nranks, rank, 0, 0)
            + struct.pack("<B", len(name)) + name + struct.pack("<Q", parent))


def split_hang(nranks, missing):
    """every rank of parent comm 0x5EED but MISSING enters its first split and waits"""
    out = b""
    for r in range(nranks):
        if r != missing:
            out += rec(setup_split(1_000_000_000 + r, 300 + r, 0x5B11, 0x5EED, 17, nranks, r,
                                   b"tp"))
    for k in range(30):
        out += rec(hdr(CLOCK, 1_000_000_000 + k * 250_000_000) + struct.pack("<q", 0))
    return out


def named_ranks(nranks, parent, color, name):
    """AW_RANK (v10): key, parent, split color, comm name (u8 length + bytes)"""
    return b"".join(rec(hdr(RANK, 1_000_000_000, 10) + key(100 + r, 0xC0DE, r, nranks)
                        + struct.pack("<QiB", parent, color, len(name)) + name)
                    for r in range(nranks))


def endpoint(ts, pid, addr, port, gone=0):
    """AW_ENDPOINT (v10): pid, address (u8 length + bytes), port (u16), gone (u8)"""
    return (hdr(ENDPOINT, ts, 10) + struct.pack("<IB", pid, len(addr)) + addr
            + struct.pack("<HB", port, gone))


def sched(ts, pid, tid, cpu, delay):
    """AW_SCHED (v12): pid, tid, cpu_ns, run_delay_ns (cumulative)"""
    return hdr(SCHED, ts, 12) + struct.pack("<IIQQ", pid, tid, cpu, delay)


def steps_shed(ts, total):
    """AW_LOST of no process (pid 0): the host's step records shed so far"""
    return hdr(LOST, ts, 5) + struct.pack("<IQ", 0, total)


def init_hang(nranks, missing):
    """every rank but MISSING enters its init and waits; the clock runs on"""
    out = b""
    for r in range(nranks):
        if r != missing:
            out += rec(setup(1_000_000_000 + r, 300 + r, 0x1D1D, 1, 14, nranks, r))
    for k in range(30):
        out += rec(hdr(CLOCK, 1_000_000_000 + k * 250_000_000) + struct.pack("<q", 0))
    return out + rec(setup(9_000_000_000, 300, 0x1D1D, 1, 14, nranks, 0, 1, 0))


def init_read_inside(nranks, missing):
    """AW_SETUP (v13): every rank but MISSING found inside its init in memory
    (returned byte 2: entered before the record; fn 0: variant not known)"""
    out = b""
    for r in range(nranks):
        if r != missing:
            out += rec(hdr(SETUP, 1_000_000_000, 13)
                       + struct.pack("<IQBBiiBqBQ", 300 + r, 0x1D1E, 1, 0, nranks, r, 2, 0,
                                     0, 0))
    for k in range(30):
        out += rec(hdr(CLOCK, 1_000_000_000 + k * 250_000_000) + struct.pack("<q", 0))
    return out


def label(ts, pid, kind, value, ver=9):
    """AW_LABEL: pid, kind (6 NCCL library, 7 NCCL_* variable: version 9), value"""
    return hdr(LABEL, ts, ver) + struct.pack("<IBB", pid, kind, len(value)) + value


def prog2(posted, received, done, peer, op, send, nbytes=56, coll=4, dtype=7):
    """a v2 proxy sub: the v1 fields, then has_args, coll, dtype, redop"""
    return (struct.pack("<qiiBBQQQQQQQ", -1, 0, peer, 0 if send else 1, 0, posted,
                        posted if send else 0, received, done, 1, op, nbytes)
            + struct.pack("<BBBB", 1, coll, dtype, 0))


def attached(nranks, t0, behind=-1, dead=-1):
    """every rank read from memory at attach: one rank behind, one dead"""
    out = b""
    comm = 0xA77AC4
    for r in range(nranks):
        n = 20 if r == behind else 21
        out += rec(launched(t0, 200 + r, comm, r, nranks, -1 if r == dead else n,
                            [] if r == dead else [0, 0, 0, 0, n], dead=r == dead))
        out += rec(hdr(SNAPSHOT, t0, 2) + key(200 + r, comm, r, nranks) + struct.pack("<H", 2)
                   + prog2(1, 0, 0, (r + 1) % nranks, 41, True)
                   + prog2(1, 0, 0, (r + nranks - 1) % nranks, 41, False))
        out += rec(thread(t0, 200 + r, 200 + r, ord("S"), 34 if r == behind else 202))
        if r == behind:
            out += rec(thread(t0, 200 + r, 200 + r, ord("S"), 1, wchan=b"pipe_write",
                              path=b"/ckpt/step1200.pt",
                              stack=b"write+0x17 < save_checkpoint+0x4e < main+0x2f5"))
    if dead >= 0:
        out += rec(hdr(PROC, t0, 2) + struct.pack("<IBi", 200 + dead, 2, -1))
    for k in range(30):
        out += rec(hdr(CLOCK, t0 + k * 250_000_000, 2) + struct.pack("<q", 0))
    return out


def key(pid, comm, rank, nranks):
    return struct.pack("<IQii", pid, comm, rank, nranks)


def op(tid, fn, seq, count, t):
    return struct.pack("<IBqQBBiiQ", tid, fn, seq, count, 7, 0, -1, -1, t)


def prog(done, nsteps=8, step=1):
    return struct.pack("<qiiBBQQQQQQQ", -1, 0, 1, 0, step, done, done, 0, done,
                       nsteps, 5, 1 << 20)


def rec(b):
    return struct.pack("<H", len(b)) + b


def job(nranks, t0, hang_rank=-1):
    out = b""
    comm = 0xC0FFEE
    for r in range(nranks):
        out += rec(hdr(RANK, t0) + key(100 + r, comm, r, nranks) + struct.pack("<Q", 0))
    for seq in range(3):
        t = t0 + (seq + 1) * 10_000_000
        for r in range(nranks):
            if r == hang_rank and seq == 2:
                continue
            out += rec(hdr(ENTER, t) + key(100 + r, comm, r, nranks) + op(100 + r, 1, seq, 1024, t))
            out += rec(hdr(RETURN, t + 1000) + key(100 + r, comm, r, nranks)
                       + op(100 + r, 1, seq, 1024, t) + struct.pack("<q", 0))
            out += rec(hdr(PROGRESS, t + 2000) + key(100 + r, comm, r, nranks)
                       + struct.pack("<H", 1) + prog(seq))
            if seq < 2:
                out += rec(hdr(UPTO, t + 5000) + key(100 + r, comm, r, nranks)
                           + struct.pack("<q", seq))
        out += rec(hdr(CLOCK, t + 250_000_000) + struct.pack("<q", 1_700_000_000_000_000_000))
    out += rec(hdr(SNAPSHOT, t0 + 1_000_000_000) + key(100, comm, 0, nranks)
               + struct.pack("<H", 2) + prog(3, step=0) + prog(4, step=0))
    out += rec(hdr(PROC, t0 + 2_000_000_000) + struct.pack("<IBi", 101, 1, 0))
    for kind, value in ((1, b"trainer-0"), (2, b"team"), (3, b"0123456789ab")):
        out += rec(hdr(LABEL, t0) + struct.pack("<IBB", 100 + kind, kind, len(value)) + value)
    text = b"GPU has fallen off the bus."
    out += rec(hdr(XID, t0 + 2_500_000_000) + struct.pack("<IQIB", 102, 0x1a000, 79, len(text)) + text)
    for k in range(3):
        out += rec(tcp(t0 + 2_550_000_000 + k, 102, 103, 1))          # retransmits r2 -> r3
    out += rec(tcp(t0 + 2_560_000_000, 102, 0, 2, remote=b"10.0.0.9:4242"))  # reset received
    out += rec(tcp(t0 + 2_570_000_000, 102, 103, 4, 1, 7))            # established -> close
    out += rec(rdma(t0 + 2_600_000_000, 101, 1, 0, 2, 10, 0xff))      # port error
    out += rec(rdma(t0 + 2_700_000_000, 102, 1, 0x1a2, 1, 0xff, 6))   # QP to ERR
    out += rec(hdr(GONE, t0 + 3_000_000_000) + key(103, comm, 3, nranks))
    for k in range(40):
        out += rec(hdr(CLOCK, t0 + 3_000_000_000 + k * 250_000_000) + struct.pack("<q", 0))
    return out


def main():
    d = sys.argv[1]
    seeds = {"healthy4": job(4, 1_000_000_000), "hang4": job(4, 5, hang_rank=2),
             "hang2": job(2, 0, hang_rank=1),
             "hang4warn": job(4, 5, hang_rank=2)
             + rec(endpoint(1_000_000_000, 102, b"10.0.0.2", 41000))
             + rec(endpoint(1_500_000_000, 102, b"10.0.0.2", 41000, 1))
             + rec(label(1_000_000_000, 101, 6, b"2.28.9 3f2a1c0b"))
             + rec(label(1_000_000_000, 102, 6, b"2.28.9 77aa1c0b"))
             + rec(label(1_000_000_000, 101, 7, b"NCCL_ALGO=Ring"))
             + rec(nccl_warn(
                 2_000_000_000, 101, 71, b"misc/socket.cc",
                 b"socketProgress: Connection closed by remote peer 10.0.0.2<41000>")),
             "attach4": attached(4, 1_000_000_000, behind=1),
             "init4": init_hang(4, 2),
             "init4read": init_read_inside(4, 2),
             "split4": split_hang(4, 1),
             "named4": named_ranks(4, 0xF00D, 2, b"tp2"),
             "attach4dead": attached(4, 1_000_000_000, dead=3),
             "healthy4sched": job(4, 1_000_000_000)
             + b"".join(rec(sched(1_000_000_000 + k * 250_000_000, 100 + r, 1000 + r,
                                  k * 200_000_000, k * (90_000_000 if r == 1 else 10_000_000)))
                        for k in range(8) for r in range(4))
             + rec(steps_shed(2_000_000_000, 918))}
    for name, data in seeds.items():
        with open(f"{d}/{name}", "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
