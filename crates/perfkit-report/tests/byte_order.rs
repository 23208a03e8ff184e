//! A tracepoint recorded on a big-endian machine decodes as on a little-endian one: the
//! same file built in both byte orders (perf writes only its machine's order, so the files
//! are built byte by byte here) loads into the same fields and the same print-fmt text.

use perfkit_data::PerfData;
use perfkit_data::tracing_data::TracingData;
use perfkit_report::load::{LoadOptions, load};
use perfkit_sys as sys;
use perfkit_trace::tracefs::Value;

const FORMAT: &str = "name: demo
ID: 316
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;
\tfield:u64 delay;\toffset:32;\tsize:8;\tsigned:0;
\tfield:s16 deltas[3];\toffset:40;\tsize:6;\tsigned:1;
\tfield:__data_loc u32[] vals;\toffset:48;\tsize:4;\tsigned:0;
\tfield:__data_loc unsigned long[] mask;\toffset:52;\tsize:4;\tsigned:0;

print fmt: \"comm=%s pid=%d name=%s delay=%llu d1=%d vals={%s} mask=%s\", REC->comm, \
REC->pid, __get_str(name), REC->delay, REC->deltas[1], \
__print_array(__get_dynamic_array(vals), __get_dynamic_array_len(vals) / 4, 4), \
__get_bitmask(mask)
";

const EXPECTED: &str = "comm=demo-task pid=4242 name=demo-task delay=123456789 d1=-2 \
                        vals={1 2 70000} mask=00000100,00000023";

/// Numbers in one byte order.
struct W {
    big: bool,
    b: Vec<u8>,
}

impl W {
    fn new(big: bool) -> W {
        W { big, b: Vec::new() }
    }
    fn u16(&mut self, v: u16) {
        let x = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.b.extend_from_slice(&x);
    }
    fn u32(&mut self, v: u32) {
        let x = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.b.extend_from_slice(&x);
    }
    fn u64(&mut self, v: u64) {
        let x = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.b.extend_from_slice(&x);
    }
}

/// The RAW payload of one `demo` record (88 bytes, padded to 92 as perf pads it).
fn raw(big: bool) -> Vec<u8> {
    let mut r = W::new(big);
    r.u16(316);
    r.b.extend_from_slice(&[0, 0]);
    r.u32(4242);
    let mut comm = b"demo-task".to_vec();
    comm.resize(16, 0);
    r.b.extend_from_slice(&comm);
    r.u32(4242);
    r.u32((10 << 16) | 56); // name: 10 bytes at 56
    r.u64(123_456_789);
    for d in [1i16, -2, 3] {
        r.u16(d as u16);
    }
    r.b.extend_from_slice(&[0, 0]);
    r.u32((12 << 16) | 68); // vals: 3 u32 at 68
    r.u32((8 << 16) | 80); // mask: one unsigned long at 80
    r.b.extend_from_slice(b"demo-task\0\0\0");
    for v in [1u32, 2, 70_000] {
        r.u32(v);
    }
    r.u64(1 | 1 << 1 | 1 << 5 | 1 << 40);
    assert_eq!(r.b.len(), 88);
    r.b.resize(92, 0);
    r.b
}

const SAMPLE_TYPE: u64 = sys::PERF_SAMPLE_IP
    | sys::PERF_SAMPLE_TID
    | sys::PERF_SAMPLE_TIME
    | sys::PERF_SAMPLE_PERIOD
    | sys::PERF_SAMPLE_RAW;

