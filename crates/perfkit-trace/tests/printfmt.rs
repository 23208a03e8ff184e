//! Tracepoint print fmts of this machine's kernel, evaluated over RAW records built from
//! their format files: every format parses or is reported, none panics, and the common
//! ones print exactly what perf script prints.

use perfkit_trace::printfmt::{PrintFmt, format_record};
use perfkit_trace::tracefs::{self, TraceFormat};

fn tracefs_or_skip() -> Option<std::path::PathBuf> {
    let t = tracefs::find_tracefs();
    if t.is_none() {
        eprintln!("skipped: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)");
    }
    t
}

/// Every event format of this kernel, with its `subsys:event` name.
fn kernel_formats(t: &std::path::Path) -> Vec<(String, TraceFormat)> {
    let mut out = Vec::new();
    for sys in tracefs::subsystems(t) {
        for ev in tracefs::events_of(t, &sys) {
            if let Ok(f) = TraceFormat::read(t, &sys, &ev) {
                out.push((format!("{sys}:{ev}"), f));
            }
        }
    }
    out
}

/// A RAW record of random bytes, as long as `fmt`'s fields.
fn random_record(fmt: &TraceFormat, rng: &mut fastrand::Rng) -> Vec<u8> {
    let len = fmt
        .fields
        .iter()
        .map(|f| f.offset + f.size)
        .max()
        .unwrap_or(8);
    (0..len).map(|_| rng.u8(..)).collect()
}

/// A RAW record for `fmt` with the given fields set (integers native-endian, strings
/// NUL-padded into their arrays).
fn record(fmt: &TraceFormat, ints: &[(&str, i64)], strs: &[(&str, &str)]) -> Vec<u8> {
    let end = fmt
        .common_fields
        .iter()
        .chain(&fmt.fields)
        .map(|f| f.offset + f.size)
        .max()
        .unwrap();
    let mut raw = vec![0u8; end];
    for (name, v) in ints {
        let f = fmt.field(name).unwrap_or_else(|| panic!("no field {name}"));
        let b = v.to_ne_bytes();
        raw[f.offset..f.offset + f.size].copy_from_slice(&b[..f.size]);
    }
    for (name, s) in strs {
        let f = fmt.field(name).unwrap();
        raw[f.offset..f.offset + s.len()].copy_from_slice(s.as_bytes());
    }
    raw
}

#[test]
fn every_print_fmt_of_this_kernel_parses_or_falls_back_without_panicking() {
    let Some(t) = tracefs_or_skip() else { return };
    let (mut total, mut parsed, mut evaluated) = (0, 0, 0);
    let mut failures = Vec::new();
    let mut not_evaluated = Vec::new();
    for (name, fmt) in kernel_formats(&t) {
        total += 1;
        let p = match PrintFmt::parse(&fmt.print_fmt) {
            Ok(p) => {
                parsed += 1;
                Some(p)
            }
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                None
            }
        };
        let raw = record(&fmt, &[], &[]);
        match p.as_ref().map(|p| p.format(&fmt, &raw, 8)) {
            Some(Ok(_)) => evaluated += 1,
            Some(Err(e)) => not_evaluated.push(format!("{name}: {e}")),
            None => {}
        }
        // Whatever happens, a line comes out.
        let _ = format_record(&fmt, p.as_ref(), &raw);
        let _ = format_record(&fmt, p.as_ref(), &raw[..raw.len() / 2]);
    }
    eprintln!(
        "{total} formats: {parsed} print fmts parse, {evaluated} evaluate on a zeroed record"
    );
    for f in &failures {
        eprintln!("  does not parse: {f}");
    }
    for f in &not_evaluated {
        eprintln!("  does not evaluate: {f}");
    }
    assert!(total > 100, "{total} formats");
    // The kernel's print fmts are C; the ones with helpers we lack fall back to fields.
    assert!(parsed * 100 >= total * 99, "{parsed} of {total} parse");
    assert!(
        evaluated * 100 >= total * 95,
        "{evaluated} of {total} evaluate"
    );
}

