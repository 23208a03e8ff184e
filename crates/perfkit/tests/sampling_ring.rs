//! The ring buffer against synthetic buffers (wrap-around) and the real kernel
//! (software events: context switches, page faults), records decoded with
//! perfkit-records.

use perfkit::sys;
use perfkit::{
    Attr, BackwardRecords, Counter, DrainEnd, Drainer, ErrorKind, PausedChild, RingBuffer,
    RingError, RingMode, RingRecords, RingSize, Sampler, SideBand, Software, Target, open_per_cpu,
    page_size,
};
use perfkit_records::{CallchainContext, Endian, RawData, Record, RecordParser};
use std::ffi::OsString;
use std::time::Duration;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

macro_rules! require_root {
    () => {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
    };
}

fn gettid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

fn getpid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

/// Fault in `pages` fresh anonymous pages (a private mmap, so malloc's reuse of
/// already-touched memory cannot hide the faults): exactly `pages` page faults.
fn touch_fresh_pages(pages: usize) {
    let ps = page_size();
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

/// Write a record (header + body) into `buf` at ring position `pos`, wrapping.
fn put(buf: &mut [u8], pos: u64, type_: u32, misc: u16, body: &[u8]) -> u64 {
    let n = buf.len();
    let size = 8 + body.len();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&type_.to_ne_bytes());
    bytes.extend_from_slice(&misc.to_ne_bytes());
    bytes.extend_from_slice(&(size as u16).to_ne_bytes());
    bytes.extend_from_slice(body);
    for (i, b) in bytes.iter().enumerate() {
        buf[(pos.wrapping_add(i as u64) as usize) & (n - 1)] = *b;
    }
    pos.wrapping_add(size as u64)
}

fn sample_body(ip: u64, pid: u32, tid: u32) -> Vec<u8> {
    let mut b = ip.to_ne_bytes().to_vec();
    b.extend_from_slice(&pid.to_ne_bytes());
    b.extend_from_slice(&tid.to_ne_bytes());
    b
}

#[test]
fn synthetic_wrap_yields_split_records_that_parse() {
    let mut attr = sys::perf_event_attr::new();
    attr.sample_type = sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID;
    let parser = RecordParser::new(&attr, Endian::NATIVE);
    let mut buf = vec![0u8; 128];
    // Tail 16 bytes before the end of the buffer, positions from a long-running ring:
    // the first record's header fits, its body straddles the end.
    let tail: u64 = (1 << 40) + 112;
    let mut head = tail;
    head = put(
        &mut buf,
        head,
        sys::PERF_RECORD_SAMPLE,
        2,
        &sample_body(0x1000, 1, 2),
    );
    // Then records that straddle the end on the next lap.
    let mut expected = vec![(0x1000u64, 1i32, 2i32)];
    for k in 0..8u64 {
        let ip = 0x2000 + k;
        head = put(
            &mut buf,
            head,
            sys::PERF_RECORD_SAMPLE,
            2,
            &sample_body(ip, 3, 4),
        );
        expected.push((ip, 3, 4));
        if head - tail > 100 {
            break;
        }
    }
    let mut splits = 0;
    let mut scratch = Vec::new();
    let mut got = Vec::new();
    for r in RingRecords::new(&buf, tail, head).expect("positions") {
        let raw = r.expect("record");
        if let RawData::Split(a, b) = raw.data {
            splits += 1;
            assert_eq!(a.len() + b.len(), 16);
        }
        let p = parser.parse_raw(&raw, &mut scratch).expect("parses");
        let Record::Sample(s) = p.record else {
            panic!("not a sample: {:?}", p.record)
        };
        got.push((s.ip.unwrap(), s.pid.unwrap(), s.tid.unwrap()));
    }
    assert_eq!(got, expected);
    assert!(splits >= 1, "a record must straddle the end");

    // Every start offset around the end (a header just before the end and a body at 0,
    // bodies split anywhere): each record comes back intact.
    let mut splits = 0;
    for start in (0..128u64).step_by(8) {
        let mut buf = vec![0u8; 128];
        let t = 128 * 7 + start;
        let h = put(&mut buf, t, 9, 0, &[7u8; 40]);
        let h = put(&mut buf, h, 10, 0, &[9u8; 24]);
        let recs: Vec<_> = RingRecords::new(&buf, t, h)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(recs.len(), 2);
        splits += recs
            .iter()
            .filter(|r| matches!(r.data, RawData::Split(..)))
            .count();
        let mut s = Vec::new();
        assert_eq!(recs[0].data.contiguous(&mut s), &[7u8; 40][..]);
        assert_eq!(recs[1].data.contiguous(&mut s), &[9u8; 24][..]);
    }
    assert!(splits >= 5, "{splits} split bodies");
}

#[test]
fn synthetic_errors_are_typed() {
    let mut buf = vec![0u8; 64];
    // head - tail beyond the buffer.
    assert!(matches!(
        RingRecords::new(&buf, 0, 65),
        Err(RingError::BadPositions { .. })
    ));
    // Not a power of two.
    assert!(RingRecords::new(&buf[..48], 0, 8).is_err());
    // A header claiming more than is there.
    put(&mut buf, 0, 9, 0, &[0; 8]);
    let mut w = RingRecords::new(&buf, 0, 8).unwrap();
    match w.next() {
        Some(Err(RingError::BadRecord {
            position: 0,
            size: 16,
            available: 8,
        })) => {}
        other => panic!("{other:?}"),
    }
    assert!(w.next().is_none(), "a walk ends after an error");
    // A zero-size header.
    let buf = vec![0u8; 64];
    let e = RingRecords::new(&buf, 0, 16).unwrap().next().unwrap();
    assert!(matches!(e, Err(RingError::BadRecord { size: 0, .. })));
    assert!(e.unwrap_err().to_string().contains("header size 0"));
}

