//! Records the real kernel wrote: a `page-faults` software event sampling this thread at
//! period 1 with IDENTIFIER|IP|TID|TIME|ID|CPU|PERIOD|READ|CALLCHAIN, plus comm, task,
//! mmap, mmap_data and mmap2 records with `sample_id_all`, read through a small ring that
//! is drained while the test runs, so records wrap around its end and arrive split.
//!
//! The library is `#![forbid(unsafe_code)]`; the system calls and the ring mapping live
//! here, in the test.

use perfkit_records::*;
use perfkit_sys::*;
use std::sync::atomic::{Ordering, fence};

const DATA_PAGES: usize = 2;

struct Ring {
    fd: i32,
    base: *mut u8,
    len: usize,
    page: usize,
}

impl Ring {
    fn header(&self) -> *mut perf_event_mmap_page {
        self.base.cast()
    }
    fn data(&self) -> &[u8] {
        // SAFETY: the mapping is len bytes long and stays mapped while self lives; the
        // data area starts one page in. The kernel writes only beyond data_head, which we
        // do not read.
        unsafe { std::slice::from_raw_parts(self.base.add(self.page), self.len - self.page) }
    }
    fn head(&self) -> u64 {
        // SAFETY: reading a field of the mapped user page; volatile because the kernel
        // updates it. The acquire fence pairs with the kernel's smp_wmb before it
        // publishes data_head.
        let h = unsafe { std::ptr::read_volatile(&raw const (*self.header()).data_head) };
        fence(Ordering::Acquire);
        h
    }
    fn set_tail(&self, tail: u64) {
        // All reads of the records are done before the kernel may reuse their space
        // (pairs with the kernel's smp_mb before it reads data_tail).
        fence(Ordering::SeqCst);
        // SAFETY: the page is mapped read-write; data_tail is ours to write.
        unsafe { std::ptr::write_volatile(&raw mut (*self.header()).data_tail, tail) };
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping and closing the fd this struct owns.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
            libc::close(self.fd);
        }
    }
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

#[derive(Default)]
struct Seen {
    samples: usize,
    split: usize,
    mmap2_ours: usize,
    mmap2: usize,
    comm_ours: usize,
    lost: u64,
    other: Vec<u32>,
    last_time: u64,
    kernel_chains: usize,
    user_chains: usize,
}

