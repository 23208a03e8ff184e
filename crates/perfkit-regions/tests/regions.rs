//! Regions against the real kernel: page faults of a region that touches N fresh pages,
//! exact call counts, nesting, threads, start/stop errors.

use perfkit_regions::{Error, Regions};

const PAGES: usize = 256;

/// Touch `n` fresh anonymous pages (no huge pages, so one fault each).
fn touch_fresh_pages(n: usize) {
    let page = 4096;
    // SAFETY: a private anonymous mapping of n pages; no other memory is affected.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n * page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // SAFETY: p is the mapping just made, n*page bytes long.
    unsafe { libc::madvise(p, n * page, libc::MADV_NOHUGEPAGE) };
    for i in 0..n {
        // SAFETY: i*page is inside the mapping.
        unsafe { std::ptr::write_volatile(p.cast::<u8>().add(i * page), 1) };
    }
    // SAFETY: unmapping exactly the mapping made above.
    unsafe { libc::munmap(p, n * page) };
}

#[test]
fn page_faults_and_calls_of_nested_regions() {
    let r = Regions::new("page-faults,task-clock").unwrap();
    assert_eq!(r.events(), ["page-faults", "task-clock"]);
    r.thread_init().unwrap();
    {
        let _outer = r.enter("outer").unwrap();
        for _ in 0..3 {
            let _inner = r.enter("touch").unwrap();
            touch_fresh_pages(PAGES);
        }
        r.start("empty").unwrap();
        r.stop("empty").unwrap();
    }
    let rep = r.report();
    assert_eq!(rep.threads.len(), 1);
    let tid = rep.threads[0].tid;
    let touch = rep.region(tid, "touch").unwrap();
    let outer = rep.region(tid, "outer").unwrap();
    let empty = rep.region(tid, "empty").unwrap();
    assert_eq!((touch.calls, outer.calls, empty.calls), (3, 1, 1));
    let pf = touch.counts[0].value;
    assert!(
        (3 * PAGES as u64..=3 * PAGES as u64 + 64).contains(&pf),
        "page faults {pf} for 3 x {PAGES} fresh pages"
    );
    assert!(
        outer.counts[0].value >= pf,
        "outer includes the inner regions"
    );
    assert!(empty.counts[0].value <= 2, "{:?}", empty.counts);
    // task-clock is CPU time: no more than the region's wall time (one thread), and some.
    let tc = touch.counts[1];
    assert!(
        tc.value > 0 && tc.value <= touch.time_ns + touch.time_ns / 50 + 60_000,
        "{tc:?} vs {}",
        touch.time_ns
    );
    assert!(
        tc.enabled_ns >= tc.running_ns && tc.running_ns > 0,
        "{tc:?}"
    );
    assert!(outer.time_ns >= touch.time_ns);
    let table = rep.table();
    assert!(
        table.contains("Region touch") && table.contains("page-faults"),
        "{table}"
    );
}

#[test]
fn threads_are_counted_apart_and_summed() {
    let r = Regions::new("page-faults").unwrap();
    std::thread::scope(|s| {
        for k in 1..=2u64 {
            let r = &r;
            s.spawn(move || {
                for _ in 0..k * 5 {
                    let _g = r.enter("work").unwrap();
                    touch_fresh_pages(16);
                }
            });
        }
    });
    let rep = r.report();
    assert_eq!(rep.threads.len(), 2);
    let mut calls: Vec<u64> = rep.threads.iter().map(|t| t.regions[0].calls).collect();
    calls.sort();
    assert_eq!(calls, [5, 10]);
    let (sum, n) = &rep.summed()[0];
    assert_eq!((sum.calls, *n), (15, 2));
    assert!(
        (15 * 16..=15 * 16 + 64).contains(&sum.counts[0].value),
        "{sum:?}"
    );
    assert!(rep.table().contains("SUM"));
}

#[test]
fn stop_without_start_and_reset_and_checkpoint() {
    let r = Regions::new("page-faults").unwrap();
    let e = r.stop("never").unwrap_err();
    assert!(matches!(e, Error::NotStarted(ref n) if n == "never"), "{e}");
    assert!(e.to_string().contains("not started"));
    r.start("a").unwrap();
    touch_fresh_pages(32);
    r.checkpoint("a").unwrap();
    let got = r.get("a").unwrap().unwrap();
    assert_eq!(got.calls, 0);
    assert!(got.counts[0].value >= 32);
    r.stop("a").unwrap();
    assert_eq!(r.get("a").unwrap().unwrap().calls, 1);
    r.reset("a").unwrap();
    let got = r.get("a").unwrap().unwrap();
    assert_eq!((got.calls, got.counts[0].value), (0, 0));
    assert!(r.stop("a").is_err(), "a was stopped already");
}

#[test]
fn bad_events_are_errors() {
    let e = Regions::new("no-such-event").unwrap_err();
    assert!(matches!(e, Error::Parse(_)), "{e}");
    assert!(matches!(
        Regions::new(""),
        Err(Error::Parse(_) | Error::NoEvents)
    ));
}

#[test]
fn event_sets_switch_between_regions_and_scale() {
    let r = Regions::new("page-faults;task-clock").unwrap();
    assert_eq!(r.sets(), 2);
    for i in 0..4 {
        let g = r.enter("touch").unwrap();
        touch_fresh_pages(PAGES);
        let e = r.next_set().unwrap_err();
        assert!(
            matches!(e, Error::SwitchInRegion(ref n) if n == "touch"),
            "{e}"
        );
        drop(g);
        assert_eq!(r.next_set().unwrap(), (i + 1) % 2);
    }
    let got = r.get("touch").unwrap().unwrap();
    assert_eq!(got.calls, 4);
    let (pf, tc) = (got.counts[0], got.counts[1]);
    // page-faults counted in calls 0 and 2 only: exactly their pages.
    assert!(
        (2 * PAGES as u64..=2 * PAGES as u64 + 64).contains(&pf.value),
        "{pf:?}"
    );
    // Each event was enabled for the region's whole time and ran for its set's share.
    for c in [pf, tc] {
        assert_eq!(c.enabled_ns, got.time_ns, "{c:?}");
        assert!(c.running_ns > 0 && c.running_ns < c.enabled_ns, "{c:?}");
    }
    assert_eq!(pf.running_ns + tc.running_ns, got.time_ns);
    // The estimate scales the counted half up to the whole region time.
    let est = pf.scaled().unwrap();
    assert!(est > pf.value as f64, "{est} {pf:?}");
    assert!(rep_has_both_paths(&r), "{:?}", r.report().read_paths);
}

fn rep_has_both_paths(r: &Regions) -> bool {
    r.report().read_paths[0].split('/').count() == 2
}
