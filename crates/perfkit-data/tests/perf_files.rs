//! Files recorded here by `perf record` (plain, -g, dwarf, -z, two events, a tracepoint,
//! pipe mode) read with the same samples `perf script` prints.

use perfkit_data::{Item, PerfData};
use perfkit_records::Record;
use std::path::{Path, PathBuf};
use std::process::Command;

fn have_perf() -> bool {
    Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// (pid, tid, time in ns rounded to µs, ip) of every sample, as perf script prints them.
fn perf_samples(file: &Path) -> Vec<(i32, i32, u64, u64)> {
    let out = Command::new("perf")
        .args(["script", "-G", "-F", "pid,tid,time,ip", "-i"])
        .arg(file)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('\t'))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (pid, tid) = it.next()?.split_once('/')?;
            let time = it.next()?.trim_end_matches(':');
            let (s, us) = time.split_once('.')?;
            let ip = u64::from_str_radix(it.next()?, 16).ok()?;
            Some((
                pid.parse().ok()?,
                tid.parse().ok()?,
                s.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?,
                ip,
            ))
        })
        .collect()
}

fn our_samples(file: &Path) -> Vec<(i32, i32, u64, u64)> {
    let data = PerfData::open(file).unwrap();
    let mut v = Vec::new();
    data.for_each(
        |item| {
            if let Item::Event { record: rec, .. } = item
                && let Record::Sample(s) = &rec.record
            {
                v.push((
                    s.pid.unwrap_or(-1),
                    s.tid.unwrap_or(-1),
                    s.time.unwrap_or(0) / 1000,
                    s.ip.unwrap_or(0),
                ));
            }
        },
        |_| {},
    )
    .unwrap();
    v
}

fn record(dir: &Path, name: &str, args: &[&str], pipe: bool) -> Option<PathBuf> {
    let out = dir.join(name);
    let mut cmd = Command::new("perf");
    cmd.args(["record", "-q"]);
    if pipe {
        cmd.args(["-o", "-"])
            .stdout(std::fs::File::create(&out).ok()?);
    } else {
        cmd.arg("-o").arg(&out).stdout(std::process::Stdio::null());
    }
    let st = cmd
        .args(args)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        ])
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    st.success().then_some(out)
}

#[test]
fn perf_files_read_like_perf_script() {
    if !have_perf() {
        eprintln!("skipped: perf is not installed");
        return;
    }
    let _ = Command::new("mount")
        .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
        .output();
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<&str>, bool)> = vec![
        ("plain", vec![], false),
        ("fp", vec!["-g"], false),
        ("dwarf", vec!["--call-graph", "dwarf"], false),
        ("zstd", vec!["-z"], false),
        ("two", vec!["-e", "cpu-clock,task-clock"], false),
        (
            "tracepoint",
            vec!["-e", "sched:sched_switch,cpu-clock"],
            false,
        ),
        ("pipe", vec![], true),
        ("pipe-g", vec!["-g"], true),
    ];
    for (name, args, pipe) in cases {
        let Some(file) = record(dir.path(), name, &args, pipe) else {
            eprintln!("{name}: perf record failed here, skipped");
            continue;
        };
        let theirs = perf_samples(&file);
        let ours = our_samples(&file);
        assert!(!theirs.is_empty(), "{name}: perf printed no samples");
        assert_eq!(ours.len(), theirs.len(), "{name}: sample counts");
        let mut a = ours.clone();
        let mut b = theirs.clone();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "{name}: pid/tid/time/ip of every sample");
        let data = PerfData::open(&file).unwrap();
        if name == "two" || name == "tracepoint" {
            assert_eq!(data.attrs.len(), 2, "{name}");
        }
        if name == "tracepoint" {
            assert!(
                data.attrs.iter().any(|a| a.name == "sched:sched_switch"),
                "{:?}",
                data.attrs.iter().map(|a| &a.name).collect::<Vec<_>>()
            );
        }
        if !pipe {
            assert!(data.features.hostname.is_some(), "{name}");
            assert!(
                data.features.cmdline.iter().any(|a| a == "record"),
                "{name}"
            );
        }
        if name == "zstd" {
            assert_eq!(data.features.compressed.map(|c| c.kind), Some(1));
        }
    }
}
