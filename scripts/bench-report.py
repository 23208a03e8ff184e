#!/usr/bin/env python3
"""perfkit report/script vs perf report/script on the same perf.data, side by side.

Records (with `perf record -g`) CPU-bound workloads long enough for >= 100K samples with
callchains -- a shallow one (main;spin) and a deep one (chains of 8 to 40 frames through
mutually recursive functions, where perf's children mode is slow) -- then times, in one run:
  report --stdio with children     (goal: perfkit 5x faster than perf)
  report --stdio --no-children     (goal: 2x faster)
  script                           (goal: 3x faster)
and the peak memory (max RSS) of each (goal: no more than perf's); then `script` on a
system-wide recording of 14 tracepoint subsystems (fields formatted from print fmts).

Usage: scripts/bench-report.py [--samples N] [--runs R]
"""
import os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
arg = lambda name, default: int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default
SAMPLES = arg("--samples", 100_000)
RUNS = arg("--runs", 3)

subprocess.run(["cargo", "build", "--release", "-q", "-p", "perfkit-cli"], cwd=ROOT, check=True)
PERFKIT = os.path.join(ROOT, "target", "release", "perfkit")
tmp = tempfile.mkdtemp()
work = os.path.join(tmp, "workload")
subprocess.run(["cc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", work,
                os.path.join(ROOT, "crates/perfkit-cli/tests/fixtures/workload.c")], check=True)
# perf's default 4000 Hz on 2 threads: SAMPLES / 8000 seconds of wall time.
secs = max(1, SAMPLES // 8000 + 1)
files = []
for kind, mode in [("shallow", "threads"), ("deep", "deep")]:
    data = os.path.join(tmp, f"{kind}.data")
    subprocess.run(["perf", "record", "-q", "-g", "-o", data, "--", work, mode, "2",
                    str(secs * 1000)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    n = subprocess.run(["perf", "script", "-i", data, "-F", "tid"], capture_output=True,
                       text=True).stdout.count("\n")
    print(f"{kind}: recorded {os.path.getsize(data)/1e6:.1f} MB, {n} samples")
    files.append((kind, data))

# A tracepoint-heavy file: 14 subsystems system-wide while files are written and listed
# (hundreds of thousands of samples whose fields are formatted from their print fmts).
data = os.path.join(tmp, "tracepoints.data")
events = ["sched:*", "timer:*", "irq:*", "kmem:kmalloc", "kmem:kfree", "kmem:mm_page_alloc",
          "workqueue:*", "writeback:*", "rcu:*", "ipi:*", "mmap:*", "signal:*", "task:*",
          "syscalls:sys_enter_openat"]
cmd = ["perf", "record", "-q", "-a", "-o", data]
for e in events:
    cmd += ["-e", e]
dd = os.path.join(tmp, "dd.out")
subprocess.run(cmd + ["--", "sh", "-c", f"for i in 1 2 3; do dd if=/dev/zero of={dd} bs=1M "
                      "count=16 conv=fsync 2>/dev/null; ls -R /usr/share >/dev/null; done"],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
n = subprocess.run(["perf", "script", "-i", data, "-F", "tid"], capture_output=True,
                   text=True).stdout.count("\n")
print(f"tracepoints: recorded {os.path.getsize(data)/1e6:.1f} MB, {n} samples")
files.append(("tracepoints", data))

def measure(cmd):
    best = None
    for _ in range(RUNS):
        t = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t
        if p.returncode != 0:
            raise SystemExit(f"{cmd} failed: {p.stderr.decode()[-500:]}")
        best = dt if best is None else min(best, dt)
    return best

def rss_of(cmd):
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True).stderr.strip().splitlines()
    return int(out[-1]) if out and out[-1].isdigit() else 0

print(f"{'case':32} {'perfkit s':>10} {'perf s':>10} {'speed-up':>9} {'perfkit MB':>11} {'perf MB':>8}")
for kind, data in files:
    cases = [
        ("report (children)", ["report", "--stdio", "-q", "-i", data], ["report", "--stdio", "-i", data]),
        ("report --no-children", ["report", "--stdio", "-q", "--no-children", "-i", data],
         ["report", "--stdio", "--no-children", "-i", data]),
        ("script", ["script", "-q", "-i", data], ["script", "-i", data]),
    ]
    if kind == "tracepoints":
        cases = cases[2:]
    for name, ours, theirs in cases:
        a = measure([PERFKIT] + ours)
        b = measure(["perf"] + theirs)
        ra, rb = rss_of([PERFKIT] + ours), rss_of(["perf"] + theirs)
        print(f"{kind + ' ' + name:32} {a:10.3f} {b:10.3f} {b/a:8.2f}x {ra/1024:11.1f} {rb/1024:8.1f}")
