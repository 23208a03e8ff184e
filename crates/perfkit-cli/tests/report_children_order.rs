//! Children-mode rows of equal weight in perf 6.1's order where callchains hold garbage
//! user addresses that no map covers (a shell's, a JIT's stale frame pointers): perf keys
//! such entries by address and compares two with `(int64_t)(right_ip - left_ip)`
//! (`_sort__addr_cmp`), a difference that wraps, so an address 2^63 or more above another
//! sorts below it. Rows that tie on every printed column keep the order of perf's entry
//! trees, which that comparison builds.
//!
//! The recording is written with perfkit's writer (an exact number of samples of one
//! thread, each with one garbage caller), read by both tools with the same kallsyms file.

mod common;

use common::{have_perf, skip};
use perfkit::sys::{self, attr_flags as f};
use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions, record, synth};
use std::path::Path;
use std::process::Command;

const TEXT: u64 = 0xffff_ffff_8100_0000;
const LEAF: u64 = TEXT + 0x110;

/// One sample per chain (the callchain's entries, context markers included), each at
/// the kernel's `leaf_fn`.
fn write_chains(path: &Path, chains: &[Vec<u64>]) {
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_period: 250_000,
        sample_type: sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME
            | sys::PERF_SAMPLE_PERIOD
            | sys::PERF_SAMPLE_CALLCHAIN,
        ..Default::default()
    };
    attr.set(f::SAMPLE_ID_ALL | f::COMM | f::TASK | f::MMAP, true);
    let event = FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![1],
    };
    let opts = WriteOptions {
        no_build_ids: true,
        ..Default::default()
    };
    let mut w = PerfDataWriter::create(path, vec![event], opts).unwrap();
    // The kernel's map, as perf record synthesizes it.
    let mut b = Vec::new();
    b.extend_from_slice(&u32::MAX.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    for v in [TEXT, 0x10_0000, TEXT] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    b.extend_from_slice(b"[kernel.kallsyms]_text\0");
    b.resize(b.len().next_multiple_of(8), 0);
    let mmap = record(
        sys::PERF_RECORD_MMAP,
        sys::PERF_RECORD_MISC_KERNEL,
        &b,
        &synth::sample_id_trailer(&attr, -1, 0, 1),
    );
    w.write_record(&[&mmap]).unwrap();
    for (i, chain) in chains.iter().enumerate() {
        let time = 1_000_000_000 + i as u64 * 250_000;
        let mut body = Vec::new();
        body.extend_from_slice(&LEAF.to_ne_bytes());
        body.extend_from_slice(&[0u8; 8]); // pid, tid 0: perf's swapper
        body.extend_from_slice(&time.to_ne_bytes());
        body.extend_from_slice(&250_000u64.to_ne_bytes());
        body.extend_from_slice(&(chain.len() as u64).to_ne_bytes());
        for v in chain {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        w.saw_time(time);
        w.write_record(&[&record(
            sys::PERF_RECORD_SAMPLE,
            sys::PERF_RECORD_MISC_KERNEL,
            &body,
            &[],
        )])
        .unwrap();
    }
    w.finish(&["perf".into(), "record".into(), "-a".into()])
        .unwrap();
}

fn run(tool: &str, args: &[&str]) -> String {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let out = cmd.args(args).output().expect("run");
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("# (Tip:") && !l.starts_with("# (Report by"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The children report of samples with these garbage callers, by both tools, which must
/// agree; the `[unknown]` rows' addresses in perf's order.
fn unknown_rows(callers: &[u64]) -> Vec<String> {
    let chains: Vec<Vec<u64>> = callers
        .iter()
        .map(|&c| vec![sys::PERF_CONTEXT_KERNEL, LEAF, sys::PERF_CONTEXT_USER, c])
        .collect();
    same_reports(&chains, &[])
}

/// The children report (with graphs, and `-g none`, and `extra` modes) of one sample per
/// chain, by both tools, which must agree; the `[unknown]` rows' addresses in perf's
/// order.
fn same_reports(chains: &[Vec<u64>], extra: &[&[&str]]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("g.data");
    write_chains(&data, chains);
    let ks = dir.path().join("kallsyms");
    std::fs::write(
        &ks,
        format!(
            "{TEXT:016x} T _text\n{:016x} T leaf_fn\n{:016x} T _etext\n",
            TEXT + 0x100,
            TEXT + 0x10_0000
        ),
    )
    .unwrap();
    let (d, k) = (data.to_str().unwrap(), ks.to_str().unwrap());
    let mut rows = Vec::new();
    let modes: &[&[&str]] = &[
        &["report", "--stdio", "--children"],
        &["report", "--stdio", "--children", "-g", "none"],
    ];
    for mode in extra.iter().chain(modes) {
        let mut args = mode.to_vec();
        args.extend(["-i", d, "--kallsyms", k]);
        let p = run("perf", &args);
        let q = run("perfkit", &args);
        assert_eq!(q, p, "perfkit {args:?} differs from perf's");
        rows = p
            .lines()
            .filter(|l| l.contains("[unknown]") && l.contains("] 0x"))
            .map(|l| l.rsplit(' ').next().unwrap_or("").to_string())
            .collect();
    }
    rows
}

#[test]
fn equal_garbage_callers_in_perfs_wrapping_address_order() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    // One sample each: equal children, one thread, one depth, no self time, no symbol or
    // object, so only perf's entry trees order them. 0xdfdfdfdf00000000 is more than
    // 2^63 above 0x4f00000400: perf's wrapping difference puts it first.
    let rows = unknown_rows(&[0x4f_0000_0400, 0xdfdf_dfdf_0000_0000]);
    assert_eq!(rows, ["0xdfdfdfdf00000000", "0x0000004f00000400"]);
    // Less than 2^63 apart: plain address order.
    let rows = unknown_rows(&[0x7f00_0000_1000, 0x5555_0000_2000]);
    assert_eq!(rows, ["0x0000555500002000", "0x00007f0000001000"]);
    // Three, in both sample orders: the comparison is not transitive (0x4f... < 0x7f...
    // < 0xdf... < 0x4f...), so the tree's shape decides, as in perf.
    for callers in [
        [0x4f_0000_0400, 0x7fff_0000_0000, 0xdfdf_dfdf_0000_0000],
        [0xdfdf_dfdf_0000_0000, 0x7fff_0000_0000, 0x4f_0000_0400],
    ] {
        assert_eq!(unknown_rows(&callers).len(), 3);
    }
}

/// Two unnamed addresses that differ only in bit 63 (0 and 0x8000000000000000, both seen
/// among an `-a` recording's garbage callers) are two rows, as perf compares the whole
/// address; perfkit once keyed them with that bit set and merged them.
#[test]
fn addresses_apart_only_in_bit_63_are_two_rows() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let rows = unknown_rows(&[0x8000_0000_0000_0000, 0, 0]);
    // perf prints address 0 without `0x`: only the other row matches `] 0x`.
    assert_eq!(rows, ["0x8000000000000000"]);
}

/// An address outside every mapping reached in kernel context (a chain without a user
/// marker, as a shell's garbage frames give) and in user context: perf's `match_chain`
/// compares such entries by object (none) and address, so they are one node of the
/// graph whatever context the walk was in; perfkit once made them two.
#[test]
fn an_unmapped_caller_in_either_context_is_one_graph_node() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    const G: u64 = 0x5555_0000_1000;
    let chains = [
        vec![sys::PERF_CONTEXT_KERNEL, LEAF, G],
        vec![sys::PERF_CONTEXT_KERNEL, LEAF, sys::PERF_CONTEXT_USER, G],
        vec![sys::PERF_CONTEXT_KERNEL, LEAF, sys::PERF_CONTEXT_USER, G],
    ];
    let modes: &[&[&str]] = &[
        &["report", "--stdio", "--no-children", "-g", "caller"],
        &["report", "--stdio", "--no-children", "-g", "callee"],
    ];
    let rows = same_reports(&chains, modes);
    assert_eq!(rows, ["0x0000555500001000"]);
}
