//! The grammar table: every form of perf's event syntax, with the attrs it must give (type,
//! config words, flag word, period) or the error position it must report.

mod common;

use perfkit_sys::{self as sys, attr_flags as f};

/// Expected attr fields of one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ev {
    ty: u32,
    config: u64,
    c1: u64,
    c2: u64,
    flags: u64,
    period: u64,
}

const EG: u64 = f::EXCLUDE_GUEST;
const U: u64 = f::EXCLUDE_KERNEL | f::EXCLUDE_HV | EG; // :u
const K: u64 = f::EXCLUDE_USER | f::EXCLUDE_HV; // :k
const H: u64 = f::EXCLUDE_USER | f::EXCLUDE_KERNEL; // :h
const P1: u64 = 1 << f::PRECISE_IP_SHIFT;
const P2: u64 = 2 << f::PRECISE_IP_SHIFT;
const P3: u64 = 3 << f::PRECISE_IP_SHIFT;

const HW: u32 = sys::PERF_TYPE_HARDWARE;
const SW: u32 = sys::PERF_TYPE_SOFTWARE;
const TP: u32 = sys::PERF_TYPE_TRACEPOINT;
const CACHE: u32 = sys::PERF_TYPE_HW_CACHE;
const RAW: u32 = sys::PERF_TYPE_RAW;
const BP: u32 = sys::PERF_TYPE_BREAKPOINT;

const fn ev(ty: u32, config: u64, flags: u64) -> Ev {
    Ev {
        ty,
        config,
        c1: 0,
        c2: 0,
        flags,
        period: 0,
    }
}
const fn evp(ty: u32, config: u64, flags: u64, period: u64) -> Ev {
    Ev {
        ty,
        config,
        c1: 0,
        c2: 0,
        flags,
        period,
    }
}
const fn ev3(ty: u32, config: u64, c1: u64, c2: u64, flags: u64, period: u64) -> Ev {
    Ev {
        ty,
        config,
        c1,
        c2,
        flags,
        period,
    }
}
const fn bp(addr: u64, len: u64, flags: u64) -> Ev {
    Ev {
        ty: BP,
        config: 0,
        c1: addr,
        c2: len,
        flags,
        period: 1,
    }
}
const fn tp(id: u64, flags: u64) -> Ev {
    Ev {
        ty: TP,
        config: id,
        c1: 0,
        c2: 0,
        flags,
        period: 1,
    }
}
const fn cache(c: u64, op: u64, res: u64) -> Ev {
    ev(CACHE, c | (op << 8) | (res << 16), EG)
}

enum Want {
    Ok(Vec<Ev>),
    /// Error at this byte offset.
    Err(usize),
}
use Want::{Err as E, Ok as O};

