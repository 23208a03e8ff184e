//! `buildid-list`, `buildid-cache` and `version --build-options` against perf 6.1: the same
//! lines on the same file, and one build-id cache both tools read and write.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, skip, stdout_ok};

#[test]
fn buildid_list_prints_perfs_lines_for_a_perf_recording() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    let rec = Command::new("perf")
        .args(["record", "-q", "-e", "task-clock", "-o"])
        .arg(&data)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let theirs = stdout_ok(Command::new("perf").args(["buildid-list", "-i"]).arg(&data));
    let ours = stdout_ok(perfkit().args(["buildid-list", "-i"]).arg(&data));
    assert!(theirs.lines().count() > 0, "perf listed no build ids");
    assert_eq!(ours, theirs);
    let theirs = stdout_ok(Command::new("perf").args(["buildid-list", "-k"]));
    let ours = stdout_ok(perfkit().args(["buildid-list", "-k"]));
    assert_eq!(ours, theirs);
}

fn cache_list(tool: &mut Command, dir: &std::path::Path) -> String {
    stdout_ok(
        tool.arg("--buildid-dir")
            .arg(dir)
            .args(["buildid-cache", "-l"]),
    )
}

#[test]
fn perf_and_perfkit_share_one_buildid_cache() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let exe = std::path::Path::new("/usr/bin/true");
    let cache = tempfile::tempdir().unwrap();
    let out = stdout_ok(
        perfkit()
            .arg("--buildid-dir")
            .arg(cache.path())
            .args(["buildid-cache", "-v", "-a"])
            .arg(exe),
    );
    let hex = out.split_whitespace().nth(1).expect("an id").to_owned();
    assert_eq!(out, format!("Adding {hex} /usr/bin/true: Ok\n"));
    let line = format!("{hex} /usr/bin/true\n");
    assert_eq!(cache_list(&mut Command::new("perf"), cache.path()), line);
    assert_eq!(cache_list(&mut perfkit(), cache.path()), line);
    let elf = cache
        .path()
        .join(format!(".build-id/{}/{}/elf", &hex[..2], &hex[2..]));
    assert_eq!(std::fs::read(elf).unwrap(), std::fs::read(exe).unwrap());
    stdout_ok(
        perfkit()
            .arg("--buildid-dir")
            .arg(cache.path())
            .args(["buildid-cache", "-r"])
            .arg(exe),
    );
    assert_eq!(cache_list(&mut Command::new("perf"), cache.path()), "");

    // perf's entry, perfkit's listing.
    let cache = tempfile::tempdir().unwrap();
    stdout_ok(
        Command::new("perf")
            .arg("--buildid-dir")
            .arg(cache.path())
            .args(["buildid-cache", "-a"])
            .arg(exe),
    );
    assert_eq!(cache_list(&mut perfkit(), cache.path()), line);

    // An entry whose file is gone is not listed, by either.
    let gone = cache.path().join("gone");
    std::fs::copy("/usr/bin/false", &gone).unwrap();
    stdout_ok(
        perfkit()
            .arg("--buildid-dir")
            .arg(cache.path())
            .args(["buildid-cache", "-a"])
            .arg(&gone),
    );
    let twice = cache_list(&mut perfkit(), cache.path());
    assert!(twice.contains("/gone\n"), "{twice}");
    std::fs::remove_file(&gone).unwrap();
    assert_eq!(cache_list(&mut Command::new("perf"), cache.path()), line);
    assert_eq!(cache_list(&mut perfkit(), cache.path()), line);
}

