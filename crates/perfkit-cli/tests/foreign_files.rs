//! Files from other machines never get this machine's symbols: a build id in the file that
//! differs from the local binary's (or kernel's) leaves the addresses unnamed, as perf
//! leaves them, and unnamed user addresses print relative to their file, as perf prints
//! them. "Another machine" is made here by changing one byte of a build id in a perf.data
//! that perf recorded on this one.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

fn workload(dir: &Path) -> PathBuf {
    let bin = dir.join("wl");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workload.c");
    let ok = Command::new("cc")
        .args([
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "-pthread",
            "-Wl,--build-id",
            "-o",
        ])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cc");
    bin
}

/// perf's recording of the workload, and its build-id list (id, file).
fn recording(dir: &Path) -> (PathBuf, Vec<(String, String)>) {
    let bin = workload(dir);
    let data = dir.join("perf.data");
    let st = Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&bin)
        .args(["spin", "300"])
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new("perf")
        .args(["buildid-list", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let ids = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(id, f)| (id.to_string(), f.to_string()))
        .collect();
    (data, ids)
}

/// A copy of `data` with the build id of `file` changed in its last byte that holds it.
fn with_other_build_id(data: &Path, ids: &[(String, String)], file: &str, out: &Path) {
    let (id, _) = ids
        .iter()
        .find(|(_, f)| f == file)
        .unwrap_or_else(|| panic!("{file} not in {ids:?}"));
    let raw: Vec<u8> = (0..id.len() / 2)
        .map(|i| u8::from_str_radix(&id[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let mut bytes = std::fs::read(data).unwrap();
    let at = bytes
        .windows(raw.len())
        .rposition(|w| w == raw.as_slice())
        .expect("the build id is in HEADER_BUILD_ID");
    bytes[at] ^= 0xff;
    std::fs::write(out, bytes).unwrap();
}

/// The rows of `report --stdio --no-children --sort dso,sym`.
fn rows(out: std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains('%') && !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn both(file: &Path) -> (Vec<String>, Vec<String>) {
    let args = [
        "report",
        "--stdio",
        "--no-children",
        "--sort",
        "dso,sym",
        "-i",
    ];
    let mut ours = rows(perfkit().args(args).arg(file).output().unwrap());
    let mut theirs = rows(Command::new("perf").args(args).arg(file).output().unwrap());
    // The rows as sets: the order of rows of equal weight is not what this is about.
    ours.sort();
    theirs.sort();
    (ours, theirs)
}

#[test]
fn a_binary_with_another_build_id_is_not_used_for_names() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let (data, ids) = recording(dir.path());
    let bin = dir.path().join("wl");
    let (ours, _) = both(&data);
    assert!(ours.iter().any(|r| r.ends_with("[.] spin")), "{ours:?}");
    let other = dir.path().join("other.data");
    with_other_build_id(&data, &ids, bin.to_str().unwrap(), &other);
    let (ours, theirs) = both(&other);
    assert!(!ours.iter().any(|r| r.ends_with("[.] spin")), "{ours:?}");
    // Unnamed, relative to the file: `[.] 0x0000000000001417`, as perf prints them.
    let wl: Vec<&String> = ours.iter().filter(|r| r.contains(" wl [.] 0x")).collect();
    assert!(!wl.is_empty(), "{ours:?}");
    assert!(wl.iter().all(|r| r.contains("[.] 0x0000000000")), "{wl:?}");
    // The workload's rows are perf's (kernel rows are not what this is about: which alias
    // names a kernel address is another matter).
    let of_wl = |rows: &[String]| -> Vec<String> {
        rows.iter()
            .filter(|r| r.contains(" wl "))
            .cloned()
            .collect()
    };
    assert_eq!(of_wl(&ours), of_wl(&theirs));
}

#[test]
fn a_kernel_with_another_build_id_is_not_used_for_names() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let (data, ids) = recording(dir.path());
    if !ids.iter().any(|(_, f)| f == "[kernel.kallsyms]") {
        return skip("perf recorded no kernel build id (no /sys/kernel/notes?)");
    }
    let other = dir.path().join("other.data");
    with_other_build_id(&data, &ids, "[kernel.kallsyms]", &other);
    let (ours, theirs) = both(&other);
    let kernel: Vec<&String> = ours.iter().filter(|r| r.contains("[k]")).collect();
    assert!(
        kernel.iter().all(|r| r.contains("[k] 0xffff")),
        "kernel rows unnamed: {kernel:?}"
    );
    let of_kernel = |rows: &[String]| -> Vec<String> {
        rows.iter().filter(|r| r.contains("[k]")).cloned().collect()
    };
    assert_eq!(of_kernel(&ours), of_kernel(&theirs));
}