#[test]
fn synthetic_backward_newest_first_and_stops_at_overwritten() {
    // The kernel writes downwards from 0: positions are negative (wrapping).
    let mut buf = vec![0u8; 64];
    let mut head = 0u64;
    let mut sizes = Vec::new();
    for k in 0..5u8 {
        let body = vec![k; 8 + 8 * (k as usize % 2)];
        let size = 8 + body.len() as u64;
        head = head.wrapping_sub(size);
        put(&mut buf, head, 9, 0, &body);
        sizes.push((k, size));
    }
    // 5 records of 16/24 bytes = 96 bytes > 64: the oldest ones are overwritten.
    let got: Vec<u8> = BackwardRecords::new(&buf, head, 0)
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            let mut s = Vec::new();
            r.data.contiguous(&mut s)[0]
        })
        .collect();
    // Newest is k=4 (16 bytes), then k=3 (24), then k=2 (16): 56 bytes; k=1 (24) would
    // reach 80 > 64.
    assert_eq!(got, vec![4, 3, 2]);
    // A partially filled ring stops at the zero header.
    let mut buf = vec![0u8; 64];
    let h = 0u64.wrapping_sub(16);
    put(&mut buf, h, 9, 0, &[1; 8]);
    assert_eq!(BackwardRecords::new(&buf, h, 0).unwrap().count(), 1);
    // Only what is newer than the previous read's head.
    let h2 = h.wrapping_sub(16);
    put(&mut buf, h2, 9, 0, &[2; 8]);
    let v: Vec<_> = BackwardRecords::new(&buf, h2, h).unwrap().collect();
    assert_eq!(v.len(), 1);
}

fn switch_attr() -> Attr {
    Attr::new(Software::ContextSwitches)
        .sample_period(1)
        .sample_type(
            sys::PERF_SAMPLE_IP
                | sys::PERF_SAMPLE_TID
                | sys::PERF_SAMPLE_TIME
                | sys::PERF_SAMPLE_CALLCHAIN
                | sys::PERF_SAMPLE_ID,
        )
        .read_format(sys::PERF_FORMAT_ID | sys::PERF_FORMAT_LOST)
}

fn sleep_switches(n: usize) {
    for _ in 0..n {
        std::thread::sleep(Duration::from_micros(50));
    }
}

#[test]
fn context_switch_samples_with_kernel_and_user_callchains() {
    require_root!();
    let attr = switch_attr();
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(8)).expect("open");
    let id = s.counter().id().expect("id");
    s.enable().unwrap();
    sleep_switches(20);
    s.disable().unwrap();
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let (mut samples, mut kernel, mut user) = (0, 0, 0);
    let mut last_time = 0;
    let tid = gettid();
    let n = s
        .ring()
        .drain(|raw| {
            let p = parser.parse_raw(&raw, &mut scratch).expect("parse");
            let Record::Sample(smp) = p.record else {
                return;
            };
            samples += 1;
            assert_eq!(smp.pid, Some(getpid()));
            assert_eq!(smp.tid, Some(tid));
            assert_eq!(smp.id, Some(id));
            let t = smp.time.unwrap();
            assert!(t >= last_time, "time goes forward");
            last_time = t;
            let cc = smp.callchain.expect("callchain");
            let frames: Vec<_> = cc.frames().collect();
            assert!(!frames.is_empty());
            if frames
                .iter()
                .any(|f| f.context == Some(CallchainContext::Kernel))
            {
                kernel += 1;
            }
            if frames
                .iter()
                .any(|f| f.context == Some(CallchainContext::User) && f.ip < (1 << 63))
            {
                user += 1;
            }
        })
        .expect("drain");
    assert!(n >= 20, "{n} records");
    assert!(samples >= 20, "one sample per switch, got {samples}");
    assert_eq!(kernel, samples, "every switch sample has kernel frames");
    assert_eq!(user, samples, "and user frames");
    // Consumed: nothing pending, tail published at the head.
    assert_eq!(s.ring_ref().pending_bytes(), 0);
    assert_eq!(s.ring_ref().control().tail(), s.ring_ref().control().head());
    // The count agrees with the samples.
    let c = s.counter().read().unwrap();
    assert_eq!(c.value, samples as u64);
    assert_eq!(c.lost, Some(0));
}

#[test]
fn ring_size_rules_and_mmap_errors() {
    require_root!();
    let attr = switch_attr();
    let c = Counter::open(&attr, &Target::this_thread()).unwrap();
    // 3 data pages: rejected before the kernel, with the kernel's errno.
    let e = RingBuffer::map(&c, RingSize::Pages(3)).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.detail().unwrap().contains("power-of-two"), "{e}");
    // The kernel agrees: 1+3 pages is EINVAL.
    let ps = page_size();
    // SAFETY: a fresh mapping request; unmapped below if it succeeds.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4 * ps,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&c)),
            0,
        )
    };
    assert_eq!(p, libc::MAP_FAILED);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::EINVAL)
    );
    // Bytes round up to a power of two of pages.
    let r = RingBuffer::map(&c, RingSize::Bytes(3 * ps)).unwrap();
    assert_eq!(r.data_size(), 4 * ps);
    drop(r);

    // A per-task inherit event on any CPU cannot be mmap'ed: explained.
    let inh = Counter::open(&attr.inherit(true), &Target::this_thread()).unwrap();
    let e = RingBuffer::map(&inh, RingSize::Pages(1)).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.detail().unwrap().contains("one event per CPU"), "{e}");
}

