//! DWARF unwinding of a stack captured from this very process: inside a known chain of
//! functions a -> b -> c, read IP/SP/BP with inline asm and copy the stack from SP up via
//! `/proc/self/mem`, as `PERF_SAMPLE_REGS_USER` + `PERF_SAMPLE_STACK_USER` would give them.
#![cfg(target_arch = "x86_64")]

use std::io::{Read, Seek, SeekFrom};

use perfkit_symbols::unwind::x86_64_regs::UNWIND_MASK;
use perfkit_symbols::{
    Arch, Options, ProcessMaps, Symbolizer, UnwindEnd, UnwindOutput, Unwinder, UserRegs,
    parse_proc_maps, read_proc_maps,
};

struct Captured {
    regs: [u64; 3], // BP, SP, IP: ascending PERF_REG_X86_* order (6, 7, 8)
    stack: Vec<u8>,
}

fn capture() -> Captured {
    let (ip, sp, bp): (u64, u64, u64);
    // SAFETY: reads three registers into outputs; touches no memory.
    unsafe {
        std::arch::asm!(
            "lea {ip}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            ip = out(reg) ip,
            sp = out(reg) sp,
            bp = out(reg) bp,
            options(nomem, nostack, preserves_flags)
        );
    }
    // Copy from SP to the end of the stack mapping (at most 512 KiB) through /proc/self/mem.
    let text = std::fs::read_to_string("/proc/self/maps").unwrap();
    let all = parse_proc_maps(&text, "maps").unwrap();
    let stack_map = all
        .iter()
        .find(|e| e.mapping.contains(sp))
        .expect("stack mapping");
    let len = (stack_map.mapping.end - sp).min(512 * 1024) as usize;
    let mut mem = std::fs::File::open("/proc/self/mem").unwrap();
    mem.seek(SeekFrom::Start(sp)).unwrap();
    let mut stack = vec![0u8; len];
    mem.read_exact(&mut stack).unwrap();
    Captured {
        regs: [bp, sp, ip],
        stack,
    }
}

#[inline(never)]
fn chain_c(x: u64) -> Captured {
    let c = capture();
    std::hint::black_box(x);
    c
}

#[inline(never)]
fn chain_b(x: u64) -> Captured {
    let c = chain_c(std::hint::black_box(x + 1));
    std::hint::black_box(&c);
    c
}

#[inline(never)]
fn chain_a(x: u64) -> Captured {
    let c = chain_b(std::hint::black_box(x + 1));
    std::hint::black_box(&c);
    c
}

fn names(sym: &mut Symbolizer, maps: &ProcessMaps, out: &UnwindOutput) -> Vec<String> {
    out.lookup_addresses()
        .map(|a| sym.symbolize(std::process::id(), maps, a).name().to_owned())
        .collect()
}

#[test]
fn unwinds_a_b_c_from_a_real_stack() {
    let cap = chain_a(1);
    let maps = read_proc_maps(0).unwrap();
    let mut sym = Symbolizer::new(Options::default());
    let mut unw = Unwinder::new();
    let regs = UserRegs {
        abi: 2,
        mask: UNWIND_MASK,
        values: &cap.regs,
    };
    let out = unw.unwind(
        &mut sym,
        Arch::X86_64,
        std::process::id(),
        &maps,
        &regs,
        &cap.stack,
    );
    let n = names(&mut sym, &maps, &out);
    eprintln!("unwound: {n:?} ({:?})", out.end);
    let pos = |suffix: &str| {
        n.iter()
            .position(|x| x.ends_with(suffix))
            .unwrap_or_else(|| panic!("{suffix} not in {n:?}"))
    };
    let (c, b, a) = (pos("::chain_c"), pos("::chain_b"), pos("::chain_a"));
    assert!(
        c < b && b == c + 1 && a == b + 1,
        "order c,b,a expected: {n:?}"
    );
    assert!(
        n[..c].iter().all(|x| x.contains("capture")),
        "only capture() inside c: {n:?}"
    );
    // The walk goes on into the test harness and std's thread start, and the whole stack
    // was copied, so it ends at the outermost frame.
    assert!(n.len() > a + 3, "{n:?}");
    assert_eq!(out.end, UnwindEnd::Complete, "{n:?}");
    assert!(out.is_complete());

    // The same sample with a short stack copy (as perf's default 8 KiB often is): the walk
    // stops early and says the copy ran out.
    let short = &cap.stack[..64];
    let out2 = unw.unwind(
        &mut sym,
        Arch::X86_64,
        std::process::id(),
        &maps,
        &regs,
        short,
    );
    assert!(
        matches!(out2.end, UnwindEnd::StackTruncated { .. }),
        "{:?}",
        out2.end
    );
    assert!(out2.frames.len() < out.frames.len());
    assert_eq!(out2.frames[0], out.frames[0]);
}

#[test]
fn unwinds_through_libc() {
    // qsort (libc) calls back into our comparator: capture there, then the walk must pass
    // through libc's frames (its .eh_frame) back to the caller of qsort.
    use std::sync::Mutex;
    static CAP: Mutex<Option<Captured>> = Mutex::new(None);
    extern "C" fn cmp(a: *const libc::c_void, b: *const libc::c_void) -> libc::c_int {
        let mut g = CAP.lock().unwrap();
        if g.is_none() {
            *g = Some(capture());
        }
        // SAFETY: qsort passes pointers to elements of the i32 array below.
        let (a, b) = unsafe { (*(a as *const i32), *(b as *const i32)) };
        a.cmp(&b) as libc::c_int
    }
    #[inline(never)]
    fn sort_caller() {
        let mut v = [3i32, 1, 2];
        // SAFETY: a valid array of 3 i32 with a matching comparator.
        unsafe { libc::qsort(v.as_mut_ptr().cast(), v.len(), 4, Some(cmp)) };
        assert_eq!(v, [1, 2, 3]);
    }
    sort_caller();
    let cap = CAP.lock().unwrap().take().unwrap();
    let maps = read_proc_maps(0).unwrap();
    let mut sym = Symbolizer::new(Options::default());
    let regs = UserRegs {
        abi: 2,
        mask: UNWIND_MASK,
        values: &cap.regs,
    };
    let out = Unwinder::new().unwind(
        &mut sym,
        Arch::X86_64,
        std::process::id(),
        &maps,
        &regs,
        &cap.stack,
    );
    let n = names(&mut sym, &maps, &out);
    let dsos: Vec<String> = out
        .lookup_addresses()
        .map(|a| sym.symbolize(std::process::id(), &maps, a).dso.to_string())
        .collect();
    eprintln!("unwound: {n:?}");
    let cmp_at = n
        .iter()
        .position(|x| x.ends_with("::cmp"))
        .unwrap_or_else(|| panic!("{n:?}"));
    let caller = n
        .iter()
        .position(|x| x.ends_with("::sort_caller"))
        .unwrap_or_else(|| panic!("{n:?}"));
    assert!(cmp_at < caller);
    assert!(
        dsos[cmp_at + 1..caller].iter().any(|d| d.contains("libc")),
        "{n:?} {dsos:?}"
    );
}
