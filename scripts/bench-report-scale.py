#!/usr/bin/env python3
"""Report scale: perfkit and perf side by side on generated perf.data files of two sizes.

Generates (with the gen-perf-data example: many processes and threads, real shared objects
of this machine, callchains of 3 to 40 frames) a file of N samples and one of 2N, then, in
one run, times on each:
  report --stdio --no-children     (issue 17 goal: <= 0.3x perf's time on 2 cores, 0.1x on 16)
  report --stdio --children        (same)
  script                           (goal: <= 0.2x)
and, with --modes, the paths that used to keep every sample (issue 17: memory that follows
what is shown, not the samples): report --time in absolute and percent ranges
(time-abs, time-pct), script --time in percent and with --reltime (script-pct,
script-reltime), script --per-event-dump (per-event-dump, its files written next to the
input and removed), script --show-task-events (task-events), the timeline exports
(firefox, speedscope; perf has none: no perf column) and the pprof export (pprof; no perf
column; its bytes are compared decoded, strings resolved and samples as a set, since
builds before it folded put thread names in the string table in a random order)
with the peak memory (max RSS, from wait4) of each, perfkit's single-threaded path
(PERFKIT_REPORT_THREADS=1) beside its default one, and whether both give the same bytes.
Memory that is flat as the file doubles shows as a 2N/N RSS ratio near 1.

Needs no cargo: every program is an argument, so it runs on a machine that has only the
binaries (the generator, perfkit, perf).

Usage: scripts/bench-report-scale.py [--perfkit PATH] [--gen PATH] [--perf PATH]
           [--samples N | --size BYTES] [--runs R] [--dir DIR] [--keep] [--skip-perf]
           [--mults 1,2] [--modes no-children,children,script] [--no-single]
           [--cpus 0/0-1] [--perf-once] [--baseline PATH]
Defaults: target/release/perfkit, target/release/examples/gen-perf-data, perf on PATH,
N = 1000000, R = 1, a temporary directory (files removed unless --keep).
--size 900M (K, M, G: powers of 1000) sizes the files by bytes instead of samples: the 1x
file holds that much data (the issue's ">= 900 MB file"), the 2x file twice that.
--mults picks the file sizes (multiples of N), --modes the commands and their order, and
--no-single skips perfkit's single-threaded run (and the byte comparison): on a machine lent
for minutes, one >= 900 MB file and the cheap commands first.
--cpus 0/0-1 runs every command (perf's too) under `taskset -c` with each CPU list in turn
('/' between lists): CPU and wall time on 1 CPU against 2 show how much of the work runs in
parallel (the serial fraction), each beside perf in the same run; --perf-once runs perf
(one thread) in the first CPU list only.
--baseline PATH runs another perfkit build (the one before a change) beside, in the same
run: its time, CPU and peak memory, and whether its bytes are the same.
"""
import hashlib, os, shutil, subprocess, sys, tempfile, time


