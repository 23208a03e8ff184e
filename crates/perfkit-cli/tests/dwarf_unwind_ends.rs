//! `--call-graph dwarf` walks end where perf 6.1's libunwind walk ends, on recordings perf
//! makes here: code in a file whose unwind tables cannot be read (a deleted memfd) is the
//! last frame, and a process sampled at `ld.so`'s `_start` (no FDE, frame pointer 0) has no
//! caller, where framehop alone took the `argc` at the top of the stack for a return
//! address.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

fn perf_record(data: &Path, args: &[&str], cmd: &[&str]) -> bool {
    Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(data)
        .args(args)
        .arg("--")
        .args(cmd)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn perf(args: &[&str], data: &Path) -> String {
    stdout(Command::new("perf").args(args).arg("-i").arg(data))
}

fn ours(args: &[&str], data: &Path) -> String {
    let out = perfkit().args(args).arg("-i").arg(data).output().unwrap();
    assert!(out.status.success(), "perfkit {args:?}: {}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Report's text without its last comment line (perf prints a random tip there) and, with
/// `heavy_only`, only the rows of 10% or more: the memfd code's. Below that are the few
/// start-up samples, whose rows of equal weight perf orders by callchain depths that
/// perfkit does not always reproduce for inlined frames (README).
fn body(text: &str, heavy_only: bool) -> String {
    let mut out = Vec::new();
    for l in text.lines() {
        if l.starts_with("# (") {
            continue;
        }
        let pct = l
            .split_whitespace()
            .next()
            .and_then(|w| w.strip_suffix('%'))
            .and_then(|w| w.parse::<f64>().ok());
        if heavy_only && pct.is_some_and(|p| p < 10.0) {
            break;
        }
        out.push(l);
    }
    out.join("\n")
}

fn samples(text: &str) -> Vec<&str> {
    text.split("\n\n")
        .filter(|s| !s.trim().is_empty())
        .collect()
}

#[test]
fn a_process_sampled_at_ld_so_start_has_no_caller() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let _ = Command::new("mount")
        .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
        .output();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("exec.data");
    // sys_exit_execve fires with the new program's user registers: ld.so's entry point,
    // rbp 0, argc at the stack pointer.
    if !perf_record(
        &data,
        &["-e", "syscalls:sys_exit_execve", "--call-graph", "dwarf"],
        &["sh", "-c", "/bin/true; /bin/true a"],
    ) {
        return skip("perf cannot record syscalls:sys_exit_execve (tracefs)");
    }
    let theirs = perf(&["script"], &data);
    let at_start = samples(&theirs)
        .iter()
        .filter(|s| {
            let frames: Vec<&str> = s.lines().skip(1).collect();
            frames.len() == 1 && frames[0].contains("_start+0x0 (")
        })
        .count();
    assert!(
        at_start >= 2,
        "perf shows no sample that ends at _start+0x0:\n{theirs}"
    );
    assert_eq!(ours(&["script"], &data), theirs);
    for args in [
        &["report", "--stdio"][..],
        &["report", "--stdio", "--no-children", "-g", "fractal"],
        &["report", "--stdio", "--no-children", "-g", "caller"],
    ] {
        assert_eq!(
            body(&ours(args, &data), false),
            body(&perf(args, &data), false),
            "{args:?}"
        );
    }
}

fn compile_memfd(dir: &Path) -> Option<PathBuf> {
    let out = dir.join("memfd");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/corpus/memfd.c");
    Command::new("cc")
        .args(["-O1", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success())
        .then_some(out)
}

#[test]
fn code_in_a_deleted_memfd_is_the_last_frame() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = compile_memfd(dir.path()) else {
        return skip("no C compiler");
    };
    let data = dir.path().join("memfd.data");
    assert!(perf_record(
        &data,
        &["--call-graph", "dwarf"],
        &[bin.to_str().unwrap(), "100000000"]
    ));
    let (theirs, mine) = (perf(&["script"], &data), ours(&["script"], &data));
    let (t, o) = (samples(&theirs), samples(&mine));
    assert_eq!(t.len(), o.len(), "samples in perf's and perfkit's script");
    // Every sample in the memfd code is perf's: its one frame and nothing above it.
    let in_memfd: Vec<usize> = (0..t.len())
        .filter(|&i| t[i].contains("(/memfd:corpus-code (deleted))"))
        .collect();
    assert!(
        in_memfd.len() * 2 > t.len(),
        "{} of {} samples in the memfd code",
        in_memfd.len(),
        t.len()
    );
    for &i in &in_memfd {
        assert_eq!(o[i], t[i], "sample {i}");
        assert!(
            t[i].lines().last().unwrap().contains("/memfd:corpus-code"),
            "perf walks past the memfd frame: {}",
            t[i]
        );
    }
    // The others (start-up, exit): at most 1 in 200 ends differently (a stack copy cut
    // inside a frame).
    let differ = (0..t.len()).filter(|&i| t[i] != o[i]).count();
    assert!(differ * 200 <= t.len(), "{differ} of {} differ", t.len());
    for args in [
        &["report", "--stdio"][..],
        &["report", "--stdio", "--no-children", "-g", "fractal"],
    ] {
        assert_eq!(
            body(&ours(args, &data), true),
            body(&perf(args, &data), true),
            "{args:?}"
        );
    }
}