#[test]
fn sched_switch_prints_like_perf() {
    let Some(t) = tracefs_or_skip() else { return };
    let fmt = TraceFormat::read(&t, "sched", "sched_switch").unwrap();
    let p = PrintFmt::parse(&fmt.print_fmt).unwrap();
    let raw = record(
        &fmt,
        &[
            ("prev_pid", 12),
            ("prev_prio", 120),
            ("prev_state", 1),
            ("next_pid", 0),
            ("next_prio", 120),
        ],
        &[("prev_comm", "sleep"), ("next_comm", "swapper/0")],
    );
    assert_eq!(
        p.format(&fmt, &raw, 8).unwrap(),
        "prev_comm=sleep prev_pid=12 prev_prio=120 prev_state=S ==> next_comm=swapper/0 \
         next_pid=0 next_prio=120"
    );
    // Running (0) prints R; a preempted task's extra bit prints `+`.
    let raw0 = record(&fmt, &[("prev_state", 0)], &[]);
    assert!(p.format(&fmt, &raw0, 8).unwrap().contains("prev_state=R "));
    let max = fmt.print_fmt.contains("+ 1) << 1)");
    if max {
        // TASK_REPORT_MAX: the bit above the report states.
        let s = p.format(&fmt, &record(&fmt, &[("prev_state", 0x100)], &[]), 8);
        assert!(s.unwrap().contains("prev_state=R+"));
    }
}

#[test]
fn sys_enter_prints_its_array_in_hex() {
    let Some(t) = tracefs_or_skip() else { return };
    let fmt = TraceFormat::read(&t, "raw_syscalls", "sys_enter").unwrap();
    let p = PrintFmt::parse(&fmt.print_fmt).unwrap();
    let f = fmt.field("args").unwrap();
    let mut raw = record(&fmt, &[("id", 257)], &[]);
    for (i, v) in [0xffffff9cu64, 0x7ffe_1234, 0x80000, 0, 0, 0]
        .iter()
        .enumerate()
    {
        raw[f.offset + 8 * i..f.offset + 8 * i + 8].copy_from_slice(&v.to_ne_bytes());
    }
    assert_eq!(
        p.format(&fmt, &raw, 8).unwrap(),
        "NR 257 (ffffff9c, 7ffe1234, 80000, 0, 0, 0)"
    );
}

