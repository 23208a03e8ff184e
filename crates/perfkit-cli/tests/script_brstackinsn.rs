//! `script -F brstackinsn` (and `brstackinsnlen`): the instructions of each block between
//! the branches of a sample's branch stack, as `perf script` 6.1 prints them. This machine
//! has no PMU that records branches, so the test writes the file `perf record -b` would
//! write on one: a C program compiled here, mapped by an MMAP2 record, and samples whose
//! branch entries are its real branch instructions and their targets, chained as the
//! hardware records them (plus blocks that run backwards, cross into the kernel, reach
//! unmapped memory or end inside an instruction), then compares both tools' output.

mod common;

use common::{have_perf, skip};
use perfkit::sys;
use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions, record as rec};
use std::path::Path;
use std::process::{Command, Output};

const SOURCE: &str = r#"
#include <stdlib.h>
__attribute__((noinline)) long step(long x) {
    if (x & 1) return 3 * x + 1;
    return x / 2;
}
__attribute__((noinline)) long walk(long x) {
    long n = 0;
    while (x != 1) { x = step(x); n++; if (n > 1000) break; }
    return n;
}
int main(int argc, char **argv) {
    long s = 0;
    for (long i = 1; i < (argc > 1 ? atol(argv[1]) : 1000); i++) s += walk(i);
    return (int)(s & 1);
}
"#;

fn script(tool: &str, file: &Path, args: &[&str]) -> Output {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    cmd.arg("script")
        .arg("-i")
        .arg(file)
        .args(args)
        .output()
        .expect("script")
}

/// Both tools' output for `args`, which must succeed and be identical.
fn same(file: &Path, args: &[&str]) -> String {
    let (perf, kit) = (script("perf", file, args), script("perfkit", file, args));
    assert!(perf.status.success(), "perf script {args:?}: {perf:?}");
    assert!(kit.status.success(), "perfkit script {args:?}: {kit:?}");
    let a = String::from_utf8_lossy(&perf.stdout).into_owned();
    let b = String::from_utf8_lossy(&kit.stdout).into_owned();
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        assert_eq!(x, y, "{args:?}: line {i} differs");
    }
    assert_eq!(a.lines().count(), b.lines().count(), "{args:?}: line count");
    assert_eq!(a, b, "{args:?}");
    a
}

/// The program's instructions (address, whether it is a branch, its direct target) as
/// objdump lists them.
fn instructions(bin: &Path) -> Vec<(u64, bool, Option<u64>)> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-j", ".text"])
        .arg(bin)
        .output()
        .expect("objdump");
    assert!(out.status.success(), "objdump: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    for line in text.lines() {
        let Some((addr, rest)) = line.trim_start().split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let op = words.next().unwrap_or("");
        let branch = op.starts_with('j') || op.starts_with("call") || op.starts_with("ret");
        let target = words
            .next()
            .and_then(|t| u64::from_str_radix(t, 16).ok())
            .filter(|_| branch);
        v.push((addr, branch, target));
    }
    v
}

