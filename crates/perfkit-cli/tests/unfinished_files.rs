//! Files whose recorder was killed (SIGKILL): perf record leaves its header as it began
//! (data size 0, the feature bits set, no feature index after the records). perfkit warns
//! as perf does and reads the records that are there; perf 6.1 itself stops with "failed
//! to process sample", so the records are checked against perf reading the same bytes with
//! the header finished by hand.

mod common;

use common::{have_perf, perfkit};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// Start `recorder ARGS -- hotloop` (endless), wait until `file` holds more than `bytes`
/// (the recorder wrote samples, however loaded the machine is), then SIGKILL the recorder
/// and the workload it started.
fn record_then_kill(recorder: &mut Command, file: &Path, bytes: u64) {
    let mut child = recorder
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the recorder");
    let t0 = Instant::now();
    while std::fs::metadata(file).map_or(0, |m| m.len()) <= bytes {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{} never grew past {bytes} bytes",
            file.display()
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the recorder ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id();
    // The workload is a child of one of the recorder's threads.
    let mut workloads = String::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let children = t.path().join("children");
        workloads += &std::fs::read_to_string(children).unwrap_or_default();
        workloads.push(' ');
    }
    child.kill().expect("SIGKILL the recorder");
    child.wait().unwrap();
    for w in workloads.split_whitespace() {
        let _ = Command::new("kill").args(["-KILL", w]).status();
    }
}

/// The same bytes with the header finished: the data size set to the records that are
/// whole (a kill can cut the last one short) and no feature bits (none was written).
fn finished_twin(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let data_off = u64_at(&b, 40) as usize;
    let mut end = data_off;
    while end + 8 <= b.len() {
        let size = u16::from_le_bytes([b[end + 6], b[end + 7]]) as usize;
        if size < 8 || end + size > b.len() {
            break;
        }
        end += size;
    }
    b.truncate(end);
    let len = (end - data_off) as u64;
    b[48..56].copy_from_slice(&len.to_le_bytes());
    b[72..104].fill(0);
    b
}

/// `perfkit`/`perf` `script` lines of the samples, with the event name left out (a file
/// without its features has no event names: perf then calls cpu-clock `cpu-clock:ppp`).
fn sample_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.replacen(" cpu-clock:ppp:", " EVENT:", 1))
        .map(|l| l.replacen(" cpu-clock:", " EVENT:", 1))
        .collect()
}

fn hotloop(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("hotloop.c");
    std::fs::write(&src, common::hotloop::SOURCE).unwrap();
    let bin = dir.join("hotloop");
    let ok = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

#[test]
fn a_killed_perf_record_is_read_with_perfs_warning() {
    if !have_perf() {
        common::skip("perf is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(w) = hotloop(dir.path()) else {
        common::skip("no C compiler for the workload");
        return;
    };
    let file = dir.path().join("killed.data");
    record_then_kill(
        Command::new("perf")
            .args(["record", "-F", "10000", "-g", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&w)
            .args(["1000000", "0"]),
        &file,
        256 * 1024,
    );
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(
        u64_at(&bytes, 48),
        0,
        "perf record never finished its header"
    );

    // perf's words, the file named.
    let perf = Command::new("perf")
        .args(["report", "--stdio", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let perf_err = String::from_utf8_lossy(&perf.stderr);
    let warning = perf_err
        .lines()
        .find(|l| l.starts_with("WARNING:"))
        .unwrap_or_else(|| panic!("perf gave no warning: {perf_err}"));
    let ours = perfkit()
        .args(["report", "--stdio", "--no-children", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(ours.status.success(), "{err}");
    assert!(
        err.contains(warning),
        "perf says {warning:?}; perfkit:\n{err}"
    );
    assert!(
        err.contains("Was the 'perf record' command properly terminated?"),
        "{err}"
    );
    let report = String::from_utf8_lossy(&ours.stdout);
    let hot = report
        .lines()
        .find(|l| !l.starts_with('#') && l.contains('%'))
        .unwrap_or_else(|| panic!("no rows:\n{report}"));
    assert!(hot.contains("[.] hot"), "the hot loop leads:\n{report}");

    // Every record that is there, as perf reads the same records once the header is
    // finished by hand.
    let twin = dir.path().join("twin.data");
    std::fs::write(&twin, finished_twin(&bytes)).unwrap();
    let theirs = Command::new("perf")
        .args(["script", "-i"])
        .arg(&twin)
        .output()
        .unwrap();
    assert!(theirs.status.success());
    let ours = perfkit()
        .args(["script", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(ours.status.success());
    let (a, b) = (
        sample_lines(&String::from_utf8_lossy(&ours.stdout)),
        sample_lines(&String::from_utf8_lossy(&theirs.stdout)),
    );
    assert!(
        a.iter().filter(|l| l.contains("EVENT")).count() > 100,
        "samples were read"
    );
    if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
        panic!(
            "line {i} differs: perfkit {:?}, perf {:?} ({} and {} lines)",
            a.get(i),
            b.get(i),
            a.len(),
            b.len()
        );
    }
}

#[test]
fn a_killed_perfkit_record_is_read_by_perf_and_perfkit() {
    if !have_perf() {
        common::skip("perf is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(w) = hotloop(dir.path()) else {
        common::skip("no C compiler for the workload");
        return;
    };
    let file = dir.path().join("killed.data");
    let bin = assert_cmd::cargo::cargo_bin("perfkit");
    record_then_kill(
        Command::new(bin)
            .args(["record", "-F", "10000", "-g", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&w)
            .args(["1000000", "0"]),
        &file,
        256 * 1024,
    );
    let bytes = std::fs::read(&file).unwrap();
    // perfkit rewrites its header as it goes: what the header covers reads in perf and
    // perfkit alike; a header never rewritten (killed in its first 100 ms) reads as perf's
    // does above.
    let unfinished = u64_at(&bytes, 48) == 0;
    let perf = Command::new("perf")
        .args(["script", "-i"])
        .arg(if unfinished {
            let twin = dir.path().join("twin.data");
            std::fs::write(&twin, finished_twin(&bytes)).unwrap();
            twin
        } else {
            file.clone()
        })
        .output()
        .unwrap();
    assert!(
        perf.status.success(),
        "{}",
        String::from_utf8_lossy(&perf.stderr)
    );
    let ours = perfkit()
        .args(["script", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(ours.status.success());
    let (a, b) = (
        sample_lines(&String::from_utf8_lossy(&ours.stdout)),
        sample_lines(&String::from_utf8_lossy(&perf.stdout)),
    );
    let n = a.iter().filter(|l| l.contains("EVENT")).count();
    assert!(n > 100, "samples were read: {n}");
    if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
        panic!(
            "line {i} differs: perfkit {:?}, perf {:?} ({} and {} lines)",
            a.get(i),
            b.get(i),
            a.len(),
            b.len()
        );
    }
}
