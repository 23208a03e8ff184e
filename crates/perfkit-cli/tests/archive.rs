//! `perfkit archive` packs the same build-id cache entries as `perf archive` for the same
//! recording, in the layout perf reads back after unpacking.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, run_ok, skip, stdout_ok};
use std::collections::BTreeSet;
use std::path::Path;

fn build_id_links(tarball: &Path) -> BTreeSet<String> {
    stdout_ok(Command::new("tar").arg("tjf").arg(tarball))
        .lines()
        .filter(|l| l.starts_with(".build-id/"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn archive_packs_what_perf_archive_packs() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("debug");
    let data = dir.path().join("perf.data");
    run_ok(
        Command::new("perf")
            .env("PERF_BUILDID_DIR", &cache)
            .args(["record", "-q", "-e", "task-clock:u", "-o"])
            .arg(&data)
            .args(["--", "dd", "if=/dev/zero", "of=/dev/null", "count=100000"]),
    );
    let tarball = dir.path().join("perf.data.tar.bz2");
    run_ok(
        Command::new("perf")
            .env("PERF_BUILDID_DIR", &cache)
            .arg("archive")
            .arg(&data),
    );
    let theirs = build_id_links(&tarball);
    std::fs::remove_file(&tarball).unwrap();
    assert!(!theirs.is_empty());

    // perfkit, from an empty cache of its own: it fills the cache from the files.
    let own = dir.path().join("own");
    let out = stdout_ok(
        perfkit()
            .arg("--buildid-dir")
            .arg(&own)
            .arg("archive")
            .arg(&data),
    );
    assert!(
        out.contains(&format!("$ tar xvf {} -C ~/.debug", tarball.display())),
        "{out}"
    );
    assert_eq!(build_id_links(&tarball), theirs);

    // Unpacked, perf lists the entries.
    let unpacked = dir.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    run_ok(
        Command::new("tar")
            .arg("xjf")
            .arg(&tarball)
            .arg("-C")
            .arg(&unpacked),
    );
    let listed = stdout_ok(
        Command::new("perf")
            .arg("--buildid-dir")
            .arg(&unpacked)
            .args(["buildid-cache", "-l"]),
    );
    assert_eq!(listed.lines().count(), theirs.len(), "{listed}");
}

/// A recording with kernel samples: perf's cache (`~/.debug`, where `perf record` puts its
/// entries whatever `PERF_BUILDID_DIR` says) holds the kernel's kallsyms, and both archives
/// pack it beside the objects the samples fell in (perf's `--with-hits`), entry for entry.
#[test]
fn archive_packs_the_kernel_and_only_objects_hit() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    run_ok(
        Command::new("perf")
            .args(["record", "-q", "-e", "task-clock", "-o"])
            .arg(&data)
            .args(["--", "dd", "if=/dev/zero", "of=/dev/null", "count=100000"]),
    );
    let tarball = dir.path().join("perf.data.tar.bz2");
    let listing = || -> BTreeSet<String> {
        stdout_ok(Command::new("tar").arg("tjf").arg(&tarball))
            .lines()
            .map(str::to_owned)
            .collect()
    };
    run_ok(Command::new("perf").arg("archive").arg(&data));
    let theirs = listing();
    std::fs::remove_file(&tarball).unwrap();
    let kernel = stdout_ok(perfkit().args(["buildid-list", "-k"]));
    if !theirs.iter().any(|l| l.starts_with("[kernel.kallsyms]/")) {
        return skip("perf cached no kallsyms (kernel addresses hidden: run as root)");
    }
    assert!(
        theirs.iter().any(|l| l.contains(kernel.trim())),
        "{theirs:?}"
    );
    stdout_ok(perfkit().arg("archive").arg(&data));
    assert_eq!(listing(), theirs);
}
