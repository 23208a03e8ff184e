#!/usr/bin/env python3
"""perfkit top vs perf top: the CPU each costs while watching a busy machine.

Runs a CPU-bound workload on every CPU, then, one after the other in one run, `perf top
--stdio` and `perfkit top --stdio` system-wide at the default rate (4000 Hz per CPU) for
SECONDS each, output thrown away, and prints the CPU time each used (user + system, from
wait4) as a percentage of one CPU, and their ratio. Goal: perfkit <= 2% of one CPU on 2 CPUs.

Usage: scripts/bench-top.py [--seconds S] [--delay D] [--no-build]
"""
import os, signal, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
arg = lambda name, default: float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default
SECONDS = arg("--seconds", 20)
DELAY = arg("--delay", 2)

if "--no-build" not in sys.argv:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "perfkit-cli"], cwd=ROOT,
                   check=True)
PERFKIT = os.path.join(ROOT, "target", "release", "perfkit")
ncpu = os.cpu_count() or 1
# One spinning process per CPU: every sample lands in a user function.
spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(ncpu)]

def cost(cmd):
    """CPU seconds (user, system) of `cmd` run for SECONDS then interrupted."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.monotonic()
    time.sleep(SECONDS)
    p.send_signal(signal.SIGINT)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    return ru.ru_utime, ru.ru_stime, wall

try:
    rows = []
    for name, cmd in [
        ("perf top", ["perf", "top", "--stdio", "-d", str(int(DELAY))]),
        ("perfkit top", [PERFKIT, "top", "--stdio", "-d", str(DELAY)]),
    ]:
        u, s, wall = cost(cmd)
        pct = 100.0 * (u + s) / wall
        rows.append((name, u, s, wall, pct))
        print(f"{name:12} user {u:6.2f}s  sys {s:6.2f}s  over {wall:5.1f}s  = {pct:5.2f}% of one CPU")
    print(f"perfkit/perf CPU ratio: {rows[1][4] / max(rows[0][4], 1e-9):.2f}  "
          f"({ncpu} CPUs, default rate, refresh every {DELAY}s)")
finally:
    for s in spinners:
        s.kill()