#[test]
fn decodes_what_the_kernel_wrote() {
    let mut attr = perf_event_attr::new();
    attr.type_ = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_PAGE_FAULTS;
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_IDENTIFIER
        | PERF_SAMPLE_IP
        | PERF_SAMPLE_TID
        | PERF_SAMPLE_TIME
        | PERF_SAMPLE_ID
        | PERF_SAMPLE_CPU
        | PERF_SAMPLE_PERIOD
        | PERF_SAMPLE_READ
        | PERF_SAMPLE_CALLCHAIN;
    attr.read_format =
        PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
    attr.flags = attr_flags::DISABLED
        | attr_flags::COMM
        | attr_flags::COMM_EXEC
        | attr_flags::TASK
        | attr_flags::MMAP
        | attr_flags::MMAP_DATA
        | attr_flags::MMAP2
        | attr_flags::SAMPLE_ID_ALL
        | attr_flags::EXCLUDE_HV;
    attr.wakeup_events = 1;

    // SAFETY: attr is a valid, writable perf_event_attr of attr.size bytes.
    let fd = unsafe { perf_event_open(&mut attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC as _) };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        eprintln!("skipping: perf_event_open(page-faults) failed: {err}");
        return;
    }
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let len = page * (1 + DATA_PAGES);
    // SAFETY: mapping a perf fd read-write, 1 + 2^n pages, as the ABI asks.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    assert_ne!(
        base,
        libc::MAP_FAILED,
        "{}",
        std::io::Error::last_os_error()
    );
    let ring = Ring {
        fd,
        base: base.cast(),
        len,
        page,
    };

    let mut id = 0u64;
    // SAFETY: PERF_EVENT_IOC_ID writes one u64 through the pointer.
    let rc = unsafe {
        ioctl::ioctl_arg(
            fd,
            PERF_EVENT_IOC_ID,
            &mut id as *mut u64 as core::ffi::c_ulong,
        )
    };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());

    let parser = RecordParser::new(&attr, Endian::NATIVE);
    // SAFETY: plain syscalls.
    let pid = unsafe { libc::getpid() };
    let tid = gettid();
    let exe = std::env::current_exe().unwrap();
    let exe_meta = std::fs::metadata(&exe).unwrap();
    let new_name = c"recordstest";

    // SAFETY: enabling the event we own.
    assert_eq!(unsafe { ioctl::ioctl_arg(fd, PERF_EVENT_IOC_ENABLE, 0) }, 0);

    let mut seen = Seen::default();
    let mut tail = 0u64;
    let mut scratch = Vec::new();
    for round in 0..60 {
        // Page faults: touch fresh anonymous pages.
        // SAFETY: a fresh private anonymous mapping, written within its bounds and
        // unmapped below.
        unsafe {
            let m = libc::mmap(
                std::ptr::null_mut(),
                12 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(m, libc::MAP_FAILED);
            for i in 0..12 {
                std::ptr::write_volatile(m.cast::<u8>().add(i * page), round as u8);
            }
            libc::munmap(m, 12 * page);
        }
        if round == 3 {
            // A COMM record.
            // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
            unsafe { libc::prctl(libc::PR_SET_NAME, new_name.as_ptr()) };
        }
        if round == 5 {
            // An MMAP2 record for a real file: map the test binary executable.
            let f = std::fs::File::open(&exe).unwrap();
            use std::os::fd::AsRawFd;
            // SAFETY: a fresh private read-only mapping of an open file; unmapped below.
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    page,
                    libc::PROT_READ | libc::PROT_EXEC,
                    libc::MAP_PRIVATE,
                    f.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(m, libc::MAP_FAILED);
            // SAFETY: unmapping the mapping made just above.
            unsafe { libc::munmap(m, page) };
        }

        // Drain the ring.
        let head = ring.head();
        let data = ring.data();
        let size = data.len() as u64;
        while tail < head {
            let at = (tail % size) as usize;
            let hdr = RecordHeader::parse(&data[at..], Endian::NATIVE).unwrap();
            let rec_len = usize::from(hdr.size);
            assert!(
                rec_len >= 8 && rec_len % 8 == 0,
                "bad record size {rec_len}"
            );
            let body_start = (at + 8) % data.len();
            let body_len = rec_len - 8;
            let raw_data = if body_start + body_len <= data.len() {
                RawData::Single(&data[body_start..body_start + body_len])
            } else {
                seen.split += 1;
                let first = &data[body_start..];
                RawData::Split(first, &data[..body_len - first.len()])
            };
            let raw = RawRecord {
                type_: hdr.type_,
                misc: hdr.misc,
                data: raw_data,
            };
            assert_eq!(
                sample_identifier(raw.type_, &raw.data, Endian::NATIVE),
                Some(id)
            );
            let p = parser
                .parse_raw(&raw, &mut scratch)
                .unwrap_or_else(|e| panic!("kernel record failed to parse: {e}"));
            check(
                &p,
                &mut seen,
                pid,
                tid,
                id,
                &exe,
                &exe_meta,
                new_name.to_bytes(),
            );
            tail += rec_len as u64;
        }
        ring.set_tail(tail);
    }
    // SAFETY: disabling the event we own.
    unsafe { ioctl::ioctl_arg(fd, PERF_EVENT_IOC_DISABLE, 0) };

    eprintln!(
        "kernel records: {} samples ({} with kernel frames, {} user-only), {} MMAP2 ({} of \
         the test binary), {} COMM of ours, {} lost, {} split across the ring end, others {:?}",
        seen.samples,
        seen.kernel_chains,
        seen.user_chains,
        seen.mmap2,
        seen.mmap2_ours,
        seen.comm_ours,
        seen.lost,
        seen.split,
        seen.other
    );
    assert!(seen.samples > 100, "too few samples: {}", seen.samples);
    assert!(seen.mmap2_ours >= 1, "no MMAP2 record for the test binary");
    assert!(seen.comm_ours >= 1, "no COMM record for the new name");
    assert!(seen.split >= 1, "no record wrapped around the ring end");
}

