//! Tracepoint print fmts of this machine's kernel, evaluated over RAW records built from
//! their format files: every format parses or is reported, none panics, and the common
//! ones print exactly what perf script prints.

use perfkit_events::printfmt::{PrintFmt, format_record};
use perfkit_events::tracefs::{self, TraceFormat};

fn tracefs_or_skip() -> Option<std::path::PathBuf> {
    let t = tracefs::find_tracefs();
    if t.is_none() {
        eprintln!("skipped: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)");
    }
    t
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
    for sys in tracefs::subsystems(&t) {
        for ev in tracefs::events_of(&t, &sys) {
            let Ok(fmt) = TraceFormat::read(&t, &sys, &ev) else {
                continue;
            };
            total += 1;
            let p = match PrintFmt::parse(&fmt.print_fmt) {
                Ok(p) => {
                    parsed += 1;
                    Some(p)
                }
                Err(e) => {
                    failures.push(format!("{sys}:{ev}: {e}"));
                    None
                }
            };
            let raw = record(&fmt, &[], &[]);
            if let Some(p) = &p
                && p.format(&fmt, &raw, 8).is_ok()
            {
                evaluated += 1;
            }
            // Whatever happens, a line comes out.
            let _ = format_record(&fmt, p.as_ref(), &raw);
            let _ = format_record(&fmt, p.as_ref(), &raw[..raw.len() / 2]);
        }
    }
    eprintln!(
        "{total} formats: {parsed} print fmts parse, {evaluated} evaluate on a zeroed record"
    );
    for f in failures.iter().take(20) {
        eprintln!("  {f}");
    }
    assert!(total > 100, "{total} formats");
    // The kernel's print fmts are C; the ones with helpers we lack fall back to fields.
    assert!(parsed * 100 >= total * 95, "{parsed} of {total} parse");
    assert!(
        evaluated * 100 >= total * 80,
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
