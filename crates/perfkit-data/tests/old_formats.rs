//! Files perf reads that are not what a finished modern `perf record` writes: the
//! version-1 format (magic `PERFFILE`, hotspot's `perf.data.true.v1`), and a file whose
//! header was never finished (perf record killed or out of disk: data size 0, the feature
//! bits set, no feature index after the data).

use perfkit_data::{FileEvent, PerfData, PerfDataWriter, WriteOptions};
use perfkit_sys as sys;

fn event() -> FileEvent {
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_type: sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME,
        ..Default::default()
    };
    attr.set(sys::attr_flags::SAMPLE_ID_ALL, true);
    FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![7],
    }
}

/// A finished file of `n` samples; its bytes.
fn written(n: u64) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.data");
    let mut w = PerfDataWriter::create(&path, vec![event()], WriteOptions::default()).unwrap();
    for i in 0..n {
        let mut rec = Vec::new();
        rec.extend_from_slice(&sys::PERF_RECORD_SAMPLE.to_ne_bytes());
        rec.extend_from_slice(&(sys::PERF_RECORD_MISC_USER).to_ne_bytes());
        rec.extend_from_slice(&32u16.to_ne_bytes());
        rec.extend_from_slice(&(0x40_1000 + i).to_ne_bytes());
        rec.extend_from_slice(&[42, 0, 0, 0, 42, 0, 0, 0]);
        rec.extend_from_slice(&(1000 + i).to_ne_bytes());
        w.write_record(&[&rec]).unwrap();
    }
    w.finish_round().unwrap();
    w.finish(&["perf".into(), "record".into()]).unwrap();
    std::fs::read(&path).unwrap()
}

fn samples(d: &PerfData) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    d.walk(|_, t, _, body| {
        if t == sys::PERF_RECORD_SAMPLE {
            v.push(body.to_vec());
        }
        Ok(())
    })
    .unwrap();
    v
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn a_version_1_file_reads_as_its_version_2_twin() {
    let v2 = written(3);
    let mut v1 = v2.clone();
    v1[..8].copy_from_slice(b"PERFFILE");
    let (a, b) = (
        PerfData::from_bytes(v2).unwrap(),
        PerfData::from_bytes(v1).expect("perf reads version 1: so does perfkit"),
    );
    assert_eq!(samples(&a), samples(&b));
    assert_eq!(samples(&b).len(), 3);
    assert_eq!(a.attrs[0].attr.config, b.attrs[0].attr.config);
    // A magic of version 1 with a header size of neither version is refused clearly.
    let mut bad = written(1);
    bad[..8].copy_from_slice(b"PERFFILE");
    bad[8..16].copy_from_slice(&1234u64.to_ne_bytes());
    let e = PerfData::from_bytes(bad)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("version-1"), "{e}");
}

#[test]
fn an_unfinished_header_reads_the_records_there_and_says_so() {
    let done = written(5);
    let data_off = u64_at(&done, 40) as usize;
    let data_len = u64_at(&done, 48) as usize;
    // What a killed perf record leaves: the header of its start (data size 0, feature
    // bits set), the records, nothing after them.
    let mut killed = done[..data_off + data_len].to_vec();
    killed[48..56].copy_from_slice(&0u64.to_ne_bytes());
    assert_ne!(u64_at(&killed, 72), 0, "the feature bits stay set");
    let d = PerfData::from_bytes(killed).expect("readable");
    assert_eq!(samples(&d), samples(&PerfData::from_bytes(done).unwrap()));
    assert!(
        d.warnings.iter().any(|w| w.contains("properly terminated")),
        "{:?}",
        d.warnings
    );
}