#[test]
fn aux_area_request_is_made_and_refusal_explained() {
    require_root!();
    let attr = switch_attr();
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(2)).unwrap();
    let e = s.ring().map_aux(RingSize::Pages(4)).unwrap_err();
    let ps = page_size() as u64;
    // The request went into the user page: after the 1 + 2 pages of the ring.
    assert_eq!(s.ring_ref().aux_request(), (3 * ps, 4 * ps));
    eprintln!("AUX refusal: {e}");
    assert_eq!(e.errno(), libc::EOPNOTSUPP, "{e}");
    assert_eq!(e.kind(), ErrorKind::NotSupported);
    assert!(e.detail().unwrap().contains("no AUX area"), "{e}");
    // A read-only ring cannot take an AUX area at all.
    let c = Counter::open(&attr, &Target::this_thread()).unwrap();
    let mut ro = RingBuffer::map_with(&c, RingSize::Pages(1), RingMode::Overwrite).unwrap();
    assert!(ro.map_aux(RingSize::Pages(1)).is_err());
}

#[test]
fn set_output_shares_one_ring() {
    require_root!();
    let base = Attr::new(Software::PageFaults)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_IDENTIFIER | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_IP);
    let sw = Attr::new(Software::ContextSwitches)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_IDENTIFIER | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_IP);
    let t = Target::this_thread();
    let mut s = Sampler::open(&base, &t, RingSize::Pages(16)).unwrap();
    let other = Counter::open(&sw, &t).unwrap();
    let (id_pf, id_cs) = (s.counter().id().unwrap(), other.id().unwrap());
    s.add_output(other).unwrap();
    // A redirected event's own mmap is refused (EBUSY), explained.
    // (EBUSY with the shared ring's size, EINVAL with another size.)
    let e = RingBuffer::map(&s.members()[0], RingSize::Pages(16)).unwrap_err();
    assert_eq!(e.errno(), libc::EBUSY);
    assert_eq!(e.kind(), ErrorKind::InvalidOperation);
    assert!(e.detail().unwrap().contains("redirected"), "{e}");
    let e = RingBuffer::map(&s.members()[0], RingSize::Pages(1)).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.detail().unwrap().contains("redirected"), "{e}");
    // A per-CPU event cannot share a per-task ring.
    let cpu_ev = Counter::open(&sw, &Target::cpu(0)).unwrap();
    let e = s.add_output(cpu_ev).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);

    s.enable().unwrap();
    touch_fresh_pages(64);
    sleep_switches(5);
    s.disable().unwrap();

    let parsers = [
        (vec![id_pf], *s.counter().attr().raw()),
        (vec![id_cs], *s.members()[0].attr().raw()),
    ];
    let multi = perfkit_records::MultiParser::new(
        Endian::NATIVE,
        parsers.iter().map(|(ids, a)| (ids.as_slice(), a)),
    )
    .unwrap();
    let mut scratch = Vec::new();
    let (mut pf, mut cs) = (0u64, 0u64);
    s.ring()
        .drain(|raw| {
            let (_, p) = multi.parse_raw(&raw, &mut scratch).expect("parse");
            if let Record::Sample(smp) = p.record {
                match smp.identifier {
                    Some(i) if i == id_pf => pf += 1,
                    Some(i) if i == id_cs => cs += 1,
                    other => panic!("unknown id {other:?}"),
                }
                assert_eq!(smp.tid, Some(gettid()));
            }
        })
        .unwrap();
    assert!(pf >= 64, "{pf} page-fault samples");
    assert!(cs >= 5, "{cs} switch samples");
    assert_eq!(pf, s.counter().read().unwrap().value);
    assert_eq!(cs, s.members()[0].read().unwrap().value);
}

#[test]
fn lost_records_add_up_to_the_kernels_lost_count() {
    require_root!();
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME)
        .read_format(sys::PERF_FORMAT_LOST | sys::PERF_FORMAT_ID)
        .sample_id_all(true);
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(1)).unwrap();

    let touch = touch_fresh_pages;
    s.enable().unwrap();
    touch(3000);
    // The kernel reports losses in a LOST record once there is room again.
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let (mut lost, mut samples, mut lost_records) = (0u64, 0u64, 0);
    let mut count = |raw: perfkit_records::RawRecord<'_>| {
        let p = parser.parse_raw(&raw, &mut scratch).expect("parse");
        match p.record {
            Record::Lost(l) => {
                lost += l.lost;
                lost_records += 1;
            }
            Record::Sample(_) => samples += 1,
            _ => {}
        }
    };
    s.ring().drain(&mut count).unwrap();
    touch(4);
    s.disable().unwrap();
    s.ring().drain(&mut count).unwrap();
    let c = s.counter().read().unwrap();
    eprintln!(
        "page faults {} samples {samples} lost {lost} in {lost_records} LOST records",
        c.value
    );
    assert!(lost_records >= 1);
    assert!(lost > 1000, "{lost}");
    assert_eq!(Some(lost), c.lost, "LOST records sum to PERF_FORMAT_LOST");
    assert_eq!(
        samples + lost,
        c.value,
        "every overflow is a sample or lost"
    );
}

