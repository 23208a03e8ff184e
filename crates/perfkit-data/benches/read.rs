//! Reader throughput (MB/s of file) against the `linux-perf-data` crate on the same
//! perf-recorded file: every record iterated in time order and decoded by both.
//!
//! The file is `$PERFKIT_BENCH_FILE`, or recorded on first run with
//! `perf record -g -F 20000` (about 10-30 MB) into the target directory.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perfkit_data::{Item, PerfData};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bench_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PERFKIT_BENCH_FILE") {
        return Some(PathBuf::from(p));
    }
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let path = dir.join("perfkit-data-bench-g.data");
    if path.exists() {
        return Some(path);
    }
    eprintln!("recording {} with perf record -g ...", path.display());
    let ok = Command::new("perf")
        .args(["record", "-q", "-g", "-F", "20000", "-o"])
        .arg(&path)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done",
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(path)
}

fn ours(path: &Path) -> u64 {
    let d = PerfData::open(path).expect("opens");
    let mut n = 0u64;
    d.for_each(
        |i| {
            if let Item::Event { record, .. } = i {
                n += 1;
                black_box(&record);
            }
        },
        |_| {},
    )
    .expect("reads");
    n
}

fn theirs(path: &Path) -> u64 {
    use linux_perf_data::{PerfFileReader, PerfFileRecord};
    let f = std::io::BufReader::new(std::fs::File::open(path).expect("opens"));
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(f).expect("parses");
    let mut n = 0u64;
    while let Some(r) = record_iter.next_record(&mut perf_file).expect("reads") {
        if let PerfFileRecord::EventRecord { record, .. } = r {
            n += 1;
            let _ = black_box(record.parse());
        }
    }
    n
}

fn read(c: &mut Criterion) {
    let Some(path) = bench_file() else {
        eprintln!("skipped: no perf to record a file (set PERFKIT_BENCH_FILE)");
        return;
    };
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let (a, b) = (ours(&path), theirs(&path));
    eprintln!(
        "{}: {:.1} MB, {a} kernel records (perfkit-data), {b} (linux-perf-data)",
        path.display(),
        size as f64 / 1e6
    );
    let mut g = c.benchmark_group("read_all_records");
    g.throughput(Throughput::Bytes(size));
    g.sample_size(10);
    g.bench_function("perfkit-data", |bch| bch.iter(|| ours(&path)));
    g.bench_function("linux-perf-data", |bch| bch.iter(|| theirs(&path)));
    g.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
