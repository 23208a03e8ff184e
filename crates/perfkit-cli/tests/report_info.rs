//! `perfkit report --stats`, `--tasks`, `--mmaps`, `--header-only`, `-F` and standard input
//! as perf's input: byte for byte what perf 6.1 prints for the same files, one recorded by
//! perf and one by perfkit, in file mode, compressed and pipe mode.

mod common;

use common::{have_perf, perfkit, run_ok, skip};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Files recorded here: perf's and perfkit's, plain, compressed (`-z`) and pipe mode, of a
/// shell that forks (so the task tree has a child).
fn recordings(dir: &Path) -> Vec<PathBuf> {
    let work = ["--", "sh", "-c", "sleep 0.02; true"];
    let mut files = Vec::new();
    for (tool, name, extra) in [
        ("perf", "perf.data", &[][..]),
        ("perf", "perf-z.data", &["-z"][..]),
        ("perfkit", "perfkit.data", &[][..]),
        ("perfkit", "perfkit-z.data", &["-z"][..]),
    ] {
        let path = dir.join(name);
        let mut cmd = if tool == "perf" {
            Command::new("perf")
        } else {
            Command::new(env!("CARGO_BIN_EXE_perfkit"))
        };
        let st = cmd
            .args(["record", "-q", "-e", "task-clock", "-o"])
            .arg(&path)
            .args(extra)
            .args(work)
            .stderr(Stdio::null())
            .status()
            .expect("record");
        assert!(st.success(), "{tool} record {extra:?}");
        files.push(path);
    }
    for (tool, name) in [("perf", "perf-pipe.data"), ("perfkit", "perfkit-pipe.data")] {
        let path = dir.join(name);
        let out = std::fs::File::create(&path).unwrap();
        let mut cmd = if tool == "perf" {
            Command::new("perf")
        } else {
            Command::new(env!("CARGO_BIN_EXE_perfkit"))
        };
        let st = cmd
            .args(["record", "-q", "-e", "task-clock", "-o", "-"])
            .args(work)
            .stdout(out)
            .stderr(Stdio::null())
            .status()
            .expect("record");
        assert!(st.success(), "{tool} record -o -");
        files.push(path);
    }
    files
}

fn perf_text(args: &[&str], file: &Path) -> String {
    let out = Command::new("perf")
        .arg("report")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .expect("perf report");
    assert!(out.status.success(), "perf report {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn perfkit_text(args: &[&str], file: &Path) -> String {
    let out = run_ok(perfkit().arg("report").args(args).arg("-i").arg(file));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn stats_tasks_mmaps_and_header_match_perf_byte_for_byte() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    for file in recordings(dir.path()) {
        for args in [
            &["--stats"][..],
            &["--tasks"],
            &["--mmaps"],
            &["--header-only"],
            &["--header", "--stats"],
        ] {
            let ours = perfkit_text(args, &file);
            let theirs = perf_text(args, &file);
            assert_eq!(
                ours,
                theirs,
                "report {args:?} -i {}: perfkit vs perf",
                file.display()
            );
        }
        let stats = perfkit_text(&["--stats"], &file);
        assert!(stats.contains("SAMPLE events:"), "{stats}");
        let tasks = perfkit_text(&["--tasks"], &file);
        assert!(
            tasks.contains(" |swapper\n") && tasks.contains("| sleep\n"),
            "sleep is a child of sh: {tasks}"
        );
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let header = perfkit_text(&["--header-only"], &file);
        if name.ends_with("-z.data") {
            assert!(
                header.contains("# compressed : Zstd, level = 1, ratio = "),
                "{header}"
            );
        }
    }
}

#[test]
fn report_reads_a_pipe_on_standard_input_without_i() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let files = recordings(dir.path());
    let pipe = files
        .iter()
        .find(|f| f.ends_with("perf-pipe.data"))
        .unwrap();
    let run = |tool: &str| {
        let exe = if tool == "perf" {
            "perf".to_string()
        } else {
            env!("CARGO_BIN_EXE_perfkit").to_string()
        };
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("cat '{}' | {exe} report --stats", pipe.display()))
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{tool}: {:?}", out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let ours = run("perfkit");
    assert!(ours.contains("ATTR events:"), "{ours}");
    assert_eq!(ours, run("perf"));
}

#[test]
fn fields_choose_the_columns_as_perf() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let files = recordings(dir.path());
    let file = &files[0];
    for args in [
        &["--stdio", "-F", "overhead,sample,period,comm"][..],
        &["--stdio", "-F", "comm"],
        &["--stdio", "--no-children", "-s", "comm"],
        &[
            "--stdio",
            "--no-children",
            "-s",
            "comm",
            "-n",
            "--show-total-period",
        ],
    ] {
        let body = |t: &str| -> String {
            t.lines()
                .filter(|l| {
                    !l.contains("frames without symbols")
                        && !l.starts_with("# (Tip")
                        && !l.contains("Report by")
                })
                .collect::<Vec<_>>()
                .join("\n")
                .trim_end()
                .to_string()
        };
        assert_eq!(
            body(&perfkit_text(args, file)),
            body(&perf_text(args, file)),
            "report {args:?}"
        );
    }
}

#[test]
fn a_file_of_another_user_needs_force() {
    use std::os::unix::fs::chown;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.data");
    run_ok(
        perfkit()
            .args(["record", "-q", "-e", "task-clock", "-o"])
            .arg(&path)
            .args(["--", "true"]),
    );
    if chown(&path, Some(65534), None).is_err() {
        return skip("cannot give a file to user nobody (not root)");
    }
    let out = perfkit()
        .args(["report", "--stdio", "-i"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not owned by current user or root (use -f to override)"),
        "{err}"
    );
    run_ok(perfkit().args(["report", "--stdio", "-f", "-i"]).arg(&path));
}
