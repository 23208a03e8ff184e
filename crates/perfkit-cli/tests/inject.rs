//! `perfkit inject` against perf 6.1's: the same input (a pipe-mode recording saved to a
//! file, and a file-mode one) injected by both tools reads back the same in `perf script`,
//! file to pipe and pipe to file, with build ids of the files mapped.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, skip, stdout_ok};
use std::path::Path;

fn perf() -> Command {
    Command::new("perf")
}

fn script(input: &Path) -> String {
    stdout_ok(
        perf()
            .args(["script", "-F", "comm,tid,time,event,ip,sym,dso", "-i"])
            .arg(input),
    )
}

#[test]
fn pipe_to_file_and_file_to_pipe_read_back_as_perfs_inject() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let pipe = dir.path().join("pipe.data");
    let rec = std::process::Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "task-clock:u",
            "-o",
            "-",
            "--",
            "dd",
            "if=/dev/zero",
            "of=/dev/null",
            "count=300000",
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(rec.status.success());
    std::fs::write(&pipe, &rec.stdout).unwrap();

    // Pipe mode in, file mode out.
    let theirs = dir.path().join("perf-inj.data");
    let ours = dir.path().join("perfkit-inj.data");
    // As `perf record -o - | perf inject -b -i - -o FILE` (perf 6.1 misreads a pipe-mode
    // file named by -i, so both read it on standard input).
    for (tool, out) in [("perf", &theirs), (env!("CARGO_BIN_EXE_perfkit"), &ours)] {
        let st = std::process::Command::new(tool)
            .args(["inject", "-b", "-i", "-", "-o"])
            .arg(out)
            .stdin(std::fs::File::open(&pipe).unwrap())
            .status()
            .unwrap();
        assert!(st.success(), "{tool} inject: {st}");
    }
    let want = script(&theirs);
    assert!(want.contains("dd"), "{want}");
    assert_eq!(script(&ours), want);
    let ids = stdout_ok(perf().args(["buildid-list", "-i"]).arg(&ours));
    let dd = std::fs::canonicalize("/usr/bin/dd").unwrap();
    let dd_id = perfkit_symbols::buildid_cache::build_id_of_file(&dd)
        .map(|id| format!("{} {}", perfkit_symbols::build_id_hex(&id), dd.display()));
    if let Some(line) = dd_id {
        assert!(ids.lines().any(|l| l == line), "{ids}");
    }

    // File mode in, pipe mode out: perf reads perfkit's stream as the file.
    let stream = common::run_ok(perfkit().args(["inject", "-b", "-i"]).arg(&theirs)).stdout;
    let piped = dir.path().join("perfkit-pipe.data");
    std::fs::write(&piped, stream).unwrap();
    let got = std::process::Command::new("perf")
        .args(["script", "-F", "comm,tid,time,event,ip,sym,dso", "-i", "-"])
        .stdin(std::fs::File::open(&piped).unwrap())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&got.stdout), want);
}

#[test]
fn a_missing_input_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = perfkit()
        .args(["inject", "-i"])
        .arg(dir.path().join("none.data"))
        .arg("-o")
        .arg(dir.path().join("out.data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("none.data"), "{err}");
}

#[test]
fn a_compressed_recording_is_injected_decompressed_as_perf_does() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let report = |f: &Path| {
        stdout_ok(
            perf()
                .args(["report", "--stdio", "-F", "comm,dso,sym", "-i"])
                .arg(f),
        )
    };
    let stats = |f: &Path| stdout_ok(perf().args(["report", "--stats", "-i"]).arg(f));
    // perf's -z file and perfkit's: each injected by perfkit reports as the original,
    // with no COMPRESSED records left.
    for (name, tool) in [("perf", "perf"), ("perfkit", "perfkit")] {
        let z = dir.path().join(format!("{name}.z.data"));
        let mut rec = if tool == "perf" { perf() } else { perfkit() };
        let ok = rec
            .args(["record", "-q", "-z", "-g", "-F", "5000", "-o"])
            .arg(&z)
            .args(["--", "dd", "count=500", "if=/dev/urandom", "of=/dev/null"])
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "{name} record -z");
        assert!(
            stats(&z).contains("COMPRESSED events"),
            "{name}: compressed"
        );
        let out = dir.path().join(format!("{name}.decomp"));
        stdout_ok(perfkit().args(["inject", "-i"]).arg(&z).arg("-o").arg(&out));
        assert!(
            !stats(&out).contains("COMPRESSED events"),
            "{name}: decompressed"
        );
        let (a, b) = (report(&z), report(&out));
        let rows = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.contains('%'))
                .map(str::to_string)
                .collect()
        };
        assert!(!rows(&a).is_empty());
        assert_eq!(rows(&a), rows(&b), "{name}");
    }
}
