//! `perfkit report` flags against perf 6.1 on the same recordings (made here by perf):
//! `--hierarchy`, `--percentage` with the filters, `-T`, `--max-stack`, `-G`,
//! `--ignore-callees`, `--parent`/`-x`, `--show-cpu-utilization`, `--symbol-filter`,
//! `--no-demangle`, `--symfs`, `--objdump`, and the sort keys `trace`, `srcfile`,
//! `cgroup`, `overhead`, `dso_from`/`dso_to`.
//!
//! Call-graph text is compared by its content (each branch's percentage and names, in
//! order), not its indentation, which is another piece of work; everything else is compared
//! line for line, trailing blanks aside.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Recordings shared by the tests (made once).
struct Files {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    /// `perf record -g` of deep call chains in two threads.
    deep: PathBuf,
    /// `perf record` of a shell running the workload and `ls -R`: several commands,
    /// kernel and user code.
    mixed: PathBuf,
    /// `perf record -s` (per-thread counts at exit) of two threads.
    stat: PathBuf,
}

fn compile(src: &Path, out: &Path, cc: &str) -> bool {
    Command::new(cc)
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o"])
        .arg(out)
        .arg(src)
        .status()
        .is_ok_and(|s| s.success())
}

fn perf_record(args: &[&str]) {
    let out = Command::new("perf")
        .args(["record", "-q"])
        .args(args)
        .output()
        .expect("perf record");
    assert!(
        out.status.success(),
        "perf record {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn files() -> Option<&'static Files> {
    static FILES: OnceLock<Option<Files>> = OnceLock::new();
    FILES
        .get_or_init(|| {
            if !have_perf() {
                return None;
            }
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path().to_path_buf();
            let wl = d.join("wl");
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workload.c");
            if !compile(&src, &wl, "cc") {
                return None;
            }
            let (deep, mixed, stat) = (d.join("deep.data"), d.join("mixed.data"), d.join("s.data"));
            let w = wl.to_str().unwrap();
            perf_record(&["-g", "-o", deep.to_str().unwrap(), w, "deep", "2", "300"]);
            let script = format!("{w} threads 2 200; ls -R /usr/lib >/dev/null");
            perf_record(&["-o", mixed.to_str().unwrap(), "sh", "-c", &script]);
            perf_record(&["-s", "-o", stat.to_str().unwrap(), w, "threads", "2", "100"]);
            Some(Files {
                _dir: dir,
                dir: d,
                deep,
                mixed,
                stat,
            })
        })
        .as_ref()
}

fn ready() -> Option<&'static Files> {
    let f = files();
    if f.is_none() {
        skip("perf or a C compiler is missing");
    }
    f
}

/// The report's lines as compared: no tip/trailer line, no perfkit-only note, no trailing
/// blanks; call-graph lines reduced to their percentage and name.
fn normalize(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            !l.starts_with("# (Tip")
                && !l.starts_with("# (Report by")
                && !l.contains("frames without symbols")
        })
        .filter_map(|l| {
            let t = l.trim_end();
            if t.is_empty()
                || t.starts_with('#')
                || t.trim_start().starts_with(|c: char| c.is_ascii_digit())
            {
                return Some(t.to_string());
            }
            let body = t.trim_start_matches([' ', '|']).trim_start_matches('-');
            match body.split_once("%--") {
                Some((pct, name)) => Some(format!("graph {pct}% {name}")),
                None if body.is_empty() => None,
                None => Some(format!("graph {body}")),
            }
        })
        .collect()
}

fn report(bin: &str, file: &Path, args: &[&str]) -> std::process::Output {
    let mut c = if bin == "perf" {
        Command::new("perf")
    } else {
        Command::new(assert_cmd::cargo::cargo_bin("perfkit"))
    };
    c.args(["report", "--stdio", "-i"])
        .arg(file)
        .args(args)
        .output()
        .expect("report")
}

/// perfkit's report equals perf's for `args` (after [`normalize`]; rows `keep` says no to
/// are left out of both).
fn same_as_perf_where(file: &Path, args: &[&str], keep: impl Fn(&str) -> bool) -> Vec<String> {
    let theirs = report("perf", file, args);
    assert!(theirs.status.success(), "perf report {args:?} failed");
    let ours = report("perfkit", file, args);
    assert!(
        ours.status.success(),
        "perfkit report {args:?}: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let pick = |o: &std::process::Output| -> Vec<String> {
        normalize(&String::from_utf8_lossy(&o.stdout))
            .into_iter()
            .filter(|l| keep(l))
            .collect()
    };
    let (a, b) = (pick(&ours), pick(&theirs));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "line {i} of report {args:?}");
    }
    assert_eq!(
        a.len(),
        b.len(),
        "lines of report {args:?}:\n{}",
        a.join("\n")
    );
    a
}

