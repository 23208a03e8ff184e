#!/usr/bin/env python3
"""perfkit stat vs perf stat, side by side in one run, printing ratios.

  1. wall time of `stat -- true` (goal: perfkit at most half of perf's)
  2. overhead on a CPU-bound workload with the default events (goal: no more than perf's)
  3. counts of deterministic software events (goal: within 2% of perf's)

Usage: scripts/bench-stat.py [--runs N]   (builds perfkit in release mode first)
"""
import os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 30

def sh(*a, **kw):
    return subprocess.run(list(a), check=True, **kw)

sh("cargo", "build", "--release", "-q", "-p", "perfkit-cli", cwd=ROOT)
PERFKIT = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "perfkit")
tmp = tempfile.mkdtemp()
WORK = os.path.join(tmp, "workload")
sh("cc", "-O1", "-pthread", "-o", WORK,
   os.path.join(ROOT, "crates/perfkit-cli/tests/fixtures/workload.c"))

def wall(cmd, runs=RUNS):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)

print(f"== 1. `stat -- true`, median of {RUNS} runs")
pk = wall([PERFKIT, "stat", "--", "true"])
pf = wall(["perf", "stat", "--", "true"])
print(f"perfkit {pk*1e3:8.2f} ms   perf {pf*1e3:8.2f} ms   ratio perfkit/perf = {pk/pf:.3f}")

print("== 2. overhead on a CPU-bound workload (spin 300 ms), default events")
base = wall([WORK, "spin", "300"], 5)
pk = wall([PERFKIT, "stat", "--", WORK, "spin", "300"], 5)
pf = wall(["perf", "stat", "--", WORK, "spin", "300"], 5)
print(f"bare {base*1e3:.1f} ms   perfkit +{(pk-base)*1e3:.2f} ms   perf +{(pf-base)*1e3:.2f} ms"
      f"   overhead ratio perfkit/perf = {(pk-base)/max(pf-base,1e-9):.3f}")

def count(tool, ev, args):
    out = subprocess.run([tool, "stat", "-x", ",", "-e", ev, "--", WORK] + args,
                         capture_output=True, text=True).stderr
    for line in out.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] == ev:
            return float(f[0])
    raise SystemExit(f"{tool}: no {ev} in {out!r}")

print("== 3. deterministic counts")
for ev, args in [("page-faults", ["pages", "10000"]), ("context-switches", ["sleep", "200"])]:
    a = statistics.median(count(PERFKIT, ev, args) for _ in range(5))
    b = statistics.median(count("perf", ev, args) for _ in range(5))
    print(f"{ev:18} perfkit {a:10.0f}   perf {b:10.0f}   ratio {a/b:.4f}")
