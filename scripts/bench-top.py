#!/usr/bin/env python3
"""perfkit top vs perf top: the CPU each costs while watching the same busy machine.

Runs a CPU-bound workload on every CPU, then starts `perf top --stdio` and `perfkit top
--stdio` together, system-wide at the default rate (4000 Hz per CPU), output thrown away.
After a warm-up (start-up: kallsyms, the first symbol tables) it reads each one's CPU time
(utime + stime of every thread, from /proc/PID/stat) at the start and end of a window of
SECONDS, and prints each one's share of one CPU over the window and over the whole run,
and their ratio. Both watch the same workload at the same time, so the load they see is the
same. Goal: perfkit <= 2% of one CPU on 2 CPUs.

Usage: scripts/bench-top.py [--seconds S] [--warmup W] [--delay D] [--no-build]
                            [--sequential] [--perfkit-args "ARGS"] [--baseline BIN]
                            [--churn]

--churn adds many short-lived processes beside the spinners (a shell loop running
/bin/true twenty times and the C compiler on a one-line file, over and over), as a busy
build machine starts them: each new process is new maps, new addresses and new samples
to name. The load average over the run is printed either way.

The binary measured is $PERFKIT, else $CARGO_TARGET_DIR/release/perfkit (target/ by
default); --baseline BIN watches a second perfkit (an earlier build) in the same run.
"""
import os, shlex, signal, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
arg = lambda name, default: sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
SECONDS = float(arg("--seconds", 20))
WARMUP = float(arg("--warmup", 3))
DELAY = float(arg("--delay", 2))
EXTRA = shlex.split(arg("--perfkit-args", ""))
TICK = os.sysconf("SC_CLK_TCK")

if "--no-build" not in sys.argv:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "perfkit-cli"], cwd=ROOT,
                   check=True)
# The build's binary (CARGO_TARGET_DIR as cargo reads it), or the one PERFKIT names.
PERFKIT = os.environ.get("PERFKIT") or os.path.join(
    os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"), "release", "perfkit")
# --baseline BIN: another perfkit (an earlier build) watched in the same run, so a change's
# before and after are measured side by side under the same load.
BASELINE = arg("--baseline", None)
ncpu = os.cpu_count() or 1


def cpu_seconds(pid):
    """utime + stime of the whole process (every thread), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields 14 and 15 of stat(5); the split starts at field 3 (state).
    return (int(fields[11]) + int(fields[12])) / TICK


TOOLS = [
    ("perf top", ["perf", "top", "--stdio", "-d", str(max(1, int(DELAY)))]),
    ("perfkit top", [PERFKIT, "top", "--stdio", "-d", str(DELAY)] + EXTRA),
]
if BASELINE:
    TOOLS.append(("baseline", [BASELINE, "top", "--stdio", "-d", str(DELAY)] + EXTRA))

# One spinning process per CPU: every sample lands in a user function.
spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(ncpu)]
if "--churn" in sys.argv:
    import tempfile
    scratch = tempfile.mkdtemp(prefix="bench-top-")
    with open(os.path.join(scratch, "x.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    loop = ("while :; do for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do "
            "/bin/true; done; cc -c x.c -o x.o 2>/dev/null; done")
    spinners.append(subprocess.Popen(["sh", "-c", loop], cwd=scratch,
                                     start_new_session=True))


def measure(tools):
    procs = [(name, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
             for name, cmd in tools]
    t0 = time.monotonic()
    time.sleep(WARMUP)
    first = [(cpu_seconds(p.pid), time.monotonic()) for _, p in procs]
    time.sleep(SECONDS)
    last = [(cpu_seconds(p.pid), time.monotonic()) for _, p in procs]
    out = []
    for (name, p), (c0, w0), (c1, w1) in zip(procs, first, last):
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        out.append((name, 100.0 * (c1 - c0) / (w1 - w0), 100.0 * c1 / (w1 - t0), p.returncode))
    return out


try:
    if "--sequential" in sys.argv:
        rows = measure(TOOLS[:1]) + measure(TOOLS[1:])
    else:
        rows = measure(TOOLS)
    for name, window, whole, rc in rows:
        print(f"{name:12} {window:5.2f}% of one CPU over {SECONDS:.0f}s after a {WARMUP:.0f}s "
              f"warm-up ({whole:5.2f}% from its start; exit {rc})")
    if BASELINE:
        print(f"perfkit/baseline CPU ratio: {rows[1][1] / max(rows[2][1], 1e-9):.2f}")
    print(f"perfkit/perf CPU ratio: {rows[1][1] / max(rows[0][1], 1e-9):.2f}  "
          f"({ncpu} CPUs, default rate, refresh every {DELAY}s, "
          f"{'one after the other' if '--sequential' in sys.argv else 'side by side'})")
    print("goal: perfkit top <= 2% of one CPU:", "met" if rows[1][1] <= 2.0 else "NOT met")
    print("load average at the end: %.2f %.2f %.2f%s" % (
        *os.getloadavg(), ", with short-lived processes (--churn)" if "--churn" in sys.argv
        else ""))
finally:
    for s in spinners:
        try:
            # The churn loop's shell and whatever it runs now.
            os.killpg(s.pid, signal.SIGKILL) if s.args[0] == "sh" else s.kill()
        except ProcessLookupError:
            pass