#[test]
fn backward_ring_reads_newest_first() {
    require_root!();
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TIME)
        .write_backward(true);
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(1)).unwrap();
    assert!(s.ring_ref().is_backward());
    assert_eq!(s.ring_ref().mode(), RingMode::Overwrite);
    let ps = page_size();
    s.enable().unwrap();
    touch_fresh_pages(1000);
    s.disable().unwrap();
    s.ring().pause(true).unwrap();
    let head = s.ring_ref().control().head();
    // The head went down from 0.
    assert!((head as i64) < 0, "head {head:#x}");
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let mut times = Vec::new();
    for r in s.ring().records_backward() {
        let raw = r.unwrap();
        let p = parser.parse_raw(&raw, &mut scratch).unwrap();
        if let Record::Sample(smp) = p.record {
            times.push(smp.time.unwrap());
        }
    }
    s.ring().pause(false).unwrap();
    // 1000 faults of 24-byte samples overflow a 4 KiB ring: we see the newest ~170.
    let per = 24;
    assert!(
        times.len() >= ps / per - 2 && times.len() <= ps / per,
        "{} samples",
        times.len()
    );
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    // Nothing new since: an empty walk.
    assert_eq!(s.ring().records_backward().count(), 0);
}

#[test]
fn overwrite_forward_ring_reports_overrun() {
    require_root!();
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_IP);
    let c = Counter::open(&attr, &Target::this_thread()).unwrap();
    let mut r = RingBuffer::map_with(&c, RingSize::Pages(1), RingMode::Overwrite).unwrap();
    c.enable().unwrap();

    touch_fresh_pages(1200);
    c.disable().unwrap();
    let first: Vec<_> = r.records().collect();
    assert!(
        matches!(first[..], [Err(RingError::Overrun { .. })]),
        "{first:?}"
    );
    // Read-only: the tail was never written.
    assert_eq!(r.control().tail(), 0);
    // Next read resumes at the head: nothing pending.
    assert_eq!(r.records().count(), 0);
}

#[test]
fn drainer_follows_a_child_on_every_cpu_until_it_exits() {
    require_root!();
    let child = PausedChild::spawn(
        "/bin/sh".as_ref(),
        &[
            OsString::from("-c"),
            OsString::from("for i in 1 2 3 4 5 6 7 8; do /bin/sleep 0.01; done"),
        ],
    )
    .expect("spawn");
    let pid = child.pid();
    let attr = SideBand::TASK.apply(
        Attr::new(Software::ContextSwitches)
            .sample_period(1)
            .sample_type(sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_CPU | sys::PERF_SAMPLE_TIME)
            .inherit(true)
            .disabled(true)
            .enable_on_exec(true)
            .wakeup_events(1),
    );
    let mut samplers = open_per_cpu(&attr, pid, RingSize::Pages(4)).expect("per cpu");
    let mut rings: Vec<&mut RingBuffer> = samplers.iter_mut().map(Sampler::ring).collect();
    let shared: Vec<&RingBuffer> = rings.iter().map(|r| &**r).collect();
    let mut d = Drainer::new(&shared).unwrap();
    child.start().expect("start");
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let mut pids = std::collections::BTreeSet::new();
    let mut exits = 0;
    let mut per_cpu = vec![0u32; rings.len()];
    let end = d
        .run(&mut rings, Some(Duration::from_secs(10)), |i, raw| {
            let p = parser.parse_raw(&raw, &mut scratch).unwrap();
            match p.record {
                Record::Sample(s) => {
                    assert_eq!(s.cpu, Some(i as u32), "ring {i} holds CPU {i}'s samples");
                    pids.insert(s.pid.unwrap());
                    per_cpu[i] += 1;
                }
                Record::Exit(t) if t.pid == pid => exits += 1,
                _ => {}
            }
        })
        .expect("drain");
    let status = perfkit::wait(pid).unwrap();
    assert_eq!(status.shell_code(), 0);
    assert_eq!(end, DrainEnd::AllHungUp, "every ring hangs up at exit");
    assert!(pids.contains(&pid), "{pids:?}");
    assert!(pids.len() >= 9, "the shell and its 8 sleeps: {pids:?}");
    assert!(exits >= 1, "EXIT of the shell");
    assert!(per_cpu.iter().sum::<u32>() >= 16, "{per_cpu:?}");
}

#[test]
fn drainer_stops_from_another_thread() {
    require_root!();
    let attr = Attr::new(Software::ContextSwitches)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_TID)
        .disabled(false)
        .wakeup_events(1);
    let mut samplers = open_per_cpu(&attr, -1, RingSize::Pages(8)).expect("per cpu");
    let mut rings: Vec<&mut RingBuffer> = samplers.iter_mut().map(Sampler::ring).collect();
    let shared: Vec<&RingBuffer> = rings.iter().map(|r| &**r).collect();
    let mut d = Drainer::new(&shared).unwrap();
    let stop = d.stopper();
    let stop2 = stop.clone();
    let t = std::thread::spawn(move || {
        sleep_switches(20);
        stop2.stop();
    });
    let mut n = 0u64;
    let end = d.run(&mut rings, None, |_, _| n += 1).expect("drain");
    t.join().unwrap();
    assert_eq!(end, DrainEnd::Stopped);
    assert!(stop.is_stopped());
    assert!(
        n >= 20,
        "the stopping thread's own switches were sampled: {n}"
    );
}