#[test]
fn printf_conversions() {
    let fmt = TraceFormat::parse(
        "name: t\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\
         \tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\
         \tfield:unsigned long b;\toffset:16;\tsize:8;\tsigned:0;\n\
         \tfield:__data_loc char[] s;\toffset:24;\tsize:4;\tsigned:0;\n\n\
         print fmt: \"x\", REC->a\n",
    )
    .unwrap();
    let mut raw = vec![0u8; 40];
    raw[8..12].copy_from_slice(&(-5i32).to_ne_bytes());
    raw[16..24].copy_from_slice(&0xdead_beefu64.to_ne_bytes());
    raw[24..28].copy_from_slice(&((4u32 << 16) | 32).to_ne_bytes());
    raw[32..36].copy_from_slice(b"abc\0");
    let run = |pf: &str| {
        PrintFmt::parse(pf)
            .unwrap()
            .format(&fmt, &raw, 8)
            .unwrap_or_else(|e| format!("ERR {e}"))
    };
    assert_eq!(run(r#""%d %u", REC->a, REC->a"#), "-5 4294967291");
    assert_eq!(
        run(r#""%5d|%-5d|%05d", REC->a, REC->a, 42"#),
        "   -5|-5   |00042"
    );
    assert_eq!(
        run(r#""%lx %#lx %lu %p", REC->b, REC->b, REC->b, REC->b"#),
        "deadbeef 0xdeadbeef 3735928559 0xdeadbeef"
    );
    assert_eq!(run(r#""%s=%c%%", __get_str(s), 65"#), "abc=A%");
    assert_eq!(run(r#""%d", (REC->a < 0) ? 1 : 2"#), "1");
    assert_eq!(run(r#""%d", (int)(REC->b & 0xff)"#), "239");
    assert_eq!(
        run(r#""%s", __print_symbolic(REC->a, { -5, "MINUS_FIVE" }, { 1, "ONE" })"#),
        "MINUS_FIVE"
    );
    assert_eq!(
        run(
            r#""%s", __print_flags(REC->b & 0xf, "|", { 1, "A" }, { 2, "B" }, { 4, "C" }, { 8, "D" })"#
        ),
        "A|B|C|D"
    );
    assert_eq!(
        run(r#""%s", __print_flags(0x13, "|", { 1, "A" }, { 2, "B" })"#),
        "A|B|0x10"
    );
    assert_eq!(run(r#""%.2s", "xyz""#), "xy");
    // Unknown helpers and bad formats are errors (the caller falls back to fields).
    assert!(run(r#""%d", __no_such_helper(1)"#).starts_with("ERR"));
    assert!(PrintFmt::parse(r#""%d", (1 +"#).is_err());
    assert_eq!(format_record(&fmt, None, &raw), "a=-5 b=3735928559 s=abc");
}

/// The C the kernel's print fmts use beyond plain printf, and the `%p` extensions that
/// print a field's bytes (network addresses, UUIDs, bitmaps), as the kernel prints them.
#[test]
fn kernel_c_and_pointer_extensions() {
    // A print fmt that spans lines (its string holds a newline), as ext4's do.
    let fmt = TraceFormat::parse(
        "name: t\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\
         \tfield:__u8 mac[6];\toffset:8;\tsize:6;\tsigned:0;\n\
         \tfield:__u8 v4[4];\toffset:16;\tsize:4;\tsigned:0;\n\
         \tfield:__u8 v6[16];\toffset:24;\tsize:16;\tsigned:0;\n\
         \tfield:__u8 sa[28];\toffset:40;\tsize:28;\tsigned:0;\n\
         \tfield:u8 uuid[16];\toffset:72;\tsize:16;\tsigned:0;\n\
         \tfield:unsigned long mask[1];\toffset:88;\tsize:8;\tsigned:0;\n\
         \tfield:__data_loc u32[] vals;\toffset:96;\tsize:4;\tsigned:0;\n\
         \tfield:u64 lsn;\toffset:104;\tsize:8;\tsigned:0;\n\n\
         print fmt: \"a %d\nb\", REC->lsn\n",
    )
    .unwrap();
    assert_eq!(fmt.print_fmt, "\"a %d\nb\", REC->lsn");
    let mut raw = vec![0u8; 128];
    raw[8..14].copy_from_slice(&[0x00, 0x1b, 0x21, 0x3a, 0x4f, 0x5e]);
    raw[16..20].copy_from_slice(&[192, 168, 1, 20]);
    let v6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
    raw[24..40].copy_from_slice(&v6.octets());
    // sockaddr_in6: family 10 (host order), port 443 (network order), flowinfo, address.
    raw[40..42].copy_from_slice(&10u16.to_ne_bytes());
    raw[42..44].copy_from_slice(&443u16.to_be_bytes());
    raw[48..64].copy_from_slice(&v6.octets());
    raw[72..88].copy_from_slice(&[
        0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
        0xef,
    ]);
    raw[88..96].copy_from_slice(&0b1011_1101u64.to_ne_bytes());
    raw[96..100].copy_from_slice(&((8u32 << 16) | 112).to_ne_bytes());
    raw[104..112].copy_from_slice(&((7u64 << 32) | 42).to_ne_bytes());
    raw[112..116].copy_from_slice(&1u32.to_ne_bytes());
    raw[116..120].copy_from_slice(&0xffu32.to_ne_bytes());
    let run = |pf: &str| {
        PrintFmt::parse(pf)
            .unwrap_or_else(|e| panic!("{pf}: {e}"))
            .format(&fmt, &raw, 8)
            .unwrap_or_else(|e| format!("ERR {e}"))
    };
    assert_eq!(
        run(r#""%pM %pm", REC->mac, REC->mac"#),
        "00:1b:21:3a:4f:5e 001b213a4f5e"
    );
    assert_eq!(
        run(r#""%pI4 %pi4", REC->v4, REC->v4"#),
        "192.168.1.20 192.168.001.020"
    );
    assert_eq!(
        run(r#""%pI6c|%pI6", REC->v6, REC->v6"#),
        "2001:db8::1|2001:0db8:0000:0000:0000:0000:0000:0001"
    );
    assert_eq!(
        run(r#""%pISpc %pISc", REC->sa, REC->sa"#),
        "[2001:db8::1]:443 2001:db8::1"
    );
    assert_eq!(
        run(r#""%pU", REC->uuid"#),
        "12345678-9abc-def0-0123-456789abcdef"
    );
    assert_eq!(
        run(r#""%*pbl|%*pb", 10, REC->mask, 10, REC->mask"#),
        "0,2-5,7|0bd"
    );
    // Casts to typedefs we do not know keep the value; `(REC)->x`; sizeof; the
    // kernel's arrays; a table that ends in `{ -1, NULL }`.
    assert_eq!(
        run(r#""%d/%d", ((uint)((REC->lsn)>>32)), ((xfs_lsn_t)(REC)->lsn & 0xff)"#),
        "7/42"
    );
    assert_eq!(run(r#""%d %d", sizeof(u64), sizeof(unsigned long)"#), "8 8");
    assert_eq!(
        run(
            r#""%s", __print_array(__get_dynamic_array(vals), __get_dynamic_array_len(vals) / sizeof(u32), sizeof(u32))"#
        ),
        "1 255"
    );
    assert_eq!(
        run(r#""%s", __print_symbolic(2, { 1, "ONE" }, { 2, "TWO" }, { -1, ((void *)0) })"#),
        "TWO"
    );
    assert_eq!(run(r#""%s", __get_cpumask(vals)"#), "000000ff,00000001");
    assert_eq!(
        run(r#""%lu", __builtin_expect(!!(REC->lsn > 0), 1) ? 3 : 4"#),
        "3"
    );
}

/// Print fmts and records come from perf.data files, which may be corrupt: mutated print
/// fmts of this kernel, over random records (whole and cut short), never panic.
#[test]
fn mutated_print_fmts_and_random_records_never_panic() {
    let Some(t) = tracefs_or_skip() else { return };
    let mut rng = fastrand::Rng::with_seed(0x5eed_2026);
    let formats = kernel_formats(&t);
    assert!(!formats.is_empty());
    let alphabet = b"%*.-#0123456789lhzpIiSMmUbc4s6dux(){},?:!~&|<>=+-/\"'\\ REC->[]";
    let mut cases = 0;
    for _ in 0..20_000 {
        let fmt = &formats[rng.usize(..formats.len())].1;
        let mut pf = fmt.print_fmt.clone().into_bytes();
        for _ in 0..rng.usize(1..4) {
            let at = rng.usize(..=pf.len());
            match rng.u8(..3) {
                0 if at < pf.len() => {
                    pf.remove(at);
                }
                1 if at < pf.len() => pf[at] = alphabet[rng.usize(..alphabet.len())],
                _ => pf.insert(at, alphabet[rng.usize(..alphabet.len())]),
            }
        }
        let pf = String::from_utf8_lossy(&pf);
        let parsed = PrintFmt::parse(&pf).ok();
        let raw = random_record(fmt, &mut rng);
        let cut = rng.usize(..=raw.len());
        for r in [&raw[..], &raw[..cut]] {
            let _ = format_record(fmt, parsed.as_ref(), r);
            cases += 1;
        }
    }
    eprintln!("{cases} mutated print fmts and records formatted without a panic");
}

#[test]
fn deeply_nested_print_fmts_are_refused_not_a_stack_overflow() {
    for open in ["(", "-", "!", "{", "x ? "] {
        let pf = format!("\"%d\", {}1", open.repeat(100_000));
        assert!(PrintFmt::parse(&pf).is_err(), "{open}");
    }
}

/// `bind` (fields by position, constants folded) changes nothing in the output: every
/// print fmt of this kernel over random records prints the same bound and unbound.
#[test]
fn bound_print_fmts_print_the_same() {
    let Some(t) = tracefs_or_skip() else { return };
    let mut rng = fastrand::Rng::with_seed(7);
    let mut compared = 0;
    for (name, fmt) in kernel_formats(&t) {
        let Ok(plain) = PrintFmt::parse(&fmt.print_fmt) else {
            continue;
        };
        let mut bound = plain.clone();
        bound.bind(&fmt);
        for _ in 0..3 {
            let raw = random_record(&fmt, &mut rng);
            assert_eq!(
                plain.format(&fmt, &raw, 8),
                bound.format(&fmt, &raw, 8),
                "{name}"
            );
            compared += 1;
        }
    }
    eprintln!("{compared} records print the same bound and unbound");
}
