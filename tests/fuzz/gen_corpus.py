#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Writes capture files (.ccld) straight from docs/formats.md, independently
of user/record/capture.c: the fuzzer's seed corpus and the spec example that
tests/unit/test_capture.c reads back.

Usage: gen_corpus.py DIR          all seeds into DIR
       gen_corpus.py --example F  only the spec example, into F
"""
import os
import struct
import sys
import zlib

FILE_MAGIC = b"CCLDCAP\0"
BLOCK_MAGIC = b"CCLDBLK\0"
EVENTS, META = 1, 2
CODEC_ZLIB = 1
ABI_VERSION = 2
EV_CALL, EV_RET, EV_TICK, EV_PROC_ATTACH = 1, 2, 35, 32
FN_ALLREDUCE, FN_SEND = 1, 9
EV_NCCL_WARN, WARN_CHUNK = 45, 56
EV_COMM, EV_COMM_RET, EV_COMM_NAME = 4, 5, 46
EV_THREAD, EV_THREAD_STACK, STACK_CHUNK = 42, 49, 56
FN_INIT_RANK_CONFIG, FN_SPLIT = 14, 17


def header(host, boot_id, offset_ns, kernel, version):
    def field(s, n):
        b = s.encode()[: n - 1]
        return b + b"\0" * (n - len(b))

    h = (FILE_MAGIC + struct.pack("<HHHBBq", 1, 240, 128, ABI_VERSION, 0, offset_ns)
         + field(host, 64) + field(boot_id, 40) + field(kernel, 72)
         + field(version, 32) + struct.pack("<I", 0))
    assert len(h) == 236
    return h + struct.pack("<I", zlib.crc32(h))


def block(btype, count, raw, level=6):
    comp = zlib.compress(raw, level)
    h = BLOCK_MAGIC + struct.pack("<HHIIII", btype, CODEC_ZLIB, count,
                                  len(comp), len(raw), zlib.crc32(comp))
    return h + struct.pack("<I", zlib.crc32(h)) + comp


def event(etype, fn, pid, tid, ts, comm=0, hash_=0, rank=-1, nranks=-1,
          seq=0, flags=0, union=b""):
    ev = struct.pack("<HBBIIIQQQiiQ", etype, ABI_VERSION, fn, flags, pid, tid,
                     ts, comm, hash_, rank, nranks, seq)
    ev += union.ljust(64, b"\0") + b"\0" * 8
    assert len(ev) == 128
    return ev


def call(count, send, recv, stream, root, dtype, redop, depth):
    return struct.pack("<QQQQiBB2xII", count, send, recv, stream, root, dtype,
                       redop, depth, 0)


def ret(result, entry_ns):
    return struct.pack("<qQQQQ", result, entry_ns, 0, 0, 0)


def example():
    """The file test_capture.c checks field by field."""
    out = header("spec-host", "00112233-4455-6677-8899-aabbccddeeff",
                 1700000000123456789, "6.1.0-spec", "spec-1")
    out += block(META, 1, b"host=spec-host\npid=4242 comm=train.py")
    evs = [
        event(EV_CALL, FN_ALLREDUCE, 4242, 4243, 5000000000, comm=0x7f00aa00,
              hash_=0x1122334455667788, rank=3, nranks=8, seq=17, flags=3,
              union=call(1048576, 0x1000, 0x2000, 0x30, -1, 7, 0, 0)),
        event(EV_RET, FN_ALLREDUCE, 4242, 4243, 5000250000, comm=0x7f00aa00,
              hash_=0x1122334455667788, rank=3, nranks=8, seq=18, flags=19,
              union=ret(0, 5000000000)),
        event(EV_TICK, 0, 0, 0, 5250000000),
    ]
    out += block(EVENTS, len(evs), b"".join(evs))
    return out


def warn_parts(pid, tid, ts, line, file, fmt, msg, drop=None):
    """one of NCCL's warnings as BPF sends it: file, format, message chunks"""
    chunks = [file[-WARN_CHUNK:], fmt[:WARN_CHUNK - 1]]
    m = msg + b"\0"
    chunks += [m[i:i + WARN_CHUNK] for i in range(0, len(m), WARN_CHUNK)]
    return [event(EV_NCCL_WARN, 0, pid, tid, ts + i, flags=16,
                  union=struct.pack("<IBB2x", line, i, len(chunks)) + c.ljust(WARN_CHUNK, b"\0"))
            for i, c in enumerate(chunks) if i != drop]


