//! `PerfDataWriter::write_raw` takes records as the ring hands them out (type, misc, a
//! body in one or two parts) and writes what `write_record` writes with a header built by
//! hand; the file names of MMAP2 records reach the BUILD_ID section, split or not.

use perfkit_data::{FileEvent, PerfData, PerfDataWriter, WriteOptions};
use perfkit_records::{RawData, RawRecord};
use perfkit_sys as sys;

fn event() -> FileEvent {
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_type: sys::PERF_SAMPLE_IDENTIFIER
            | sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME,
        ..Default::default()
    };
    attr.set(sys::attr_flags::SAMPLE_ID_ALL, true);
    FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![9],
    }
}

/// An MMAP2 body of `path` for pid 42 with the sample_id trailer (tid, time, identifier).
fn mmap2(path: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&42u32.to_ne_bytes());
    b.extend_from_slice(&42u32.to_ne_bytes());
    for v in [0x40_0000u64, 0x1000, 0] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    b.extend_from_slice(&[0; 24]);
    b.extend_from_slice(&5u32.to_ne_bytes());
    b.extend_from_slice(&2u32.to_ne_bytes());
    b.extend_from_slice(path.as_bytes());
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b.extend_from_slice(&42u32.to_ne_bytes());
    b.extend_from_slice(&42u32.to_ne_bytes());
    b.extend_from_slice(&1000u64.to_ne_bytes());
    b.extend_from_slice(&9u64.to_ne_bytes());
    b
}

fn sample(ip: u64) -> Vec<u8> {
    [
        9u64.to_ne_bytes(),
        ip.to_ne_bytes(),
        [42, 0, 0, 0, 42, 0, 0, 0],
        2000u64.to_ne_bytes(),
    ]
    .concat()
}

/// The executable with a build id to map: the first of a few usual ones.
fn elf_with_build_id() -> Option<&'static str> {
    ["/usr/bin/true", "/bin/true", "/usr/bin/env", "/bin/sh"]
        .into_iter()
        .find(|p| perfkit_data::synth::build_id_of(std::path::Path::new(p)).is_some())
}

#[test]
fn raw_records_are_written_with_their_header_and_mappings_reach_build_ids() {
    let Some(elf) = elf_with_build_id() else {
        eprintln!("skipped: no executable with a GNU build id note found");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let by_raw = dir.path().join("raw.data");
    let by_hand = dir.path().join("hand.data");
    let records = [
        (
            sys::PERF_RECORD_MMAP2,
            sys::PERF_RECORD_MISC_USER,
            mmap2(elf),
        ),
        (
            sys::PERF_RECORD_SAMPLE,
            sys::PERF_RECORD_MISC_USER,
            sample(0x40_0010),
        ),
        (
            sys::PERF_RECORD_SAMPLE,
            sys::PERF_RECORD_MISC_USER,
            sample(0x40_0020),
        ),
    ];
    let mut w = PerfDataWriter::create(&by_raw, vec![event()], WriteOptions::default()).unwrap();
    for (i, (type_, misc, body)) in records.iter().enumerate() {
        // Every other record split where a ring would wrap, the MMAP2 inside its name.
        let data = if i % 2 == 0 {
            let at = if *type_ == sys::PERF_RECORD_MMAP2 {
                70
            } else {
                12
            };
            let (a, b) = body.split_at(at);
            RawData::Split(a, b)
        } else {
            RawData::Single(body)
        };
        w.write_raw(&RawRecord {
            type_: *type_,
            misc: *misc,
            data,
        })
        .unwrap();
    }
    w.finish_round().unwrap();
    w.finish(&[]).unwrap();

    let mut w = PerfDataWriter::create(&by_hand, vec![event()], WriteOptions::default()).unwrap();
    for (type_, misc, body) in &records {
        let mut hdr = Vec::new();
        hdr.extend_from_slice(&type_.to_ne_bytes());
        hdr.extend_from_slice(&misc.to_ne_bytes());
        hdr.extend_from_slice(&((body.len() + 8) as u16).to_ne_bytes());
        w.write_record(&[&hdr, body]).unwrap();
    }
    w.finish_round().unwrap();
    w.finish(&[]).unwrap();

    let (raw, hand) = (
        PerfData::open(&by_raw).unwrap(),
        PerfData::open(&by_hand).unwrap(),
    );
    let records_of = |d: &PerfData| {
        let mut v = Vec::new();
        d.walk(|_, t, m, body| {
            v.push((t, m, body.to_vec()));
            Ok(())
        })
        .unwrap();
        v
    };
    let written = records_of(&raw);
    assert_eq!(written, records_of(&hand));
    assert_eq!(written[..3], records[..]);
    let names: Vec<&str> = raw
        .features
        .build_ids
        .iter()
        .map(|b| b.filename.as_str())
        .collect();
    assert_eq!(names, [elf], "the MMAP2 of a split record reaches BUILD_ID");
    // Written as perf writes its host machine's objects: pid -1, whatever process mapped it.
    assert_eq!(raw.features.build_ids[0].pid, -1);
}

#[test]
fn a_body_too_large_for_a_record_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = PerfDataWriter::create(
        &dir.path().join("big.data"),
        vec![event()],
        WriteOptions::default(),
    )
    .unwrap();
    let body = vec![0u8; 70_000];
    let err = w
        .write_raw(&RawRecord {
            type_: sys::PERF_RECORD_SAMPLE,
            misc: 0,
            data: RawData::Single(&body),
        })
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

/// `settle` writes the buffered records out once the buffer is half full (a recorder
/// calls it after giving its rings their space back), and leaves a smaller buffer alone:
/// the file's length on disk says exactly which.
#[test]
fn settle_writes_the_buffer_out_once_it_is_half_full() {
    let path = std::env::temp_dir().join(format!("perfkit-settle-{}.data", std::process::id()));
    let mut w = PerfDataWriter::create(&path, vec![event()], WriteOptions::default()).unwrap();
    let rec = perfkit_data::record(sys::PERF_RECORD_SAMPLE, 0, &sample(0x40_1000), &[]);
    let on_disk = || std::fs::metadata(&path).unwrap().len();
    // Blocks of 32 KiB (a small ring's pass), under the size written without the buffer.
    let block: Vec<u8> = rec
        .iter()
        .copied()
        .cycle()
        .take((32 << 10) / rec.len() * rec.len())
        .collect();
    w.write_checked_records(&block, &[]).unwrap();
    w.settle().unwrap();
    assert_eq!(
        on_disk(),
        0,
        "the header and one small block stay in the buffer"
    );
    // Up to half the 1 MiB buffer: written out by settle, and only then.
    let mut given = block.len() as u64;
    while given < 512 << 10 {
        w.write_checked_records(&block, &[]).unwrap();
        given += block.len() as u64;
    }
    assert_eq!(on_disk(), 0, "nothing written before settle");
    w.settle().unwrap();
    let settled = on_disk();
    w.finish(&[]).unwrap();
    let data = std::fs::read(&path).unwrap();
    let data_offset = u64::from_ne_bytes(data[40..48].try_into().unwrap());
    assert_eq!(
        settled,
        data_offset + given,
        "settle wrote the whole buffer"
    );
    let pd = PerfData::open(&path).unwrap();
    let mut samples = 0u64;
    pd.for_each(
        |item| {
            if let perfkit_data::Item::Event { .. } = item {
                samples += 1;
            }
        },
        |_| {},
    )
    .unwrap();
    assert_eq!(samples, given / rec.len() as u64);
    let _ = std::fs::remove_file(&path);
}
