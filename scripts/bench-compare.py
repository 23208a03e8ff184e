#!/usr/bin/env python3
"""Two perfkit binaries side by side in one run (interleaved, so machine noise hits both),
printing new/old ratios: `stat -- true`, `record -- true`, recording a CPU-bound workload,
and `report` / `script` of one file.

Use it before and after a change that should not cost speed:

  git worktree add /tmp/base <commit> && (cd /tmp/base && cargo build --release -p perfkit-cli)
  cargo build --release -p perfkit-cli
  scripts/bench-compare.py /tmp/base/target/release/perfkit target/release/perfkit [--runs N]
"""
import os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if len(sys.argv) < 3:
    raise SystemExit(__doc__)
OLD, NEW = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 20

tmp = tempfile.mkdtemp()
WORK = os.path.join(tmp, "workload")
subprocess.run(["cc", "-O1", "-pthread", "-o", WORK,
                os.path.join(ROOT, "crates/perfkit-cli/tests/fixtures/workload.c")], check=True)


def timed(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}")
    return time.perf_counter() - t


def compare(name, args, runs=RUNS):
    """Median wall time of `BIN args` for both binaries, runs interleaved."""
    old, new = [], []
    for _ in range(runs):
        old.append(timed([OLD] + args("old")))
        new.append(timed([NEW] + args("new")))
    o, n = statistics.median(old), statistics.median(new)
    print(f"{name:34} old {o*1e3:9.2f} ms   new {n*1e3:9.2f} ms   new/old {n/o:.3f}")


def data(which):
    return os.path.join(tmp, f"{which}.data")


compare("stat -- true", lambda w: ["stat", "--", "true"])
compare("stat -e task-clock -r 5 -- true", lambda w: ["stat", "-e", "task-clock", "-r", "5", "--", "true"])
compare("record -- true", lambda w: ["record", "-q", "-o", data(w), "--", "true"])
compare("record -g -F 10000 (spin 300 ms)",
        lambda w: ["record", "-q", "-g", "-F", "10000", "-o", data(w), "--", WORK, "spin", "300"], runs=5)
# One file for both readers: the old binary's recording.
subprocess.run([OLD, "record", "-q", "-g", "-F", "10000", "-o", data("file"), "--", WORK, "spin", "1000"],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
compare("report --stdio --no-children", lambda w: ["report", "--stdio", "--no-children", "-i", data("file")], runs=10)
compare("script", lambda w: ["script", "-i", data("file")], runs=10)