/// Drop CAP_IPC_LOCK from the calling thread's effective set (capabilities are
/// per-thread), so the perf mlock limits apply to it even as root.
fn drop_ipc_lock_in_this_thread() -> bool {
    const CAP_IPC_LOCK: u32 = 14;
    const VERSION_3: u32 = 0x2008_0522;
    let mut header = [VERSION_3, 0u32]; // version, pid 0 = this thread
    let mut data = [0u32; 6]; // 2 x {effective, permitted, inheritable}
    // SAFETY: capget/capset with a valid header and a 2-element data array.
    unsafe {
        if libc::syscall(libc::SYS_capget, header.as_mut_ptr(), data.as_mut_ptr()) != 0 {
            return false;
        }
        data[0] &= !(1 << CAP_IPC_LOCK);
        header[1] = 0;
        libc::syscall(libc::SYS_capset, header.as_mut_ptr(), data.as_ptr()) == 0
    }
}

#[test]
fn mmap_over_the_mlock_limit_explains_the_limits() {
    require_root!();
    let paranoid = perfkit::read_paranoid().unwrap_or(2);
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid rlimit to fill.
    unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) };
    if paranoid < 0 || rl.rlim_cur == libc::RLIM_INFINITY {
        eprintln!("skipped: paranoid {paranoid} or unlimited RLIMIT_MEMLOCK: no limit applies");
        return;
    }
    let err = std::thread::spawn(|| {
        assert!(drop_ipc_lock_in_this_thread(), "capset");
        let attr = switch_attr();
        let c = Counter::open(&attr, &Target::this_thread()).unwrap();
        // Far beyond perf_event_mlock_kb per CPU + RLIMIT_MEMLOCK.
        RingBuffer::map(&c, RingSize::Bytes(256 << 20)).map(|_| ())
    })
    .join()
    .unwrap()
    .expect_err("a 256 MiB ring without CAP_IPC_LOCK");
    eprintln!("{err}");
    assert_eq!(err.errno(), libc::EPERM);
    let d = err.detail().unwrap();
    assert!(
        d.contains("perf_event_mlock_kb") && d.contains("RLIMIT_MEMLOCK"),
        "{d}"
    );
    let kib = ((256 << 20) + page_size()) / 1024;
    assert!(
        d.contains(&format!("{kib} KiB")),
        "the ring's size with its user page: {d}"
    );
}

/// A model run over many laps of a small synthetic ring: a producer that writes records
/// of random sizes (multiples of 8, as the kernel's) only into space the consumer has
/// released, and a consumer that walks `tail..head` and sometimes stops early. Every
/// record comes back once, in order, with its bytes; a record is `Split` exactly when
/// its body crosses the end of the buffer.
#[test]
fn synthetic_producer_consumer_over_many_laps() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        // xorshift64*
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    for len in [64usize, 256, 4096] {
        let mut buf = vec![0u8; len];
        // Start a few bytes before a 2^32 boundary of the free-running positions.
        let mut tail: u64 = (1 << 32) - 3 * len as u64;
        let mut head = tail;
        let mut written: std::collections::VecDeque<(u64, u32, Vec<u8>)> = Default::default();
        let mut serial = 0u32;
        let (mut seen, mut splits) = (0usize, 0usize);
        for _ in 0..20_000 {
            // Produce while there is room.
            for _ in 0..(next() % 4) {
                let body_len = 8 * (next() % (len as u64 / 16)) as usize;
                let size = 8 + body_len as u64;
                if head + size - tail > len as u64 {
                    break;
                }
                let body: Vec<u8> = (0..body_len).map(|i| (serial as usize + i) as u8).collect();
                written.push_back((head, serial, body.clone()));
                head = put(&mut buf, head, serial, 0, &body);
                serial += 1;
            }
            // Consume some or all of it.
            let mut walk = RingRecords::new(&buf, tail, head).expect("positions");
            let take = next() % 5;
            let mut n = 0;
            while n < take || take == 4 {
                let Some(r) = walk.next() else { break };
                let r = r.expect("record");
                let (pos, s, body) = written.pop_front().expect("a record was written");
                assert_eq!(r.type_, s, "in order, none lost or repeated");
                let start = (pos as usize + 8) % len;
                let crosses = start + body.len() > len;
                assert_eq!(matches!(r.data, RawData::Split(..)), crosses, "at {pos:#x}");
                splits += usize::from(crosses);
                let mut scratch = Vec::new();
                assert_eq!(r.data.contiguous(&mut scratch), &body[..]);
                n += 1;
                seen += 1;
            }
            tail = walk.position();
        }
        assert!(seen > 1000, "{len}: {seen} records");
        assert!(splits > 10, "{len}: {splits} split records");
        assert!(head > 1 << 32, "positions crossed 2^32");
    }
}

/// A thread that faults in fresh pages until told to stop; sends its tid first.
fn faulting_worker(
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (i32, std::thread::JoinHandle<()>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        tx.send(gettid()).unwrap();
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            touch_fresh_pages(16);
        }
    });
    (rx.recv().unwrap(), h)
}

