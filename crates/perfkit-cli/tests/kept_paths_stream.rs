//! The last `report` and `script` paths that kept every sample, now folding or streaming:
//! `report --sort trace` and the default trace sort of a file of tracepoints only (folded
//! by the text of each row), `script` of a file whose events disagree on
//! `PERF_SAMPLE_CPU`/`TIME` (one pass over the samples first), `--per-event-dump` with
//! side-band records, `--show-round-events` (file order) and `--unnamed function`; each
//! sample's own fields (`-F addr,iregs,uregs,phys_addr,weight,...`, whose details wait by
//! sample number until their sample is written) and `script -s FILE.py` (the script fed
//! as the samples are built).
//!
//! Each is compared byte for byte with the path that keeps every sample
//! (`PERFKIT_REPORT_KEEP=1`, `PERFKIT_SCRIPT_KEEP=1`) on 1 and 3 reading threads, on perf
//! recordings and a generated file, and with perf 6.1 where perf has the feature.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)] // the example's `main` and argument parsing are not used here
#[path = "../../perfkit-report/examples/gen-perf-data.rs"]
mod generator;

/// Exit status, standard output and the `--per-event-dump` files' bytes (in name order,
/// removed) of `perfkit ARGS -i FILE` with these variables set.
fn ours(args: &[&str], file: &Path, env: &[(&str, &str)]) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    let mut cmd = perfkit();
    cmd.args(args).arg("-i").arg(file);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run perfkit");
    (out.status.code(), out.stdout, dumps(file))
}

/// The bytes of the `FILE.EVENT.dump` files next to `file`, in name order; removed.
fn dumps(file: &Path) -> Vec<u8> {
    let dir = file.parent().expect("a directory");
    let base = file
        .file_name()
        .expect("a name")
        .to_string_lossy()
        .into_owned();
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read the directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with(&format!("{base}.")) && n.ends_with(".dump")
        })
        .collect();
    names.sort();
    let mut all = Vec::new();
    for n in names {
        all.extend(std::fs::read(&n).expect("read a dump file"));
        std::fs::remove_file(&n).expect("remove a dump file");
    }
    all
}

