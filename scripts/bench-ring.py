#!/usr/bin/env python3
"""perfkit record vs perf record with small and default rings, side by side in one run.

For each ring size (-m 8, -m 16 and the default ring), with and without -g, at -F max:
  cmd  `record -F max [-g] [-m N] -- workload threads 2 MS`  (a 2-thread CPU-bound command)
  -a   `record -a -F max [-g] [-m N] -- sleep SECS`           (one busy loop per CPU)
the recorders take turns, RUNS times each, and the table gives for each tool the samples
written and lost (read from the file: PERF_RECORD_LOST and PERF_RECORD_LOST_SAMPLES),
summed over the runs, and the recorder's own CPU time (user + system, the command's own
CPU left out: a small wrapper reports the workload's rusage). `--base PATH` adds a second
perfkit binary (e.g. the build before a change) as another column of the same run.

Usage: scripts/bench-ring.py [--perfkit PATH] [--base PATH] [--perf PATH] [--runs N]
                             [--ms MS] [--secs S] [--rings 8,16,default] [--modes cmd,a]
                             [--graphs g,nog]
"""
import argparse, os, shlex, signal, struct, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--perfkit", default=os.path.join(ROOT, "target", "release", "perfkit"))
ap.add_argument("--base", default=None, help="a second perfkit binary, shown as 'base'")
ap.add_argument("--perf", default="perf")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--ms", type=int, default=1000, help="CPU ms of each workload thread")
ap.add_argument("--secs", type=float, default=2, help="length of the -a recordings")
ap.add_argument("--rings", default="8,16,default")
ap.add_argument("--modes", default="cmd,a")
ap.add_argument("--graphs", default="g,nog")
args = ap.parse_args()
tools = [("perfkit", args.perfkit)] + ([("base", args.base)] if args.base else []) + [("perf", args.perf)]
for _, b in tools:
    if subprocess.run(["sh", "-c", f"command -v {shlex.quote(b)}"], capture_output=True).returncode:
        sys.exit(f"{b}: not found (give --perfkit / --base / --perf)")
tmp = tempfile.mkdtemp(prefix="bench-ring-")
cpus = sorted(os.sched_getaffinity(0))

WORK = os.path.join(tmp, "workload")
subprocess.run(["cc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", WORK,
                os.path.join(ROOT, "crates/perfkit-cli/tests/fixtures/workload.c")], check=True)
# Runs a command and writes its CPU time (user + system, microseconds) to a file, so that
# the recorder's own CPU is what wait4 reports for the recorder less this.
RUSAGE = os.path.join(tmp, "rusage")
with open(RUSAGE + ".c", "w") as f:
    f.write(r"""
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    pid_t p = fork();
    if (p == 0) { execvp(argv[2], argv + 2); _exit(127); }
    int st; struct rusage ru;
    if (wait4(p, &st, 0, &ru) < 0) return 1;
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%ld\n", (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L
            + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
""")
subprocess.run(["cc", "-O1", "-o", RUSAGE, RUSAGE + ".c"], check=True)


def file_counts(path):
    """(samples, lost) of an uncompressed perf.data file, reading its records."""
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


def record(tool, flags, cmd):
    """One recording: (samples, lost, recorder CPU s) or None."""
    out = os.path.join(tmp, "out.data")
    used = os.path.join(tmp, "cmd.cpu")
    argv = [tool, "record", "-q", "-o", out] + flags + ["--", RUSAGE, used] + cmd
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"   {tool} failed: {err.strip()[:300]}")
        return None
    with open(used) as f:
        cmd_cpu = int(f.read()) / 1e6
    samples, lost = file_counts(out)
    os.unlink(out)
    return samples, lost, ru.ru_utime + ru.ru_stime - cmd_cpu


def busy_loops(n):
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"],
                             preexec_fn=lambda c=cpus[i % len(cpus)]: os.sched_setaffinity(0, {c}))
            for i in range(n)]


def stop(procs):
    for p in procs:
        p.send_signal(signal.SIGKILL)
    for p in procs:
        p.wait()


print(f"{len(cpus)} CPUs, load average {open('/proc/loadavg').read().split()[0]}, {args.runs} runs "
      f"per case; perfkit = {args.perfkit}" + (f", base = {args.base}" if args.base else "")
      + f", perf = {args.perf}")
print("samples and lost are sums over the runs; CPU is the recorder's own (user + system), summed")
head = f"{'case':34}" + "".join(f"{n + ' samples':>16}{'lost':>10}{'lost%':>7}{'CPU s':>7}" for n, _ in tools)
head += f"{'  CPU/perf':>10}"
print(head)
totals = {n: [0, 0, 0.0] for n, _ in tools}
for mode in args.modes.split(","):
    for ring in args.rings.split(","):
        for g in args.graphs.split(","):
            flags = ["-F", "max"] + (["-g"] if g == "g" else []) + ([] if ring == "default" else ["-m", ring])
            if mode == "a":
                flags = ["-a"] + flags
                cmd = ["sleep", str(args.secs)]
            else:
                cmd = [WORK, "threads", "2", str(args.ms)]
            loops = busy_loops(len(cpus)) if mode == "a" else []
            sums = {n: [0, 0, 0.0] for n, _ in tools}
            try:
                time.sleep(0.2 if loops else 0)
                for _ in range(args.runs):
                    for n, t in tools:
                        r = record(t, flags, cmd)
                        if r:
                            for i in range(3):
                                sums[n][i] += r[i]
            finally:
                stop(loops)
            line = f"{' '.join(flags) + (' (cmd)' if mode == 'cmd' else ''):34}"
            for n, _ in tools:
                s, l, c = sums[n]
                line += f"{s:>16,}{l:>10,}{100 * l / max(s + l, 1):>7.2f}{c:>7.2f}"
                for i in range(3):
                    totals[n][i] += sums[n][i]
            pc = sums["perf"][2]
            line += f"{sums['perfkit'][2] / pc if pc else float('inf'):>10.2f}"
            print(line, flush=True)
line = f"{'all cases':34}"
for n, _ in tools:
    s, l, c = totals[n]
    line += f"{s:>16,}{l:>10,}{100 * l / max(s + l, 1):>7.2f}{c:>7.2f}"
line += f"{totals['perfkit'][2] / max(totals['perf'][2], 1e-9):>10.2f}"
print(line)
for f in os.listdir(tmp):
    os.unlink(os.path.join(tmp, f))
os.rmdir(tmp)