fn same_as_perf(file: &Path, args: &[&str]) -> Vec<String> {
    same_as_perf_where(file, args, named)
}

/// Rows (percentage lines) of a report.
fn rows(lines: &[String]) -> Vec<&String> {
    lines
        .iter()
        .filter(|l| !l.starts_with('#') && !l.starts_with("graph") && l.contains('%'))
        .collect()
}

/// Rows perfkit and perf name alike: unnamed callchain-only addresses are symbol naming's
/// business, not these flags'. So are the program's PLT stubs: perf stretches the
/// zero-size `_init` over the PLT and, the stubs' symbols overlapping it in its rbtree,
/// names some stubs `_init` and others `name@plt` depending on the tree's shape; perfkit
/// names each `name@plt`.
fn named(l: &str) -> bool {
    !l.contains("[unknown]")
        && !l.contains("] 0x")
        && !l.split_whitespace().any(|w| w.ends_with("@plt"))
        && !l.contains("] _init ")
        && !l.ends_with("] _init")
}

#[test]
fn hierarchy_is_perfs() {
    let Some(f) = ready() else { return };
    // Levels, header, widths, column of the deepest level: byte for byte (no graphs).
    let theirs = report("perf", &f.deep, &["--hierarchy", "-g", "none"]);
    let ours = report("perfkit", &f.deep, &["--hierarchy", "-g", "none"]);
    let exact = |o: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with("# (") && !l.contains("frames without symbols"))
            .filter(|l| named(l))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(exact(&ours), exact(&theirs));
    let lines = exact(&ours);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Command / Shared Object / Symbol"))
    );
    assert!(lines.iter().any(|l| l.starts_with("   100.00%        wl")));
    same_as_perf(&f.mixed, &["--hierarchy"]);
    same_as_perf(
        &f.mixed,
        &[
            "--hierarchy",
            "-n",
            "--show-total-period",
            "--sort",
            "dso,sym",
        ],
    );
    // Entries under the limit are hidden level by level, with perf's "no entry" line.
    let l = same_as_perf(&f.mixed, &["--hierarchy", "--percent-limit", "2"]);
    assert!(l.iter().any(|l| l.contains("no entry >= 2.00%")), "{l:?}");
    same_as_perf(
        &f.mixed,
        &[
            "--hierarchy",
            "--show-cpu-utilization",
            "-n",
            "--percent-limit",
            "1",
        ],
    );
    // A one-value filter keeps its level (the note is printed all the same).
    let l = same_as_perf(&f.mixed, &["--hierarchy", "--comm", "wl"]);
    assert!(l.iter().any(|l| l == "# comm: wl"));
    assert!(
        l.iter()
            .any(|l| l.contains("Command / Shared Object / Symbol"))
    );
    // Call graphs under the last level: the row's own graph (perf's --no-children one).
    let graph_of_leaf = |args: &[&str]| -> String {
        let o = report("perfkit", &f.deep, args);
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let at = text.find("[.] leaf\n").expect("leaf row") + "[.] leaf\n".len();
        let rest = &text[at..];
        rest[..rest.find("\n\n").expect("graph end")].to_string()
    };
    let h = graph_of_leaf(&["--hierarchy", "--no-children"]);
    assert!(h.contains("---leaf"), "{h}");
    assert_eq!(h, graph_of_leaf(&["--no-children"]));
    // With children (the default) callers come first, as perf orders them.
    assert!(graph_of_leaf(&["--hierarchy"]).contains("---start_thread"));
    let refused = perfkit()
        .args([
            "report",
            "--stdio",
            "--hierarchy",
            "-F",
            "overhead,sym",
            "-i",
        ])
        .arg(&f.mixed)
        .output()
        .unwrap();
    assert!(!refused.status.success());
}