/// The text without perf's random tip line and perfkit's line in its place, and without
/// the lines that name the tool (`[ perf script: Wrote ... ]`).
fn without_tip(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .lines()
        .filter(|l| {
            !l.starts_with("# (Tip:") && !l.starts_with("# (Report by") && !l.starts_with("[ perf")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// perf's standard output and dump files of `perf ARGS -i FILE` (None: it failed).
fn perfs(args: &[&str], file: &Path) -> Option<(String, Vec<u8>)> {
    let out = Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .expect("run perf");
    let d = dumps(file);
    out.status.success().then(|| (without_tip(&out.stdout), d))
}

/// Assert that `args` prints (and dumps) the same on the kept path (`keep`: its
/// variable) and on the folded or streamed one, on 1 and 3 reading threads; returns the
/// lines compared.
fn same_as_kept(args: &[&str], file: &Path, keep: &str) -> usize {
    let kept = ours(args, file, &[(keep, "1"), ("PERFKIT_REPORT_THREADS", "1")]);
    assert_eq!(kept.0, Some(0), "perfkit {} (kept)", args.join(" "));
    let mut lines = 0;
    for threads in ["1", "3"] {
        let new = ours(args, file, &[("PERFKIT_REPORT_THREADS", threads)]);
        assert_eq!(new.0, Some(0), "perfkit {}", args.join(" "));
        for (what, a, b) in [("output", &kept.1, &new.1), ("dump files", &kept.2, &new.2)] {
            assert!(
                a == b,
                "perfkit {} -i {} on {threads} threads: its {what} differ from {keep}=1's \
                 (first difference at byte {})",
                args.join(" "),
                file.display(),
                a.iter()
                    .zip(b)
                    .position(|(x, y)| x != y)
                    .unwrap_or(a.len().min(b.len()))
            );
        }
        lines += new.1.iter().chain(&new.2).filter(|&&b| b == b'\n').count();
    }
    lines
}

/// Assert that perfkit prints (and dumps) what perf 6.1 does.
fn same_as_perfs(args: &[&str], file: &Path) {
    let theirs = perfs(args, file).unwrap_or_else(|| panic!("perf {args:?} failed"));
    let mine = ours(args, file, &[]);
    let mine_text = without_tip(&mine.1);
    assert!(
        mine_text == theirs.0,
        "perfkit {args:?} -i {} differs from perf's: first at {:?}",
        file.display(),
        mine_text
            .lines()
            .zip(theirs.0.lines())
            .find(|(a, b)| a != b)
    );
    assert!(
        mine.2 == theirs.1,
        "perfkit {args:?} -i {}: its dump files differ from perf's",
        file.display()
    );
}

/// Record `perf record ARGS -o DIR/NAME -- sh -c WORK` (None: skipped, with the reason).
fn record(dir: &Path, name: &str, args: &[&str], work: &[&str]) -> Option<PathBuf> {
    if !have_perf() {
        skip("perf is not installed");
        return None;
    }
    let file = dir.join(name);
    let out = Command::new("perf")
        .arg("record")
        .arg("-q")
        .args(args)
        .arg("-o")
        .arg(&file)
        .arg("--")
        .args(work)
        .output()
        .expect("perf record");
    if !out.status.success() {
        skip(&format!(
            "perf record {args:?} fails here (tracefs mounted, root?): {}",
            String::from_utf8_lossy(&out.stderr)
        ));
        return None;
    }
    Some(file)
}

/// A file of two tracepoints of two processes passing a byte back and forth (thousands
/// of samples, a handful of texts), and one of a tracepoint beside `cpu-clock` (its
/// samples carry a CPU, cpu-clock's do not: the events disagree on `PERF_SAMPLE_CPU`).
fn tracepoint_files(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let tp = record(
        dir,
        "tp.data",
        &["-e", "sched:sched_switch,sched:sched_wakeup"],
        &["perf", "bench", "sched", "pipe", "-l", "2000"],
    )?;
    let mixed = record(
        dir,
        "mixed.data",
        &["-e", "cpu-clock", "-e", "sched:sched_switch", "-g"],
        &[
            "sh",
            "-c",
            "for i in $(seq 40); do sleep 0.001; done; \
             i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        ],
    )?;
    Some((tp, mixed))
}

/// `report --sort trace`, the default sort of a tracepoint file (perf's `trace`) and the
/// trace key beside others fold by the text of each row: the kept path's bytes, and
/// perf's.
#[test]
fn trace_rows_fold_as_keeping_every_sample_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some((tp, mixed)) = tracepoint_files(dir.path()) else {
        return;
    };
    let runs: &[&[&str]] = &[
        &["report", "--stdio"],
        &["report", "--stdio", "--sort", "trace"],
        &["report", "--stdio", "--sort", "trace,comm", "-n"],
        &["report", "--stdio", "--sort", "pid,trace", "-g", "none"],
        &["report", "--stdio", "--sort", "cgroup_id,trace"],
        &["report", "--stdio", "--sort", "trace", "--time", "10%/2"],
        &[
            "report",
            "--stdio",
            "--sort",
            "trace",
            "--percent-limit",
            "2",
        ],
    ];
    let mut lines = 0;
    for file in [&tp, &mixed] {
        for args in runs {
            lines += same_as_kept(args, file, "PERFKIT_REPORT_KEEP");
        }
        if file == &tp {
            for args in &runs[..4] {
                same_as_perfs(args, file);
            }
        } else {
            // Of the mixed file only the trace rows, without graphs: its other rows are
            // perf's symbol names of `sh`, and dash's callchains (no frame pointers) are
            // garbage addresses whose merging is not what this test is about (issue 16).
            for args in &runs[1..4] {
                let mut args = args.to_vec();
                if !args.contains(&"-g") {
                    args.extend(["-g", "none"]);
                }
                same_as_perfs(&args, file);
            }
        }
    }
    // The ping-pong prints few rows; the kept path's are the same.
    assert!(lines > 500, "only {lines} lines compared");
}

/// `script` of a file whose events disagree on `PERF_SAMPLE_CPU` streams after a pass
/// over the samples: the kept path's text, and perf's.
#[test]
fn script_of_events_that_disagree_on_cpu_streams_as_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some((_, mixed)) = tracepoint_files(dir.path()) else {
        return;
    };
    let runs: &[&[&str]] = &[
        &["script"],
        &["script", "--deltatime"],
        &["script", "--time", "10%/2"],
        &["script", "-F", "comm,tid,time,event,ip,sym"],
        &["script", "--show-task-events"],
    ];
    let mut lines = 0;
    for args in runs {
        lines += same_as_kept(args, &mixed, "PERFKIT_SCRIPT_KEEP");
        same_as_perfs(args, &mixed);
    }
    assert!(lines > 1_000, "only {lines} lines compared");
}

/// `--per-event-dump` with side-band records and `--show-round-events` (perf's file order)
/// stream: each sample written as it is built, the records where the kept path prints
/// them. On a generated file (many processes, maps and threads) and perf recordings with
/// context switches and tracepoints; and perf's text.
#[test]
fn side_band_dumps_and_round_events_stream_as_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let generated = dir.path().join("gen.data");
    let mut a = generator::Args::new(6_000, generated.clone());
    a.processes = 6;
    a.threads = 3;
    a.paths = 200;
    if let Err(e) = generator::run(a) {
        return skip(&format!("cannot generate a perf.data file here: {e}"));
    }
    let mut files = vec![generated];
    if let Some(sw) = record(
        dir.path(),
        "sw.data",
        &["--switch-events", "-F", "1000", "-g"],
        &[
            "sh",
            "-c",
            "for i in $(seq 30); do sleep 0.002; done; \
             i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        ],
    ) {
        files.push(sw);
    }
    if let Some((tp, m)) = tracepoint_files(dir.path()) {
        files.push(tp);
        files.push(m);
    }
    let runs: &[&[&str]] = &[
        &["script", "--per-event-dump", "--show-task-events"],
        &[
            "script",
            "--per-event-dump",
            "--show-mmap-events",
            "--show-switch-events",
            "--deltatime",
        ],
        &[
            "script",
            "--per-event-dump",
            "--show-task-events",
            "--reltime",
        ],
        &["script", "--show-round-events"],
        &[
            "script",
            "--show-round-events",
            "--show-task-events",
            "--show-mmap-events",
        ],
        &["script", "--show-round-events", "--per-event-dump"],
        &[
            "script",
            "--show-round-events",
            "--show-switch-events",
            "--ns",
        ],
    ];
    let mut lines = 0;
    for file in &files {
        for args in runs {
            lines += same_as_kept(args, file, "PERFKIT_SCRIPT_KEEP");
        }
        if have_perf() {
            for args in [runs[0], runs[3], runs[4]] {
                same_as_perfs(args, file);
            }
        }
    }
    assert!(lines > 50_000, "only {lines} lines compared");
}

/// `script --unnamed function` streams: each unnamed frame of a stripped library is named
/// after its function before its first sample is written, as naming them all at the end
/// names them.
#[test]
fn unnamed_functions_stream_as_kept() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("lib.c"),
        "static volatile unsigned long sink;\n\
         __attribute__((noinline)) static void work_a(long n) { for (long i = 0; i < n; i++) \
         { sink += i; __asm__ volatile(\"\"); } }\n\
         __attribute__((noinline)) static void work_b(long n) { for (long i = 0; i < n; i++) \
         { sink ^= i * 3; __asm__ volatile(\"\"); } }\n\
         void run(long n) { work_a(n); work_b(n / 2); }\n",
    )
    .expect("write lib.c");
    std::fs::write(
        d.join("main.c"),
        "void run(long);\nint main(void) { for (int k = 0; k < 100; k++) run(1000000); return 0; }\n",
    )
    .expect("write main.c");
    let built = Command::new("sh")
        .arg("-c")
        .arg(
            "cc -O1 -shared -fPIC -o libwork.so lib.c && strip libwork.so \
             && cc -O1 -o main main.c -L. -lwork -Wl,-rpath,$PWD",
        )
        .current_dir(d)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        return skip("no C compiler (cc, strip) for the workload");
    }
    let Some(file) = record(
        d,
        "perf.data",
        &["-g"],
        &[&d.join("main").to_string_lossy()],
    ) else {
        return;
    };
    let mut lines = 0;
    for args in [
        &["script", "--unnamed", "function"][..],
        &[
            "script",
            "--unnamed",
            "function",
            "-F",
            "comm,tid,ip,sym,symoff,dso",
        ],
        &["script", "--unnamed", "function", "--show-mmap-events"],
        &["script", "--unnamed", "function", "--per-event-dump"],
    ] {
        lines += same_as_kept(args, &file, "PERFKIT_SCRIPT_KEEP");
    }
    // The stripped library's functions are named by their starts.
    let (_, out, _) = ours(&["script", "--unnamed", "function"], &file, &[]);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("libwork.so+0x"), "{text}");
    assert!(lines > 500, "only {lines} lines compared");
}