def warnings():
    """two of NCCL's warnings, threads interleaved, and one missing a part"""
    out = header("seed", "ffffffff-0000-1111-2222-444444444444", 0, "6.1", "seed")
    a = warn_parts(7, 8, 1000, 71, b"misc/socket.cc", b"socketProgress: Connection closed "
                   b"by remote peer %s", b"socketProgress: Connection closed by remote peer "
                   b"10.0.0.2<41000>")
    b = warn_parts(7, 9, 1001, 30, b"misc/argcheck.cc", b"%s : comm argument is NULL",
                   b"AllReduce : comm argument is NULL")
    c = warn_parts(7, 8, 2000, 12, b"init.cc", b"Invalid rank %d", b"Invalid rank 9", drop=1)
    evs = [e for pair in zip(a, b + [b""] * len(a)) for e in pair if e] + c
    out += block(EVENTS, len(evs), b"".join(evs))
    return out


def stacks():
    """two threads' native stacks before their thread records; one part lost"""
    out = header("seed", "ffffffff-0000-1111-2222-666666666666", 0, "6.1", "seed")
    text = (b"write+0x17 < save_checkpoint+0x4e < train_step+0x1c2 < main+0x2f5 < "
            b"__libc_start_call_main+0x7a < __libc_start_main+0x85 < _start+0x21")
    parts = [text[i:i + STACK_CHUNK] for i in range(0, len(text), STACK_CHUNK)]
    thread = struct.pack("<iBBBBQ16s32s", 1, ord("S"), 1, 0, 0, 3, b"python", b"pipe_write")
    evs = [event(EV_THREAD_STACK, 0, 7, 7, 500,
                 union=struct.pack("<BBB5x", i, len(parts), 7) + p.ljust(STACK_CHUNK, b"\0"))
           for i, p in enumerate(parts)]
    evs.append(event(EV_THREAD, 0, 7, 7, 500, union=thread))
    evs += [event(EV_THREAD_STACK, 0, 7, 9, 600,
                  union=struct.pack("<BBB5x", i, len(parts), 7) + p.ljust(STACK_CHUNK, b"\0"))
            for i, p in enumerate(parts) if i != 1]
    evs.append(event(EV_THREAD, 0, 7, 9, 600, union=thread))
    out += block(EVENTS, len(evs), b"".join(evs))
    return out


def comm_names():
    """an init and a split named by their configs, one name without a NUL"""
    out = header("seed", "ffffffff-0000-1111-2222-555555555555", 0, "6.1", "seed")
    evs = [
        event(EV_COMM_NAME, FN_INIT_RANK_CONFIG, 7, 8, 100, union=b"world\0"),
        event(EV_COMM, FN_INIT_RANK_CONFIG, 7, 8, 101,
              union=struct.pack("<QQQiiiiQ", 0x1234, 0, 0x5000, 4, 1, -1, -1, 0)),
        event(EV_COMM_RET, FN_INIT_RANK_CONFIG, 7, 8, 200, comm=0x7000, hash_=0x1234,
              rank=1, nranks=4, flags=1,
              union=struct.pack("<qQQqQ", 0, 101, 0x7000, -1, 0)),
        event(EV_COMM_NAME, FN_SPLIT, 7, 8, 300, union=b"tp" * 32),
        event(EV_COMM, FN_SPLIT, 7, 8, 301, comm=0x7000, hash_=0x1234, rank=1, nranks=4,
              union=struct.pack("<QQQiiiiQ", 0, 0x7000, 0x5008, -1, -1, 0, 1, 0x1234)),
        event(EV_COMM_RET, FN_SPLIT, 7, 8, 400,
              union=struct.pack("<qQQqQ", 0, 301, 0x7100, -1, 0)),
    ]
    out += block(EVENTS, len(evs), b"".join(evs))
    return out


def many(n, per_block):
    out = header("seed", "ffffffff-0000-1111-2222-333333333333", -5, "6.1", "seed")
    for start in range(0, n, per_block):
        evs = [event(EV_CALL if i % 2 == 0 else EV_RET, FN_SEND, 7, 8,
                     1000 * i, rank=i % 4, nranks=4,
                     union=call(i, 0, 0, 0, i % 4, 0, 0xff, 0))
               for i in range(start, min(n, start + per_block))]
        out += block(EVENTS, len(evs), b"".join(evs), level=1)
        out += block(META, 1, b"block=%d" % start)
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--example":
        with open(sys.argv[2], "wb") as f:
            f.write(example())
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    ex = example()
    m = many(40, 7)
    seeds = {
        "example": ex,
        "many": m,
        "header-only": ex[:240],
        "truncated": m[: len(m) - 37],
        "flipped": m[:300] + bytes([m[300] ^ 0x40]) + m[301:],
        "garbage-between": m[:500] + b"\xee" * 64 + m[500:],
        "empty-meta": ex[:240] + block(META, 1, b""),
        "nccl-warnings": warnings(),
        "comm-names": comm_names(),
        "stacks": stacks(),
    }
    for name, data in seeds.items():
        with open(os.path.join(d, name + ".ccld"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
