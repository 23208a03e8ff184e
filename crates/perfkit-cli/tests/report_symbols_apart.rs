//! perf's symbol and object identity in report rows: two static functions of one name in
//! two source files are two rows (and two call-graph nodes); objects are merged by short
//! name under `--sort dso`. Compared with perf on one perf-recorded file.

mod common;

use common::{have_perf, skip};
use std::path::Path;
use std::process::Command;

fn report(tool: &str, args: &[&str], file: &Path) -> String {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let out = cmd
        .arg("report")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .expect("report");
    assert!(out.status.success(), "{tool} report {args:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("# (Tip:") && !l.starts_with("# (Report by"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn static_functions_of_one_name_are_two_rows() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let src = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let a = "static volatile unsigned long sink;\n\
             static void __attribute__((noinline)) work(unsigned long n) \
             { for (unsigned long i = 0; i < n; i++) sink += i; }\n";
    let files = [
        src(
            "main.c",
            "void run_a(unsigned long); void run_b(unsigned long);\n\
                       int main(void) { for (int i = 0; i < 20; i++) { run_a(2000000); run_b(4000000); } return 0; }\n",
        ),
        src(
            "a.c",
            &format!("{a}void run_a(unsigned long n) {{ work(n); }}\n"),
        ),
        src(
            "b.c",
            &format!(
                "{}void run_b(unsigned long n) {{ work(n); }}\n",
                a.replace("sink += i", "sink ^= i * 3")
            ),
        ),
    ];
    let bin = dir.path().join("twostatic");
    let Ok(st) = Command::new("cc")
        .args(["-O1", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .args(&files)
        .status()
    else {
        return skip("no C compiler");
    };
    assert!(st.success(), "cc");
    let file = dir.path().join("perf.data");
    let st = Command::new("perf")
        .args(["record", "-q", "-g", "-e", "task-clock", "-o"])
        .arg(&file)
        .arg(&bin)
        .status()
        .expect("perf record");
    assert!(st.success());
    for args in [
        &["--stdio", "--no-children", "-g", "none"][..],
        &["--stdio", "--no-children", "--sort", "sym", "-g", "none"],
        &["--stdio", "--no-children"],
        &["--stdio"],
        &["--stdio", "--sort", "dso"],
    ] {
        assert_eq!(
            report("perfkit", args, &file),
            report("perf", args, &file),
            "{args:?}"
        );
    }
    // Both `work`s have their own row (each ran millions of iterations).
    let rows = report(
        "perfkit",
        &["--stdio", "--no-children", "-g", "none"],
        &file,
    );
    assert_eq!(
        rows.lines().filter(|l| l.ends_with("[.] work")).count(),
        2,
        "{rows}"
    );
}