#[test]
fn overwrite_walks_while_the_kernel_writes_are_never_torn() {
    require_root!();
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let (tid, worker) = faulting_worker(stop.clone());
    let st =
        sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME | sys::PERF_SAMPLE_ADDR;
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .sample_type(st)
        .write_backward(true);
    let mut s = Sampler::open(&attr, &Target::pid(tid), RingSize::Pages(1)).unwrap();
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    s.enable().unwrap();
    let mut seen = 0;
    for round in 0..20 {
        // Let the kernel lap the one-page ring many times over.
        std::thread::sleep(Duration::from_millis(2));
        let mut last_time = u64::MAX;
        for (i, r) in s.ring().records_backward().enumerate() {
            if i == 3 {
                // Look at the records slowly: the kernel keeps faulting meanwhile.
                std::thread::sleep(Duration::from_millis(5));
            }
            let raw = r.unwrap_or_else(|e| panic!("round {round}: {e}"));
            assert_eq!(raw.data.len(), 32, "round {round}: record size");
            let p = parser.parse_raw(&raw, &mut scratch).unwrap();
            let Record::Sample(smp) = p.record else {
                panic!("round {round}: not a sample: {:?}", p.record)
            };
            assert_eq!(smp.pid, Some(getpid()), "round {round}");
            assert_eq!(smp.tid, Some(tid), "round {round}");
            let t = smp.time.unwrap();
            assert!(
                t <= last_time,
                "round {round}: newest first ({t} after {last_time})"
            );
            last_time = t;
            assert_ne!(smp.addr, Some(0), "round {round}");
            seen += 1;
        }
    }
    assert!(seen > 100, "only {seen} records");
    // The output runs again after the walks: the head keeps moving.
    let h = s.ring_ref().control().head();
    let mut moved = false;
    for _ in 0..5000 {
        if s.ring_ref().control().head() != h {
            moved = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(moved, "the ring's output stayed paused after the walk");
    // A ring the user paused stays paused through a walk.
    s.ring().pause(true).unwrap();
    let h = s.ring_ref().control().head();
    let _ = s.ring().records_backward().count();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(s.ring_ref().control().head(), h, "a user pause was lifted");
    s.ring().pause(false).unwrap();
    stop.store(true, Ordering::Relaxed);
    worker.join().unwrap();
}

#[test]
fn overwrite_forward_walk_needs_no_pause_from_the_caller() {
    require_root!();
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID);
    let c = Counter::open(&attr, &Target::this_thread()).unwrap();
    let mut r = RingBuffer::map_with(&c, RingSize::Pages(4), RingMode::Overwrite).unwrap();
    c.enable().unwrap();
    touch_fresh_pages(50);
    let n = r
        .records()
        .map(|rec| rec.unwrap())
        .filter(|rec| rec.type_ == sys::PERF_RECORD_SAMPLE)
        .count();
    assert!(n >= 50, "{n} samples");
    // Output was resumed: new faults arrive.
    touch_fresh_pages(50);
    c.disable().unwrap();
    let m = r
        .records()
        .map(|rec| rec.unwrap())
        .filter(|rec| rec.type_ == sys::PERF_RECORD_SAMPLE)
        .count();
    assert!(m >= 50, "{m} samples after the first walk");
}

#[test]
fn drain_copy_hands_out_the_kernels_records_as_written_over_many_laps() {
    require_root!();
    let attr = switch_attr();
    // 8 pages: a few dozen switch samples per lap, so the copies wrap around the end.
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(8)).expect("open");
    let data_size = s.ring_ref().data_size();
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut block = Vec::new();
    let (mut records, mut samples, mut bytes, mut crossed) = (0usize, 0u64, 0usize, 0usize);
    let mut sizes = std::collections::BTreeSet::new();
    s.enable().unwrap();
    for round in 0..300 {
        sleep_switches(4);
        block.clear();
        // Something before the records stays as it was.
        block.extend_from_slice(&[0xee; 8]);
        let mut seen = Vec::new();
        // What the kernel had written before the copy: all of it is taken (a switch of this
        // thread after the copy, under load, may add more; that stays for the next round).
        let head_before = s.ring_ref().control().head();
        let n = s
            .ring()
            .drain_copy(&mut block, |at, rec| seen.push((at, rec.type_)))
            .expect("drain_copy");
        assert_eq!(n, seen.len());
        assert_eq!(&block[..8], &[0xee; 8], "round {round}");
        // The offsets handed out are the records of the block, back to back.
        let mut at = 8;
        for &(off, type_) in &seen {
            assert_eq!(off, at, "round {round}");
            let (raw, size) = perfkit::RawRecord::from_bytes(&block[at..], Endian::NATIVE)
                .expect("a whole record");
            assert_eq!(raw.type_, type_);
            let RawData::Single(body) = raw.data else {
                panic!("a block record is contiguous");
            };
            let p = parser.parse(raw.type_, raw.misc, body).expect("parses");
            if let Record::Sample(smp) = p.record {
                assert_eq!(smp.tid, Some(gettid()));
                assert!(smp.callchain.is_some_and(|c| c.frames().count() > 0));
                samples += 1;
            }
            if bytes % data_size + size > data_size {
                crossed += 1;
            }
            sizes.insert(size);
            bytes += size;
            at += size;
        }
        assert_eq!(at, block.len(), "round {round}: nothing after the records");
        records += n;
        assert!(
            s.ring_ref().control().tail() >= head_before,
            "round {round}: the copy left records written before it"
        );
    }
    s.disable().unwrap();
    let mut rest = Vec::new();
    let n = s.ring().drain_copy(&mut rest, |_, _| {}).unwrap();
    records += n;
    samples += {
        let mut k = 0;
        let mut at = 0;
        while at < rest.len() {
            let (raw, size) = perfkit::RawRecord::from_bytes(&rest[at..], Endian::NATIVE).unwrap();
            k += u64::from(raw.type_ == sys::PERF_RECORD_SAMPLE);
            at += size;
        }
        k
    };
    let c = s.counter().read().unwrap();
    // Every switch is one sample, written or counted as lost by the kernel.
    assert_eq!(samples + c.lost.unwrap_or(0), c.value, "{records} records");
    assert!(samples >= 1200, "4 switches a round at least: {samples}");
    assert!(
        bytes > 3 * data_size,
        "{bytes} bytes: several laps of {data_size}"
    );
    // Records of one size that does not divide the ring cannot all end on its end:
    // some were copied in two pieces. (Mixed sizes may tile it exactly.)
    eprintln!("{crossed} records wrapped around the end; sizes {sizes:?}");
    if let [only] = sizes.iter().collect::<Vec<_>>()[..]
        && !only.is_power_of_two()
    {
        assert!(
            crossed > 0,
            "a record of {only} bytes wrapped around the end"
        );
    }
}

