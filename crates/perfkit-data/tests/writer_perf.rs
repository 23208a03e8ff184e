//! Files written by `PerfDataWriter` from real kernel samples open in perf 6.1:
//! `perf script` and `perf report --stdio` count the same samples we wrote, with the
//! thread's comm, and our own reader reads them back. Variants: one event, callchains,
//! zstd, two events (PERF_SAMPLE_IDENTIFIER with ids), pipe mode.
//!
//! The events are opened with raw `perf_event_open` and drained from their mmap'd ring
//! here, so the test pins the writer, not the rest of perfkit.

mod common;

use common::{have_perf, samples_of};
use perfkit_data::{FileEvent, PerfData, PerfDataWriter, WriteOptions, synth};
use perfkit_records::{Endian, MultiParser, Record};
use perfkit_sys::{self as sys, attr_flags as fl, perf_event_attr, perf_event_mmap_page};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{Ordering, fence};

const DATA_PAGES: usize = 64;

struct Ring {
    fds: Vec<i32>,
    ids: Vec<u64>,
    base: *mut u8,
    len: usize,
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/len is the mapping made in `open`; the fds are ours.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
            for &fd in &self.fds {
                libc::close(fd);
            }
        }
    }
}

fn attr(config: u64, callchain: bool, leader: bool) -> perf_event_attr {
    let mut a = perf_event_attr::new();
    a.type_ = sys::PERF_TYPE_SOFTWARE;
    a.config = config;
    a.sample_period = 100_000;
    a.sample_type = sys::PERF_SAMPLE_IP
        | sys::PERF_SAMPLE_TID
        | sys::PERF_SAMPLE_TIME
        | sys::PERF_SAMPLE_PERIOD
        | sys::PERF_SAMPLE_IDENTIFIER;
    if callchain {
        a.sample_type |= sys::PERF_SAMPLE_CALLCHAIN;
    }
    a.set(fl::DISABLED, true);
    a.set(fl::SAMPLE_ID_ALL, true);
    if leader {
        a.set(fl::MMAP, true);
        a.set(fl::COMM, true);
        a.set(fl::TASK, true);
    }
    a
}

/// Events on this thread, all writing to the first one's ring. None where the kernel
/// refuses (reason printed).
fn open(attrs: &mut [perf_event_attr]) -> Option<Ring> {
    let mut fds = Vec::new();
    let mut ids = Vec::new();
    for a in attrs.iter_mut() {
        // SAFETY: `a` is a valid attr with size set by perf_event_attr::new().
        let fd = unsafe { sys::perf_event_open(a, 0, -1, -1, sys::PERF_FLAG_FD_CLOEXEC as _) };
        if fd < 0 {
            eprintln!(
                "skipped: perf_event_open: {}",
                std::io::Error::last_os_error()
            );
            for &fd in &fds {
                // SAFETY: our fd.
                unsafe { libc::close(fd) };
            }
            return None;
        }
        let mut id = 0u64;
        // SAFETY: PERF_EVENT_IOC_ID writes one u64 to the pointer.
        let r = unsafe { libc::ioctl(fd, sys::PERF_EVENT_IOC_ID as _, &mut id as *mut u64) };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        fds.push(fd);
        ids.push(id);
    }
    let page = 4096;
    let len = (1 + DATA_PAGES) * page;
    // SAFETY: a shared read-write mapping of a perf fd, as perf_event_open(2) describes.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fds[0],
            0,
        )
    };
    assert_ne!(
        base,
        libc::MAP_FAILED,
        "{}",
        std::io::Error::last_os_error()
    );
    for &fd in &fds[1..] {
        // SAFETY: SET_OUTPUT takes the target fd as a 64-bit value.
        let r = unsafe { libc::ioctl(fd, sys::PERF_EVENT_IOC_SET_OUTPUT as _, fds[0] as u64) };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    }
    Some(Ring {
        fds,
        ids,
        base: base.cast(),
        len,
    })
}

impl Ring {
    fn ioctl_all(&self, req: libc::c_ulong) {
        for &fd in &self.fds {
            // SAFETY: ENABLE/DISABLE take no argument.
            unsafe { libc::ioctl(fd, req as _, 0) };
        }
    }