/// What perf's shell test perf-report-hierarchy.sh does (perf 6.1 does not ship it): record
/// `uname`, then `report --hierarchy` must succeed.
#[test]
fn perf_report_hierarchy_shell_test_steps() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf-report-hierarchy-perf.data");
    let rec = perfkit()
        .args(["record", "-o"])
        .arg(&data)
        .arg("uname")
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let out = perfkit()
        .args(["report", "--hierarchy", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Command / Shared Object / Symbol"), "{text}");
    assert!(text.contains("uname"), "{text}");
}

#[test]
fn filters_keep_percentages_of_the_whole_unless_relative() {
    let Some(f) = ready() else { return };
    let all = same_as_perf(&f.mixed, &["--sort", "comm,dso"]);
    let absolute = same_as_perf(&f.mixed, &["--sort", "comm,dso", "--comm", "wl"]);
    let relative = same_as_perf(
        &f.mixed,
        &[
            "--sort",
            "comm,dso",
            "--comm",
            "wl",
            "--percentage",
            "relative",
        ],
    );
    // One command kept: its column is left out and named in the header, as perf does.
    assert!(absolute.iter().any(|l| l == "# comm: wl"));
    // Absolute: the wl rows keep the share they have unfiltered.
    let wl_row = all
        .iter()
        .find(|l| l.contains(" wl  ") && l.ends_with(" wl"))
        .unwrap();
    let pct = wl_row.split('%').next().unwrap().trim();
    assert!(
        rows(&absolute)[0]
            .trim_start()
            .starts_with(&format!("{pct}%"))
    );
    // Relative: the kept rows add up to 100%.
    let sum: f64 = rows(&relative)
        .iter()
        .map(|l| l.split('%').next().unwrap().trim().parse::<f64>().unwrap())
        .sum();
    assert!((sum - 100.0).abs() < 0.1, "{sum}");
    same_as_perf(&f.mixed, &["--dso", "libc.so.6,ls", "--sort", "sym"]);
    same_as_perf(&f.mixed, &["--pid", "1"]);
    same_as_perf(&f.mixed, &["--symbols", "no_such_symbol"]);
    same_as_perf(&f.mixed, &["--tid", "1", "--percentage", "relative"]);
    // Graphs print shares of every sample, relative or not; their threshold is of the
    // report's total.
    let g = f.dir.join("mixed-g.data");
    let script = format!(
        "{} deep 1 200; ls -R /usr/lib >/dev/null",
        f.dir.join("wl").display()
    );
    perf_record(&["-g", "-o", g.to_str().unwrap(), "sh", "-c", &script]);
    for pct in ["absolute", "relative"] {
        for comm in ["ls", "wl"] {
            let args = [
                "--no-children",
                "--comm",
                comm,
                "--percentage",
                pct,
                "-g",
                "graph,5",
            ];
            same_as_perf(&g, &args);
        }
    }
}

#[test]
fn threads_print_per_thread_counts() {
    let Some(f) = ready() else { return };
    let l = same_as_perf(&f.stat, &["-T"]);
    let i = l
        .iter()
        .position(|l| l.starts_with("# ") && l.contains("PID  ") && l.ends_with("cpu-clock:ppp"))
        .expect("-T table");
    assert!(l.len() - i > 2, "the two threads: {l:?}");
}

#[test]
fn max_stack_and_inverted_graphs() {
    let Some(f) = ready() else { return };
    // Children counted over the outermost callers kept (callers come first with children).
    same_as_perf_where(&f.deep, &["--max-stack", "3", "-g", "none"], named);
    same_as_perf(
        &f.deep,
        &["--no-children", "--max-stack", "4", "-g", "graph,10"],
    );
    same_as_perf(
        &f.deep,
        &["--no-children", "--max-stack", "4", "-G", "-g", "graph,10"],
    );
    let inverted = same_as_perf(&f.deep, &["--no-children", "-G", "-g", "graph,10"]);
    assert!(
        inverted.iter().any(|l| l == "graph start_thread"),
        "callers first"
    );
}

#[test]
fn ignore_callees_parent_and_entry_filters() {
    let Some(f) = ready() else { return };
    let l = same_as_perf_where(&f.deep, &["--ignore-callees", "fb", "-g", "none"], named);
    // The callees of fb count for fb.
    assert!(rows(&l)[0].ends_with("[.] fb"), "{:?}", rows(&l));
    same_as_perf(
        &f.deep,
        &[
            "--no-children",
            "--ignore-callees",
            "fb",
            "-g",
            "graph,5,callee",
        ],
    );
    same_as_perf(
        &f.deep,
        &[
            "--no-children",
            "--ignore-callees",
            "fb",
            "-g",
            "graph,5,caller",
        ],
    );
    // No effect where no callchain is used.
    same_as_perf(
        &f.deep,
        &["--no-children", "--ignore-callees", "fb", "-g", "none"],
    );
    // (Kernel rows aside: a rare interrupt sample's chain gets another parent in perf.)
    let user = |l: &str| named(l) && !l.contains("[kernel.kallsyms]");
    let p = same_as_perf_where(
        &f.deep,
        &["--no-children", "--parent", "fa", "-g", "none"],
        user,
    );
    assert!(p.iter().any(|l| l.contains("Parent symbol")));
    assert!(rows(&p).iter().any(|l| l.ends_with(" fa")));
    let x = same_as_perf_where(
        &f.deep,
        &["--no-children", "--parent", "f[bc]", "-x", "-g", "none"],
        user,
    );
    assert!(!rows(&x).is_empty() && rows(&x).iter().all(|l| !l.contains("[other]")));
    same_as_perf_where(
        &f.deep,
        &["--no-children", "--sort", "parent", "-g", "none"],
        user,
    );
    let s = same_as_perf(&f.mixed, &["--symbol-filter", "get"]);
    assert!(!rows(&s).is_empty() && rows(&s).iter().all(|l| l.contains("get")));
    let bad = perfkit()
        .args(["report", "--stdio", "--parent", "(", "-i"])
        .arg(&f.deep)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("regular expression"));
}

