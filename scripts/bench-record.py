#!/usr/bin/env python3
"""perfkit record vs perf record, side by side in one run, printing ratios:

  1. fixed start/stop cost: `record -- true`          (goal: perfkit under 0.1 s)
  2. workload slowdown at -F 4000 and -F 20000         (goal: no more than perf's)
  3. samples lost at -F max                            (goal: no more than perf's)
  4. file size for the same workload                   (goal: no larger than perf's)

Usage: scripts/bench-record.py [--runs N]
"""
import os, re, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
subprocess.run(["cargo", "build", "--release", "-q", "-p", "perfkit-cli"], cwd=ROOT, check=True)
PERFKIT = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "perfkit")
tmp = tempfile.mkdtemp()
WORK = os.path.join(tmp, "workload")
subprocess.run(["cc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", WORK,
                os.path.join(ROOT, "crates/perfkit-cli/tests/fixtures/workload.c")], check=True)

def wall(cmd, runs=RUNS):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)

def rec(tool, out, flags, cmd):
    return [tool, "record", "-q", "-o", out] + flags + ["--"] + cmd

pk_out, pf_out = os.path.join(tmp, "pk.data"), os.path.join(tmp, "pf.data")
print(f"== 1. fixed cost of `record -- true` (median of {RUNS})")
a = wall(rec(PERFKIT, pk_out, [], ["true"]))
b = wall(rec("perf", pf_out, [], ["true"]))
print(f"perfkit {a:.3f} s   perf {b:.3f} s   ratio {a/b:.3f}")

print("== 2. slowdown of a 2-thread CPU-bound workload (1 s each)")
bare = wall([WORK, "threads", "2", "1000"], 3)
for hz in ["4000", "20000"]:
    a = wall(rec(PERFKIT, pk_out, ["-F", hz, "-g"], [WORK, "threads", "2", "1000"]), 3)
    b = wall(rec("perf", pf_out, ["-F", hz, "-g"], [WORK, "threads", "2", "1000"]), 3)
    print(f"-F {hz:>5}: bare {bare:.3f} s  perfkit +{(a-bare)*100/bare:5.1f}%  perf +{(b-bare)*100/bare:5.1f}%"
          f"   overhead ratio {(a-bare)/max(b-bare,1e-9):.2f}")

def lost(path):
    out = subprocess.run(["perf", "report", "--stdio", "-i", path], capture_output=True, text=True).stdout
    m = re.search(r"Total Lost Samples: (\d+)", out)
    return int(m.group(1)) if m else -1

def samples(path):
    out = subprocess.run(["perf", "script", "-F", "ip", "-G", "-i", path], capture_output=True, text=True).stdout
    return out.count("\n")

print("== 3. -F max with a small ring (-m 8), lost samples")
for tool, out in [(PERFKIT, pk_out), ("perf", pf_out)]:
    subprocess.run(rec(tool, out, ["-F", "max", "-m", "8", "-g"], [WORK, "threads", "2", "1000"]),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"{os.path.basename(tool):8} samples {samples(out):8}  lost {lost(out)}")

print("== 4. file size, same workload, -F 4000 -g")
for tool, out in [(PERFKIT, pk_out), ("perf", pf_out)]:
    subprocess.run(rec(tool, out, ["-g"], [WORK, "spin", "1000"]), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
n_pk, n_pf = samples(pk_out), samples(pf_out)
s_pk, s_pf = os.path.getsize(pk_out), os.path.getsize(pf_out)
print(f"perfkit {s_pk/1e3:.1f} kB ({n_pk} samples, {s_pk/max(n_pk,1):.0f} B/sample)   "
      f"perf {s_pf/1e3:.1f} kB ({n_pf} samples, {s_pf/max(n_pf,1):.0f} B/sample)   "
      f"per-sample ratio {(s_pk/max(n_pk,1))/(s_pf/max(n_pf,1)):.2f}")