fn table() -> Vec<(&'static str, Want)> {
    vec![
        // ---- hardware names and aliases
        ("cycles", O(vec![ev(HW, 0, EG)])),
        ("cpu-cycles", O(vec![ev(HW, 0, EG)])),
        ("CYCLES", O(vec![ev(HW, 0, EG)])),
        ("instructions", O(vec![ev(HW, 1, EG)])),
        ("cache-references", O(vec![ev(HW, 2, EG)])),
        ("cache-misses", O(vec![ev(HW, 3, EG)])),
        ("branches", O(vec![ev(HW, 4, EG)])),
        ("branch-instructions", O(vec![ev(HW, 4, EG)])),
        ("branch-misses", O(vec![ev(HW, 5, EG)])),
        ("bus-cycles", O(vec![ev(HW, 6, EG)])),
        ("stalled-cycles-frontend", O(vec![ev(HW, 7, EG)])),
        ("idle-cycles-frontend", O(vec![ev(HW, 7, EG)])),
        ("stalled-cycles-backend", O(vec![ev(HW, 8, EG)])),
        ("idle-cycles-backend", O(vec![ev(HW, 8, EG)])),
        ("ref-cycles", O(vec![ev(HW, 9, EG)])),
        // ---- software
        ("cpu-clock", O(vec![ev(SW, 0, EG)])),
        ("task-clock", O(vec![ev(SW, 1, EG)])),
        ("page-faults", O(vec![ev(SW, 2, EG)])),
        ("faults", O(vec![ev(SW, 2, EG)])),
        ("context-switches", O(vec![ev(SW, 3, EG)])),
        ("cs", O(vec![ev(SW, 3, EG)])),
        ("cpu-migrations", O(vec![ev(SW, 4, EG)])),
        ("migrations", O(vec![ev(SW, 4, EG)])),
        ("minor-faults", O(vec![ev(SW, 5, EG)])),
        ("major-faults", O(vec![ev(SW, 6, EG)])),
        ("alignment-faults", O(vec![ev(SW, 7, EG)])),
        ("emulation-faults", O(vec![ev(SW, 8, EG)])),
        ("dummy", O(vec![ev(SW, 9, EG)])),
        ("bpf-output", O(vec![ev(SW, 10, EG)])),
        ("cgroup-switches", O(vec![ev(SW, 11, EG)])),
        // ---- cache events (checked against perf stat -vv on perf 6.1)
        ("L1-dcache-loads", O(vec![cache(0, 0, 0)])),
        ("L1-dcache-load-misses", O(vec![cache(0, 0, 1)])),
        ("L1-dcache-stores", O(vec![cache(0, 1, 0)])),
        ("L1-dcache-store-misses", O(vec![cache(0, 1, 1)])),
        ("L1-dcache-prefetches", O(vec![cache(0, 2, 0)])),
        ("L1-dcache-prefetch-misses", O(vec![cache(0, 2, 1)])),
        ("L1-dcache-misses", O(vec![cache(0, 0, 1)])),
        ("L1-dcache", O(vec![cache(0, 0, 0)])),
        ("l1d-load-miss", O(vec![cache(0, 0, 1)])),
        ("l1-d-loads", O(vec![cache(0, 0, 0)])),
        ("L1-data-read-access", O(vec![cache(0, 0, 0)])),
        ("L1-dcache-write-miss", O(vec![cache(0, 1, 1)])),
        ("L1-dcache-misses-load", O(vec![cache(0, 0, 1)])),
        ("L1-icache-loads", O(vec![cache(1, 0, 0)])),
        ("L1-icache-load-misses", O(vec![cache(1, 0, 1)])),
        ("l1i-prefetches", O(vec![cache(1, 2, 0)])),
        ("L1-instruction-loads", O(vec![cache(1, 0, 0)])),
        ("LLC-loads", O(vec![cache(2, 0, 0)])),
        ("LLC-load-misses", O(vec![cache(2, 0, 1)])),
        ("LLC-stores", O(vec![cache(2, 1, 0)])),
        ("LLC-store-misses", O(vec![cache(2, 1, 1)])),
        ("LLC-prefetches", O(vec![cache(2, 2, 0)])),
        ("LLC-prefetch-misses", O(vec![cache(2, 2, 1)])),
        ("L2-loads", O(vec![cache(2, 0, 0)])),
        ("llc-refs", O(vec![cache(2, 0, 0)])),
        ("dTLB-loads", O(vec![cache(3, 0, 0)])),
        ("dTLB-load-misses", O(vec![cache(3, 0, 1)])),
        ("dTLB-stores", O(vec![cache(3, 1, 0)])),
        ("dTLB-store-misses", O(vec![cache(3, 1, 1)])),
        ("dTLB-speculative-read-miss", O(vec![cache(3, 2, 1)])),
        ("d-tlb-speculative-load", O(vec![cache(3, 2, 0)])),
        ("Data-TLB-ops", O(vec![cache(3, 0, 0)])),
        ("iTLB-loads", O(vec![cache(4, 0, 0)])),
        ("iTLB-load-misses", O(vec![cache(4, 0, 1)])),
        ("i-tlb-miss", O(vec![cache(4, 0, 1)])),
        ("Instruction-TLB-Reference", O(vec![cache(4, 0, 0)])),
        ("branch-loads", O(vec![cache(5, 0, 0)])),
        ("branch-load-misses", O(vec![cache(5, 0, 1)])),
        ("bpu-miss", O(vec![cache(5, 0, 1)])),
        ("btb-access", O(vec![cache(5, 0, 0)])),
        ("bpc-loads", O(vec![cache(5, 0, 0)])),
        ("node-loads", O(vec![cache(6, 0, 0)])),
        ("node-load-misses", O(vec![cache(6, 0, 1)])),
        ("node-stores", O(vec![cache(6, 1, 0)])),
        ("node-store-misses", O(vec![cache(6, 1, 1)])),
        ("node-prefetches", O(vec![cache(6, 2, 0)])),
        ("node-prefetch-misses", O(vec![cache(6, 2, 1)])),
        ("L1-icache-stores", E(0)),
        ("iTLB-stores", E(0)),
        ("branch-prefetches", E(0)),
        ("L1-dcache-loads-stores", E(16)),
        ("L1-dcache-misses-misses", E(17)),
        ("LLC-bogus", E(4)),
        // ---- raw
        ("r1a8", O(vec![ev(RAW, 0x1a8, EG)])),
        ("r10000013c", O(vec![ev(RAW, 0x1_0000_013c, EG)])),
        ("rffffffffffffffff", O(vec![ev(RAW, u64::MAX, EG)])),
        ("rABCD", O(vec![ev(RAW, 0xabcd, EG)])),
        ("r0", O(vec![ev(RAW, 0, EG)])),
        ("r1a8:u", O(vec![ev(RAW, 0x1a8, U)])),
        ("r1ffffffffffffffff", E(0)),
        ("rxyz", E(0)),
        // ---- numeric type:config
        ("1:1", O(vec![ev(SW, 1, EG)])),
        ("4:0x3c", O(vec![ev(4, 0x3c, EG)])),
        ("1:1:u", O(vec![ev(SW, 1, U)])),
        ("99999999999:1", E(0)),
        // ---- modifiers (each checked against perf 6.1's attrs)
        ("task-clock:u", O(vec![ev(SW, 1, U)])),
        ("task-clock:k", O(vec![ev(SW, 1, K)])),
        ("task-clock:h", O(vec![ev(SW, 1, H)])),
        ("task-clock:uk", O(vec![ev(SW, 1, f::EXCLUDE_HV | EG)])),
        ("task-clock:ku", O(vec![ev(SW, 1, f::EXCLUDE_HV | EG)])),
        ("task-clock:kh", O(vec![ev(SW, 1, f::EXCLUDE_USER)])),
        ("task-clock:ukh", O(vec![ev(SW, 1, EG)])),
        ("task-clock:G", O(vec![ev(SW, 1, f::EXCLUDE_HOST)])),
        ("task-clock:H", O(vec![ev(SW, 1, EG)])),
        ("task-clock:GH", O(vec![ev(SW, 1, 0)])),
        (
            "task-clock:Gu",
            O(vec![ev(
                SW,
                1,
                f::EXCLUDE_KERNEL | f::EXCLUDE_HV | f::EXCLUDE_HOST,
            )]),
        ),
        (
            "task-clock:uG",
            O(vec![ev(
                SW,
                1,
                f::EXCLUDE_KERNEL | f::EXCLUDE_HV | f::EXCLUDE_HOST,
            )]),
        ),
        ("cpu-clock:I", O(vec![ev(SW, 0, f::EXCLUDE_IDLE)])),
        ("task-clock:p", O(vec![ev(SW, 1, P1 | EG)])),
        ("task-clock:pp", O(vec![ev(SW, 1, P2 | EG)])),
        ("task-clock:ppp", O(vec![ev(SW, 1, P3 | EG)])),
        ("cycles:upp", O(vec![ev(HW, 0, U | P2)])),
        ("task-clock:pppp", E(11)),
        ("task-clock:P", O(vec![ev(SW, 1, 0)])),
        ("task-clock:S", O(vec![ev(SW, 1, 0)])),
        ("task-clock:D", O(vec![ev(SW, 1, f::PINNED)])),
        ("task-clock:e", O(vec![ev(SW, 1, f::EXCLUSIVE)])),
        ("task-clock:W", O(vec![ev(SW, 1, 0)])),
        ("task-clock:uW", O(vec![ev(SW, 1, U)])),
        ("cpu-clock:b", O(vec![ev(SW, 0, 0)])),
        ("task-clock:u:k", O(vec![ev(SW, 1, f::EXCLUDE_HV | EG)])),
        ("task-clock:x", E(11)),
        ("task-clock:uz", E(12)),
        ("task-clock:", E(11)),
        ("task-clock::", E(11)),
        ("cycles:period=1000", O(vec![evp(HW, 0, EG, 1000)])),
        ("cycles:u:period=5", O(vec![evp(HW, 0, U, 5)])),
        ("cycles:freq=99", O(vec![evp(HW, 0, EG | f::FREQ, 99)])),
        ("cycles:period=abc", E(14)),
        ("cycles:bogus=1", E(7)),
        // ---- symbolic events with terms
        ("cycles/period=1000/", O(vec![evp(HW, 0, EG, 1000)])),
        ("task-clock/period=1000/", O(vec![evp(SW, 1, EG, 1000)])),
        ("cycles/freq=4000/u", O(vec![evp(HW, 0, U | f::FREQ, 4000)])),
        (
            "cycles/freq=4000/:u",
            O(vec![evp(HW, 0, U | f::FREQ, 4000)]),
        ),
        (
            "instructions/period=0x10,no-inherit/",
            O(vec![evp(HW, 1, EG, 16)]),
        ),
        ("instructions/inherit/", O(vec![ev(HW, 1, EG | f::INHERIT)])),
        ("cycles/max-stack=32/", O(vec![ev(HW, 0, EG)])),
        ("cycles/name=foo/", O(vec![ev(HW, 0, EG)])),
        (
            "cycles/call-graph=dwarf,stack-size=8192/",
            O(vec![ev(HW, 0, EG)]),
        ),
        ("cycles/call-graph=xyz/", E(18)),
        ("cycles/stack-size=7/", E(18)),
        ("cycles/max-stack=70000/", E(17)),
        ("cycles/period=/", E(14)),
        ("cycles/period=1", E(15)),
        ("cycles/frobnicate=1/", E(7)),
        // ---- sysfs PMUs and formats
        ("cpu/event=0x3c/", O(vec![ev(4, 0x3c, EG)])),
        ("cpu/event=0x3c,umask=0x1/", O(vec![ev(4, 0x13c, EG)])),
        (
            "cpu/event=0xc0,umask=0x1,edge,inv,cmask=2/",
            O(vec![ev(4, 0x0284_01c0, EG)]),
        ),
        // perf's spelling: modifiers right after the slash.
        ("cpu/event=0x3c/u", O(vec![ev(4, 0x3c, U)])),
        ("cpu/event=0x3c/:u", O(vec![ev(4, 0x3c, U)])),
        (
            "cpu/event=0x3c,period=10000/",
            O(vec![evp(4, 0x3c, EG, 10000)]),
        ),
        (
            "cpu/event=0x3c,freq=1000/",
            O(vec![evp(4, 0x3c, EG | f::FREQ, 1000)]),
        ),
        ("cpu/split=0xff/", O(vec![ev(4, 0xf | (0xf << 32), EG)])),
        ("cpu/split=0x100/", E(10)),
        ("cpu/event=0x100/", E(10)),
        ("cpu/ldlat=3/", O(vec![ev3(4, 0, 3, 0, EG, 0)])),
        (
            "cpu/offcore_rsp=0xffffffffffffffff/",
            O(vec![ev3(4, 0, u64::MAX, 0, EG, 0)]),
        ),
        ("cpu/frontend=0x11/", O(vec![ev3(4, 0, 0, 0x11, EG, 0)])),
        (
            "cpu/config=0x1234,config1=5,config2=6/",
            O(vec![ev3(4, 0x1234, 5, 6, EG, 0)]),
        ),
        ("cpu/config=0x10000013c/", O(vec![ev(4, 0x1_0000_013c, EG)])),
        ("cpu/cache-misses/", O(vec![ev(4, 0x412e, EG)])),
        ("cpu/mem-loads/", O(vec![ev3(4, 0x1cd, 3, 0, EG, 0)])),
        (
            "cpu/mem-loads,ldlat=30/",
            O(vec![ev3(4, 0x1cd, 30, 0, EG, 0)]),
        ),
        ("cpu/cycles/", O(vec![ev(HW, 0, EG)])),
        ("cpu/L1-dcache-load-misses/", O(vec![cache(0, 0, 1)])),
        ("cpu/event=0x3c,name=my_cycles/", O(vec![ev(4, 0x3c, EG)])),
        ("cpu/event=0x3c,inherit=0/", O(vec![ev(4, 0x3c, EG)])),
        ("cpu//", O(vec![ev(4, 0, EG)])),
        ("cpu/even=1/", E(4)),
        ("cpu/event=zz/", E(10)),
        ("cpu/event=0x3c", E(14)),
        ("cpu/event=0x3c,/", E(15)),
        ("cpu/,/", E(4)),
        ("cpu/event==1/", E(10)),
        ("nopmu/event=1/", E(0)),
        ("msr/tsc/", O(vec![ev(10, 0, EG)])),
        ("msr/smi/", O(vec![ev(10, 4, EG)])),
        (
            "msr/event=0xffffffffffffffff/",
            O(vec![ev(10, u64::MAX, EG)]),
        ),
        ("tsc", O(vec![ev(10, 0, EG)])),
        ("smi:u", O(vec![ev(10, 4, U)])),
        ("power/energy-pkg/", O(vec![ev(9, 2, EG)])),
        ("energy-ram", O(vec![ev(9, 3, EG)])),
        (
            "uncore_imc/cas_count_read/",
            O(vec![ev(20, 0x304, EG), ev(21, 0x304, EG)]),
        ),
        ("uncore_imc_1/event=0x1/", O(vec![ev(21, 1, EG)])),
        (
            "uncore_imc_*/event=0x1/",
            O(vec![ev(20, 1, EG), ev(21, 1, EG)]),
        ),
        (
            "cas_count_read",
            O(vec![ev(20, 0x304, EG), ev(21, 0x304, EG)]),
        ),
        ("uncore/event=1/", E(0)),
        // ---- tracepoints
        ("sched:sched_switch", O(vec![tp(316, EG)])),
        ("sched:sched_switch:u", O(vec![tp(316, U)])),
        ("sched:sched_sw*", O(vec![tp(316, EG)])),
        ("sched:sched_?akeup", O(vec![tp(317, EG)])),
        ("sched:*", O(vec![tp(318, EG), tp(316, EG), tp(317, EG)])),
        (
            "syscalls:sys_enter_*",
            O(vec![tp(603, EG), tp(600, EG), tp(601, EG)]),
        ),
        ("syscalls:sys_*_read", O(vec![tp(600, EG), tp(602, EG)])),
        ("sys*:sys_exit_read", O(vec![tp(602, EG)])),
        ("*:irq_handler_entry", O(vec![tp(50, EG)])),
        (
            "syscalls:sys_enter_[rw]*",
            O(vec![tp(600, EG), tp(601, EG)]),
        ),
        (
            "sched:sched_switch/filter=\"prev_pid > 0\"/",
            O(vec![tp(316, EG)]),
        ),
        (
            "sched:sched_switch/period=5,max-stack=3/",
            O(vec![evp(TP, 316, EG, 5)]),
        ),
        ("sched:sched_swich", E(6)),
        ("sched:nothing_*", E(6)),
        ("sched:", E(6)),
        ("schde:sched_switch", E(0)),
        ("sched:sched_switch/filter=\"unterminated/", E(26)),
        // ---- breakpoints
        ("mem:0x1000", O(vec![bp(0x1000, 4, EG)])),
        ("mem:0x1000:w", O(vec![bp(0x1000, 4, EG)])),
        ("mem:0x1000:r", O(vec![bp(0x1000, 4, EG)])),
        ("mem:0x1000:rw", O(vec![bp(0x1000, 4, EG)])),
        ("mem:0x1000:x", O(vec![bp(0x1000, 8, EG)])),
        ("mem:0x1000/8:x", O(vec![bp(0x1000, 8, EG)])),
        ("mem:0x1000/1:w", O(vec![bp(0x1000, 1, EG)])),
        ("mem:0x1000/2", O(vec![bp(0x1000, 2, EG)])),
        ("mem:4096:w", O(vec![bp(4096, 4, EG)])),
        ("mem:0x1000:w:u", O(vec![bp(0x1000, 4, U)])),
        ("mem:0x1000:u", O(vec![bp(0x1000, 4, U)])),
        ("mem:0x1000:rwx", O(vec![bp(0x1000, 4, EG)])),
        ("mem:", E(4)),
        ("mem:zz", E(4)),
        ("mem:0x1000/9", E(11)),
        ("mem:0x1000/0", E(11)),
        ("mem:0x1000:ww", E(12)),
        ("mem:0x1000:q", E(11)),
        // ---- uprobes (failure forms; successful ones are in tests/kernel.rs)
        ("uprobe:", E(7)),
        ("uprobe:/bin/true", E(16)),
        ("uprobe:/bin/true:", E(17)),
        ("uprobe:/nonexistent/binary:main", E(27)),
        ("uprobe:/bin/true:0x10+zz", E(22)),
        // ---- lists and groups
        ("cycles,instructions", O(vec![ev(HW, 0, EG), ev(HW, 1, EG)])),
        (
            "cycles:u,instructions:k",
            O(vec![ev(HW, 0, U), ev(HW, 1, K)]),
        ),
        (
            "{cycles,instructions}",
            O(vec![ev(HW, 0, EG), ev(HW, 1, EG)]),
        ),
        (
            "{cycles,instructions}:u",
            O(vec![ev(HW, 0, U), ev(HW, 1, U)]),
        ),
        (
            "{cycles,instructions}:S",
            O(vec![ev(HW, 0, EG), ev(HW, 1, EG)]),
        ),
        (
            "{cycles:u,instructions}:k",
            O(vec![ev(HW, 0, f::EXCLUDE_HV | EG), ev(HW, 1, K | EG)]),
        ),
        ("{task-clock:D}:u", O(vec![ev(SW, 1, U | f::PINNED)])),
        (
            "{cycles,instructions}:D",
            O(vec![ev(HW, 0, EG | f::PINNED), ev(HW, 1, EG | f::PINNED)]),
        ),
        (
            "{cycles,instructions}:G",
            O(vec![ev(HW, 0, f::EXCLUDE_HOST), ev(HW, 1, f::EXCLUDE_HOST)]),
        ),
        (
            "{cycles,cache-misses}:ppu",
            O(vec![ev(HW, 0, U | P2), ev(HW, 3, U | P2)]),
        ),
        (
            "{cycles,sched:sched_switch}",
            O(vec![ev(HW, 0, EG), tp(316, EG)]),
        ),
        (
            "{cpu/event=0x3c/,msr/tsc/}",
            O(vec![ev(4, 0x3c, EG), ev(10, 0, EG)]),
        ),
        (
            "{cycles},{instructions}",
            O(vec![ev(HW, 0, EG), ev(HW, 1, EG)]),
        ),
        (
            "{mem:0x1000:w,mem:0x2000:r}:u",
            O(vec![bp(0x1000, 4, U), bp(0x2000, 4, U)]),
        ),
        (
            "cycles,{instructions,branches}:u,cs",
            O(vec![
                ev(HW, 0, EG),
                ev(HW, 1, U),
                ev(HW, 4, U),
                ev(SW, 3, EG),
            ]),
        ),
        (
            "{syscalls:sys_enter_r*,cycles}",
            O(vec![tp(600, EG), ev(HW, 0, EG)]),
        ),
        ("{}", E(1)),
        ("{cycles", E(0)),
        ("{cycles,", E(8)),
        ("{{cycles}}", E(1)),
        ("{cycles}x", E(8)),
        ("{cycles}:q", E(9)),
        ("{cycles}:period=1", E(9)),
        ("cycles,", E(7)),
        (",cycles", E(0)),
        ("cycles,,instructions", E(7)),
        ("cycles instructions", E(6)),
        ("", E(0)),
        ("   ", E(0)),
        ("}", E(0)),
        // ---- unknown names
        ("cyclez", E(0)),
        ("cycles,cpu-clok", E(7)),
        ("instructions:u,foo:bar", E(15)),
        ("ééé", E(0)),
        ("cycles\u{0}", E(6)),
    ]
}

