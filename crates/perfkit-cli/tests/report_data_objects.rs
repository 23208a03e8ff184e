//! Samples whose address falls inside an ELF data object (`STT_OBJECT`), named as perf 6.1
//! names them (issue 16): perf's symbol table keeps objects beside functions, so code run
//! from an object is the object's (not the zero-sized function before it, stretched over
//! it), in an executable section or in `.data` made executable, and report prints the
//! object's row with the distance of the row's address from the object's start
//! (`_hist_entry__sym_snprintf`; for user space perf subtracts the object's runtime start
//! from the file-relative address, so the offset is a large number, copied as perf
//! prints it). The column is sized by the name alone, the offset printed past it.
//!
//! The program (`fixtures/data_objects.c`) spins in `spin_obj`, an object in `.text`, then
//! in `data_code`, an array of `.data`; perf records it here with a fixed period, and
//! every output is compared with perf's whole.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::Path;
use std::process::Command;

/// Standard output without report's last comment line (perf's random tip).
fn body(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !(l.starts_with("# (Tip:") || l.starts_with("# (Report by")))
        .filter(|l| !l.starts_with("# (Cannot load tips"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// perf's output of `ARGS -i FILE`, asserted equal to perfkit's.
fn same_as_perf(args: &[&str], file: &Path) -> String {
    let theirs = Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap();
    assert!(theirs.status.success(), "perf {args:?}");
    let ours = perfkit().args(args).arg("-i").arg(file).output().unwrap();
    assert!(ours.status.success(), "perfkit {args:?}");
    let (t, o) = (body(&theirs.stdout), body(&ours.stdout));
    if let Some(at) = t.lines().zip(o.lines()).position(|(a, b)| a != b) {
        panic!(
            "{args:?} differs from perf at line {at}:\n--- perf\n{}\n--- perfkit\n{}",
            t.lines().nth(at).unwrap_or(""),
            o.lines().nth(at).unwrap_or("")
        );
    }
    assert_eq!(
        t.lines().count(),
        o.lines().count(),
        "{args:?}\n{t}\n---\n{o}"
    );
    t
}

#[test]
fn code_run_from_data_objects_is_named_by_the_object() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/data_objects.c");
    let bin = dir.path().join("data_objects");
    let built = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        return skip("no C compiler");
    }
    // The fixture's own symbols: one object in an executable section, one in `.data`,
    // as the test means them.
    let syms = String::from_utf8_lossy(
        &Command::new("readelf")
            .args(["-sW"])
            .arg(&bin)
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    for name in ["spin_obj", "data_code"] {
        assert!(
            syms.lines()
                .any(|l| l.contains(" OBJECT ") && l.ends_with(&format!(" {name}"))),
            "{name} is not an object:\n{syms}"
        );
    }
    let data = dir.path().join("objects.data");
    // A fixed period: both loops get samples whatever the load.
    let rec = Command::new("perf")
        .args([
            "record",
            "-q",
            "-g",
            "-e",
            "cpu-clock",
            "-c",
            "100000",
            "-o",
        ])
        .arg(&data)
        .arg("--")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "perf record: {}",
        String::from_utf8_lossy(&rec.stderr)
    );
    for args in [
        &["report", "--stdio", "--no-children"][..],
        &["report", "--stdio", "--children"],
        &["report", "--stdio", "--no-children", "-g", "none"],
        &["report", "--stdio", "--no-children", "-v", "--sort", "sym"],
        &["report", "--stdio", "--no-children", "--sort", "dso,sym"],
    ] {
        let perf = same_as_perf(args, &data);
        // Each loop's row is its object's, with the offset perf prints.
        for name in ["spin_obj", "data_code"] {
            let row = format!("[.] {name}+0x");
            assert!(perf.lines().any(|l| l.contains(&row)), "{args:?}:\n{perf}");
        }
    }
    // script: the object and the loop's offset in it (its `jnz` at +3 is where the
    // timer finds it nearly always; both tools must agree on every sample).
    let perf = same_as_perf(&["script", "-F", "comm,ip,sym,symoff,dso"], &data);
    for name in ["spin_obj", "data_code"] {
        let at = format!(" {name}+0x");
        assert!(perf.lines().any(|l| l.contains(&at)), "{perf}");
    }
    let perf = same_as_perf(&["script", "-F", "comm,ip,sym,dso", "-G"], &data);
    assert!(perf.lines().any(|l| l.contains(" data_code ")), "{perf}");
}
