//! The streaming `Loader`, fed record by record the way a live tool feeds ring records,
//! builds the same profile as `load` reading the same records from a file.

use perfkit_data::{FileEvent, PerfData, PerfDataWriter, WriteOptions};
use perfkit_records::{Endian, MultiParser, RawData, RawRecord};
use perfkit_report::load::{LoadOptions, Loader, load};
use perfkit_report::trace_info::TraceInfo;
use perfkit_sys as sys;

fn event() -> FileEvent {
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_type: sys::PERF_SAMPLE_IDENTIFIER
            | sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME
            | sys::PERF_SAMPLE_PERIOD,
        ..Default::default()
    };
    attr.set(sys::attr_flags::SAMPLE_ID_ALL, true);
    FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![5],
    }
}

fn ne(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// (type, misc, body) of a COMM of pid 7 ("worker"), an exit, and samples of it.
fn records() -> Vec<(u32, u16, Vec<u8>)> {
    let trailer = |t: u64| {
        ne(&[
            &7u32.to_ne_bytes(),
            &7u32.to_ne_bytes(),
            &t.to_ne_bytes(),
            &5u64.to_ne_bytes(),
        ])
    };
    let mut v = vec![(
        sys::PERF_RECORD_COMM,
        0,
        ne(&[
            &7u32.to_ne_bytes(),
            &7u32.to_ne_bytes(),
            b"worker\0\0",
            &trailer(10),
        ]),
    )];
    for (i, t) in [100u64, 200, 300].into_iter().enumerate() {
        v.push((
            sys::PERF_RECORD_SAMPLE,
            sys::PERF_RECORD_MISC_USER,
            ne(&[
                &5u64.to_ne_bytes(),
                &(0x1000 + i as u64).to_ne_bytes(),
                &7u32.to_ne_bytes(),
                &7u32.to_ne_bytes(),
                &t.to_ne_bytes(),
                &(1000 * (i as u64 + 1)).to_ne_bytes(),
            ]),
        ));
    }
    v
}

#[test]
fn records_fed_one_by_one_build_what_load_builds_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("perf.data");
    let mut w = PerfDataWriter::create(&path, vec![event()], WriteOptions::default()).unwrap();
    for (type_, misc, body) in records() {
        w.write_raw(&RawRecord {
            type_,
            misc,
            data: RawData::Single(&body),
        })
        .unwrap();
    }
    w.finish_round().unwrap();
    w.finish(&[]).unwrap();
    let file = PerfData::open(&path).unwrap();
    let (from_file, diag) = load(&file, &LoadOptions::default()).unwrap();
    assert!(diag.error.is_none());

    // Live: the attrs and ids the tool opened, records as its rings hand them out.
    let ev = event();
    let events = [perfkit_data::EventAttr {
        attr: ev.attr,
        ids: ev.ids.clone(),
        name: ev.name.clone(),
    }];
    let parser = MultiParser::new(Endian::NATIVE, [(&ev.ids[..], &ev.attr)]).unwrap();
    let mut loader = Loader::new(&events, TraceInfo::default(), &LoadOptions::default());
    for (type_, misc, body) in records() {
        let (i, rec) = parser.parse(type_, misc, &body).unwrap();
        loader.record(i, &rec);
    }
    let (live, diag) = loader.finish();
    assert!(diag.error.is_none() && diag.warnings.is_empty(), "{diag:?}");

    assert_eq!(live.samples, from_file.samples);
    let periods: Vec<u64> = live.samples.iter().map(|s| s.period).collect();
    assert_eq!(periods, [1000, 2000, 3000]);
    let names: Vec<&str> = live
        .samples
        .iter()
        .map(|s| live.threads[s.thread as usize].name())
        .collect();
    assert_eq!(names, ["worker"; 3]);
    assert_eq!(live.threads.len(), from_file.threads.len());
}