def pprof_content(gz):
    """A gzipped perftools.profiles.Profile as plain values: strings in place of their
    indices, locations and functions in place of their ids, the samples sorted (a tiny
    protobuf reader: field numbers as in profile.proto)."""
    def varint(b, i):
        r = sh = 0
        while True:
            c = b[i]
            i += 1
            r |= (c & 0x7F) << sh
            sh += 7
            if c < 0x80:
                return r, i

    def fields(b):
        i, out = 0, []
        while i < len(b):
            k, i = varint(b, i)
            wt = k & 7
            if wt == 0:
                v, i = varint(b, i)
            elif wt == 2:
                n, i = varint(b, i)
                v, i = b[i:i + n], i + n
            else:
                n = 8 if wt == 1 else 4
                v, i = b[i:i + n], i + n
            out.append((k >> 3, wt, v))
        return out

    def ints(fs, f):
        out = []
        for g, wt, v in fs:
            if g == f and wt == 0:
                out.append(v)
            elif g == f:
                i = 0
                while i < len(v):
                    x, i = varint(v, i)
                    out.append(x)
        return out

    def msgs(fs, f):
        return [fields(v) for g, _, v in fs if g == f]

    def one(fs, f):
        x = ints(fs, f)
        return x[-1] if x else 0

    import gzip
    p = fields(gzip.decompress(gz)) if gz else []
    st = [v.decode() for g, _, v in p if g == 6]
    S = lambda m, f: st[one(m, f)]
    funcs = {one(m, 1): (S(m, 2), S(m, 3), S(m, 4), one(m, 5)) for m in msgs(p, 5)}
    maps = [(one(m, 1), one(m, 2), one(m, 3), one(m, 4), S(m, 5), S(m, 6))
            + tuple(one(m, f) for f in (7, 8, 9, 10)) for m in msgs(p, 3)]
    locs = {one(m, 1): (one(m, 2), one(m, 3), one(m, 5),
                        tuple((funcs.get(one(l, 1)), one(l, 2), one(l, 3)) for l in msgs(m, 4)))
            for m in msgs(p, 4)}
    samples = sorted((tuple(locs[i] for i in ints(m, 1)), tuple(ints(m, 2)),
                      tuple((S(l, 1), S(l, 2), one(l, 3), S(l, 4)) for l in msgs(m, 3)))
                     for m in msgs(p, 2))
    types = [(S(m, 1), S(m, 2)) for f in (1, 11) for m in msgs(p, f)]
    return (types, samples, maps, sorted(locs.items()),
            [one(p, f) for f in (7, 8, 9, 10, 12, 14)], [st[c] for c in ints(p, 13)])