#[test]
fn cpu_utilization_columns() {
    let Some(f) = ready() else { return };
    let l = same_as_perf(&f.mixed, &["--no-children", "--show-cpu-utilization"]);
    assert!(
        l.iter()
            .any(|l| l.starts_with("# Overhead       sys       usr"))
    );
    same_as_perf_where(&f.deep, &["--showcpuutilization", "-g", "none"], named);
}

#[test]
fn sort_keys_trace_srcfile_cgroup_overhead_and_branch_keys() {
    let Some(f) = ready() else { return };
    same_as_perf(&f.mixed, &["--sort", "trace"]);
    same_as_perf(&f.mixed, &["--sort", "cgroup"]);
    // A file with cgroup ids: named as perf names them (tests/report_cgroups.rs has more).
    let cg = f.dir.join("cgroup.data");
    perf_record(&["--all-cgroups", "-o", cg.to_str().unwrap(), "true"]);
    same_as_perf(&cg, &["--sort", "cgroup,cgroup_id"]);
    // (The program's PLT stubs are left out as in `named`; with a symbol size column
    // after it the name is not at the end of the row.)
    let no_plt = |l: &str| named(l) && !l.contains("@plt");
    same_as_perf_where(&f.mixed, &["--sort", "overhead,sym"], no_plt);
    // Symbol sizes, right-aligned, with perf's IPC column after them.
    let l = same_as_perf_where(
        &f.mixed,
        &["--no-children", "--sort", "symbol_size,sym"],
        no_plt,
    );
    assert!(
        l.iter()
            .any(|l| l.contains("Symbol size") && l.ends_with("IPC   [IPC Coverage]"))
    );
    same_as_perf_where(&f.deep, &["--sort", "sym,symbol_size", "-g", "none"], named);
    // The workload's and the kernel's source files. The C library's rows are left out with
    // `--dso`, not after the fact: perf names some of its inlined header lines after their
    // compilation unit (srcline_is_perfs), and a hidden row would still size the column.
    same_as_perf_where(
        &f.mixed,
        &[
            "--no-children",
            "--sort",
            "dso,srcfile",
            "--dso",
            "wl,[kernel.kallsyms]",
        ],
        |_| true,
    );
    for key in ["dso_from", "dso_to"] {
        let out = perfkit()
            .args(["report", "--stdio", "--sort", key, "-i"])
            .arg(&f.mixed)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("Invalid --sort key: `{key}'")),
            "{err}"
        );
        assert!(err.contains("branch"), "{err}");
    }
    // Tracepoint samples sort by their fields' text.
    if !Path::new("/sys/kernel/tracing/events/syscalls").exists() {
        return skip("tracefs is not mounted");
    }
    let t = f.dir.join("trace.data");
    perf_record(&[
        "-e",
        "syscalls:sys_enter_openat",
        "-o",
        t.to_str().unwrap(),
        "ls",
        "/",
    ]);
    let l = same_as_perf(&t, &["--sort", "comm,trace"]);
    assert!(l.iter().any(|l| l.contains("filename: 0x")), "{l:?}");
    same_as_perf(&t, &["--sort", "trace", "--hierarchy"]);
}