#[test]
fn adding_a_file_without_build_id_fails_with_the_reason() {
    let cache = tempfile::tempdir().unwrap();
    let f = cache.path().join("notes.txt");
    std::fs::write(&f, "text").unwrap();
    let out = perfkit()
        .arg("--buildid-dir")
        .arg(cache.path())
        .args(["buildid-cache", "-a"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("couldn't read a build-id in"), "{err}");
}

#[test]
fn version_build_options_use_perfs_layout() {
    let out = stdout_ok(perfkit().args(["version", "--build-options"]));
    let mut lines = out.lines();
    assert!(lines.next().unwrap().starts_with("perfkit version "));
    let libbfd = lines.clone().find(|l| l.contains("libbfd")).unwrap();
    assert_eq!(
        libbfd,
        "                libbfd: [ OFF ]  # HAVE_LIBBFD_SUPPORT"
    );
    assert!(lines.any(|l| l == "                  zstd: [ on  ]  # HAVE_ZSTD_SUPPORT"));
    if have_perf() {
        // The same feature names, in perf's order.
        let perf = stdout_ok(Command::new("perf").args(["version", "--build-options"]));
        let names = |s: &str| -> Vec<String> {
            s.lines()
                .skip(1)
                .filter_map(|l| l.split(':').next().map(|n| n.trim().to_owned()))
                .collect()
        };
        assert_eq!(names(&out), names(&perf));
    }
}

/// `-m`: the running kernel's map line, as perf prints it (build id, `_text`, `_etext`).
#[test]
fn kernel_maps_are_perfs() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let theirs = stdout_ok(Command::new("perf").args(["buildid-list", "-m"]));
    let ours = stdout_ok(perfkit().args(["buildid-list", "-m"]));
    assert!(ours.ends_with(" [kernel.kallsyms]\n"), "{ours}");
    if std::path::Path::new("/proc/modules").exists() {
        // perf adds a line per module; perfkit lists the kernel's alone.
        assert_eq!(ours.lines().next(), theirs.lines().next());
    } else {
        assert_eq!(ours, theirs);
    }
}

/// `-H`: only the objects samples fell in, as perf lists them for perf's recordings (one
/// that ran user code only, one that also ran in the kernel, with call chains).
#[test]
fn with_hits_lists_the_objects_sampled() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let work = "cat /proc/self/maps > /dev/null; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done";
    for (name, extra) in [("user.data", None), ("kernel.data", Some("-g"))] {
        let file = dir.path().join(name);
        let ev = if extra.is_some() {
            "cpu-clock"
        } else {
            "cpu-clock:u"
        };
        let st = Command::new("perf")
            .args(["record", "-q", "-e", ev])
            .args(extra)
            .arg("-o")
            .arg(&file)
            .args(["sh", "-c", work])
            .output()
            .unwrap();
        assert!(st.status.success(), "{st:?}");
        let theirs = stdout_ok(
            Command::new("perf")
                .args(["buildid-list", "-H", "-i"])
                .arg(&file),
        );
        let ours = stdout_ok(perfkit().args(["buildid-list", "-H", "-i"]).arg(&file));
        assert!(
            ours.contains("/dash\n") || ours.contains("/sh\n") || ours.contains("libc"),
            "{ours}"
        );
        assert_eq!(ours, theirs, "{name}");
    }
}

/// perfkit's build-id table is read by perf as its own host machine's: one entry per object
/// with pid -1. (With a process's pid, perf took each entry for a guest machine's, and
/// `buildid-list -H` printed the sampled objects with empty build ids.)
#[test]
fn perf_finds_perfkits_build_ids_on_the_host() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perfkit.data");
    let work = "cat /proc/self/maps > /dev/null; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done";
    stdout_ok(
        perfkit()
            .args(["record", "-q", "-e", "cpu-clock:u", "-o"])
            .arg(&file)
            .args(["sh", "-c", work]),
    );
    let all = stdout_ok(Command::new("perf").args(["buildid-list", "-i"]).arg(&file));
    let names: Vec<&str> = all
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(_, n)| n)
        .collect();
    let distinct: std::collections::BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(
        names.len(),
        distinct.len(),
        "an object listed twice:\n{all}"
    );
    assert!(
        distinct
            .iter()
            .any(|n| n.ends_with("/dash") || n.ends_with("/sh")),
        "{all}"
    );
    let theirs = stdout_ok(
        Command::new("perf")
            .args(["buildid-list", "-H", "-i"])
            .arg(&file),
    );
    assert!(!theirs.is_empty(), "perf found no sampled object");
    for line in theirs.lines() {
        let (id, name) = line.split_once(' ').unwrap_or(("", line));
        assert!(
            id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "perf found no build id for {name}:\n{theirs}"
        );
    }
    let ours = stdout_ok(perfkit().args(["buildid-list", "-H", "-i"]).arg(&file));
    assert_eq!(ours, theirs);
}