/// A perf.data file in one byte order: one tracepoint attr, one sample of it, and the
/// tracing data with its format.
fn build(big: bool) -> Vec<u8> {
    let attr_size = 128u64;
    let attrs_off = 104u64;
    let ids_off = attrs_off + attr_size + 16;
    let data_off = ids_off + 8;
    let mut d = W::new(big);
    let payload = raw(big);
    d.u32(sys::PERF_RECORD_SAMPLE);
    d.u16(sys::PERF_RECORD_MISC_KERNEL);
    d.u16((8 + 32 + 4 + payload.len()) as u16);
    d.u64(0xffff_ffff_8100_0000); // ip
    d.u32(4242);
    d.u32(4242);
    d.u64(1_000_000); // time
    d.u64(1); // period
    d.u32(payload.len() as u32);
    d.b.extend_from_slice(&payload);
    d.u32(sys::PERF_RECORD_FINISHED_ROUND);
    d.u16(0);
    d.u16(8);
    let tracing = TracingData {
        version: "0.6".into(),
        big_endian: big,
        long_size: 8,
        page_size: 4096,
        event_formats: vec![("demo".into(), FORMAT.as_bytes().to_vec())],
        ..TracingData::default()
    }
    .to_bytes();

    let mut w = W::new(big);
    w.b.extend_from_slice(if big { b"2ELIFREP" } else { b"PERFILE2" });
    w.u64(104);
    w.u64(attr_size + 16);
    w.u64(attrs_off);
    w.u64(attr_size + 16);
    w.u64(data_off);
    w.u64(d.b.len() as u64);
    w.u64(0);
    w.u64(0);
    // Feature bitmap (unsigned longs): TRACING_DATA.
    w.u64(1 << perfkit_data::feature::TRACING_DATA);
    for _ in 0..3 {
        w.u64(0);
    }
    // The attr: type, size, config, sample_period, sample_type, read_format, flags.
    w.u32(sys::PERF_TYPE_TRACEPOINT);
    w.u32(attr_size as u32);
    w.u64(316);
    w.u64(1);
    w.u64(SAMPLE_TYPE);
    w.u64(0);
    // disabled, sample_id_all; C bit-fields start at the most significant end on
    // big-endian machines.
    let flags: u64 = 1 | 1 << 18;
    w.u64(if big { flags.reverse_bits() } else { flags });
    w.b.resize((attrs_off + attr_size) as usize, 0);
    w.u64(ids_off);
    w.u64(8);
    w.u64(42);
    w.b.extend_from_slice(&d.b);
    let sections_end = w.b.len() as u64 + 16;
    w.u64(sections_end);
    w.u64(tracing.len() as u64);
    w.b.extend_from_slice(&tracing);
    w.b
}

/// The sample's decoded fields and its text as `perf script` prints it.
fn load_one(big: bool) -> (Vec<(String, Value)>, String) {
    let file = PerfData::from_bytes(build(big)).unwrap();
    assert_eq!(file.endian.u16([1, 0]) == 1, !big);
    let (profile, diag) = load(&file, &LoadOptions::default()).unwrap();
    assert!(diag.error.is_none(), "{:?}", diag.error);
    assert!(diag.warnings.is_empty(), "{:?}", diag.warnings);
    let [sample] = &profile.samples[..] else {
        panic!("{} samples", profile.samples.len())
    };
    let trace = profile.events[0]
        .trace
        .as_deref()
        .expect("the format is found");
    let raw = profile.raw.get(sample.raw.unwrap() as usize).unwrap();
    let fields = trace
        .format
        .decode(raw, true)
        .unwrap()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    (fields, trace.text(raw, &profile.trace_kernel))
}

#[test]
fn a_big_endian_tracepoint_decodes_like_a_little_endian_one() {
    let (little_fields, little_text) = load_one(false);
    let (big_fields, big_text) = load_one(true);
    assert_eq!(little_text, EXPECTED);
    assert_eq!(big_text, EXPECTED);
    // Dynamic arrays come out as the bytes recorded (each in its order); the rest equal.
    let numbers = |f: &[(String, Value)]| {
        f.iter()
            .filter(|(_, v)| !matches!(v, Value::Bytes(_)))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(numbers(&big_fields), numbers(&little_fields));
    assert_eq!(numbers(&big_fields).len(), 9);
    let get = |k: &str| {
        big_fields
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    assert_eq!(get("common_type"), Value::Unsigned(316));
    assert_eq!(get("pid"), Value::Signed(4242));
    assert_eq!(get("delay"), Value::Unsigned(123_456_789));
    assert_eq!(get("deltas"), Value::Array(vec![1, -2, 3]));
    assert_eq!(get("name"), Value::Str("demo-task".into()));
    assert_eq!(
        get("vals"),
        Value::Bytes(
            [1u32, 2, 70_000]
                .iter()
                .flat_map(|v| v.to_be_bytes())
                .collect()
        )
    );
}