# The content hash of a pprof file, in a process of its own (`--pprof-content FILE`): the
# decoding's memory would otherwise count in the peak RSS of the commands run after it.
if sys.argv[1:2] == ["--pprof-content"]:
    with open(sys.argv[2], "rb") as f:
        print(hashlib.sha256(repr(pprof_content(f.read())).encode()).hexdigest())
    sys.exit(0)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def opt(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


PERFKIT = opt("--perfkit", os.path.join(ROOT, "target", "release", "perfkit"))
GEN = opt("--gen", os.path.join(ROOT, "target", "release", "examples", "gen-perf-data"))
PERF = opt("--perf", shutil.which("perf") or "perf")
SAMPLES = int(opt("--samples", "1000000").replace("_", ""))
SIZE = opt("--size", None)
if SIZE is not None:
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    try:
        SIZE = int(float(SIZE[:-1]) * units[SIZE[-1].upper()]) if SIZE[-1].upper() in units \
            else int(SIZE)
    except ValueError:
        sys.exit(f"--size {SIZE}: give bytes, or a number with K, M or G (e.g. 900M)")
RUNS = int(opt("--runs", "1"))
SKIP_PERF = "--skip-perf" in sys.argv
MULTS = [int(m) for m in opt("--mults", "1,2").split(",")]
MODES = opt("--modes", "no-children,children,script").split(",")
SINGLE = "--no-single" not in sys.argv
CPUS = opt("--cpus", None)
CPU_SETS = CPUS.split("/") if CPUS else [None]
BASELINE = opt("--baseline", None)
for name, path in [("perfkit", PERFKIT), ("generator", GEN)]:
    if not os.access(path, os.X_OK):
        sys.exit(f"{name} not found at {path}: build it (cargo build --release -p perfkit-cli; "
                 "cargo build --release -p perfkit-report --example gen-perf-data) or give "
                 f"--{'gen' if name == 'generator' else name} PATH")
work = opt("--dir", None) or tempfile.mkdtemp(prefix="perfkit-scale-")
os.makedirs(work, exist_ok=True)


def run(cmd, env=None):
    """(seconds, peak RSS in MB, sha256 of stdout, CPU seconds) of one run; stdout hashed
    as it streams (a pprof export: its content, decoded, see pprof_content)."""
    pprof = os.path.join(work, "out.pprof") if "pprof" in cmd else None
    if CPU_SET is not None:
        cmd = ["taskset", "-c", CPU_SET] + cmd
    t0 = time.perf_counter()
    out = open(pprof, "wb") if pprof else subprocess.PIPE
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
    h = hashlib.sha256()
    for chunk in iter(lambda: p.stdout.read(1 << 20), b"") if not pprof else []:
        h.update(chunk)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        print(f"  warning: {' '.join(cmd)} exited {p.returncode}")
    if pprof:
        out.close()
        digest = subprocess.run([sys.executable, __file__, "--pprof-content", pprof],
                                capture_output=True, text=True, check=True).stdout.strip()
        os.remove(pprof)
        return dt, ru.ru_maxrss / 1024, digest, ru.ru_utime + ru.ru_stime
    return dt, ru.ru_maxrss / 1024, h.hexdigest(), ru.ru_utime + ru.ru_stime


def best(cmd, env=None):
    runs = [run(cmd, env) for _ in range(RUNS)]
    return (min(r[0] for r in runs), max(r[1] for r in runs), runs[0][2],
            min(r[3] for r in runs))


files = []
for mult in MULTS:
    n = SAMPLES * mult
    size = ["--size", str(SIZE * mult)] if SIZE else ["--samples", str(n)]
    path = os.path.join(work, f"scale-{size[1]}.data")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        out = subprocess.run([GEN] + size + ["-o", path], check=True, capture_output=True,
                             text=True).stdout
        # "gen-perf-data: N samples": the count a --size file came to.
        n = int(out.split()[1]) if out.startswith("gen-perf-data:") else n
        print(f"generated {path}: {n} samples, {os.path.getsize(path) / 1e6:.0f} MB "
              f"in {time.perf_counter() - t0:.1f} s")
    files.append((n, path))

seq_env = dict(os.environ, PERFKIT_REPORT_THREADS="1")


def span(path):
    """First and last sample time (seconds) of a file, from its header."""
    out = subprocess.run([PERFKIT, "report", "--header-only", "-i", path], capture_output=True,
                         text=True).stdout
    t = [float(l.split(":")[1]) for l in out.splitlines()
         if l.startswith("# time of first sample") or l.startswith("# time of last sample")]
    return (t[0], t[1]) if len(t) == 2 and t[1] > t[0] else (0.0, 0.0)


def middle(path, reltime=False):
    """An absolute --time range over the middle fifth of the file's samples (relative to
    the first sample with reltime)."""
    a, b = span(path)
    lo, hi = a + 0.4 * (b - a), a + 0.6 * (b - a)
    if reltime:
        lo, hi = lo - a, hi - a
    return f"{lo:.6f},{hi:.6f}"


# Each mode: a label and the arguments, or a function of the file giving them.
known = {"no-children": ("report --no-children", ["report", "--stdio", "--no-children"]),
         "children": ("report --children", ["report", "--stdio", "--children"]),
         "script": ("script", ["script"]),
         "time-abs": ("report --time A,B", lambda f: ["report", "--stdio", "--no-children",
                                                      "--time", middle(f)]),
         "time-pct": ("report --time 20%/3", ["report", "--stdio", "--no-children",
                                              "--time", "20%/3"]),
         "script-pct": ("script --time 20%/3", ["script", "--time", "20%/3"]),
         "script-reltime": ("script --reltime", lambda f: ["script", "--reltime", "--time",
                                                           middle(f, True)]),
         "per-event-dump": ("script --per-ev-dump", ["script", "--per-event-dump"]),
         "task-events": ("script --show-task", ["script", "--show-task-events"]),
         "firefox": ("--format firefox", ["report", "--format", "firefox"]),
         "speedscope": ("--format speedscope", ["report", "--format", "speedscope"]),
         "pprof": ("--format pprof", ["report", "--format", "pprof"])}
NO_PERF = {"firefox", "speedscope", "pprof"}
for m in MODES:
    if m not in known:
        sys.exit(f"--modes {m}: unknown (modes: {', '.join(known)})")
modes = [(known[m][0], known[m][1], m in NO_PERF) for m in MODES]
print(f"cpus: {os.cpu_count()}, runs: {RUNS} (best time, max RSS)")
# CPU time (user + system) beside wall time: on a machine loaded by other work the wall
# time says more about the scheduler than about the programs.
hdr = (f"{'what':<32}{'samples':>9}{'perfkit s':>10}{'1-thread s':>11}{'perf s':>8}"
       f"{'ratio':>7}{'pk cpu':>8}{'perf cpu':>9}{'cpu ratio':>10}"
       f"{'pk MB':>8}{'perf MB':>8}{'mem ratio':>10}  same bytes"
       + (f"{'base s':>8}{'base cpu':>9}{'base MB':>8}  same as base" if BASELINE else ""))
print(hdr)


def dumps(path):
    """The --per-event-dump files next to `path`, removed after their bytes are hashed."""
    d, base = os.path.split(path)
    h = hashlib.sha256()
    for f in sorted(os.listdir(d or ".")):
        if f.startswith(base + ".") and f.endswith(".dump"):
            with open(os.path.join(d, f), "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            os.remove(os.path.join(d, f))
    return h.hexdigest()


def measured(prog, args, path, env=None):
    r = best([prog] + args + ["-i", path], env)
    if "--per-event-dump" in args:
        r = r[:2] + (dumps(path),) + r[3:]
    return r


rss = {}
CPU_SET = None
perf_runs = {}
for CPU_SET, (label, mode_args, no_perf), (n, path) in [(c, m, f) for c in CPU_SETS
                                                        for m in modes for f in files]:
    if CPU_SET is not None:
        label = f"{label} cpus {CPU_SET}"
    args = mode_args(path) if callable(mode_args) else mode_args
    pk = measured(PERFKIT, args, path)
    seq = measured(PERFKIT, args, path, seq_env) if SINGLE else (0.0, 0, None, 0)
    base = measured(BASELINE, args, path) if BASELINE else None
    # perf runs on one thread: with --perf-once it runs in the first CPU set only.
    key = (tuple(args), path) if "--perf-once" in sys.argv else (tuple(args), path, CPU_SET)
    if key not in perf_runs:
        perf_runs[key] = (None, None, None, None) if SKIP_PERF or no_perf else \
            measured(PERF, args, path)
    pf = perf_runs[key]
    rss[(label, n)] = pk[1]
    ratio = f"{pk[0] / pf[0]:.2f}" if pf[0] else "-"
    mem = f"{pk[1] / pf[1]:.2f}" if pf[1] else "-"
    pf_s = f"{pf[0]:.2f}" if pf[0] else "-"
    pf_mb = f"{pf[1]:.0f}" if pf[1] else "-"
    pf_cpu = f"{pf[3]:.2f}" if pf[3] else "-"
    cpu = f"{pk[3] / pf[3]:.2f}" if pf[3] else "-"
    print(f"{label:<32}{n:>9}{pk[0]:>10.2f}{seq[0]:>11.2f}{pf_s:>8}{ratio:>7}"
          f"{pk[3]:>8.2f}{pf_cpu:>9}{cpu:>10}"
          f"{pk[1]:>8.0f}{pf_mb:>8}{mem:>10}  "
          f"{'-' if seq[2] is None else 'yes' if pk[2] == seq[2] else 'NO':<10}"
          + (f"{base[0]:>8.2f}{base[3]:>9.2f}{base[1]:>8.0f}  "
             f"{'yes' if base[2] == pk[2] else 'NO'}" if base else ""), flush=True)
for label, _, _ in modes if len(files) == 2 and CPUS is None else []:
    a, b = rss[(label, files[0][0])], rss[(label, files[1][0])]
    print(f"perfkit peak RSS, 2x file / 1x file, {label}: {b / a:.2f}")
if "--keep" not in sys.argv and "--dir" not in sys.argv:
    shutil.rmtree(work)