/// page-faults of this thread at period 1 with callchains: one sample per fresh page.
fn fault_attr() -> Attr {
    Attr::new(Software::PageFaults)
        .sample_period(1)
        .exclude_kernel(false)
        .sample_type(
            sys::PERF_SAMPLE_IP
                | sys::PERF_SAMPLE_TID
                | sys::PERF_SAMPLE_CALLCHAIN
                | sys::PERF_SAMPLE_ID,
        )
}

#[test]
fn drain_copy_of_hundreds_of_kilobytes_walks_records_across_its_copy_pieces() {
    require_root!();
    // drain_copy copies 64 KiB at a time and walks the headers of each piece: a pass of
    // several pieces, wrapping the end of the ring, must hand out exactly the records the
    // kernel wrote, including those that straddle two pieces.
    const PIECE: usize = 64 << 10;
    let attr = fault_attr();
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(128)).expect("open");
    let data_size = s.ring_ref().data_size();
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    s.enable().unwrap();
    let (mut straddling, mut wrapped, mut big_passes) = (0usize, 0usize, 0usize);
    for round in 0..4 {
        // Fresh pages until the ring holds three pieces' worth (about 100 bytes a fault
        // sample); the ring holds eight, and the next pass starts past this one's end, so
        // one of the passes wraps the end of the ring.
        let mut touched = 0usize;
        while {
            let c = s.ring_ref().control();
            ((c.head() - c.tail()) as usize) < 3 * PIECE
        } {
            touch_fresh_pages(100);
            touched += 100;
            assert!(touched <= 20_000, "round {round}: the ring does not fill");
        }
        let head = s.ring_ref().control().head();
        let tail = s.ring_ref().control().tail();
        let pending = (head - tail) as usize;
        let mut block = vec![0xee; 8];
        let mut seen = Vec::new();
        let n = s
            .ring()
            .drain_copy(&mut block, |at, rec| {
                seen.push((at, rec.type_, rec.data.len()))
            })
            .expect("drain_copy");
        assert_eq!(n, seen.len());
        assert_eq!(&block[..8], &[0xee; 8], "round {round}");
        // Everything written before the copy was taken (more may have come after).
        assert!(
            block.len() - 8 >= pending,
            "round {round}: {} < {pending}",
            block.len() - 8
        );
        if pending > 2 * PIECE {
            big_passes += 1;
        }
        if (tail as usize % data_size) + pending > data_size {
            wrapped += 1;
        }
        let mut at = 8;
        let mut samples = 0u64;
        for &(off, type_, len) in &seen {
            assert_eq!(off, at, "round {round}: records back to back");
            let (raw, size) = perfkit::RawRecord::from_bytes(&block[at..], Endian::NATIVE)
                .expect("a whole record");
            assert_eq!((raw.type_, raw.data.len()), (type_, len));
            let RawData::Single(body) = raw.data else {
                panic!("a block record is contiguous");
            };
            let p = parser.parse(raw.type_, raw.misc, body).expect("parses");
            if let Record::Sample(smp) = p.record {
                assert_eq!(smp.tid, Some(gettid()), "round {round}");
                assert!(smp.callchain.is_some_and(|c| c.frames().count() > 0));
                samples += 1;
            }
            if (at - 8) / PIECE != (at - 8 + size - 1) / PIECE {
                straddling += 1;
            }
            at += size;
        }
        assert_eq!(at, block.len(), "round {round}: nothing after the records");
        // One sample per fresh page at least (the test's own allocations may add some).
        assert!(
            samples >= 1200,
            "round {round}: {samples} samples for 1200 faults"
        );
    }
    s.disable().unwrap();
    assert_eq!(big_passes, 4, "passes over two pieces");
    assert!(wrapped >= 1, "no pass wrapped the end of the ring");
    assert!(straddling >= 1, "no record straddled two pieces");
}

