//! `srcline` where perf 6.1's `addr2line` child (binutils 2.40) answers otherwise than the
//! DWARF line table reads: an address DWARF gives no line is named after the symbol table
//! (`crtstuff.c:0`), and the first rows of a DWARF 5 sequence, before any
//! `DW_LNS_set_file`, after the unit's own file (`header_first.c:4` for a line of
//! `spin_header.h`). Recorded by perf here, compared with perf's whole output.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Standard output without report's last comment line (perf's random tip).
fn body(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !(l.starts_with("# (Tip:") || l.starts_with("# (Report by")))
        .filter(|l| !l.starts_with("# (Cannot load tips"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// perf's output of `ARGS -i FILE`, asserted equal to perfkit's.
fn same_as_perf(args: &[&str], file: &Path) -> String {
    let theirs = Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap();
    assert!(theirs.status.success(), "perf {args:?}");
    let ours = perfkit().args(args).arg("-i").arg(file).output().unwrap();
    assert!(ours.status.success(), "perfkit {args:?}");
    let (t, o) = (body(&theirs.stdout), body(&ours.stdout));
    assert_eq!(t, o, "{args:?} differs from perf (left: perf)");
    t
}

/// `fixtures/NAME.c` built with `-O1 -g` in `dir` and recorded by perf (fixed period).
fn record(dir: &Path, name: &str) -> Option<(PathBuf, PathBuf)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}.c"));
    let bin = dir.join(name);
    let built = Command::new("cc")
        .args(["-O1", "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        return None;
    }
    let data = dir.join(format!("{name}.data"));
    let rec = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-c", "100000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "perf record: {}",
        String::from_utf8_lossy(&rec.stderr)
    );
    Some((bin, data))
}

/// A line of a header whose function opens its unit: binutils 2.40 names it after the
/// unit (`header_first.c`), and so must perfkit, in report and script.
#[test]
fn header_lines_before_the_first_set_file_are_named_after_the_unit() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((_, data)) = record(dir.path(), "header_first") else {
        return skip("no C compiler");
    };
    for args in [
        &["report", "--stdio", "--no-children", "--sort", "srcline"][..],
        &[
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "sym,srcline",
        ],
    ] {
        let mut args = args.to_vec();
        args.extend(["--dso", "header_first"]);
        let perf = same_as_perf(&args, &data);
        let rows: Vec<&str> = perf.lines().filter(|l| l.contains("% ")).collect();
        // The loop's lines (4 and 5 of the header), printed with the unit's name.
        assert!(rows.iter().any(|l| l.contains("header_first.c:")), "{perf}");
        assert!(!rows.iter().any(|l| l.contains("spin_header.h")), "{perf}");
    }
    // script: each sample's source line, for the samples in the program (the C
    // library's lines depend on its debug files, which this test does not need).
    let script = |out: Vec<u8>| -> Vec<String> {
        let text = String::from_utf8_lossy(&out).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        lines
            .windows(2)
            .filter(|w| w[0].contains("header_spin"))
            .map(|w| format!("{}\n{}", w[0], w[1]))
            .collect()
    };
    let args = ["script", "-F", "comm,ip,sym,srcline", "-i"];
    let theirs = script(
        Command::new("perf")
            .args(args)
            .arg(&data)
            .output()
            .unwrap()
            .stdout,
    );
    let ours = script(perfkit().args(args).arg(&data).output().unwrap().stdout);
    assert!(!theirs.is_empty());
    assert_eq!(theirs, ours);
    assert!(
        theirs.iter().all(|b| b.contains("header_first.c:")),
        "{theirs:?}"
    );
}

/// Source lines where DWARF has none, as perf's `addr2line` child gives them: `spin_obj`
/// lies in the compilation unit's range but no line covers it, so binutils names it
/// after the symbol table (the function before it, `frame_dummy`, and the file symbol
/// before that: `crtstuff.c:0`); `data_code`, outside the code, gets no answer and prints
/// as `data_code+3`.
#[test]
fn lines_without_dwarf_rows_are_named_as_addr2line_names_them() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((_, data)) = record(dir.path(), "data_objects") else {
        return skip("no C compiler");
    };
    for args in [
        &["report", "--stdio", "--no-children", "--sort", "srcline"][..],
        &[
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "dso,srcline",
        ],
    ] {
        let mut args = args.to_vec();
        args.extend(["--dso", "data_objects"]);
        let perf = same_as_perf(&args, &data);
        let rows: Vec<&str> = perf.lines().filter(|l| l.contains("% ")).collect();
        assert!(rows.iter().any(|l| l.ends_with(".c:0")), "{perf}");
        assert!(rows.iter().any(|l| l.ends_with("data_code+3")), "{perf}");
    }
}