#[test]
fn branch_stack_blocks_print_their_instructions_as_perf() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("collatz.c");
    std::fs::write(&src, SOURCE).unwrap();
    let bin = dir.path().join("collatz");
    let built = Command::new("cc")
        .args(["-O1", "-no-pie", "-fno-pie", "-o"])
        .arg(&bin)
        .arg(&src)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        return skip("no working C compiler (cc) to build the branching program");
    }
    let insns = instructions(&bin);
    // The program's own functions: perf 6.1 names PLT stubs under the zero-sized `_init`
    // by the shape of its symbol tree, and stretches `_fini` over the next page (see the
    // README), which perfkit does not copy.
    let nm = Command::new("nm").arg(&bin).output().expect("nm");
    let addr_of = |name: &str| {
        String::from_utf8_lossy(&nm.stdout)
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
            .unwrap_or_else(|| panic!("no {name} in {}", bin.display()))
    };
    let (text_start, text_end) = (addr_of("_start"), addr_of("_fini"));
    let inside = |a: u64| (text_start..text_end).contains(&a);
    let insns: Vec<_> = insns.into_iter().filter(|i| inside(i.0)).collect();
    let branches: Vec<(u64, u64)> = insns
        .iter()
        .filter_map(|&(a, _, t)| t.filter(|&t| inside(t)).map(|t| (a, t)))
        .collect();
    assert!(branches.len() > 10, "few branches in {insns:?}");
    let file = dir.path().join("brstack.data");
    let attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_HARDWARE,
        config: sys::PERF_COUNT_HW_CPU_CYCLES,
        sample_period: 1,
        sample_type: sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME
            | sys::PERF_SAMPLE_BRANCH_STACK,
        branch_sample_type: sys::PERF_SAMPLE_BRANCH_ANY,
        ..Default::default()
    };
    let events = vec![FileEvent {
        attr,
        name: "cycles".into(),
        ids: vec![1],
    }];
    let mut w = PerfDataWriter::create(&file, events, WriteOptions::default()).unwrap();
    let pid = 4343u32;
    let comm: Vec<u8> = [&pid.to_ne_bytes()[..], &pid.to_ne_bytes(), b"collatz\0"].concat();
    w.write_record(&[&rec(sys::PERF_RECORD_COMM, 0, &comm, &[])])
        .unwrap();
    // The whole file mapped at 0x400000 from offset 0: a non-PIE program's addresses are
    // then its file offsets plus 0x400000, as its loader maps it.
    let len = std::fs::metadata(&bin)
        .unwrap()
        .len()
        .next_multiple_of(4096);
    let mut mmap2: Vec<u8> = [
        &pid.to_ne_bytes()[..],
        &pid.to_ne_bytes(),
        &0x40_0000u64.to_ne_bytes(),
        &len.to_ne_bytes(),
        &0u64.to_ne_bytes(),
        &8u32.to_ne_bytes(),  // maj
        &1u32.to_ne_bytes(),  // min
        &77u64.to_ne_bytes(), // ino
        &0u64.to_ne_bytes(),  // ino_generation
        &5u32.to_ne_bytes(),  // PROT_READ | PROT_EXEC
        &2u32.to_ne_bytes(),  // MAP_PRIVATE
        bin.to_str().unwrap().as_bytes(),
        b"\0",
    ]
    .concat();
    while mmap2.len() % 8 != 0 {
        mmap2.push(0);
    }
    w.write_record(&[&rec(
        sys::PERF_RECORD_MMAP2,
        sys::PERF_RECORD_MISC_USER,
        &mmap2,
        &[],
    )])
    .unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..300u64 {
        let nr = 1 + (next() % 8) as usize;
        // Entries newest first; each block runs from an older entry's target to the
        // next newer entry's source.
        let mut entries: Vec<(u64, u64)> = Vec::new();
        for k in 0..nr {
            let r = next();
            let e = match r % 16 {
                // A return (its target, the instruction after a call, is not listed).
                3 => (
                    insns.iter().rev().find(|i| i.1 && i.2.is_none()).unwrap().0,
                    branches[(r >> 8) as usize % branches.len()].0 + 5,
                ),
                // A kernel address on one side: perf patches such blocks up.
                0 => (
                    0xffff_ffff_8100_0000 + r % 0x1000,
                    branches[k % branches.len()].1,
                ),
                // Unmapped memory.
                1 => (0x7e00_0000_0000 + (r >> 8) % 0x1000, 0x7e00_0000_0100),
                // Inside an instruction, not at its start (not the oldest entry, whose
                // source is decoded: bytes from inside an instruction are no program,
                // and decoders differ on such garbage).
                2 if k + 1 < nr => {
                    let (a, t) = branches[(r >> 8) as usize % branches.len()];
                    (a + 1, t)
                }
                _ => branches[(r >> 8) as usize % branches.len()],
            };
            entries.push(e);
        }
        // Often a chain the program could really run: each target falls before the
        // next source within reach.
        if next() % 2 == 0 {
            entries.sort_by_key(|e| std::cmp::Reverse(e.0));
        }
        let r = next();
        let ip = match r % 4 {
            0 => entries[0].0,
            1 => insns[(r >> 8) as usize % insns.len()].0,
            // Some instruction after the newest branch's target.
            _ => insns
                .iter()
                .map(|i| i.0)
                .filter(|&a| a >= entries[0].1)
                .nth((r >> 8) as usize % 12)
                .unwrap_or(entries[0].1),
        };
        let mut body: Vec<u8> = [
            &ip.to_ne_bytes()[..],
            &pid.to_ne_bytes(),
            &pid.to_ne_bytes(),
            &(1_000_000_000 + i * 1000).to_ne_bytes(),
            &(nr as u64).to_ne_bytes(),
        ]
        .concat();
        for (from, to) in entries {
            // mispred, predicted, in_tx, abort, cycles (16 bits), type (4 bits), spec (2).
            let r = next();
            let cycles = if r % 3 == 0 { 0 } else { (r >> 8) % 40 };
            let flags = ((r >> 32) & 0xf) | (cycles << 4) | ((r >> 40) % 16) << 20;
            body.extend_from_slice(&from.to_ne_bytes());
            body.extend_from_slice(&to.to_ne_bytes());
            body.extend_from_slice(&flags.to_ne_bytes());
        }
        w.write_record(&[&rec(
            sys::PERF_RECORD_SAMPLE,
            sys::PERF_RECORD_MISC_USER,
            &body,
            &[],
        )])
        .unwrap();
    }
    w.finish_round().unwrap();
    w.finish(&[]).unwrap();

    let out = same(&file, &["-F", "ip,brstackinsn"]);
    // The blocks were printed with their functions and instructions.
    assert!(out.contains("\twalk"), "{out}");
    assert!(out.contains("insn: "), "{out}");
    assert!(out.contains(" cycles ["), "{out}");
    assert!(out.contains(" IPC"), "{out}");
    // Blocks that end inside an instruction, and final blocks that meet a branch first.
    assert!(
        out.contains("\tmismatch of LBR data and executable\n"),
        "{out}"
    );
    assert!(out.contains("\t... not reaching sample ...\n"), "{out}");
    same(&file, &["-F", "comm,tid,time,ip,sym,brstackinsn"]);
    same(&file, &["-F", "ip,brstackinsnlen"]);
    same(&file, &["-F", "ip,brstackinsn,brstackinsnlen"]);
}