#[test]
fn a_lease_lends_the_kernels_records_in_place_until_given_back() {
    require_root!();
    // lease: the pending records read in place; the tail stays put (the kernel writes
    // nothing over them) until release, and the lent bytes are the records the walk
    // handed out, back to back, wrapping the end of the ring.
    let attr = fault_attr();
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(16)).expect("open");
    let data_size = s.ring_ref().data_size();
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    s.enable().unwrap();
    let mut wrapped = 0usize;
    for round in 0..12 {
        // 100 fault samples of about 100 bytes: well within the 64 KiB ring.
        touch_fresh_pages(100);
        let mut samples = 0u64;
        // The published tail may lag what earlier walks took (a walk publishes at the
        // start of the next one).
        let tail = s.ring_ref().control().tail();
        let head = s.ring_ref().control().head();
        let pending = s.ring_ref().pending_bytes();
        let mut seen = Vec::new();
        let lease = s
            .ring()
            .lease(|at, rec| seen.push((at, rec.type_, rec.data.len())))
            .expect("lease")
            .expect("a consume-mode ring lends");
        assert!(lease.len() as u64 >= pending, "round {round}");
        // Lent and not given back: nothing more is lent, and the tail has not moved even
        // after a walk of what came since.
        assert!(s.ring().lease(|_, _| {}).unwrap().is_none());
        let _ = s.ring().records().count();
        assert_eq!(s.ring_ref().control().tail(), tail, "round {round}");
        let [a, b] = lease.parts();
        assert_eq!(a.len() + b.len(), lease.len());
        if !b.is_empty() {
            wrapped += 1;
        }
        let bytes: Vec<u8> = [a, b].concat();
        let mut at = 0;
        let mut scratch = Vec::new();
        for &(off, type_, len) in &seen {
            assert_eq!(off, at, "round {round}: records back to back");
            let rec = lease.record(off, &mut scratch).expect("a whole record");
            assert_eq!(rec, &bytes[at..at + rec.len()]);
            let (raw, size) = perfkit::RawRecord::from_bytes(rec, Endian::NATIVE).unwrap();
            assert_eq!((raw.type_, raw.data.len(), size), (type_, len, rec.len()));
            let RawData::Single(body) = raw.data else {
                panic!("contiguous");
            };
            if let Record::Sample(smp) = parser.parse(raw.type_, raw.misc, body).unwrap().record {
                assert_eq!(smp.tid, Some(gettid()));
                samples += 1;
            }
            at += size;
        }
        assert_eq!(at, lease.len(), "round {round}: nothing after the records");
        assert!(
            samples >= 100,
            "round {round}: {samples} samples for 100 faults"
        );
        s.ring().release(lease);
        // Given back: the tail is past everything the kernel had written before the lease.
        assert!(
            s.ring_ref().control().tail() >= head,
            "round {round}: not given back"
        );
        // What the walk above took (lent or not) is consumed now; drain the rest.
        let _ = s.ring().records().count();
    }
    s.disable().unwrap();
    assert!(
        wrapped >= 1,
        "no lease wrapped the end of the {data_size}-byte ring"
    );
}

#[test]
fn a_freed_lease_gives_its_space_to_the_kernel_before_the_ring_gets_it_back() {
    require_root!();
    // A writer that has written a lease's bytes frees them (RingLease::free) on its own
    // thread: the tail moves to the lease's end at once, not when the ring gets the lease
    // back, and not past records the ring handed out after the lease.
    let attr = fault_attr();
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(16)).expect("open");
    s.enable().unwrap();
    for round in 0..6 {
        touch_fresh_pages(100);
        let tail = s.ring_ref().control().tail();
        let mut lease = s
            .ring()
            .lease(|_, _| {})
            .expect("lease")
            .expect("a consume-mode ring lends");
        let end = tail + lease.len() as u64;
        assert!(
            lease.len() >= 100 * 16,
            "round {round}: {} bytes",
            lease.len()
        );
        // Records that come after the lease are handed out by a walk, and stay the ring's.
        touch_fresh_pages(20);
        let later = s.ring().records().count();
        assert!(
            later >= 20,
            "round {round}: {later} records after the lease"
        );
        assert_eq!(s.ring_ref().control().tail(), tail, "round {round}: lent");
        let lease_len = lease.len();
        let lease = std::thread::scope(|t| {
            t.spawn(move || {
                lease.free();
                lease
            })
            .join()
            .unwrap()
        });
        assert_eq!(
            s.ring_ref().control().tail(),
            end,
            "round {round}: the {lease_len} freed bytes are the kernel's, the later records not"
        );
        assert!(
            lease.is_empty(),
            "round {round}: a freed lease lends nothing"
        );
        assert_eq!(lease.parts().map(<[u8]>::len), [0, 0]);
        assert!(lease.record(0, &mut Vec::new()).is_none());
        // The ring lends nothing more until it has the lease back, then publishes the
        // tail past the later walk too.
        assert!(s.ring().lease(|_, _| {}).unwrap().is_none());
        s.ring().release(lease);
        assert!(
            s.ring_ref().control().tail() > end,
            "round {round}: the walk after the lease is consumed on release"
        );
        touch_fresh_pages(10);
        let next = s.ring().lease(|_, _| {}).unwrap().expect("lends again");
        assert!(next.len() >= 10 * 16, "round {round}: {}", next.len());
        s.ring().release(next);
    }
    s.disable().unwrap();
}
