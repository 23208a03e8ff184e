//! `report -v` against perf 6.1: full object paths, and before each symbol its address
//! (the sampled one relative to its file, a callchain's as it ran, kernel ones as they
//! are) and the letter of where perf reads the object's symbols (`B` perf's build-id
//! cache, `D` its debug file, `d` the path, `k` kallsyms, `!` none), on perf's recording
//! of a C program with call graphs, in every layout.

mod common;

use common::{have_perf, skip};
use std::path::Path;
use std::process::{Command, Stdio};

fn report(tool: &str, file: &Path, args: &[&str]) -> String {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let out = cmd
        .args(["report", "--stdio", "-v", "-i"])
        .arg(file)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .expect("report");
    assert!(out.status.success(), "{tool} report -v {args:?}");
    // Without perf's random tip and perfkit's signature.
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("# (Tip:") && !l.starts_with("# (Report by"))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn verbose_report_prints_addresses_and_symbol_origins_as_perf() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = common::hotloop::build(dir.path(), "-O1") else {
        return;
    };
    let file = dir.path().join("v.data");
    let st = Command::new("perf")
        .args([
            "record",
            "-q",
            "-g",
            "-e",
            "cpu-clock",
            "-c",
            "200000",
            "-o",
        ])
        .arg(&file)
        .arg(&bin)
        .args(["20000000", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("perf record");
    // (The program's exit status is its result's low bit, which perf passes on.)
    assert!(st.code().is_some() && file.exists(), "perf record: {st}");
    for args in [
        &["--no-children"][..],
        &["--no-children", "-g", "none"],
        &["--children"],
        &["--no-children", "--sort", "dso,sym", "-g", "none"],
        &["--children", "--sort", "sym,dso", "-g", "caller"],
    ] {
        let (perf, kit) = (report("perf", &file, args), report("perfkit", &file, args));
        for (i, (a, b)) in perf.lines().zip(kit.lines()).enumerate() {
            assert_eq!(a, b, "{args:?}: line {i}");
        }
        assert_eq!(perf, kit, "{args:?}");
    }
    // The program's own functions, each after its address in the file and its origin.
    let rows = report("perfkit", &file, &["--no-children", "-g", "none"]);
    let hot = rows
        .lines()
        .find(|l| l.ends_with("[.] hot"))
        .unwrap_or_else(|| panic!("no row for hot: {rows}"));
    let fields: Vec<&str> = hot.split_whitespace().collect();
    let n = fields.len();
    assert!(fields[n - 4].starts_with("0x"), "{hot}");
    assert_eq!(fields[n - 3].len(), 1, "{hot}");
    assert!(hot.contains(&bin.display().to_string()), "{hot}");
}
