#!/usr/bin/env python3
"""BENCHMARKS.md §14: the CPU a drain costs the PostgreSQL server, per job.

  server-cpu.py sample DATA_DIR OUT      # every 0.1 s: time, server CPU ticks, machine busy ticks
  server-cpu.py window OUT END SECS N    # CPU per job over the SECS before END (epoch seconds)

The server's CPU is its postmaster's and live children's user+system time, with the children
that have exited (each drain's backends) counted in the postmaster's cutime+cstime. Run the
drains through `ts`-style timestamping (see BENCHMARKS.md) to know each one's END.
"""
import bisect
import os
import sys
import time

TICK = 1 / os.sysconf("SC_CLK_TCK")


def ticks(pid, with_children):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    t = int(fields[11]) + int(fields[12])
    return t + int(fields[13]) + int(fields[14]) if with_children else t


def server(pm):
    total = ticks(pm, True)
    with open(f"/proc/{pm}/task/{pm}/children") as f:
        kids = f.read().split()
    for kid in kids:
        try:
            total += ticks(kid, False)
        except OSError:
            pass  # it exited between the listing and the read: counted in cutime next time
    return total


def busy():
    with open("/proc/stat") as f:
        cpu = list(map(int, f.readline().split()[1:]))
    return sum(cpu) - cpu[3] - cpu[4]  # less idle and iowait


def sample(data_dir, out):
    with open(os.path.join(data_dir, "postmaster.pid")) as f:
        pm = int(f.readline())
    with open(out, "w") as o:
        while True:
            o.write(f"{time.time():.3f} {server(pm)} {busy()}\n")
            o.flush()
            time.sleep(0.1)


def window(out, end, secs, n):
    with open(out) as f:
        rows = [tuple(map(float, line.split())) for line in f if line.strip()]
    times = [r[0] for r in rows]

    def at(t):
        return rows[min(bisect.bisect_left(times, t), len(rows) - 1)]

    a, b = at(end - secs), at(end)
    us = lambda d: d * TICK / n * 1e6  # noqa: E731
    print(f"{n / secs:.0f} jobs/s, server {us(b[1] - a[1]):.0f} µs a job, "
          f"machine busy {us(b[2] - a[2]):.0f} µs a job")


if __name__ == "__main__":
    if sys.argv[1:2] == ["sample"]:
        sample(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["window"]:
        window(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