/// With `--full-source-path`, rows and frames whose paths perf and perfkit print apart:
/// glibc's loader and C library, whose DWARF 5 units name relative directories, which
/// binutils' `addr2line` joins to the unit's directory once more
/// (`./malloc/./malloc/malloc.c`; not copied). Without it every row is compared: glibc's
/// header lines named as binutils 2.40 names them (`dl-get-cpu-features.c:321`), and
/// `ls`, which has no line information, by `addr2line`'s symbol-table answer (`??:0`
/// after its first `.dynsym` function, `ls[ADDRESS]` before it).
fn same_full_path(l: &str) -> bool {
    !l.contains("ld-linux") && !l.contains("libc")
}

/// `--sort srcline` and `script -F srcline` name source lines as perf 6.1 does: the file
/// without its directories (`--full-source-path`: with them), an address without a line
/// by its symbol and decimal offset (report) or object and objdump address (script),
/// rows merged by the printed text, the column as wide as its longest text and not
/// padded at the end of a row.
#[test]
fn srcline_is_perfs() {
    let Some(f) = ready() else { return };
    for full in [false, true] {
        // (In the objects both name alike: perf sizes the column by the rows it shows.)
        let mut args = vec!["--no-children", "--sort", "dso,srcline"];
        args.extend(["--dso", "wl,[kernel.kallsyms]"]);
        if full {
            args.push("--full-source-path");
        }
        let l = same_as_perf_where(&f.mixed, &args, |l| !full || same_full_path(l));
        let rows = rows(&l);
        let workload = if full {
            format!(
                "{}:",
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/workload.c")
                    .display()
            )
        } else {
            "  workload.c:".to_string()
        };
        assert!(rows.iter().any(|r| r.contains(&workload)), "{l:?}");
        // Kernel addresses without a line: `symbol+offset`.
        assert!(
            rows.iter()
                .any(|r| r.contains("[kernel.kallsyms]") && r.contains('+')),
            "{l:?}"
        );
    }
    // Alone (in the objects both name alike), the key's rows are merged by their text (every kernel address of a symbol
    // at one offset, one row; one source line, one row).
    let l = same_as_perf(
        &f.mixed,
        &[
            "--no-children",
            "--sort",
            "srcline",
            "--dso",
            "wl,[kernel.kallsyms]",
        ],
    );
    let texts: Vec<&str> = rows(&l)
        .iter()
        .map(|r| r.split_whitespace().nth(1).unwrap_or(""))
        .collect();
    let mut unique = texts.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), texts.len(), "{l:?}");
    // perf script's field: the object and address where there is no line.
    let script = |bin: &str, full: bool| -> Vec<String> {
        let mut c = if bin == "perf" {
            Command::new("perf")
        } else {
            Command::new(assert_cmd::cargo::cargo_bin("perfkit"))
        };
        c.args(["script", "-F", "ip,sym,dso,srcline", "-i"])
            .arg(&f.mixed);
        if full {
            c.arg("--full-source-path");
        }
        let out = c.output().expect("script");
        assert!(
            out.status.success(),
            "{bin} script: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // One block per sample: its line and its source line's; with full paths, the
        // blocks of objects `same_full_path` leaves out are dropped.
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut blocks: Vec<String> = Vec::new();
        for line in text.lines() {
            match blocks.last_mut() {
                // (A sample's line ends with its object in parentheses.)
                Some(b) if !line.ends_with(')') => {
                    b.push('\n');
                    b.push_str(line);
                }
                _ => blocks.push(line.to_string()),
            }
        }
        blocks.retain(|b| !full || same_full_path(b.lines().next().unwrap_or("")));
        blocks
    };
    for full in [false, true] {
        let (ours, theirs) = (script("perfkit", full), script("perf", full));
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a, b);
        }
        assert!(
            ours.iter()
                .any(|b| b.contains("([kernel.kallsyms])\n  [kernel.kallsyms][")),
            "{ours:?}"
        );
        assert!(
            ours.iter()
                .any(|b| b.contains("\n  ") && b.contains("workload.c:"))
        );
    }
}

