//! perf record's BPF side-band thread (`bpf_event__add_sb_event`, `bpf_event__sb_cb`):
//! while a recording runs, a dummy event on every CPU asks the kernel for
//! `PERF_RECORD_BPF_EVENT` records, and each program load it reports is read at once
//! (`perf_env__add_bpf_info`: the program's info with its code, function and line info,
//! and its BTF), so that the file's `HEADER_BPF_PROG_INFO` and `HEADER_BPF_BTF` sections
//! name the programs loaded during the recording too, not only those loaded before it.
//!
//! As in perf, a program that is unloaded before its record is read is missed (its info
//! is gone), and programs are kept after they are unloaded. The records themselves reach
//! the file through the recording's own events (their `bpf_event` bit); this thread's
//! ring only feeds the sections.

use perfkit::sys;
use perfkit::{Attr, Drainer, RawData, RingBuffer, RingSize, Software, Stopper};
use perfkit_data::bpf_btf::BpfBtf;
use perfkit_data::bpf_prog_info::BpfProgInfo;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// `PERF_BPF_EVENT_PROG_LOAD`.
const PROG_LOAD: u16 = 1;

/// What the watcher found: the programs loaded while it ran and their BTF, each once.
#[derive(Clone, Debug, Default)]
pub struct BpfSeen {
    /// The programs, in the order they were loaded.
    pub programs: Vec<BpfProgInfo>,
    /// Their BTF.
    pub btfs: Vec<BpfBtf>,
}

impl BpfSeen {
    /// Read program `id` from the kernel and keep it (and its BTF), unless it is kept
    /// already or gone.
    fn add(&mut self, id: u32) {
        if self.programs.iter().any(|p| p.id == id) {
            return;
        }
        let Ok(Some(p)) = perfkit::bpf_program(id) else {
            return;
        };
        let p = crate::sideband::program_info(p);
        for b in crate::sideband::program_btfs(std::slice::from_ref(&p), false) {
            if !self.btfs.iter().any(|c| c.id == b.id) {
                self.btfs.push(b);
            }
        }
        self.programs.push(p);
    }
}

/// The BPF side-band thread of a recording.
#[derive(Debug)]
pub struct BpfWatcher {
    stopper: Stopper,
    thread: Option<JoinHandle<()>>,
    seen: Arc<Mutex<BpfSeen>>,
}

impl BpfWatcher {
    /// Open the side-band event (a dummy software event with `bpf_event`, waking at every
    /// record) on every online CPU and start reading it. An error when the kernel refuses
    /// (no privileges for CPU-wide events): perf then goes on without, as a caller should.
    pub fn start() -> perfkit::Result<BpfWatcher> {
        let attr = Attr::new(Software::Dummy)
            .flag(sys::attr_flags::BPF_EVENT, true)
            .sample_id_all(true)
            .wakeup_watermark(1);
        let samplers = perfkit::open_per_cpu(&attr, -1, RingSize::Pages(1))?;
        for s in &samplers {
            s.enable()?;
        }
        let (counters, mut rings): (Vec<_>, Vec<RingBuffer>) = samplers
            .into_iter()
            .map(|s| {
                let (c, r, _) = s.into_parts();
                (c, r)
            })
            .unzip();
        let refs: Vec<&RingBuffer> = rings.iter().collect();
        let mut drainer = Drainer::new(&refs).map_err(|e| {
            perfkit::Error::new(
                perfkit::Op::Other("watch the BPF side-band rings".into()),
                e,
                "dummy",
                -1,
                -1,
            )
        })?;
        let stopper = drainer.stopper();
        let seen = Arc::new(Mutex::new(BpfSeen::default()));
        let found = seen.clone();
        let thread = std::thread::Builder::new()
            .name("perfkit-bpf-sb".into())
            .spawn(move || {
                let _counters = counters;
                let mut ring_refs: Vec<&mut RingBuffer> = rings.iter_mut().collect();
                let _ = drainer.run(&mut ring_refs, None, |_, rec| {
                    if rec.type_ != sys::PERF_RECORD_BPF_EVENT {
                        return;
                    }
                    let mut head = [0u8; 8];
                    let n = match rec.data {
                        RawData::Single(a) => copy_prefix(&mut head, a, &[]),
                        RawData::Split(a, b) => copy_prefix(&mut head, a, b),
                    };
                    // Read each program as soon as its record is seen: it may go soon.
                    if n == 8 && u16::from_ne_bytes([head[0], head[1]]) == PROG_LOAD {
                        let id = u32::from_ne_bytes([head[4], head[5], head[6], head[7]]);
                        found.lock().unwrap_or_else(|e| e.into_inner()).add(id);
                    }
                });
            })
            .map_err(|e| {
                perfkit::Error::new(
                    perfkit::Op::Other("start the BPF side-band thread".into()),
                    e,
                    "dummy",
                    -1,
                    -1,
                )
            })?;
        Ok(BpfWatcher {
            stopper,
            thread: Some(thread),
            seen,
        })
    }

    /// What was found so far.
    pub fn seen(&self) -> BpfSeen {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stop the thread (after it read what its rings hold) and give what it found.
    pub fn stop(mut self) -> BpfSeen {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.seen()
    }
}

impl Drop for BpfWatcher {
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Copy the first bytes of `a` then `b` into `head`; how many were copied.
fn copy_prefix(head: &mut [u8], a: &[u8], b: &[u8]) -> usize {
    let mut n = 0;
    for &x in a.iter().chain(b) {
        if n == head.len() {
            break;
        }
        head[n] = x;
        n += 1;
    }
    n
}
