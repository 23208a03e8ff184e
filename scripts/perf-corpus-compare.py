#!/usr/bin/env python3
"""perf 6.1 vs perfkit on every recording of a corpus, in every report/script mode.

    scripts/perf-corpus-compare.py [--dir DIR] [--perfkit BIN] [--mode M ...] [--file F ...]
                                   [--diffs OUTDIR] [-j N] [-v]

DIR (default /work/corpora/perf61, made by scripts/perf-corpus.sh) holds *.data files; any
other directory of perf.data files works too. For each file and mode both tools run with the
same arguments and their standard output is compared byte for byte (stderr is ignored),
except for report's last comment line: perf picks a random tip (`# (Tip: ...)`), perfkit
prints `# (Report by perfkit)`; both become `# (tip)`; and fractal mode's remainder line
`[...] (inlined)`, where perf prints ` (inlined)` from an uninitialised bit of a `malloc`ed
symbol (`init_rem_hits` in perf's ui/stdio/hist.c): the same file gives both in two runs
that differ only in their environment (`env -i`), so no rule of the file decides it; it
becomes `[...]`. The pass counts say how many files also match byte for byte.
Prints the pass count per mode, the files that differ, and (-v) the first lines of each
diff; every diff is written to OUTDIR/FILE.MODE.diff (default /work/corpora/diffs).
"""
import argparse, re, concurrent.futures, difflib, glob, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = {
    "script": ["script"],
    "report": ["report", "--stdio", "--no-children"],
    "g-none": ["report", "--stdio", "--no-children", "-g", "none"],
    "children": ["report", "--stdio"],
    "g-flat": ["report", "--stdio", "--no-children", "-g", "flat"],
    "g-fractal": ["report", "--stdio", "--no-children", "-g", "fractal"],
    "g-caller": ["report", "--stdio", "--no-children", "-g", "caller"],
    "g-callee": ["report", "--stdio", "--no-children", "-g", "callee"],
}

ap = argparse.ArgumentParser()
ap.add_argument("--dir", default="/work/corpora/perf61")
ap.add_argument("--perfkit", default=os.path.join(ROOT, "target", "debug", "perfkit"))
ap.add_argument("--mode", action="append", choices=list(MODES))
ap.add_argument("--file", action="append", help="file name (with or without .data)")
ap.add_argument("--diffs", default="/work/corpora/diffs")
ap.add_argument("-j", type=int, default=2)
ap.add_argument("-v", action="store_true")
ap.add_argument("--timeout", type=int, default=300)
a = ap.parse_args()

files = sorted(glob.glob(os.path.join(a.dir, "*.data")))
if a.file:
    want = {f if f.endswith(".data") else f + ".data" for f in a.file}
    files = [f for f in files if os.path.basename(f) in want]
if not files:
    sys.exit(f"no *.data files in {a.dir}: run scripts/perf-corpus.sh first")
modes = a.mode or list(MODES)
os.makedirs(a.diffs, exist_ok=True)


REM = re.compile(rb"--\[\.\.\.\] \(inlined\)$", re.M)
TIP = re.compile(rb"^# \((Tip: .*|Report by perfkit|Cannot load tips\.txt file, please install perf!)\)$", re.M)


def run(tool, args, path):
    try:
        p = subprocess.run([tool] + args + ["-i", path], capture_output=True,
                           timeout=a.timeout, stdin=subprocess.DEVNULL)
        return TIP.sub(b"# (tip)", p.stdout), p.returncode
    except subprocess.TimeoutExpired:
        return b"<timeout>\n", -1


def compare(job):
    path, mode = job
    args = MODES[mode]
    want, _ = run("perf", args, path)
    got, rc = run(a.perfkit, args, path)
    name = os.path.basename(path)[:-5]
    out = os.path.join(a.diffs, f"{name}.{mode}.diff")
    exact = want == got
    want = REM.sub(b"--[...]", want)
    if want == got:
        if os.path.exists(out):
            os.remove(out)
        return name, mode, True, "" if exact else "perf's uninitialised (inlined) only"
    d = list(difflib.unified_diff(want.decode(errors="replace").splitlines(),
                                  got.decode(errors="replace").splitlines(),
                                  "perf", f"perfkit (exit {rc})", lineterm="", n=1))
    text = "\n".join(d) + "\n"
    with open(out, "w") as f:
        f.write(text)
    return name, mode, False, text


jobs = [(f, m) for f in files for m in modes]
results = {}
noise = {}
with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
    for name, mode, ok, text in ex.map(compare, jobs):
        results[(name, mode)] = ok
        noise[(name, mode)] = ok and text != ""
        if not ok and a.v:
            print(f"--- {name} [{mode}]")
            print("\n".join(text.splitlines()[:30]))

names = sorted({os.path.basename(f)[:-5] for f in files})
print(f"\n{'mode':<10} {'pass':>5} / {len(names)}  files that differ")
for m in modes:
    bad = [n for n in names if not results[(n, m)]]
    rem = [n for n in names if noise[(n, m)]]
    extra = f"  (byte for byte {len(names) - len(bad) - len(rem)}: {' '.join(rem)} differ only by perf's uninitialised `[...] (inlined)`)" if rem else ""
    print(f"{m:<10} {len(names) - len(bad):>5} / {len(names)}  {' '.join(bad)}{extra}")
allok = sum(all(results[(n, m)] for m in modes) for n in names)
print(f"{'every mode':<10} {allok:>5} / {len(names)}  (diffs in {a.diffs})")
