//! A tracepoint name that cannot be looked up says why: tracefs not mounted (mount it) or
//! mounted but not readable by this user (remount it with mode=755, or run as root), as two
//! different errors with two different fixes.
//!
//! Root reads everything, so the unreadable case runs as user nobody: the test binary runs
//! its own ignored test `unreadable_tracefs_as_this_user` in a child with uid 65534.

// A ParseError is large by design (it prints itself); see the crate docs.
#![allow(clippy::result_large_err)]

mod common;

use common::Fixture;
use perfkit_events::{Env, TracefsError, fixture};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

const NOBODY: u32 = 65534;
/// The child's instructions: the fixture root whose tracefs has mode 000.
const CHILD_FIXTURE: &str = "PERFKIT_TEST_UNREADABLE_FIXTURE";
/// The child's instructions: what Env::system() must say about this machine's tracefs as
/// nobody (`ok`, `unreadable`, `unmounted`).
const CHILD_SYSTEM: &str = "PERFKIT_TEST_SYSTEM_TRACEFS";
/// Printed by the child when it checked everything (so a child that ran no test fails).
const CHILD_DONE: &str = "unreadable tracefs: checked as uid";

fn uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_tracepoint_without_tracefs_says_it_is_not_mounted() {
    let fx = Fixture::standard();
    let missing = fx.dir.path().join("no-tracefs-here");
    for env in [
        Env::new(fx.sysfs(), Some(missing.clone())),
        Env::new(fx.sysfs(), None),
    ] {
        match env.tracefs_status() {
            Err(TracefsError::NotMounted { .. }) => {}
            other => panic!("{other:?}"),
        }
        let e = env.parse("sched:sched_switch").unwrap_err();
        assert_eq!(e.pos, 0);
        assert!(e.message.contains("tracefs is not mounted"), "{e}");
        assert!(!e.message.contains("not readable"), "{e}");
        let hint = e.hint.as_deref().unwrap_or_default();
        assert!(hint.contains("mount -t tracefs nodev"), "{e}");
    }
    // The fixture's own tracefs resolves the same name.
    let list = fx.env().parse("sched:sched_switch").unwrap();
    assert_eq!(
        list.groups[0].members[0].attr.type_, 2,
        "PERF_TYPE_TRACEPOINT"
    );
}

/// A fixture machine whose tracefs directory has mode 000, in a directory other users can
/// enter; the test binary copied there too (the build directory may not be theirs to run).
fn unreadable_fixture() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    fixture::standard(dir.path()).unwrap();
    let tracefs = dir.path().join("tracing");
    std::fs::set_permissions(&tracefs, std::fs::Permissions::from_mode(0o000)).unwrap();
    let exe = dir.path().join("test-binary");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, exe)
}

/// What `Env::system()` must say about this machine's tracefs to user nobody, judged from
/// the mount table and the mount point's mode (root sees both).
fn system_tracefs_for_nobody() -> &'static str {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let Some(point) = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        (f.get(2) == Some(&"tracefs")).then(|| f[1].to_string())
    }) else {
        return "unmounted";
    };
    // Other users need x on every directory down to events/, and r on events/ itself.
    let mut p = Path::new(&point).to_path_buf();
    let mut ok = true;
    while let Some(parent) = p.parent() {
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        ok &= mode & 0o001 != 0;
        p = parent.to_path_buf();
    }
    let events = std::fs::metadata(Path::new(&point).join("events")).unwrap();
    ok &= events.permissions().mode() & 0o005 == 0o005;
    if ok { "ok" } else { "unreadable" }
}

#[test]
fn a_tracepoint_in_an_unreadable_tracefs_says_it_is_not_readable() {
    if uid() != 0 {
        // Not root: mode 000 keeps us out, as it would nobody.
        let (dir, _) = unreadable_fixture();
        check_unreadable(dir.path());
        std::fs::set_permissions(
            dir.path().join("tracing"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        return;
    }
    let (dir, exe) = unreadable_fixture();
    let system = system_tracefs_for_nobody();
    let out = std::process::Command::new(&exe)
        .args([
            "--ignored",
            "--exact",
            "unreadable_tracefs_as_this_user",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_FIXTURE, dir.path())
        .env(CHILD_SYSTEM, system)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::set_permissions(
        dir.path().join("tracing"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    assert!(out.status.success(), "the child as nobody failed:\n{text}");
    assert!(
        text.contains(&format!("{CHILD_DONE} {NOBODY}")),
        "the child ran no check:\n{text}"
    );
}

/// The fixture's unreadable tracefs, as this (non-root) user.
fn check_unreadable(root: &Path) {
    let env = fixture::env(root);
    match env.tracefs_status() {
        Err(TracefsError::NotReadable { path, source }) => {
            assert_eq!(path, root.join("tracing"));
            assert_eq!(source.kind(), std::io::ErrorKind::PermissionDenied);
        }
        other => panic!("{other:?}"),
    }
    let e = env.parse("sched:sched_switch").unwrap_err();
    assert!(e.message.contains("not readable by this user"), "{e}");
    assert!(!e.message.contains("not mounted"), "{e}");
    let hint = e.hint.as_deref().unwrap_or_default();
    assert!(hint.contains("mode=755") && hint.contains("root"), "{e}");
    // `perfkit list` says the same, with the same advice.
    let cat = perfkit_events::list::catalogue(
        &env,
        Some("tracepoint"),
        &perfkit_events::list::ListOptions {
            probe: false,
            libpfm: false,
        },
    );
    assert!(cat.entries.is_empty());
    assert!(
        cat.notes[0].contains("not readable by this user") && cat.notes[0].contains("mode=755"),
        "{:?}",
        cat.notes
    );
    // The io error is the source, not repeated in the message.
    let err = env.tracefs_status().unwrap_err();
    let source = std::error::Error::source(&err).unwrap().to_string();
    assert!(!err.to_string().contains(&source), "{err}");
}

/// Run by `a_tracepoint_in_an_unreadable_tracefs_says_it_is_not_readable` as nobody.
#[test]
#[ignore = "run as user nobody by a_tracepoint_in_an_unreadable_tracefs_says_it_is_not_readable"]
fn unreadable_tracefs_as_this_user() {
    let root = PathBuf::from(std::env::var_os(CHILD_FIXTURE).expect("run by the parent test"));
    let me = uid();
    assert_ne!(me, 0, "must not run as root");
    check_unreadable(&root);
    // This machine's tracefs, as nobody.
    let env = Env::system();
    let want = std::env::var(CHILD_SYSTEM).unwrap();
    let got = env.parse("sched:sched_switch");
    match (want.as_str(), &got) {
        ("ok", Ok(_)) => {}
        ("unreadable", Err(e)) => {
            assert!(e.message.contains("not readable by this user"), "{e}");
            assert!(
                e.hint.as_deref().unwrap_or_default().contains("mode=755"),
                "{e}"
            );
        }
        ("unmounted", Err(e)) => assert!(e.message.contains("not mounted"), "{e}"),
        _ => panic!("expected {want}, got {got:?}"),
    }
    println!("{CHILD_DONE} {me}");
}
