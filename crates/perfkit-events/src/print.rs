//! Printing an attr the way `perf stat -vv` / `perf record -vv` do (perf's
//! `perf_event_attr__fprintf`): one non-zero field per line, bit sets spelled out.

use perfkit_sys::{self as sys, attr_flags as f, perf_event_attr};

const SAMPLE_BITS: &[(u64, &str)] = &sys::PERF_SAMPLE_NAMES;

const READ_BITS: &[(u64, &str)] = &[
    (sys::PERF_FORMAT_TOTAL_TIME_ENABLED, "TOTAL_TIME_ENABLED"),
    (sys::PERF_FORMAT_TOTAL_TIME_RUNNING, "TOTAL_TIME_RUNNING"),
    (sys::PERF_FORMAT_ID, "ID"),
    (sys::PERF_FORMAT_GROUP, "GROUP"),
    (sys::PERF_FORMAT_LOST, "LOST"),
];

const BRANCH_BITS: &[(u64, &str)] = &[
    (sys::PERF_SAMPLE_BRANCH_USER, "USER"),
    (sys::PERF_SAMPLE_BRANCH_KERNEL, "KERNEL"),
    (sys::PERF_SAMPLE_BRANCH_HV, "HV"),
    (sys::PERF_SAMPLE_BRANCH_ANY, "ANY"),
    (sys::PERF_SAMPLE_BRANCH_ANY_CALL, "ANY_CALL"),
    (sys::PERF_SAMPLE_BRANCH_ANY_RETURN, "ANY_RETURN"),
    (sys::PERF_SAMPLE_BRANCH_IND_CALL, "IND_CALL"),
    (sys::PERF_SAMPLE_BRANCH_ABORT_TX, "ABORT_TX"),
    (sys::PERF_SAMPLE_BRANCH_IN_TX, "IN_TX"),
    (sys::PERF_SAMPLE_BRANCH_NO_TX, "NO_TX"),
    (sys::PERF_SAMPLE_BRANCH_COND, "COND"),
    (sys::PERF_SAMPLE_BRANCH_CALL_STACK, "CALL_STACK"),
    (sys::PERF_SAMPLE_BRANCH_IND_JUMP, "IND_JUMP"),
    (sys::PERF_SAMPLE_BRANCH_CALL, "CALL"),
    (sys::PERF_SAMPLE_BRANCH_NO_FLAGS, "NO_FLAGS"),
    (sys::PERF_SAMPLE_BRANCH_NO_CYCLES, "NO_CYCLES"),
    (sys::PERF_SAMPLE_BRANCH_TYPE_SAVE, "TYPE_SAVE"),
    (sys::PERF_SAMPLE_BRANCH_HW_INDEX, "HW_INDEX"),
    (sys::PERF_SAMPLE_BRANCH_PRIV_SAVE, "PRIV_SAVE"),
];

/// `A|B|C` for the set bits of `v`, unknown bits appended as `0x...` (perf's style).
pub fn bit_names(v: u64, table: &[(u64, &str)]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut rest = v;
    for &(bit, name) in table {
        if v & bit != 0 {
            parts.push(name.to_string());
            rest &= !bit;
        }
    }
    if rest != 0 {
        parts.push(format!("{rest:#x}"));
    }
    parts.join("|")
}

/// `PERF_SAMPLE_*` bits by name (`IP|TID|TIME|PERIOD`).
pub fn sample_type_names(v: u64) -> String {
    bit_names(v, SAMPLE_BITS)
}

/// `PERF_FORMAT_*` bits by name (`TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING`).
pub fn read_format_names(v: u64) -> String {
    bit_names(v, READ_BITS)
}

/// The field lines of perf's attr dump: `  type                             1` ... (each
/// line `"  %-32s %s"`), non-zero fields only, in perf's order.
pub fn attr_lines(attr: &perf_event_attr) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = |name: &str, v: String| out.push(format!("  {name:<32} {v}"));
    let u = |v: u64| v.to_string();
    let hex = |v: u64| format!("{v:#x}");
    macro_rules! num {
        ($name:expr, $v:expr, $fmt:expr) => {
            if $v != 0 {
                line($name, $fmt($v));
            }
        };
    }
    num!("type", u64::from(attr.type_), u);
    num!("size", u64::from(attr.size), u);
    num!("config", attr.config, hex);
    num!("{ sample_period, sample_freq }", attr.sample_period, u);
    num!("sample_type", attr.sample_type, sample_type_names);
    num!("read_format", attr.read_format, read_format_names);
    for (name, bit) in f::ALL.iter().take(14) {
        if attr.has(*bit) {
            line(name, "1".into());
        }
    }
    // watermark, then precise_ip, then the rest (perf's declaration order).
    if attr.has(f::WATERMARK) {
        line("watermark", "1".into());
    }
    num!("precise_ip", u64::from(attr.precise_ip()), u);
    for (name, bit) in f::ALL.iter().skip(15) {
        if attr.has(*bit) {
            line(name, "1".into());
        }
    }
    num!(
        "{ wakeup_events, wakeup_watermark }",
        u64::from(attr.wakeup_events),
        u
    );
    num!("bp_type", u64::from(attr.bp_type), u);
    num!("{ bp_addr, config1 }", attr.config1, hex);
    num!("{ bp_len, config2 }", attr.config2, hex);
    num!(
        "branch_sample_type",
        attr.branch_sample_type,
        |v| bit_names(v, BRANCH_BITS)
    );
    num!("sample_regs_user", attr.sample_regs_user, hex);
    num!("sample_stack_user", u64::from(attr.sample_stack_user), u);
    if attr.clockid != 0 {
        line("clockid", attr.clockid.to_string());
    }
    num!("sample_regs_intr", attr.sample_regs_intr, hex);
    num!("aux_watermark", u64::from(attr.aux_watermark), u);
    num!("sample_max_stack", u64::from(attr.sample_max_stack), u);
    num!("aux_sample_size", u64::from(attr.aux_sample_size), u);
    num!("aux_action", u64::from(attr.aux_action), hex);
    num!("sig_data", attr.sig_data, u);
    num!("config3", attr.config3, hex);
    out
}

const RULE: &str = "------------------------------------------------------------";

/// The whole block perf prints before each `sys_perf_event_open` with `-vv`:
///
/// ```text
/// ------------------------------------------------------------
/// perf_event_attr:
///   type                             1
///   size                             136
///   config                           0x1
///   ...
/// ------------------------------------------------------------
/// ```
pub fn format_attr(attr: &perf_event_attr) -> String {
    let mut s = String::with_capacity(512);
    s.push_str(RULE);
    s.push_str("\nperf_event_attr:\n");
    for l in attr_lines(attr) {
        s.push_str(&l);
        s.push('\n');
    }
    s.push_str(RULE);
    s.push('\n');
    s
}
