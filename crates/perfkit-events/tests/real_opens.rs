//! Event strings parsed with this machine's sysfs and tracefs, opened on the real kernel and
//! counted: software events, tracepoints (with a filter), hardware breakpoints and uprobes.
//! Each test that needs something this machine may lack skips with a printed reason (and
//! fails under CI=true, where .ci/run provides it).

mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use perfkit::{Attr, Counter, ErrorKind, Target};
use perfkit_events::list::{self, Availability, Kind, ListOptions};
use perfkit_events::{Env, ParsedEvent};

fn env() -> Env {
    // Tracepoint tests need tracefs; mount it if we may (CI runs as root).
    let _ = perfkit_events::tracefs::find_or_mount_tracefs();
    Env::system()
}

fn one(env: &Env, s: &str) -> ParsedEvent {
    let list = env.parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
    let evs: Vec<&ParsedEvent> = list.groups.iter().flat_map(|g| &g.members).collect();
    assert_eq!(evs.len(), 1, "{s}");
    evs[0].clone()
}

/// Open on this thread, enabled; `None` (with a printed reason) when not permitted here.
fn open(ev: &ParsedEvent) -> Option<Counter> {
    let mut attr = Attr::from_raw(ev.attr);
    attr.raw_mut().flags &= !perfkit::sys::attr_flags::DISABLED;
    match Counter::open(&attr, &Target::this_thread()) {
        Ok(c) => Some(c),
        Err(e) if e.kind() == ErrorKind::Permission => {
            common::skip(&format!("{}: {e} (run as root)", ev.name));
            None
        }
        Err(e) => panic!("{}: {e}", ev.name),
    }
}

#[test]
fn software_events_from_strings_count() {
    let env = env();
    let ev = one(&env, "task-clock:u");
    let Some(c) = open(&ev) else { return };
    let mut x = 0u64;
    for i in 0..2_000_000u64 {
        x = black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    let n = c.read().unwrap().value;
    assert!(n > 100_000, "task-clock:u counted {n} ns");

    // page-faults: touching fresh pages faults at least once per page.
    let ev = one(&env, "faults");
    let Some(c) = open(&ev) else { return };
    let pages = 256;
    let mut v = vec![0u8; pages * 4096];
    for p in 0..pages {
        v[p * 4096] = 1;
    }
    black_box(&v);
    let n = c.read().unwrap().value;
    assert!(
        n >= pages as u64 / 2,
        "{n} page faults for {pages} new pages"
    );
}

#[test]
fn a_tracepoint_with_a_filter_counts_exactly() {
    let env = env();
    if env.tracefs().is_none() {
        common::skip("tracefs is not mounted and could not be mounted (needs root)");
        return;
    }
    // raw_syscalls:sys_enter filtered to getppid (x86_64: 110, aarch64: 173).
    let nr = if cfg!(target_arch = "aarch64") {
        173
    } else {
        110
    };
    let ev = one(&env, "raw_syscalls:sys_enter");
    assert_eq!(ev.attr.type_, perfkit::sys::PERF_TYPE_TRACEPOINT);
    let Some(c) = open(&ev) else { return };
    c.set_filter(&format!("id == {nr}")).unwrap();
    c.reset().unwrap();
    for _ in 0..321 {
        // SAFETY: getppid has no arguments and cannot fail.
        black_box(unsafe { libc::getppid() });
    }
    assert_eq!(c.read().unwrap().value, 321);

    // A glob expands to every match, each with its tracefs id.
    let list = env.parse("sched:sched_process_*").unwrap();
    let n = list.groups.iter().map(|g| g.members.len()).sum::<usize>();
    let t = env.tracefs().unwrap().join("events/sched");
    let on_disk = std::fs::read_dir(t)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("sched_process_") && e.path().join("id").exists()
        })
        .count();
    assert_eq!(n, on_disk);
}

static WATCHED: AtomicU64 = AtomicU64::new(0);

