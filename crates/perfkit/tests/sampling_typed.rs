//! Typed sampling: a `Sampler` decodes its own records (one parser built from its
//! attrs), across the ring's end and for several events sharing one ring.

use perfkit::records::Record;
use perfkit::{Attr, Counter, RecordError, RingSize, SampleType, Sampler, Software, Target};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn gettid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

/// Fault in `pages` fresh anonymous pages (a private mmap, so the allocator's reuse of
/// touched memory cannot hide the faults): exactly `pages` page faults.
fn touch_fresh_pages(pages: usize) {
    let ps = perfkit::page_size();
    // SAFETY: a new private anonymous mapping, written only inside its bounds, then
    // unmapped.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            pages * ps,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        for i in 0..pages {
            std::ptr::write_volatile(p.cast::<u8>().add(i * ps), 1);
        }
        libc::munmap(p, pages * ps);
    }
}

#[test]
fn records_split_at_the_ring_end_decode_like_the_others() {
    let st = SampleType::IP | SampleType::TID | SampleType::ADDR | SampleType::PERIOD;
    // 40-byte records in a one-page ring: some straddle its end as the ring wraps.
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .exclude_kernel(!is_root())
        .sample_type(st);
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(1)).unwrap();
    let me = gettid();
    let mut samples = 0;
    for _ in 0..20 {
        s.enable().unwrap();
        touch_fresh_pages(30);
        s.disable().unwrap();
        s.for_each_record(|rec| match rec.record {
            Record::Sample(smp) => {
                assert_eq!(smp.tid, Some(me));
                assert_eq!(smp.period, Some(1));
                assert!(smp.addr.is_some_and(|a| a != 0));
                samples += 1;
            }
            other => panic!("unexpected {other:?}"),
        })
        .unwrap();
    }
    // 600 pages touched; the allocator may add a few faults of its own.
    assert!(samples >= 600, "{samples} samples");
}

#[test]
fn shared_ring_decodes_each_events_records() {
    let st = SampleType::IDENTIFIER | SampleType::TID | SampleType::IP;
    let faults = Attr::new(Software::PageFaults)
        .sample_period(1)
        .exclude_kernel(!is_root())
        .sample_type(st);
    let switches = Attr::new(Software::ContextSwitches)
        .sample_period(1)
        .exclude_kernel(!is_root())
        .sample_type(st | SampleType::TIME);
    let t = Target::this_thread();
    let mut s = Sampler::open(&faults, &t, RingSize::Pages(16)).unwrap();
    s.add_output(Counter::open(&switches, &t).unwrap()).unwrap();
    let (id_faults, id_switches) = (s.counter().id().unwrap(), s.members()[0].id().unwrap());
    s.enable().unwrap();
    touch_fresh_pages(10);
    std::thread::sleep(std::time::Duration::from_millis(2));
    s.disable().unwrap();
    let (mut nf, mut ns) = (0, 0);
    s.for_each_record(|rec| {
        let Record::Sample(smp) = rec.record else {
            return;
        };
        if smp.identifier == Some(id_faults) {
            assert_eq!(smp.time, None, "the page-fault attr has no TIME");
            nf += 1;
        } else {
            assert_eq!(smp.identifier, Some(id_switches));
            assert!(smp.time.is_some(), "decoded with the switch attr");
            ns += 1;
        }
    })
    .unwrap();
    assert!(nf >= 10, "{nf} fault samples");
    assert!(ns >= 1, "{ns} switch samples");
}

#[test]
fn events_without_ids_cannot_share_a_decoded_ring() {
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .exclude_kernel(!is_root())
        .sample_type(SampleType::IP);
    let t = Target::this_thread();
    let mut s = Sampler::open(&attr, &t, RingSize::Pages(4)).unwrap();
    s.add_output(Counter::open(&attr, &t).unwrap()).unwrap();
    let e = s.for_each_record(|_| {}).unwrap_err();
    assert!(matches!(e, RecordError::Events(_)), "{e:?}");
    let source = std::error::Error::source(&e).unwrap().to_string();
    assert!(source.contains("PERF_SAMPLE_IDENTIFIER"), "{source}");
    // Raw reads still work.
    s.for_each_raw(|_| {}).unwrap();
}