#[allow(clippy::too_many_arguments)]
fn check(
    p: &ParsedRecord<'_>,
    seen: &mut Seen,
    pid: i32,
    tid: i32,
    id: u64,
    exe: &std::path::Path,
    exe_meta: &std::fs::Metadata,
    new_name: &[u8],
) {
    use std::os::unix::fs::MetadataExt;
    // Every record carries our sample_id (trailer or sample fields).
    let sid = &p.sample_id;
    assert_eq!(sid.identifier, Some(id));
    assert_eq!(sid.id, Some(id));
    let time = sid.time.expect("time");
    assert!(
        time >= seen.last_time,
        "time went backwards: {time} < {}",
        seen.last_time
    );
    seen.last_time = time;
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    assert!(sid.cpu.expect("cpu") < ncpu.max(1) + 64);

    match &p.record {
        Record::Sample(s) => {
            seen.samples += 1;
            assert_eq!(s.pid, Some(pid));
            assert_eq!(s.tid, Some(tid));
            assert_eq!(s.period, Some(1));
            assert_eq!(s.identifier, Some(id));
            assert!(s.ip.is_some());
            let read = s.read.expect("read values");
            assert!(!read.is_group());
            let v = read.iter().next().unwrap();
            assert_eq!(v.id, Some(id));
            assert!(v.value >= 1);
            assert!(read.time_enabled.unwrap() >= read.time_running.unwrap());
            let chain = s.callchain.expect("callchain");
            let first = chain.get(0).expect("non-empty callchain");
            let ctx = CallchainContext::from_marker(first).expect("starts with a context marker");
            assert!(matches!(
                ctx,
                CallchainContext::Kernel | CallchainContext::User
            ));
            let frames: Vec<Frame> = chain.frames().collect();
            assert!(!frames.is_empty());
            assert!(frames.iter().all(|f| f.context.is_some()));
            if frames
                .iter()
                .any(|f| f.context == Some(CallchainContext::Kernel))
            {
                seen.kernel_chains += 1;
                // Kernel frames are kernel addresses.
                assert!(
                    frames
                        .iter()
                        .filter(|f| f.context == Some(CallchainContext::Kernel))
                        .all(|f| f.ip >= 0xffff_8000_0000_0000)
                );
            } else {
                seen.user_chains += 1;
            }
            // The sample ip is the first frame's ip.
            assert_eq!(s.ip, Some(frames[0].ip));
        }
        Record::Mmap2(m) => {
            seen.mmap2 += 1;
            assert_eq!(m.pid, pid);
            assert!(m.len > 0);
            let name = std::str::from_utf8(m.filename).unwrap();
            if name.starts_with('/') && !name.starts_with("//") && !name.contains(" (deleted)") {
                assert!(
                    std::path::Path::new(name).exists(),
                    "MMAP2 names a missing file {name}"
                );
            }
            if std::path::Path::new(name) == exe {
                seen.mmap2_ours += 1;
                assert!(!m.data, "the executable mapping is not a data mapping");
                assert_eq!(m.prot & (libc::PROT_EXEC as u32), libc::PROT_EXEC as u32);
                match m.file_id {
                    Mmap2FileId::Inode { maj, min, ino, .. } => {
                        assert_eq!(ino, exe_meta.ino());
                        let dev = exe_meta.dev();
                        assert_eq!(u64::from(maj), libc::major(dev) as u64);
                        assert_eq!(u64::from(min), libc::minor(dev) as u64);
                    }
                    Mmap2FileId::BuildId(_) => panic!("build-id form without attr.build_id"),
                }
            }
        }
        Record::Comm(c) => {
            if c.comm == new_name {
                seen.comm_ours += 1;
                assert_eq!((c.pid, c.tid), (pid, tid));
                assert!(!c.exec);
            }
        }
        Record::Lost(l) => {
            assert_eq!(l.id, id);
            seen.lost += l.lost;
        }
        other => seen.other.push(other.record_type()),
    }
    if !matches!(p.record, Record::Sample(_)) {
        assert_eq!(sid.pid, Some(pid));
        assert_eq!(sid.tid, Some(tid));
    }
}
