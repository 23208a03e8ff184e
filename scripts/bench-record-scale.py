#!/usr/bin/env python3
"""perfkit record vs perf record on every CPU, side by side in one run (issue 17, item 3):

  1. `record -a -g -F 4000`  for SECS s with every CPU busy (one busy loop per CPU)
  2. `record -a -g -F max`   for SECS s with every CPU busy
  3. the end of `record -a -g -F 10000 -- sleep SLEEP` (time from the command's exit to
     the recorder's, the side-band and build-id work at the end)

For each: samples written, samples lost (read from the file: PERF_RECORD_LOST and
PERF_RECORD_LOST_SAMPLES), the recorder's own CPU time (wait4's rusage of the record process) and peak
RSS (its VmHWM), and perfkit/perf ratios.

Needs only the two binaries and python3 (no cargo): the coordinator runs it on bigger
machines with carried binaries.

Usage: scripts/bench-record-scale.py [--perfkit PATH] [--perf PATH] [--secs N]
                                     [--sleep N] [--busy N] [--dir DIR] [--extra 'ARGS']
  --perfkit   perfkit binary (default: target/release/perfkit of this checkout)
  --perf      perf binary (default: perf)
  --secs      seconds of the busy-CPU recordings (default 5)
  --sleep     N of `-- sleep N` for the end-of-record case (default 10; the issue uses 60)
  --busy      busy loops (default: one per online CPU)
  --dir       where the files go (default: a temporary directory; they are deleted)
  --extra     more record flags for perfkit only (e.g. '--threads=cpu')
  --cases     which of 4000,max,end to run (default: all three)
"""
import argparse, os, shlex, signal, struct, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--perfkit", default=os.path.join(ROOT, "target", "release", "perfkit"))
ap.add_argument("--perf", default="perf")
ap.add_argument("--secs", type=float, default=5)
ap.add_argument("--sleep", type=float, default=10)
ap.add_argument("--busy", type=int, default=len(os.sched_getaffinity(0)))
ap.add_argument("--dir", default=None)
ap.add_argument("--extra", default="")
ap.add_argument("--cases", default="4000,max,end")
args = ap.parse_args()
for b in (args.perfkit, args.perf):
    if subprocess.run(["sh", "-c", f"command -v {shlex.quote(b)}"], capture_output=True).returncode:
        sys.exit(f"{b}: not found (give --perfkit / --perf)")
tmp = args.dir or tempfile.mkdtemp(prefix="bench-record-scale-")
os.makedirs(tmp, exist_ok=True)
cpus = sorted(os.sched_getaffinity(0))


def file_counts(path):
    """(samples, lost) of a perf.data file, reading its records (not compressed)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"PERFILE2":
        return (-1, -1)
    off, size = struct.unpack_from("<QQ", data, 40)
    at, end = off, off + size
    samples = lost = lost_samples = 0
    while at + 8 <= end:
        type_, _misc, sz = struct.unpack_from("<IHH", data, at)
        if sz < 8:
            break
        if type_ == 9:
            samples += 1
        elif type_ == 2:
            lost += struct.unpack_from("<Q", data, at + 16)[0]
        elif type_ == 13:
            lost_samples += struct.unpack_from("<Q", data, at + 8)[0]
        at += sz
    return samples, max(lost, lost_samples)


def record(tool, flags, cmd, extra=()):
    """Run one recording; returns (wall s, cpu s, peak RSS MiB, samples, lost, end s)."""
    out = os.path.join(tmp, os.path.basename(tool) + ".data")
    argv = [tool, "record", "-q", "-o", out] + list(extra) + flags + ["--"] + cmd
    t0 = time.monotonic()
    errf = open(out + ".err", "w+")
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errf)
    # Peak RSS from VmHWM, read until the process ends: wait4's ru_maxrss starts from
    # this script's own size (it survives fork and exec), so it cannot be used.
    hwm = 0
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.02)
    wall = time.monotonic() - t0
    errf.seek(0)
    err = errf.read()
    errf.close()
    os.unlink(out + ".err")
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        print(f"   {os.path.basename(tool)} failed ({p.returncode}): {err.strip()[:300]}")
        return None
    samples, lost = file_counts(out)
    os.unlink(out)
    return wall, ru.ru_utime + ru.ru_stime, hwm / 1024, samples, lost


def busy_loops(n):
    procs = []
    for i in range(n):
        cpu = cpus[i % len(cpus)]
        procs.append(subprocess.Popen(["sh", "-c", "while :; do :; done"],
                                      preexec_fn=lambda c=cpu: os.sched_setaffinity(0, {c})))
    return procs


def stop(procs):
    for p in procs:
        p.send_signal(signal.SIGKILL)
    for p in procs:
        p.wait()


def ratio(a, b):
    return f"{a / b:6.2f}" if b else "   inf"


def row(name, r):
    wall, cpu, rss, samples, lost = r
    total = samples + lost
    pct = 100 * lost / total if total else 0
    print(f"   {name:8} written {samples:>10,}  lost {lost:>10,} ({pct:5.2f}%)  "
          f"recorder CPU {cpu:7.2f} s  peak RSS {rss:7.1f} MiB  wall {wall:6.2f} s")


extra = shlex.split(args.extra)
print(f"{len(cpus)} CPUs, {args.busy} busy loops; perfkit = {args.perfkit}"
      + (f" {args.extra}" if extra else "") + f"; perf = {args.perf}")
cases = args.cases.split(",")
for freq in [c for c in ["4000", "max"] if c in cases]:
    print(f"== record -a -g -F {freq}, {args.secs:g} s, every CPU busy "
          f"(load average {open('/proc/loadavg').read().split()[0]})")
    loops = busy_loops(args.busy)
    try:
        time.sleep(0.5)
        flags = ["-a", "-g", "-F", freq]
        cmd = ["sleep", str(args.secs)]
        a = record(args.perfkit, flags, cmd, extra)
        b = record(args.perf, flags, cmd)
    finally:
        stop(loops)
    if a and b:
        row("perfkit", a)
        row("perf", b)
        print(f"   ratio perfkit/perf: CPU {ratio(a[1], b[1])}  RSS {ratio(a[2], b[2])}  "
              f"written {ratio(a[3], b[3])}  lost {a[4]:,} vs {b[4]:,}  "
              f"CPU per sample written {ratio(a[1] / max(a[3], 1), b[1] / max(b[3], 1))}")

if "end" not in cases:
    sys.exit(0)
print(f"== end of record -a -g -F 10000 -- sleep {args.sleep:g} (idle machine)")
flags = ["-a", "-g", "-F", "10000"]
cmd = ["sleep", str(args.sleep)]
a = record(args.perfkit, flags, cmd, extra)
b = record(args.perf, flags, cmd)
if a and b:
    row("perfkit", a)
    row("perf", b)
    ea, eb = a[0] - args.sleep, b[0] - args.sleep
    print(f"   end of recording (wall - {args.sleep:g} s): perfkit {ea:6.3f} s  perf {eb:6.3f} s  "
          f"ratio {ratio(max(ea, 1e-3), max(eb, 1e-3))};  CPU ratio {ratio(a[1], b[1])}  "
          f"RSS ratio {ratio(a[2], b[2])}")
if not args.dir:
    os.rmdir(tmp)