    /// Hand every record in the ring to `f` (one or two parts), then release them.
    fn drain(&self, mut f: impl FnMut(&[&[u8]])) {
        let page = self.base.cast::<perf_event_mmap_page>();
        // SAFETY: the first page of the mapping is the kernel's perf_event_mmap_page;
        // data_head is read volatile and followed by an acquire fence as the ABI requires.
        let head = unsafe { std::ptr::read_volatile(&raw const (*page).data_head) };
        fence(Ordering::Acquire);
        // SAFETY: as above; data_tail is ours to read.
        let mut tail = unsafe { std::ptr::read_volatile(&raw const (*page).data_tail) };
        let size = DATA_PAGES * 4096;
        // SAFETY: the data area is the DATA_PAGES pages after the first.
        let data = unsafe { std::slice::from_raw_parts(self.base.add(4096), size) };
        while tail < head {
            let at = (tail as usize) % size;
            let hdr: Vec<u8> = (0..8).map(|i| data[(at + i) % size]).collect();
            let len = u16::from_ne_bytes([hdr[6], hdr[7]]) as usize;
            if at + len <= size {
                f(&[&data[at..at + len]]);
            } else {
                f(&[&data[at..], &data[..at + len - size]]);
            }
            tail += len as u64;
        }
        fence(Ordering::Release);
        // SAFETY: writing data_tail tells the kernel the space is free.
        unsafe { std::ptr::write_volatile(&raw mut (*page).data_tail, tail) };
    }
}

struct Written {
    samples: usize,
    per_event: Vec<usize>,
    comm: String,
}

fn busy(ms: u64) {
    let t = std::time::Instant::now();
    let mut x = 0u64;
    while t.elapsed().as_millis() < u128::from(ms) {
        for i in 0..10_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
}

/// Record this thread for ~300 ms into `w` (created by `make` from the events).
fn record(
    two: bool,
    callchain: bool,
    make: impl FnOnce(Vec<FileEvent>) -> PerfDataWriter,
) -> Option<(Written, PerfDataWriter)> {
    let mut attrs = vec![attr(sys::PERF_COUNT_SW_TASK_CLOCK, callchain, true)];
    if two {
        attrs.push(attr(sys::PERF_COUNT_SW_CPU_CLOCK, callchain, false));
    }
    let ring = open(&mut attrs)?;
    let names = ["task-clock", "cpu-clock"];
    let events: Vec<FileEvent> = attrs
        .iter()
        .zip(&ring.ids)
        .zip(names)
        .map(|((a, &id), name)| FileEvent {
            attr: *a,
            name: name.into(),
            ids: vec![id],
        })
        .collect();
    let parser = MultiParser::new(
        Endian::NATIVE,
        events.iter().map(|e| (e.ids.as_slice(), &e.attr)),
    )
    .unwrap();
    let mut w = make(events);
    // What perf writes before the first sample.
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    if let Some(k) = synth::kernel_mmap(&attrs[0], ring.ids[0]) {
        w.write_record(&[&k]).unwrap();
    }
    for r in synth::tasks(&attrs[0], ring.ids[0], &[pid]) {
        w.write_record(&[&r]).unwrap();
    }
    w.write_record(&[&synth::finished_init()]).unwrap();
    w.finish_round().unwrap();
    let mut written = Written {
        samples: 0,
        per_event: vec![0; attrs.len()],
        comm: std::fs::read_to_string("/proc/thread-self/comm")
            .unwrap()
            .trim()
            .to_string(),
    };
    let pass = |w: &mut PerfDataWriter, written: &mut Written| {
        let mut scratch = Vec::new();
        ring.drain(|parts| {
            let joined: Vec<u8> = parts.concat();
            let rec = perfkit_records::RawRecord::from_bytes(&joined, Endian::NATIVE)
                .unwrap()
                .0;
            let (i, p) = parser.parse_raw(&rec, &mut scratch).unwrap();
            if let Record::Sample(s) = &p.record {
                written.samples += 1;
                written.per_event[i] += 1;
                w.saw_time(s.time.unwrap());
            }
            w.write_record(parts).unwrap();
        });
        w.finish_round().unwrap();
    };
    ring.ioctl_all(sys::PERF_EVENT_IOC_ENABLE);
    for _ in 0..30 {
        busy(10);
        pass(&mut w, &mut written);
    }
    ring.ioctl_all(sys::PERF_EVENT_IOC_DISABLE);
    pass(&mut w, &mut written);
    Some((written, w))
}

/// `perf script` sample lines: (comm, event) of each.
fn perf_script(file: &Path, stdin: Option<&Path>) -> Vec<(String, String)> {
    let mut cmd = Command::new("perf");
    cmd.args(["script", "-F", "comm,tid,event", "-i"]);
    match stdin {
        Some(p) => cmd.arg("-").stdin(std::fs::File::open(p).unwrap()),
        None => cmd.arg(file),
    };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "perf script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            // "comm  tid  event:"; comm may hold spaces, so split from the right.
            let words: Vec<&str> = l.split_whitespace().collect();
            let [comm @ .., _tid, ev] = words.as_slice() else {
                return None;
            };
            Some((comm.join(" "), ev.trim_end_matches(':').to_string()))
        })
        .collect()
}

