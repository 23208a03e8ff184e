//! Files recorded here by `perf record` (plain, -g, dwarf, -z, two events, a tracepoint,
//! pipe mode) read with the same samples `perf script` prints.

mod common;

use common::{Sample, have_perf, perf_samples, samples_of};
use perfkit_data::PerfData;
use std::path::{Path, PathBuf};
use std::process::Command;

fn our_samples(file: &Path, stream: bool) -> Vec<Sample> {
    let data = if stream {
        // Read as a pipe is: once, front to back, through a non-seekable reader.
        PerfData::from_reader(Box::new(std::fs::File::open(file).unwrap())).unwrap()
    } else {
        PerfData::open(file).unwrap()
    };
    samples_of(&data)
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
        let ours = our_samples(&file, false);
        assert!(!theirs.is_empty(), "{name}: perf printed no samples");
        assert_eq!(ours.len(), theirs.len(), "{name}: sample counts");
        // Same order as perf delivers them (its ordered_events round flush).
        assert_eq!(ours, theirs, "{name}: samples in perf's order");
        if pipe {
            assert_eq!(our_samples(&file, true), theirs, "{name}: read as a stream");
        }
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