#[test]
fn grammar_table() {
    let fx = common::Fixture::standard();
    let env = fx.env();
    let table = table();
    assert!(table.len() >= 150, "table has {} cases", table.len());
    let mut failures = Vec::new();
    for (input, want) in &table {
        let got = env.parse(input);
        match (want, &got) {
            (Want::Ok(evs), Ok(list)) => {
                let have: Vec<Ev> = list
                    .events()
                    .map(|e| Ev {
                        ty: e.attr.type_,
                        config: e.attr.config,
                        c1: if e.uprobe_path.is_some() {
                            0
                        } else {
                            e.attr.config1
                        },
                        c2: e.attr.config2,
                        flags: e.attr.flags,
                        period: e.attr.sample_period,
                    })
                    .collect();
                if have != *evs {
                    failures.push(format!("{input:?}: want {evs:?}\n    got {have:?}"));
                }
                for e in list.events() {
                    assert_eq!(e.attr.size, sys::PERF_ATTR_SIZE_VER8, "{input}");
                }
            }
            (Want::Err(pos), Err(e)) => {
                if e.pos != *pos {
                    failures.push(format!(
                        "{input:?}: want error at {pos}, got at {}: {e}",
                        e.pos
                    ));
                }
                // Every error renders with a caret and says something.
                let text = e.to_string();
                assert!(text.contains('^') && !e.message.is_empty(), "{text}");
            }
            (Want::Ok(_), Err(e)) => failures.push(format!("{input:?}: want Ok, got error:\n{e}")),
            (Want::Err(pos), Ok(l)) => failures.push(format!(
                "{input:?}: want error at {pos}, got {:?}",
                l.events()
                    .map(|e| (&e.name, e.attr.type_, e.attr.config))
                    .collect::<Vec<_>>()
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}