#[test]
fn a_breakpoint_from_a_string_counts_writes_exactly() {
    let env = env();
    let addr = std::ptr::addr_of!(WATCHED) as u64;
    let ev = one(&env, &format!("mem:{addr:#x}/8:w"));
    assert_eq!(ev.attr.type_, perfkit::sys::PERF_TYPE_BREAKPOINT);
    let Some(c) = open(&ev) else { return };
    for i in 0..1000 {
        WATCHED.store(i, Ordering::SeqCst);
    }
    assert_eq!(c.read().unwrap().value, 1000);
}

#[inline(never)]
fn perfkit_uprobe_target(x: u64) -> u64 {
    black_box(x.wrapping_mul(3) + 1)
}

/// The symbol name of `perfkit_uprobe_target` in this test binary (Rust-mangled).
fn target_symbol(exe: &std::path::Path) -> Option<String> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(exe).ok()?;
    let file = object::File::parse(&*data).ok()?;
    file.symbols()
        .filter_map(|s| s.name().ok().map(str::to_string))
        .find(|n| n.contains("perfkit_uprobe_target"))
}

#[test]
fn a_uprobe_on_a_function_of_this_program_counts_calls_exactly() {
    let env = env();
    if env.pmu("uprobe").is_none() {
        eprintln!("skipped: no uprobe PMU on this kernel");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let Some(sym) = target_symbol(&exe) else {
        eprintln!("skipped: the test binary has no symbol table");
        return;
    };
    let ev = one(&env, &format!("uprobe:{}:{sym}", exe.display()));
    let Some(c) = open(&ev) else { return };
    let mut acc = 0;
    for i in 0..777 {
        acc += perfkit_uprobe_target(i);
    }
    black_box(acc);
    assert_eq!(c.read().unwrap().value, 777);

    // A missing symbol is a parse error that says which, with its position.
    let err = env
        .parse(&format!("uprobe:{}:no_such_function_xyz", exe.display()))
        .unwrap_err();
    assert!(err.to_string().contains("no_such_function_xyz"), "{err}");
}

#[test]
fn the_catalogue_says_what_opens_here() {
    let env = env();
    let cat = list::catalogue(
        &env,
        None,
        &ListOptions {
            probe: true,
            libpfm: false,
        },
    );
    let get = |n: &str| cat.entries.iter().find(|e| e.name == n).unwrap();
    // Software events open everywhere (as root, or with exclude_kernel otherwise).
    for n in ["task-clock", "cpu-clock", "page-faults", "context-switches"] {
        assert_eq!(get(n).available, Availability::Yes, "{n}");
    }
    // Hardware events: the catalogue's answer is the kernel's, checked here directly.
    let direct = Counter::open(
        &Attr::from_raw(get("instructions").attr().copied().unwrap()),
        &Target::this_thread(),
    );
    match direct {
        Ok(_) => assert_eq!(get("instructions").available, Availability::Yes),
        Err(e) if e.kind() == ErrorKind::NotSupported => {
            assert_eq!(
                get("instructions").available,
                Availability::No("not supported here".into())
            );
            assert!(cat.notes.iter().any(|n| n.contains("no hardware event")));
        }
        Err(e) => eprintln!("instructions: {e}"),
    }
    let tracepoints = cat
        .entries
        .iter()
        .filter(|e| e.kind == Kind::Tracepoint)
        .count();
    if let Some(t) = env.tracefs() {
        let on_disk: usize = perfkit_events::tracefs::subsystems(t)
            .iter()
            .map(|s| perfkit_events::tracefs::events_of(t, s).len())
            .sum();
        assert_eq!(tracepoints, on_disk);
    }
    // A narrow filter probes each tracepoint.
    let sched = list::catalogue(&env, Some("sched:sched_switch"), &ListOptions::default());
    if env.tracefs().is_some() {
        assert_eq!(sched.entries.len(), 1);
        assert_eq!(sched.entries[0].available, Availability::Yes);
    }
}
