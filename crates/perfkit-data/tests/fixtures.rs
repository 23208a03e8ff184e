//! The checked-in files of `tests/fixtures` (see its README) read with the samples perf
//! script printed for them, in the same order; attrs, names and features as perf wrote.

mod common;

use common::{parse_script, samples_of};
use perfkit_data::PerfData;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn check(name: &str) -> PerfData {
    let data = PerfData::open(&fixture(&format!("{name}.data"))).unwrap();
    let expected =
        parse_script(&std::fs::read_to_string(fixture(&format!("{name}.script"))).unwrap());
    assert!(!expected.is_empty());
    assert_eq!(samples_of(&data), expected, "{name}");
    // The same from memory.
    let bytes = std::fs::read(fixture(&format!("{name}.data"))).unwrap();
    let mem = PerfData::from_bytes(bytes).unwrap();
    assert_eq!(samples_of(&mem), expected, "{name} from memory");
    data
}

#[test]
fn plain_file_reads_like_perf_script() {
    let d = check("plain");
    assert!(!d.pipe);
    assert_eq!(d.attrs.len(), 1);
    assert_eq!(d.attrs[0].name, "cpu-clock:pppH");
    let f = &d.features;
    assert_eq!(f.arch.as_deref(), Some("x86_64"));
    assert!(f.version.as_deref().is_some_and(|v| v.starts_with("6.1")));
    assert!(f.cmdline.iter().any(|a| a == "record"), "{:?}", f.cmdline);
    assert!(f.nrcpus.is_some_and(|(on, avail)| on >= 1 && avail >= on));
    assert!(f.total_mem_kb.is_some_and(|kb| kb > 1 << 20));
    let (first, last) = f.sample_time.unwrap();
    assert!(first <= last);
    assert!(
        f.build_ids
            .iter()
            .any(|b| b.filename.contains("kernel.kallsyms") || b.filename.starts_with('/'))
    );
    assert!(f.cpu_topology.is_some());
    assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
}

#[test]
fn callchain_file_reads_like_perf_script() {
    let d = check("callchain");
    assert_ne!(
        d.attrs[0].attr.sample_type & perfkit_sys::PERF_SAMPLE_CALLCHAIN,
        0
    );
}

#[test]
fn zstd_file_reads_like_perf_script() {
    let d = check("zstd");
    let c = d.features.compressed.unwrap();
    assert_eq!(c.kind, 1, "zstd");
    assert!(c.mmap_len > 0);
}

#[test]
fn two_event_file_reads_like_perf_script() {
    let d = check("two-events");
    let names: Vec<&str> = d.attrs.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["cpu-clock", "task-clock"]);
    assert!(d.attrs.iter().all(|a| !a.ids.is_empty()));
}

#[test]
fn tracepoint_file_reads_like_perf_script() {
    let d = check("tracepoint");
    assert_eq!(d.attrs[0].name, "sched:sched_process_exec");
    let tracing = d.features.tracing_data.as_ref().unwrap();
    // perf's tracing data starts with "\x17\x08\x44tracing" and holds the event formats.
    assert!(tracing.windows(7).any(|w| w == b"tracing"));
    assert!(
        tracing
            .windows(b"sched_process_exec".len())
            .any(|w| w == b"sched_process_exec")
    );
}

#[test]
fn pipe_file_reads_like_perf_script() {
    let d = check("pipe");
    assert!(d.pipe);
    assert_eq!(d.attrs[0].name, "cpu-clock:pppH");
    assert!(d.features.hostname.is_some());
    // As a stream: read once.
    let f = std::fs::File::open(fixture("pipe.data")).unwrap();
    let s = PerfData::from_reader(Box::new(f)).unwrap();
    let expected = parse_script(&std::fs::read_to_string(fixture("pipe.script")).unwrap());
    assert_eq!(samples_of(&s), expected);
    let again = s.for_each(|_| {}, |_| {}).unwrap_err();
    assert!(
        matches!(again, perfkit_data::ReadError::StreamConsumed),
        "{again}"
    );
}

#[test]
fn truncated_files_give_errors_with_offsets_and_keep_what_was_read() {
    let bytes = std::fs::read(fixture("plain.data")).unwrap();
    let full = samples_of(&PerfData::from_bytes(bytes.clone()).unwrap()).len();
    // Cut inside the data section: header, attrs readable, the records up to the cut.
    let data_off = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    let data_len = u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize;
    let cut = data_off + data_len / 2 + 3;
    let d = PerfData::from_bytes(bytes[..cut].to_vec()).unwrap();
    assert!(
        d.warnings.iter().any(|w| w.contains("cut short")),
        "{:?}",
        d.warnings
    );
    let mut n = 0;
    let err = d
        .for_each(
            |i| {
                if let perfkit_data::Item::Event { record, .. } = i
                    && let perfkit_records::Record::Sample(_) = record.record
                {
                    n += 1
                }
            },
            |_| {},
        )
        .unwrap_err();
    assert!(
        err.offset()
            .is_some_and(|o| o as usize >= data_off && (o as usize) < cut),
        "{err}"
    );
    assert!(n > 0 && n < full, "{n} of {full}");
    // Cut inside the header.
    let err = PerfData::from_bytes(bytes[..50].to_vec()).err().unwrap();
    assert!(err.to_string().contains("runs past the end"), "{err}");
    let err = PerfData::from_bytes(b"PERFILE".to_vec()).err().unwrap();
    assert!(
        matches!(
            err,
            perfkit_data::ReadError::Truncated {
                offset: 0,
                available: 7,
                ..
            }
        ),
        "{err}"
    );
    let err = PerfData::from_bytes(vec![b'x'; 200]).err().unwrap();
    assert!(err.to_string().contains("not a perf.data file"), "{err}");
}
