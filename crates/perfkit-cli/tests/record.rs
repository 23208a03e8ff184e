//! `perfkit record` files open in the real `perf report` and `perf script` with the same
//! sample counts, commands and hot symbols as perfkit sees; exit statuses pass through.

mod common;

use common::{have_perf, perf_ok, perfkit, run_ok};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn workload() -> Option<&'static PathBuf> {
    static W: OnceLock<Option<PathBuf>> = OnceLock::new();
    W.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("perfkit-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let out = dir.join("workload");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/workload.c");
        let ok = std::process::Command::new("cc")
            .args(["-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o"])
            .arg(&out)
            .arg(src)
            .status()
            .ok()?
            .success();
        ok.then_some(out)
    })
    .as_ref()
}

macro_rules! need {
    () => {{
        let Some(w) = workload() else {
            common::skip("no C compiler for the workload");
            return;
        };
        if !have_perf() {
            common::skip("perf is not installed");
            return;
        }
        w
    }};
}

/// Wait (up to 60 s) until `path` holds more than `bytes`: the recorder has started and
/// written samples, however loaded the machine is.
fn wait_for_data(path: &Path, bytes: u64) {
    let t0 = std::time::Instant::now();
    while std::fs::metadata(path).map_or(0, |m| m.len()) <= bytes {
        assert!(
            t0.elapsed().as_secs() < 60,
            "{} never grew past {bytes} bytes",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn sample_lines(script: &str) -> usize {
    script
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('\t'))
        .count()
}

/// The number our summary line reports.
fn reported_samples(stderr: &str) -> usize {
    stderr
        .lines()
        .find(|l| l.starts_with("[ perf record: Captured and wrote "))
        .and_then(|l| l.rsplit_once(" samples)"))
        .and_then(|(s, _)| s.rsplit_once('(')?.1.parse().ok())
        .unwrap_or_else(|| panic!("no summary in {stderr}"))
}

fn record(dir: &Path, name: &str, flags: &[&str], cmd: &[&str]) -> (PathBuf, String) {
    let out = dir.join(name);
    let o = perfkit()
        .arg("record")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{name}: {err}");
    (out, err)
}

#[test]
fn files_open_in_perf_with_the_same_samples() {
    let w = need!();
    let w = w.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("plain", vec![]),
        ("fp", vec!["-g"]),
        ("zstd", vec!["-z"]),
        ("two", vec!["-e", "cpu-clock,task-clock"]),
        ("dwarf", vec!["--call-graph", "dwarf,4096"]),
        ("cpu", vec!["--sample-cpu", "-F", "1000"]),
    ];
    for (name, flags) in cases {
        let (file, err) = record(dir.path(), name, &flags, &[w, "spin", "300"]);
        let meta = std::fs::metadata(&file).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            meta.permissions().mode() & 0o777,
            0o600,
            "{name}: files are private"
        );
        let script = perf_ok(&["script"], &file);
        let n = sample_lines(&script);
        // As perf, a compressed recording's summary gives the ratio, not the samples.
        if name != "zstd" {
            assert_eq!(
                n,
                reported_samples(&err),
                "{name}: perf script sees what we wrote"
            );
        } else {
            assert!(err.contains(", compressed (original "), "{err}");
        }
        let ours = perfkit()
            .args(["script", "-q", "-i"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(
            sample_lines(&String::from_utf8_lossy(&ours.stdout)),
            n,
            "{name}: perfkit script agrees"
        );
        let report = perf_ok(
            &["report", "--stdio", "--no-children", "--sort", "comm,sym"],
            &file,
        );
        let hot = report
            .lines()
            .find(|l| !l.starts_with('#') && l.contains('%'))
            .unwrap_or("");
        assert!(
            hot.contains("workload") && hot.contains("spin"),
            "{name}: {report}"
        );
        if name == "two" {
            assert!(report.contains("of event 'task-clock'"), "{report}");
        }
    }
}

/// perf unwinds perfkit's `--call-graph dwarf` recordings as it unwinds its own: the
/// samples of the workload's 8-to-40-frame recursion reach the thread's entry
/// (`deep_main`), and perf's unwinder never reads outside the memory the file describes
/// ("access_mem ... not inside range" in `perf report -v`, thousands of times when the
/// read-only segments and `[stack]` were not recorded).
#[test]
fn perf_unwinds_dwarf_recordings() {
    let w = need!();
    let w = w.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (file, err) = record(
        dir.path(),
        "dwarf",
        &["--call-graph", "dwarf"],
        &[w, "deep", "1", "300"],
    );
    let script = perf_ok(&["script", "-F", "ip,sym"], &file);
    let samples: Vec<&str> = script
        .split("\n\n")
        .filter(|s| !s.trim().is_empty())
        .collect();
    assert_eq!(
        samples.len(),
        reported_samples(&err),
        "perf script sees every sample"
    );
    let unwound = samples.iter().filter(|s| s.contains(" deep_main")).count();
    // A sample in the kernel or in clock_gettime's vDSO still unwinds to the thread's
    // entry; only a stack deeper than the 8 KiB copy may stop short.
    assert!(
        unwound * 10 >= samples.len() * 9,
        "{unwound} of {} samples unwound to deep_main:\n{}",
        samples.len(),
        samples
            .iter()
            .take(5)
            .copied()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    // Caller-first graphs: the path from the thread's start to the first recursion.
    let report = perf_ok(
        &["report", "--stdio", "--no-children", "-g", "caller"],
        &file,
    );
    let leaf = report
        .split("\n\n")
        .find(|b| b.contains("[.] leaf"))
        .unwrap_or_else(|| panic!("no leaf row:\n{report}"));
    for caller in ["start_thread", "deep_main", "fa"] {
        assert!(
            leaf.lines()
                .any(|l| l.trim_start_matches([' ', '|', '-']).trim() == caller),
            "perf report shows {caller} above leaf:\n{leaf}"
        );
    }
    let o = std::process::Command::new("perf")
        .args(["report", "-v", "--stdio", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let misses = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains("not inside range"))
        .count();
    assert!(
        misses * 100 <= samples.len(),
        "{misses} unwinder reads outside the recorded memory ({} samples)",
        samples.len()
    );
}

#[test]
fn pipe_output_is_read_by_perf() {
    let w = need!();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pipe.data");
    let o = run_ok(
        perfkit()
            .args(["record", "-o", "-", "--"])
            .arg(w)
            .args(["spin", "200"]),
    );
    std::fs::write(&file, &o.stdout).unwrap();
    // As perf's: no size and no sample count in pipe mode.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.lines()
            .any(|l| l == "[ perf record: Captured and wrote 0.000 MB - ]"),
        "{err}"
    );
    let perf = std::process::Command::new("perf")
        .args(["script", "-i", "-"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    let ours = run_ok(perfkit().args(["script", "-i"]).arg(&file));
    let n = sample_lines(&String::from_utf8_lossy(&perf.stdout));
    assert!(n > 0);
    assert_eq!(sample_lines(&String::from_utf8_lossy(&ours.stdout)), n);
}

#[test]
fn system_wide_and_attach() {
    let w = need!();
    let dir = tempfile::tempdir().unwrap();
    let (file, err) = record(dir.path(), "all", &["-a", "-F", "500"], &["sleep", "0.3"]);
    assert!(reported_samples(&err) > 0);
    let script = perf_ok(&["script", "-F", "comm,cpu"], &file);
    assert!(script.lines().count() > 10);
    // Attach to a running process.
    let mut child = std::process::Command::new(w)
        .args(["spin", "6000"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let out = dir.path().join("attach.data");
    let mut rec = std::process::Command::new(assert_cmd::cargo::cargo_bin("perfkit"))
        .args(["record", "-p", &child.id().to_string(), "-o"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let it start (other tests load both CPUs) and record a while, then Ctrl-C.
    wait_for_data(&out, 16 << 10);
    perfkit::kill(rec.id() as i32, libc::SIGINT).unwrap();
    let st = rec.wait().unwrap();
    child.kill().ok();
    child.wait().ok();
    assert!(st.success(), "{st:?}");
    let report = perf_ok(&["report", "--stdio", "--sort", "comm,sym"], &out);
    assert!(report.contains("spin"), "{report}");
}

#[test]
fn attach_with_a_timer_command_records_the_attached_task() {
    // perf: with -p, the command after `--` only says how long to record.
    let w = need!();
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(w)
        .args(["spin", "20000"])
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut pids = Vec::new();
    for (tool, name) in [("perfkit", "ours.data"), ("perf", "perf.data")] {
        let out = dir.path().join(name);
        let mut cmd = if tool == "perf" {
            std::process::Command::new("perf")
        } else {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("perfkit"))
        };
        let o = cmd
            .args(["record", "-q", "-e", "cpu-clock", "-p", &pid, "-o"])
            .arg(&out)
            .args(["--", "sleep", "0.5"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{tool}: {o:?}");
        let script = perf_ok(&["script", "-F", "pid"], &out);
        let mut seen: Vec<String> = script.lines().map(|l| l.trim().to_string()).collect();
        assert!(
            !seen.is_empty(),
            "{tool} recorded no sample of the attached task"
        );
        seen.sort();
        seen.dedup();
        pids.push(seen);
    }
    child.kill().ok();
    child.wait().ok();
    // Only the attached task, in both tools' files (not the `sleep`).
    assert_eq!(pids[0], vec![pid.clone()]);
    assert_eq!(pids[0], pids[1]);
}

#[test]
fn exit_status_and_bad_input() {
    let _ = need!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.data");
    let o = perfkit()
        .args(["record", "-q", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", "exit 5"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5));
    let o = perfkit()
        .args(["record", "-q", "-o"])
        .arg(&out)
        .args(["--", "no-such-cmd-xyz"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(127));
    let o = perfkit()
        .args(["record", "-F", "999999999", "-o"])
        .arg(&out)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("perf_event_max_sample_rate"));
    // The old file is kept as .old.
    run_ok(
        perfkit()
            .args(["record", "-q", "-o"])
            .arg(&out)
            .args(["--", "true"]),
    );
    assert!(dir.path().join("x.data.old").exists());
}

#[test]
fn interrupted_target_still_leaves_a_readable_file() {
    let w = need!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("int.data");
    let mut rec = std::process::Command::new(assert_cmd::cargo::cargo_bin("perfkit"))
        .args(["record", "-q", "-o"])
        .arg(&out)
        .arg("--")
        .arg(w)
        .args(["spin", "60000"])
        .spawn()
        .unwrap();
    wait_for_data(&out, 16 << 10);
    // Ctrl-C goes to the command; the file is finished properly.
    perfkit::kill(rec.id() as i32, libc::SIGINT).unwrap();
    let st = rec.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    let report = perf_ok(&["report", "--stdio"], &out);
    assert!(report.contains("spin"), "{report}");
}

#[test]
fn switch_output_on_signal_writes_readable_pieces() {
    let w = need!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.data");
    let mut rec = std::process::Command::new(assert_cmd::cargo::cargo_bin("perfkit"))
        .args(["record", "-q", "--switch-output", "-o"])
        .arg(&out)
        .arg("--")
        .arg(w)
        .args(["spin", "60000"])
        .spawn()
        .unwrap();
    wait_for_data(&out, 16 << 10);
    perfkit::kill(rec.id() as i32, libc::SIGUSR2).unwrap();
    // The first piece is renamed; the next file fills up; then Ctrl-C ends it all.
    let t0 = std::time::Instant::now();
    let rotated = |d: &Path| {
        std::fs::read_dir(d).unwrap().any(|e| {
            let n = e.unwrap().file_name();
            let n = n.to_str().unwrap();
            n.starts_with("s.data.2")
        }) && !d.join("s.data.next").exists()
    };
    while !rotated(dir.path()) {
        assert!(t0.elapsed().as_secs() < 60);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    wait_for_data(&out, 16 << 10);
    perfkit::kill(rec.id() as i32, libc::SIGINT).unwrap();
    assert_eq!(rec.wait().unwrap().code(), Some(130));
    let mut pieces: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("s.data.")
        })
        .collect();
    pieces.sort();
    assert_eq!(pieces.len(), 2, "{pieces:?}");
    for p in &pieces {
        let report = perf_ok(&["report", "--stdio", "--sort", "sym"], p);
        assert!(report.contains("spin"), "{}: {report}", p.display());
    }
}

#[test]
fn event_terms_and_leader_sampling_groups_as_perf_reads_them() {
    let w = need!();
    let w = w.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A per-event period term wins over -c; the other event keeps -c.
    let (file, err) = record(
        dir.path(),
        "terms.data",
        &[
            "-e",
            "task-clock/period=2000000/",
            "-e",
            "cpu-clock",
            "-c",
            "500000",
        ],
        &[w, "spin", "300"],
    );
    let script = std::process::Command::new("perf")
        .args(["script", "-F", "event,period", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&script.stdout);
    let (mut slow, mut fast) = (0, 0);
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match (f.first(), f.last()) {
            (Some(&"2000000"), Some(e)) if e.starts_with("task-clock") => slow += 1,
            (Some(&"500000"), Some(e)) if e.starts_with("cpu-clock") => fast += 1,
            _ => panic!("unexpected line {l:?} in\n{text}\n{err}"),
        }
    }
    // 300 ms of CPU: 150 samples at 2 ms, 600 at 0.5 ms (give or take start-up).
    assert!(
        (120..=200).contains(&slow),
        "{slow} task-clock samples\n{err}"
    );
    assert!(
        (480..=800).contains(&fast),
        "{fast} cpu-clock samples\n{err}"
    );

    // `{a,b}:S`: the leader samples and reads the member; perf shows both per sample.
    let (file, err) = record(
        dir.path(),
        "group.data",
        &["-e", "{cpu-clock,page-faults}:S", "-c", "1000000"],
        &[w, "pages", "20000"],
    );
    let out = std::process::Command::new("perf")
        .args(["report", "--stdio", "-T", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}\n{err}");
    let script = std::process::Command::new("perf")
        .args(["script", "-F", "event,period", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&script.stdout);
    let faults: u64 = text
        .lines()
        .filter(|l| l.contains("page-faults"))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    // Each sample's page-faults value is the delta since the last: they add up to the
    // faults of the sampled stretch, at least the 20000 pages touched minus the tail
    // after the last sample.
    assert!(text.lines().any(|l| l.contains("cpu-clock")), "{text}");
    assert!(
        (15_000..=21_000).contains(&faults),
        "{faults} faults in\n{text}"
    );
}

#[test]
fn group_reads_and_several_events_script_like_perf() {
    let w = need!();
    let w = w.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, flags) in [
        (
            "leader.data",
            vec!["-e", "{cpu-clock,page-faults}:S", "-c", "1000000"],
        ),
        (
            "names.data",
            vec!["-e", "task-clock/period=2000000/,cpu-clock", "-c", "700000"],
        ),
    ] {
        let (file, err) = record(dir.path(), name, &flags, &[w, "pages", "20000"]);
        let theirs = std::process::Command::new("perf")
            .args(["script", "-i"])
            .arg(&file)
            .output()
            .unwrap();
        let ours = perfkit()
            .args(["script", "-i"])
            .arg(&file)
            .output()
            .unwrap();
        let (t, o) = (
            String::from_utf8_lossy(&theirs.stdout),
            String::from_utf8_lossy(&ours.stdout),
        );
        assert!(t.lines().count() > 10, "{name}: {t}\n{err}");
        assert_eq!(o, t, "{name}: perfkit script differs from perf script");
    }
}