#[test]
fn no_demangle_symfs_objdump() {
    let Some(f) = ready() else { return };
    // A C++ program: names as the symbol table spells them.
    let src = f.dir.join("k.cc");
    std::fs::write(
        &src,
        "namespace ns { struct K { __attribute__((noinline)) static unsigned long \
         spin(unsigned long n) { volatile unsigned long x = 0; for (unsigned long i = 0; \
         i < n; i++) x += i; return x; } }; }\nint main() { return (int)(ns::K::spin(200000000) & 1); }\n",
    )
    .unwrap();
    let cpp = f.dir.join("k");
    if !compile(&src, &cpp, "g++") {
        return skip("g++ is missing");
    }
    let data = f.dir.join("cpp.data");
    perf_record(&["-o", data.to_str().unwrap(), cpp.to_str().unwrap()]);
    let mangled = same_as_perf(&data, &["--no-children", "--no-demangle"]);
    assert!(
        mangled.iter().any(|l| l.ends_with("[.] _ZN2ns1K4spinEm")),
        "{mangled:?}"
    );
    let plain = same_as_perf(&data, &["--no-children"]);
    assert!(
        plain.iter().any(|l| l.ends_with("[.] ns::K::spin")),
        "{plain:?}"
    );
    // --symfs: the binary recorded at a path that is gone is read under DIR (and nothing
    // else is: the kernel's and the C library's addresses stay unnamed, as with perf).
    // (A build id of its own, which no build-id cache holds: -N keeps it out.)
    let gone = f.dir.join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    let bin = gone.join("wl");
    let uniq = f.dir.join("uniq.c");
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::fs::write(
        &uniq,
        format!("const char perfkit_symfs_test[] = \"{stamp}\";\n"),
    )
    .unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workload.c");
    let built = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o"])
        .arg(&bin)
        .arg(&src)
        .arg(&uniq)
        .status()
        .unwrap();
    assert!(built.success());
    let data = f.dir.join("symfs.data");
    perf_record(&[
        "-N",
        "-o",
        data.to_str().unwrap(),
        bin.to_str().unwrap(),
        "spin",
        "200",
    ]);
    let root = f.dir.join("symfs");
    let under = root.join(bin.strip_prefix("/").unwrap());
    std::fs::create_dir_all(under.parent().unwrap()).unwrap();
    std::fs::rename(&bin, &under).unwrap();
    let without = same_as_perf(&data, &["--no-children"]);
    assert!(!without.iter().any(|l| l.ends_with("[.] spin")));
    let with = same_as_perf(&data, &["--no-children", "--symfs", root.to_str().unwrap()]);
    assert!(with.iter().any(|l| l.ends_with("[.] spin")), "{with:?}");
    // --objdump is accepted and changes nothing.
    let a = report("perfkit", &f.mixed, &["--objdump", "/bin/false"]);
    let b = report("perfkit", &f.mixed, &[]);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
}

/// `-v`: shared objects by their path, as perf prints them (perf's extra address and
/// symbol-origin prefix in the symbol column is not printed).
#[test]
fn verbose_names_shared_objects_by_path() {
    let Some(f) = ready() else { return };
    let columns = |bin: &str| -> Vec<String> {
        let o = report(bin, &f.mixed, &["--no-children", "-v"]);
        assert!(o.status.success());
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let header = text.lines().find(|l| l.starts_with("# Overhead")).unwrap();
        let cut = header.find("Symbol").unwrap();
        text.lines()
            .filter(|l| !l.starts_with('#') && l.contains('%') && named(l))
            .map(|l| l[..cut.min(l.len())].trim_end().to_string())
            .collect()
    };
    let ours = columns("perfkit");
    assert_eq!(ours, columns("perf"));
    assert!(ours.iter().any(|l| l.contains("/libc.so.6")), "{ours:?}");
}

/// `--header-only -I`: the topology sections in full (sibling lists, CPU ids, NUMA nodes,
/// caches, memory blocks), byte for byte as perf prints them, for perf's file and perfkit's.
#[test]
fn show_info_prints_the_topology() {
    let Some(f) = ready() else { return };
    let pk = f.dir.join("pk.data");
    let rec = perfkit()
        .args(["record", "-q", "-o"])
        .arg(&pk)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(rec.status.success());
    for file in [&f.mixed, &pk] {
        let args = ["report", "--header-only", "-I", "-i"];
        let theirs = Command::new("perf").args(args).arg(file).output().unwrap();
        let ours = perfkit().args(args).arg(file).output().unwrap();
        let text = String::from_utf8_lossy(&ours.stdout).into_owned();
        assert_eq!(
            text,
            String::from_utf8_lossy(&theirs.stdout),
            "{}",
            file.display()
        );
        assert!(text.contains("# sibling threads : "), "{text}");
        assert!(!text.contains("use -I to display"), "{text}");
    }
}
