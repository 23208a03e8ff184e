//! Random mutations of valid event strings, in the normal test suite (the cargo-fuzz
//! target `fuzz/fuzz_targets/event_parse.rs` explores further): the parser never panics,
//! every error points inside the input and says something, and every event that parses
//! prints a name that parses back to the same event.

// A ParseError is large by design (it prints itself); see the crate docs.
#![allow(clippy::result_large_err)]

mod common;

use common::Fixture;
use perfkit_events::{Env, fixture};

/// Valid strings of every syntax form (against the standard fixture machine).
const SEEDS: &[&str] = &[
    "cycles",
    "instructions:u",
    "cpu-clock:k",
    "task-clock,page-faults,cs,migrations",
    "{cycles,instructions}:S",
    "{task-clock,faults}:u",
    "cycles,{instructions,branches}:u,cs",
    "L1-dcache-load-misses",
    "LLC-store-misses:k",
    "dTLB-loads",
    "iTLB-load-misses",
    "branch-loads",
    "node-loads:u",
    "l1d-load-miss",
    "r10000013c",
    "r1a8:pp",
    "cpu/event=0x3c,umask=0x1/",
    "cpu/event=0x3c/u",
    "cpu/config=0x1234,config1=5,config2=6/",
    "cpu/split=0xff/",
    "cpu/cache-misses/",
    "cpu/mem-loads,ldlat=30/pp",
    "cpu/event=0xc0,umask=0x1,edge,inv,cmask=2/",
    "cpu/event=0x3c,name=my_cycles/",
    "cpu/event=0x3c,period=10000/",
    "cpu/event=0x3c,freq=1000/",
    "cpu/frontend=0x11/",
    "cpu/offcore_rsp=0xffffffffffffffff/",
    "power/energy-pkg/",
    "uncore_imc_0/cas_count_read/",
    "msr/tsc/",
    "msr/smi/",
    "cycles/call-graph=dwarf,stack-size=8192/",
    "cycles/max-stack=32/",
    "instructions/period=0x10,no-inherit/",
    "cycles:period=1000",
    "cycles:u:period=5",
    "cycles:upp",
    "task-clock:ukh",
    "task-clock:GH",
    "task-clock:D",
    "task-clock:W",
    "task-clock:e",
    "task-clock:P",
    "sched:sched_switch",
    "sched:*",
    "sched:sched_?akeup",
    "syscalls:sys_enter_*",
    "syscalls:sys_enter_[rw]*",
    "sys*:sys_exit_read",
    "sched:sched_switch,syscalls:sys_enter_*",
    "sched:sched_switch/period=5,max-stack=3/",
    "sched:sched_switch:u",
    "mem:0x1000",
    "mem:0x1000/8:x",
    "mem:0x1000/1:w",
    "mem:0x1000:rw",
    "mem:4096:w:u",
    "{mem:0x1000:w,mem:0x2000:rw}",
    "1:1",
    "4:0x3c",
    "{cycles:u,instructions:u}:S,sched:sched_switch,mem:0x1000:w",
];

/// A seeded generator, so a failure reproduces.
struct Rng(fastrand::Rng);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0.usize(..n.max(1))
    }
}

/// Bytes the grammar gives meaning to, plus a few it does not.
const ALPHABET: &[u8] = b"{},:/=*?[]-_.0x19afkuhGHIpPSDWe rwmcycles\\\"'\t\0\xff";

fn mutate(rng: &mut Rng, s: &str, other: &str) -> String {
    let mut b = s.as_bytes().to_vec();
    for _ in 0..=rng.below(2) {
        match rng.below(6) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b.remove(i);
            }
            1 => {
                let i = rng.below(b.len() + 1);
                b.insert(i, ALPHABET[rng.below(ALPHABET.len())]);
            }
            2 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = ALPHABET[rng.below(ALPHABET.len())];
            }
            3 => {
                // Splice: a prefix of this one, a suffix of another.
                let o = other.as_bytes();
                let (i, j) = (rng.below(b.len() + 1), rng.below(o.len() + 1));
                b.truncate(i);
                b.extend_from_slice(&o[j..]);
            }
            4 if !b.is_empty() => {
                // Duplicate a slice.
                let i = rng.below(b.len());
                let j = i + rng.below(b.len() - i);
                let piece = b[i..=j.min(b.len() - 1)].to_vec();
                let at = rng.below(b.len() + 1);
                b.splice(at..at, piece);
            }
            _ if !b.is_empty() => {
                // Truncate.
                let i = rng.below(b.len());
                b.truncate(i);
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Check one input without letting a panic escape: see [`fixture::check_input`].
fn check(env: &Env, input: &str) -> Result<bool, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        fixture::check_input(env, input)
    }))
    .map_err(|_| format!("panic parsing {input:?}"))?
}

/// Inputs the fuzzer (or this test) once broke an invariant with; each now holds.
const REGRESSIONS: &[&str] = &[
    // A numeric breakpoint without an access type was named `mem:0x0/0:`.
    "5:3333333333333333333",
    // Overlapping format fields (ldlat over offcore_rsp's low bits) were both printed.
    "cpu/offcore_rsp=0xffffffffffffffff/",
    // Unknown ids were named `software:0x6e`, `pmu-type-11/config=0x1/`.
    "1:110",
    "11:1",
    // A hardware event of an extended PMU type nobody here has was `pmu-type-N/0:0x18/`.
    "000:000500000000000000000030",
    // perf's `pmu/terms/MODS` spelling.
    "cpu/event=0x3c/u",
];

#[test]
fn seeds_parse_and_round_trip() {
    let fx = Fixture::standard();
    let env = fx.env();
    for s in SEEDS.iter().chain(REGRESSIONS) {
        assert_eq!(check(&env, s), Ok(true), "{s}");
    }
}

#[test]
fn random_mutations_never_panic_and_round_trip() {
    let fx = Fixture::standard();
    let env = fx.env();
    let mut rng = Rng(fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15));
    let (mut ok, mut errors) = (0, 0);
    let mut failures = Vec::new();
    for _ in 0..20_000 {
        let a = SEEDS[rng.below(SEEDS.len())];
        let b = SEEDS[rng.below(SEEDS.len())];
        let input = mutate(&mut rng, a, b);
        match check(&env, &input) {
            Ok(true) => ok += 1,
            Ok(false) => errors += 1,
            Err(e) => failures.push(e),
        }
    }
    eprintln!("{ok} parsed, {errors} errors, {} failures", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The mutations explore both sides.
    assert!(ok > 500 && errors > 500, "{ok} parsed, {errors} errors");
}