/// `perf report --stdio -n`: the sum of the Samples column per event.
fn perf_report(file: &Path) -> Vec<(String, u64)> {
    let out = Command::new("perf")
        .args([
            "report",
            "--stdio",
            "-n",
            "--no-children",
            "-g",
            "none",
            "--sort",
            "comm",
            "-i",
        ])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut per_event: Vec<(String, u64)> = Vec::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# Samples: ") {
            let ev = rest.split('\'').nth(1).unwrap_or("").to_string();
            per_event.push((ev, 0));
        } else if !l.starts_with('#') && !l.trim().is_empty() {
            // "    99.00%           123  comm"
            if let (Some(n), Some(last)) = (l.split_whitespace().nth(1), per_event.last_mut()) {
                last.1 += n.parse::<u64>().unwrap_or(0);
            }
        }
    }
    per_event
}

fn check_with_perf(name: &str, file: &Path, written: &Written, names: &[&str], pipe: bool) {
    let script = perf_script(file, pipe.then_some(file));
    assert_eq!(
        script.len(),
        written.samples,
        "{name}: perf script sample count"
    );
    assert!(
        script.iter().all(|(c, _)| *c == written.comm),
        "{name}: comms {:?}, expected {}",
        script.iter().take(3).collect::<Vec<_>>(),
        written.comm
    );
    for (i, ev) in names.iter().enumerate() {
        let n = script.iter().filter(|(_, e)| e == ev).count();
        assert_eq!(n, written.per_event[i], "{name}: samples of {ev}");
    }
    if !pipe {
        let report = perf_report(file);
        let total: u64 = report.iter().map(|r| r.1).sum();
        assert_eq!(
            total as usize, written.samples,
            "{name}: perf report {report:?}"
        );
        for (i, ev) in names.iter().enumerate() {
            let n = report.iter().find(|r| r.0 == *ev).map_or(0, |r| r.1);
            assert_eq!(n as usize, written.per_event[i], "{name}: report of {ev}");
        }
    }
}

#[test]
fn files_we_write_from_real_samples_open_in_perf() {
    if !have_perf() {
        eprintln!("skipped: perf is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, two, callchain, compress) in [
        ("plain", false, false, None),
        ("callchain", false, true, None),
        ("zstd", false, true, Some(3)),
        ("two-events", true, false, None),
        ("two-events-zstd", true, true, Some(1)),
    ] {
        let path = dir.path().join(format!("{name}.data"));
        let opts = WriteOptions {
            compress,
            ..WriteOptions::default()
        };
        let Some((written, w)) = record(two, callchain, |ev| {
            PerfDataWriter::create(&path, ev, opts).unwrap()
        }) else {
            return;
        };
        w.finish(&["perfkit-data-test".to_string(), name.to_string()])
            .unwrap();
        assert!(
            written.samples > 20,
            "{name}: only {} samples",
            written.samples
        );
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{name}: file mode");
        let names: &[&str] = if two {
            &["task-clock", "cpu-clock"]
        } else {
            &["task-clock"]
        };
        check_with_perf(name, &path, &written, names, false);
        // And our reader.
        let d = PerfData::open(&path).unwrap();
        assert_eq!(samples_of(&d).len(), written.samples, "{name}: our reader");
        let got: Vec<&str> = d.attrs.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(got, names, "{name}");
        assert_eq!(d.features.cmdline, ["perfkit-data-test", name]);
        assert!(d.features.sample_time.is_some_and(|(a, b)| a > 0 && a < b));
        assert_eq!(
            d.features.compressed.is_some(),
            compress.is_some(),
            "{name}"
        );
    }
}

struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn pipe_mode_streams_open_in_perf() {
    if !have_perf() {
        eprintln!("skipped: perf is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, two) in [("pipe", false), ("pipe-two", true)] {
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Shared(buf.clone());
        let Some((written, w)) = record(two, false, |ev| {
            PerfDataWriter::pipe(Box::new(sink), ev, WriteOptions::default()).unwrap()
        }) else {
            return;
        };
        w.finish(&[]).unwrap();
        let path = dir.path().join(format!("{name}.data"));
        std::fs::write(&path, &*buf.lock().unwrap()).unwrap();
        let names: &[&str] = if two {
            &["task-clock", "cpu-clock"]
        } else {
            &["task-clock"]
        };
        check_with_perf(name, &path, &written, names, true);
        let d = PerfData::from_reader(Box::new(std::fs::File::open(&path).unwrap())).unwrap();
        assert!(d.pipe);
        assert_eq!(samples_of(&d).len(), written.samples, "{name}: our reader");
        let got: Vec<&str> = d.attrs.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(got, names, "{name}");
    }
    let _ = Stdio::null();
}
