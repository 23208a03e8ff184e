//! Read errors are typed, say where they happened, and keep their cause as `source()`
//! without repeating its text.

use perfkit_data::{PerfData, ReadError};
use std::error::Error;
use std::path::Path;

#[test]
fn a_missing_file_keeps_the_io_error_as_its_source_without_repeating_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = PerfData::open(&dir.path().join("missing.data"))
        .err()
        .expect("opening a missing file fails");
    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the source is the io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(io.raw_os_error(), Some(libc::ENOENT));
    let text = err.to_string();
    assert!(!text.contains(&io.to_string()), "{text}");
    assert!(!text.contains("os error"), "{text}");
    assert!(matches!(err, ReadError::Io { offset: 0, .. }), "{err:?}");
}

#[test]
fn a_file_cut_inside_its_header_is_a_truncation_at_offset_zero() {
    let err = PerfData::from_bytes(b"PERFILE2\x68\0\0\0\0\0\0\0".to_vec())
        .err()
        .unwrap();
    match err {
        ReadError::Truncated {
            offset,
            needed,
            available,
            ..
        } => assert_eq!((offset, needed, available), (0, 104, 16)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_file_cut_inside_a_record_is_a_truncation_at_that_record() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plain.data");
    let bytes = std::fs::read(path).unwrap();
    let data_off = u64::from_le_bytes(bytes[40..48].try_into().unwrap());
    // Keep the header, the attrs and the first record's header, not its body.
    let d = PerfData::from_bytes(bytes[..data_off as usize + 12].to_vec()).unwrap();
    let err = d.walk(|_, _, _, _| Ok(())).unwrap_err();
    match &err {
        ReadError::Truncated {
            offset, available, ..
        } => assert_eq!((*offset, *available), (data_off, 12)),
        other => panic!("{other:?}"),
    }
    assert_eq!(err.offset(), Some(data_off));
    assert!(err.source().is_none());
    assert!(err.to_string().contains("cut short"), "{err}");
}

#[test]
fn other_input_is_not_perf_data() {
    let err = PerfData::from_bytes(vec![b'x'; 200]).err().unwrap();
    assert!(matches!(&err, ReadError::NotPerfData { magic } if magic == b"xxxxxxxx"));
}
