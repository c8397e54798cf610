#!/usr/bin/env python3
"""Fleet load test (make bench; docs/numbers.md): a real redis-server on
loopback, one ccld-analyzer, and build/tests/bench/fleet_load's synthetic
agents (AGENTS x RANKS ranks, ROUNDS rounds/s per rank, 3 records per rank
and round).  Reports the records/s delivered, the analyzer's CPU use while
the load runs, its lag, and the verdict latency: from the moment rank 5 of
node load-0 stops (the generator's hang_ns, CLOCK_MONOTONIC) to the moment
the H1 verdict line is read from the analyzer (same clock), against the
stall threshold.

usage: fleet_load.py [AGENTS RANKS ROUNDS SECONDS HANG_AT]  (default 4 64 100 30 20)
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

STALL = 3
SHARDS = 8


def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def main():
    agents, ranks, rounds, secs, hang_at = (int(x) for x in (sys.argv[1:] or [4, 64, 100, 30, 20]))
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    tmp = tempfile.mkdtemp(prefix="ccld-load.")
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", tmp],
                             stdout=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    url = f"redis://127.0.0.1:{port}"
    an = subprocess.Popen([f"{top}/build/bin/ccld-analyzer", "--redis", url, "--json",
                           "--stall", str(STALL), "--shards", str(SHARDS), "--name", "load"],
                          stdout=subprocess.PIPE, stderr=open(f"{tmp}/analyzer.err", "w"),
                          text=True, bufsize=1)
    time.sleep(1)
    gen = subprocess.Popen([f"{top}/build/tests/bench/fleet_load", url, str(agents), str(ranks),
                            str(rounds), str(secs), str(hang_at), str(SHARDS)],
                           stdout=subprocess.PIPE, stderr=open(f"{tmp}/gen.err", "w"), text=True)
    c0, t0 = cpu_s(an.pid), time.monotonic()
    hang_ns = None
    os.set_blocking(gen.stdout.fileno(), False)
    os.set_blocking(an.stdout.fileno(), False)
    verdict_ns = verdict = None
    cpu_load = None
    while gen.poll() is None or verdict is None:
        line = gen.stdout.readline()
        if line.startswith("hang_ns"):
            hang_ns = int(line.split()[1])
            c1, t1 = cpu_s(an.pid), time.monotonic()
            cpu_load = (c1 - c0) / (t1 - t0)
        line = an.stdout.readline()
        if line and verdict is None:
            v = json.loads(line)
            if v.get("type") == "verdict" and v.get("role") == "root":
                verdict_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                verdict = v
        if not line:
            time.sleep(0.005)
        if time.monotonic() - t0 > secs + 30:
            break
    gen.wait()
    lag = subprocess.run(["redis-cli", "-p", str(port), "xinfo", "groups", "ccld:rec:0"],
                         capture_output=True, text=True).stdout.split()
    an.terminate()
    an.wait()
    redis.terminate()
    records = agents * ranks * rounds * 3
    print(f"load: {agents} agents x {ranks} ranks x {rounds} rounds/s = {agents * ranks * rounds} rounds/s, "
          f"{records} records/s (plus clocks)")
    if cpu_load is not None:
        print(f"analyzer CPU while loaded: {cpu_load * 100:.0f}% of one core")
    if verdict is None or hang_ns is None:
        print("no verdict; analyzer stderr:", open(f"{tmp}/analyzer.err").read()[-500:])
        sys.exit(1)
    cul = verdict["culprits"][0]
    ok = verdict["class"] == "H1" and cul["host"] == "load-0" and cul["pid"] == 1005
    print(f"verdict {verdict['class']} culprit {cul['host']} pid {cul['pid']} "
          f"{'(right)' if ok else '(WRONG)'}: {(verdict_ns - hang_ns) / 1e9:.2f} s after the fault "
          f"(stall threshold {STALL} s)")
    print("analyzer:", open(f"{tmp}/analyzer.err").read().strip().splitlines()[-1])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
