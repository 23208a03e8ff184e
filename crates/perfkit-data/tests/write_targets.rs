//! Where a file is written: perf's rule is that a non-empty regular file is kept as
//! FILE.old, and anything else — a device such as /dev/null, an empty file — is opened as it
//! is. `perfkit record -o /dev/null` once renamed /dev/null away and left a regular file in
//! its place.

use perfkit_data::{FileEvent, PerfData, PerfDataWriter, WriteOptions};
use perfkit_sys as sys;
use std::os::unix::fs::FileTypeExt;

fn event() -> FileEvent {
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_type: sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID,
        ..Default::default()
    };
    attr.set(sys::attr_flags::SAMPLE_ID_ALL, true);
    FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![1],
    }
}

fn write(path: &std::path::Path) {
    let w = PerfDataWriter::create(path, vec![event()], WriteOptions::default()).unwrap();
    w.finish(&[]).unwrap();
}

#[test]
fn a_device_is_written_through_never_replaced() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(std::env::var("CI").is_err(), "CI runs as root");
        eprintln!("skipped: making a device node needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A null device of our own (the machine's /dev/null is not put at risk).
    let null = dir.path().join("null");
    let c = std::ffi::CString::new(null.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mknod has no other preconditions.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    assert_eq!(rc, 0, "mknod: {}", std::io::Error::last_os_error());
    write(&null);
    let meta = std::fs::metadata(&null).unwrap();
    assert!(meta.file_type().is_char_device(), "still the device");
    assert!(!dir.path().join("null.old").exists());
}

#[test]
fn a_previous_file_is_kept_as_old_and_an_empty_one_reused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("perf.data");
    write(&p);
    let first = std::fs::read(&p).unwrap();
    write(&p);
    assert_eq!(
        std::fs::read(dir.path().join("perf.data.old")).unwrap(),
        first
    );
    assert!(PerfData::open(&p).is_ok());
    // An empty file is written in place, as perf does (no empty .old).
    let e = dir.path().join("empty.data");
    std::fs::write(&e, b"").unwrap();
    write(&e);
    assert!(!dir.path().join("empty.data.old").exists());
    assert!(PerfData::open(&e).is_ok());
}