/// Each sample's own fields (`-F addr`, `iregs`, `uregs`, `phys_addr`, `weight`,
/// `data_src`, page sizes) and Python scripts (`-s`, process_event and db-export mode)
/// stream: the kept path's bytes on 1 and 3 threads, with side-band records, in file order
/// and into `--per-event-dump` files; perf's text and perf's Python calls.
#[test]
fn sample_details_and_python_scripts_stream_as_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(file) = record(
        dir.path(),
        "pf.data",
        &[
            "-e",
            "page-faults",
            "-c",
            "1",
            "-d",
            "--phys-data",
            "--data-page-size",
            "--code-page-size",
            "-W",
            "--intr-regs",
            "--user-regs",
            "-g",
        ],
        &[
            "sh",
            "-c",
            "for i in $(seq 20); do ls /usr/bin > /dev/null; done",
        ],
    ) else {
        return;
    };
    let own = "comm,tid,time,ip,addr,iregs,uregs,phys_addr,weight,data_page_size,code_page_size";
    let runs: &[&[&str]] = &[
        &["script", "-F", own],
        &[
            "script",
            "-F",
            "comm,tid,addr,sym,dso,ip,data_src",
            "--show-task-events",
        ],
        &["script", "-F", "+addr,+phys_addr", "--show-mmap-events"],
        &["script", "-F", "ip,sym,addr,iregs", "--show-round-events"],
        &["script", "-F", "+addr,+weight", "--per-event-dump"],
        &["script", "-F", own, "--time", "20%/2"],
    ];
    let mut lines = 0;
    for args in runs {
        lines += same_as_kept(args, &file, "PERFKIT_SCRIPT_KEEP");
    }
    // perf's text without callchains (those of `ls`'s loader name addresses of unnamed
    // code as perf does not here: issue 16, not this test's).
    for args in [
        &["script", "-G", "-F", own][..],
        &["script", "-G", "-F", "comm,tid,addr,sym,dso,ip,data_src"],
        &[
            "script",
            "-G",
            "-F",
            "ip,sym,addr,iregs",
            "--show-round-events",
        ],
    ] {
        same_as_perfs(args, &file);
    }
    assert!(lines > 50_000, "only {lines} lines compared");

    if !std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return skip("python3 is not installed (script -s needs it)");
    }
    let events = dir.path().join("events.py");
    std::fs::write(
        &events,
        "def process_event(d):\n    s = d['sample']\n    print(d['ev_name'], d['comm'], \
         s['pid'], s['tid'], s['time'], s['cpu'], s['addr'], s['phys_addr'], s['weight'], \
         s['ip'], d.get('symbol'), d.get('dso'), len(d['callchain']))\n\
         def trace_end():\n    print('end')\n",
    )
    .expect("write events.py");
    let tables = dir.path().join("tables.py");
    std::fs::write(
        &tables,
        "perf_db_export_mode = True\n\
         def table(name):\n    def f(*a): print(name, *a)\n    return f\n\
         for t in ['evsel_table', 'machine_table', 'thread_table', 'comm_table', \
         'comm_thread_table', 'dso_table', 'symbol_table', 'sample_table', \
         'call_path_table']:\n    globals()[t] = table(t)\n",
    )
    .expect("write tables.py");
    let mut files = vec![file.clone()];
    let generated = dir.path().join("gen.data");
    let mut a = generator::Args::new(6_000, generated.clone());
    a.processes = 6;
    a.threads = 3;
    a.paths = 200;
    match generator::run(a) {
        Ok(_) => files.push(generated),
        Err(e) => skip(&format!("cannot generate a perf.data file here: {e}")),
    }
    let mut lines = 0;
    for f in &files {
        for py in [&events, &tables] {
            let py = py.to_string_lossy();
            lines += same_as_kept(&["script", "-s", &py], f, "PERFKIT_SCRIPT_KEEP");
            lines += same_as_kept(
                &["script", "-s", &py, "--time", "30%/3"],
                f,
                "PERFKIT_SCRIPT_KEEP",
            );
        }
    }
    assert!(lines > 20_000, "only {lines} Python lines compared");
    // The values perf 6.1's Python gets (its own text: the symbol names of `ls`'s loader
    // are not compared, as above).
    let simple = dir.path().join("simple.py");
    std::fs::write(
        &simple,
        "def process_event(d):\n    s = d['sample']\n    print(d['ev_name'], d['comm'], \
         s['pid'], s['tid'], s['time'], s['cpu'], s['addr'], s['phys_addr'], s['weight'])\n",
    )
    .expect("write simple.py");
    same_as_perfs(&["script", "-s", &simple.to_string_lossy()], &file);
}
