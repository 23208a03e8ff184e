//! `format` files parse into fields, and RAW payloads decode by them: strings, signed and
//! unsigned integers, arrays, `__data_loc` and `__rel_loc`; short payloads are errors.

use perfkit_trace::tracefs::{DataLoc, TraceFormat, Value};

/// `sched:sched_switch`'s format file (6.x kernels).
const SCHED_SWITCH_FORMAT: &str = "name: sched_switch
ID: 316
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid
";

/// A format with `__data_loc`, `__rel_loc` and array fields.
const DATA_LOC_FORMAT: &str = "name: sched_process_exec
ID: 318
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:s16 deltas[3];\toffset:16;\tsize:6;\tsigned:1;
\tfield:__rel_loc u8[] blob;\toffset:22;\tsize:4;\tsigned:0;

print fmt: \"filename=%s pid=%d\", __get_str(filename), REC->pid
";

#[test]
fn tracefs_formats_parse_into_fields() {
    let f = TraceFormat::parse(SCHED_SWITCH_FORMAT).unwrap();
    assert_eq!(f.name, "sched_switch");
    assert_eq!(f.id, 316);
    assert_eq!(f.common_fields.len(), 4);
    let names: Vec<&str> = f.fields.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "prev_comm",
            "prev_pid",
            "prev_prio",
            "prev_state",
            "next_comm",
            "next_pid",
            "next_prio"
        ]
    );
    let comm = f.field("prev_comm").unwrap();
    assert_eq!((comm.offset, comm.size, comm.array_len), (8, 16, Some(16)));
    assert!(comm.is_string);
    let state = f.field("prev_state").unwrap();
    assert_eq!((state.offset, state.size, state.signed), (32, 8, true));
    assert!(f.print_fmt.starts_with("\"prev_comm=%s"));

    let d = TraceFormat::parse(DATA_LOC_FORMAT).unwrap();
    let file = d.field("filename").unwrap();
    assert_eq!(file.data_loc, Some(DataLoc::Absolute));
    assert!(file.is_string);
    let blob = d.field("blob").unwrap();
    assert_eq!(blob.data_loc, Some(DataLoc::Relative));
    let deltas = d.field("deltas").unwrap();
    assert_eq!(
        (deltas.array_len, deltas.size, deltas.signed),
        (Some(3), 6, true)
    );
}

#[test]
fn raw_sample_payloads_decode_by_the_format() {
    let f = TraceFormat::parse(SCHED_SWITCH_FORMAT).unwrap();
    let mut raw = vec![0u8; 64];
    raw[0..2].copy_from_slice(&316u16.to_ne_bytes());
    raw[4..8].copy_from_slice(&4242i32.to_ne_bytes());
    raw[8..12].copy_from_slice(b"bash");
    raw[24..28].copy_from_slice(&4242i32.to_ne_bytes());
    raw[28..32].copy_from_slice(&120i32.to_ne_bytes());
    raw[32..40].copy_from_slice(&(-1i64).to_ne_bytes());
    raw[40..49].copy_from_slice(b"swapper/0");
    raw[60..64].copy_from_slice(&100i32.to_ne_bytes());
    let v = f.decode(&raw, false).unwrap();
    assert_eq!(v[0], ("prev_comm", Value::Str("bash".into())));
    assert_eq!(v[1], ("prev_pid", Value::Signed(4242)));
    assert_eq!(v[3], ("prev_state", Value::Signed(-1)));
    assert_eq!(v[4], ("next_comm", Value::Str("swapper/0".into())));
    assert_eq!(v[5], ("next_pid", Value::Signed(0)));
    let with_common = f.decode(&raw, true).unwrap();
    assert_eq!(with_common[0], ("common_type", Value::Unsigned(316)));
    assert_eq!(with_common[3], ("common_pid", Value::Signed(4242)));
    // Short payloads are an error naming the field, never a panic.
    let err = f.decode(&raw[..30], false).unwrap_err();
    assert_eq!(err.field, "prev_prio");

    // __data_loc: u32 = len << 16 | offset, counted from the record start.
    let d = TraceFormat::parse(DATA_LOC_FORMAT).unwrap();
    let mut raw = vec![0u8; 26];
    let name = b"/bin/true\0";
    let loc = ((name.len() as u32) << 16) | raw.len() as u32;
    raw[8..12].copy_from_slice(&loc.to_ne_bytes());
    raw[12..16].copy_from_slice(&77i32.to_ne_bytes());
    for (i, x) in [-1i16, 2, -3].iter().enumerate() {
        raw[16 + 2 * i..18 + 2 * i].copy_from_slice(&x.to_ne_bytes());
    }
    raw.extend_from_slice(name);
    let v = d.decode(&raw, false).unwrap();
    assert_eq!(v[0], ("filename", Value::Str("/bin/true".into())));
    assert_eq!(v[1], ("pid", Value::Signed(77)));
    assert_eq!(v[2], ("deltas", Value::Array(vec![-1, 2, -3])));
    // A data_loc pointing past the end is an error.
    raw[8..12].copy_from_slice(&((40u32 << 16) | 30).to_ne_bytes());
    assert!(d.decode(&raw, false).is_err());
}

#[test]
fn a_missing_format_file_keeps_the_io_error_as_its_source() {
    use std::error::Error;
    let dir = std::env::temp_dir().join("perfkit-trace-no-such-tracefs");
    let err = TraceFormat::read(&dir, "sched", "sched_switch").unwrap_err();
    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the io::Error is the source");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert!(!err.to_string().contains(&io.to_string()), "{err}");
    assert!(err.to_string().ends_with("sched_switch/format"), "{err}");
    let err = perfkit_trace::tracefs::event_id(&dir, "sched", "sched_switch").unwrap_err();
    assert!(
        matches!(err, perfkit_trace::TraceError::Io { .. }),
        "{err:?}"
    );
}

#[test]
fn payloads_decode_in_the_formats_byte_order() {
    use perfkit_trace::Endian;
    let other = Endian::NATIVE.swapped();
    let f = TraceFormat::parse(SCHED_SWITCH_FORMAT)
        .unwrap()
        .with_endian(other);
    let mut raw = vec![0u8; 64];
    raw[0..2].copy_from_slice(&other.u16_bytes(316));
    raw[24..28].copy_from_slice(&other.u32_bytes(4242));
    raw[32..40].copy_from_slice(&other.u64_bytes(-2i64 as u64));
    let v = f.decode(&raw, true).unwrap();
    assert_eq!(v[0], ("common_type", Value::Unsigned(316)));
    assert_eq!(v[5], ("prev_pid", Value::Signed(4242)));
    assert_eq!(v[7], ("prev_state", Value::Signed(-2)));
}
