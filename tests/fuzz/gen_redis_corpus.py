#!/usr/bin/env python3
"""Seed corpus for fuzz_redis: Redis URLs, and the RESP2 bytes a Redis 7
server sends for the consumer's commands (docs/fleet.md): XREADGROUP with
records and with trimmed (nil) entries, XAUTOCLAIM, an XRANGE entry, and
XINFO GROUPS + XINFO STREAM.  The first byte of each file is fuzz_redis.c's
selector: 0 for a URL; else bits 1-2 the shard count - 1, bit 3 a second
replica, bit 4 the pending phase, bits 5-6 the handler (0 XREADGROUP,
1 XAUTOCLAIM, 2 one entry, 3 XINFO)."""
import os
import sys


def resp(v):
    if v is None:
        return b"*-1\r\n"
    if isinstance(v, int):
        return b":%d\r\n" % v
    if isinstance(v, bytes):
        return b"$%d\r\n%s\r\n" % (len(v), v)
    if isinstance(v, str):
        return b"+%s\r\n" % v.encode()
    return b"*%d\r\n" % len(v) + b"".join(resp(x) for x in v)


def entry(eid, node=b"node7", inst=b"1234567890123", seq=b"1", data=b"\x02\x01rec"):
    return [eid, [b"node", node, b"inst", inst, b"seq", seq, b"data", data]]


def sel(handler, shards=1, part=0, pending=0):
    return bytes([1 | (shards - 1) << 1 | part << 3 | pending << 4 | handler << 5])


def main(out):
    urls = [b"redis://redis:6379", b"redis://10.0.0.7:6380/2", b"redis://[fd00::1]:6379/0",
            b"unix:///run/redis/redis.sock", b"redis://user:pw@host", b"redis://h:0"]
    files = {"url-%d" % i: b"\0" + u for i, u in enumerate(urls)}
    read = [[b"ccld:rec:0", [entry(b"1700000000000-0"), entry(b"1700000000000-1", data=b"\x00"),
                             [b"1700000000001-0", None]]],
            [b"ccld:rec:1", [entry(b"1700000000002-5", seq=b"2", data=b"\x01x")]]]
    files["xreadgroup"] = sel(0, shards=2) + resp(read)
    files["xreadgroup-pending"] = sel(0, shards=2, pending=1) + resp(read)
    files["xreadgroup-replica"] = sel(0, shards=4, part=1) + resp(
        [[b"ccld:rec:3", [entry(b"5-0")]], [b"ccld:rec:1", [entry(b"6-0", data=b"\x03")]]])
    files["xreadgroup-nil"] = sel(0) + resp(None)
    files["xautoclaim"] = sel(1) + resp([b"0-0", [entry(b"1700000000000-0")], []])
    files["xautoclaim-more"] = sel(1) + resp([b"1700000000005-0", [entry(b"3-1"), None], []])
    files["xrange"] = sel(2) + resp(b"1700000000000-0") + resp(entry(b"1700000000000-1"))
    groups = [[b"name", b"ccld-analyzer", b"consumers", 2, b"pending", 3,
               b"last-delivered-id", b"1700000000000-1", b"entries-read", 40, b"lag", None]]
    stream = [b"length", 42, b"radix-tree-keys", 1, b"entries-added", 42,
              b"last-generated-id", b"1700000000000-1", b"groups", 1]
    files["xinfo"] = sel(3) + resp(groups) + resp(stream)
    files["error"] = sel(0) + b"-NOGROUP No such key 'ccld:rec:0'\r\n"
    for name, blob in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main(sys.argv[1])
