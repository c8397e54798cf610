#!/usr/bin/env python3
"""A bounded CPU load: the busy machine tests/repeat.sh --noise runs tests on.

  noise.py [SECONDS]   (default 3600; SIGTERM or SIGINT stop it at once)

- one hog per CPU, in bursts: busy 0.3-0.8 s, then idle 1-2 s;
- a busy neighbour at nice 10: busy 50 ms, idle 50 ms, all the time.
Each CPU is busy at most about 40% of the time from the hogs, so a test
always gets CPU, later than on an idle machine: as on a shared node.
"""
import os
import random
import signal
import sys
import time


def busy(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def hog(until, seed):
    rnd = random.Random(seed)
    while time.monotonic() < until:
        busy(rnd.uniform(0.3, 0.8))
        time.sleep(rnd.uniform(1.0, 2.0))


def neighbour(until):
    os.nice(10)
    while time.monotonic() < until:
        busy(0.05)
        time.sleep(0.05)


def main():
    until = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 3600)
    children = []
    workers = [lambda s=i: hog(until, s) for i in range(os.cpu_count() or 1)]
    workers.append(lambda: neighbour(until))
    for w in workers:
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            w()
            os._exit(0)
        children.append(pid)

    def stop(*_):
        for c in children:
            try:
                os.kill(c, signal.SIGKILL)
            except OSError:
                pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for c in children:
        os.waitpid(c, 0)


if __name__ == "__main__":
    main()
