//! Two copies of one library (one short name, two paths) as perf 6.1 reports them: rows
//! keyed by the short name merge into one row, named as perf names it; with `-v` perf
//! compares objects by their paths (`_sort__dso_cmp` takes `long_name` when verbose), so
//! each copy keeps rows of its own, with its own addresses and symbol origins. Three
//! processes run one program whose library comes from the first copy twice and from the
//! second copy once.

mod common;

use common::{have_perf, perf_ok, perfkit, skip, stdout_ok};
use std::path::Path;
use std::process::Command;

const LIB: &str = r#"
__attribute__((noinline)) long spin(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) s += i ^ (s >> 3);
    return s;
}
__attribute__((noinline)) long outer(long n) { return spin(n) + 1; }
"#;

const PROG: &str = r#"
long outer(long);
int main(void) { return (int)(outer(20000000) & 1); }
"#;

fn gcc(dir: &Path, args: &[&str]) -> bool {
    Command::new("gcc")
        .current_dir(dir)
        .args(["-O1", "-fno-omit-frame-pointer"])
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn copies_of_a_library_merge_and_split_as_perf() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("spin.c"), LIB).unwrap();
    std::fs::write(dir.join("prog.c"), PROG).unwrap();
    // (-rpath writes DT_RUNPATH here, which LD_LIBRARY_PATH overrides.)
    let rpath = format!("-Wl,-rpath,{},--enable-new-dtags", dir.display());
    if !gcc(dir, &["-shared", "-fPIC", "-o", "libspin.so", "spin.c"])
        || !gcc(dir, &["-o", "prog", "prog.c", "-L.", "-lspin", &rpath])
    {
        return skip("gcc is missing");
    }
    std::fs::create_dir(dir.join("copy")).unwrap();
    std::fs::copy(dir.join("libspin.so"), dir.join("copy/libspin.so")).unwrap();
    let data = dir.join("c.data");
    let script = format!(
        "./prog; LD_LIBRARY_PATH={} ./prog; ./prog; true",
        dir.join("copy").display()
    );
    let st = Command::new("perf")
        .current_dir(dir)
        .args([
            "record",
            "-q",
            "-g",
            "-e",
            "cpu-clock",
            "-c",
            "500000",
            "-o",
        ])
        .arg(&data)
        .args(["--", "sh", "-c", &script])
        .status()
        .unwrap();
    assert!(st.success(), "perf record");
    let keep = |s: &str| -> String {
        s.lines()
            .filter(|l| !l.starts_with("# ("))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    for args in [
        &["report", "--stdio", "--no-children", "-g", "none"][..],
        &["report", "--stdio", "--no-children", "-v", "-g", "none"],
        &["report", "--stdio", "--children", "-v"],
        &["report", "--stdio", "--no-children", "-v", "--sort", "sym"],
        &[
            "report",
            "--stdio",
            "--children",
            "-v",
            "--sort",
            "dso",
            "-g",
            "none",
        ],
        &[
            "report",
            "--stdio",
            "--children",
            "--sort",
            "dso,sym",
            "-g",
            "caller",
        ],
    ] {
        let perf = keep(&perf_ok(args, &data));
        let ours = keep(&stdout_ok(perfkit().args(args).arg("-i").arg(&data)));
        assert_eq!(ours, perf, "{args:?}");
    }
    // The case this is about: one row for both copies by short name, one per copy by path.
    let rows = |args: &[&str], needle: &str| {
        perf_ok(args, &data)
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(needle) && l.ends_with("] spin"))
            .count()
    };
    let plain = ["report", "--stdio", "--no-children", "-g", "none"];
    assert_eq!(rows(&plain, "libspin.so"), 1);
    let verbose = ["report", "--stdio", "--no-children", "-v", "-g", "none"];
    assert_eq!(rows(&verbose, "/libspin.so"), 2);
}
