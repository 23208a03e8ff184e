#!/usr/bin/env python3
"""The cost of `perfkit agent` and `perfkit exporter`, measured from /proc (CPU time of the
process, utime+stime, and its RSS over time), printing the figures the fleet issue asks for:

  agent:    CPU share of one CPU while every CPU is busy (goal <= 1%), in total and per
            30 s, RSS every 30 s (goal: flat), profiles written; the busy workload is a C
            program with a few levels of calls (so call chains have depth) in one process
            per CPU, and with --churn a short-lived process is started every 100 ms (new
            pids, as on a build machine);
  exporter: CPU share with 10 events x all CPUs scraped every 15 s (goal <= 1%), RSS.

Usage (as root, release build):
  scripts/bench-fleet.py agent    [--seconds 600] [--churn] [--perfkit target/release/perfkit]
                                  [-- EXTRA AGENT FLAGS, e.g. --no-symbolize]
  scripts/bench-fleet.py exporter [--seconds 300] [--perfkit target/release/perfkit]

perf has no continuous agent or exporter to compare with: the figures are absolute.
"""
import os, subprocess, sys, tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if len(sys.argv) < 2 or sys.argv[1] not in ("agent", "exporter"):
    raise SystemExit(__doc__)
MODE = sys.argv[1]
EXTRA = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
CHURN = "--churn" in sys.argv
SECONDS = int(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else (
    600 if MODE == "agent" else 300)
PERFKIT = os.path.abspath(sys.argv[sys.argv.index("--perfkit") + 1]) if "--perfkit" in sys.argv \
    else os.path.join(ROOT, "target/release/perfkit")
HZ = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ  # utime, stime


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


BUSY_C = r"""
__attribute__((noinline)) double leaf(double x) { for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 0.5; return x; }
__attribute__((noinline)) double mid(double x, int d) { return d ? mid(leaf(x), d - 1) : leaf(x); }
int main(void) { double x = 1; for (;;) x = mid(x, 8); return x == 0; }
"""
tmp = tempfile.mkdtemp()
src, exe = os.path.join(tmp, "busy.c"), os.path.join(tmp, "busy")
with open(src, "w") as f:
    f.write(BUSY_C)
subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-o", exe, src], check=True)
busy = [subprocess.Popen(["nice", "-n", "19", exe]) for _ in range(NCPU)]
if CHURN:
    busy.append(subprocess.Popen(["nice", "-n", "19", "sh", "-c",
                                  "while :; do /bin/true; sleep 0.1; done"]))
try:
    if MODE == "agent":
        out = os.path.join(tmp, "profiles")
        proc = subprocess.Popen([PERFKIT, "agent", "-d", out] + EXTRA, stderr=subprocess.DEVNULL)
    else:
        events = ("task-clock,cpu-clock,context-switches,cpu-migrations,page-faults,"
                  "minor-faults,major-faults,alignment-faults,emulation-faults,dummy")
        proc = subprocess.Popen([PERFKIT, "exporter", "-l", "127.0.0.1:19669", "-e", events],
                                stderr=subprocess.DEVNULL)
    time.sleep(2)
    c0, t0 = cpu_seconds(proc.pid), time.monotonic()
    rss = []
    scrapes = 0
    next_rss = 0.0
    last_c, last_t = c0, t0
    while time.monotonic() - t0 < SECONDS:
        el = time.monotonic() - t0
        if el >= next_rss:
            rss.append((round(el), rss_kib(proc.pid)))
            c, t = cpu_seconds(proc.pid), time.monotonic()
            if t > last_t:
                print(f"  {round(el):5d} s: RSS {rss[-1][1]} KiB, CPU {(c - last_c) / (t - last_t) * 100:.3f}% "
                      "of one CPU over the last interval", flush=True)
            last_c, last_t = c, t
            next_rss += 30
        if MODE == "exporter":
            page = urllib.request.urlopen("http://127.0.0.1:19669/metrics").read()
            scrapes += 1
            time.sleep(15)
        else:
            time.sleep(1)
    c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    rss.append((round(t1 - t0), rss_kib(proc.pid)))
    share = (c1 - c0) / (t1 - t0) * 100
    print(f"{MODE}: {c1 - c0:.2f} s CPU in {t1 - t0:.0f} s with {NCPU} busy CPUs: "
          f"{share:.3f}% of one CPU (goal <= 1%)")
    if MODE == "exporter":
        series = page.decode().count("perfkit_event_count_total{")
        print(f"exporter: {scrapes} scrapes, {series} count series per page")
    else:
        n = len([f for f in os.listdir(out) if f.endswith(".pb.gz")])
        print(f"agent: {n} profiles written")
    print("RSS (s, KiB): " + " ".join(f"{t}:{k}" for t, k in rss))
    first, last = rss[1][1] if len(rss) > 2 else rss[0][1], rss[-1][1]
    print(f"RSS after warm-up {first} KiB, at the end {last} KiB ({(last - first) / max(first, 1) * 100:+.1f}%)")
    proc.terminate()
    proc.wait()
finally:
    for b in busy:
        b.kill()
