//! Loading a file on two cores: one thread reads (decompression, perf's time ordering of
//! each round, record decoding into the builder's [`Input`]s), another builds the profile
//! (side-band, symbolization, interning of frames and stacks).
//!
//! The builder sees exactly the sequence of inputs the single-threaded path gives it, in
//! the same order: the profile, and so every report, script and export made from it, is
//! byte for byte the single-threaded one. Inputs travel in batches of owned copies (flat
//! buffers, reused), a few batches in flight at most: the memory between the threads is a
//! few MiB whatever the file's size.
//!
//! `PERFKIT_REPORT_THREADS=1` (or a machine with one CPU) keeps the single-threaded path;
//! 3 or more add decoding threads ([`crate::fan_out`]).

use crate::build::{Builder, Input, SampleSink, UserStack};
use crate::load::{Decoder, Fed};
use perfkit_data::{Item, PerfData, ReadError};
use perfkit_symbols::Mapping;
use std::ops::Range;
use std::sync::mpsc;

/// Items per batch: large enough that the channel costs nothing per record, small enough
/// that both threads start at once.
const BATCH: usize = 4096;
/// Batches in flight between the threads.
const IN_FLIGHT: usize = 4;

/// How many threads a load may use: `PERFKIT_REPORT_THREADS` when set to a number above
/// 0, else the CPUs this process may run on. 1 is the single-threaded path, 2 this
/// module's reader and builder, more adds decoding threads ([`crate::fan_out`]).
pub fn threads() -> usize {
    match std::env::var("PERFKIT_REPORT_THREADS") {
        Ok(v) if v.trim().parse::<usize>().is_ok_and(|n| n > 0) => v.trim().parse().unwrap_or(1),
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// Whether to load with a reading thread beside the building one (more than one
/// [`threads`]).
pub fn enabled() -> bool {
    threads() > 1
}

/// An [`Input`] (or mark) with its borrowed parts as ranges into its batch's buffers.
pub(crate) enum Owned {
    Sample {
        event: u32,
        pid: i32,
        tid: i32,
        time: u64,
        cpu: Option<u32>,
        period: u64,
        ip: u64,
        kernel: bool,
        callchain: Range<usize>,
        user: Option<(u64, u64, Range<usize>, Range<usize>)>,
        raw: Option<Range<usize>>,
        cgroup: u64,
    },
    Cgroup {
        id: u64,
        path: String,
    },
    Namespaces {
        pid: i32,
        tid: i32,
        time: u64,
        cgroup_ns: (u64, u64),
    },
    Ksymbol {
        addr: u64,
        len: u64,
        name: String,
        unregister: bool,
    },
    Mmap {
        pid: i32,
        mapping: Mapping,
    },
    Comm {
        pid: i32,
        tid: i32,
        name: String,
        exec: bool,
        time: u64,
    },
    Fork {
        pid: i32,
        tid: i32,
        ppid: i32,
        ptid: i32,
        time: u64,
    },
    Exit {
        pid: i32,
        tid: i32,
        time: u64,
    },
    Switch {
        pid: i32,
        tid: i32,
        time: u64,
        out: bool,
    },
    Lost(u64),
    Throttle {
        time: u64,
        on: bool,
    },
    LostSamples(u64),
    Mark(crate::Mark),
}

/// Owned inputs, with the words (callchains, registers) and bytes (stacks, raw data) they
/// point into; `done` is how far into the data section the reader was.
#[derive(Default)]
pub(crate) struct Batch {
    items: Vec<Owned>,
    words: Vec<u64>,
    bytes: Vec<u8>,
    pub(crate) done: usize,
}

impl Batch {
    pub(crate) fn clear(&mut self) {
        self.items.clear();
        self.words.clear();
        self.bytes.clear();
    }

    fn words(&mut self, w: &[u64]) -> Range<usize> {
        let start = self.words.len();
        self.words.extend_from_slice(w);
        start..self.words.len()
    }

    fn bytes(&mut self, b: &[u8]) -> Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        start..self.bytes.len()
    }

    pub(crate) fn push(&mut self, fed: Fed<'_>) {
        let item = match fed {
            Fed::Mark(m) => Owned::Mark(m),
            Fed::Input(i) => match i {
                Input::Sample {
                    event,
                    pid,
                    tid,
                    time,
                    cpu,
                    period,
                    ip,
                    kernel,
                    callchain,
                    user,
                    raw,
                    cgroup,
                } => Owned::Sample {
                    event,
                    pid,
                    tid,
                    time,
                    cpu,
                    period,
                    ip,
                    kernel,
                    callchain: self.words(callchain),
                    user: user.map(|u| (u.abi, u.mask, self.words(u.regs), self.bytes(u.stack))),
                    raw: raw.map(|r| self.bytes(r)),
                    cgroup,
                },
                Input::Cgroup { id, path } => Owned::Cgroup {
                    id,
                    path: path.to_string(),
                },
                Input::Namespaces {
                    pid,
                    tid,
                    time,
                    cgroup_ns,
                } => Owned::Namespaces {
                    pid,
                    tid,
                    time,
                    cgroup_ns,
                },
                Input::Ksymbol {
                    addr,
                    len,
                    name,
                    unregister,
                } => Owned::Ksymbol {
                    addr,
                    len,
                    name: name.to_string(),
                    unregister,
                },
                Input::Mmap { pid, mapping } => Owned::Mmap { pid, mapping },
                Input::Comm {
                    pid,
                    tid,
                    name,
                    exec,
                    time,
                } => Owned::Comm {
                    pid,
                    tid,
                    name: name.to_string(),
                    exec,
                    time,
                },
                Input::Fork {
                    pid,
                    tid,
                    ppid,
                    ptid,
                    time,
                } => Owned::Fork {
                    pid,
                    tid,
                    ppid,
                    ptid,
                    time,
                },
                Input::Exit { pid, tid, time } => Owned::Exit { pid, tid, time },
                Input::Switch {
                    pid,
                    tid,
                    time,
                    out,
                } => Owned::Switch {
                    pid,
                    tid,
                    time,
                    out,
                },
                Input::Lost { count } => Owned::Lost(count),
                Input::Throttle { time, on } => Owned::Throttle { time, on },
                Input::LostSamples { count } => Owned::LostSamples(count),
            },
        };
        self.items.push(item);
    }

    /// Give every item to the builder, in order, as the decoder gave it (samples going to
    /// `sink` when it streams, [`Builder::push_to`]).
    pub(crate) fn replay(&mut self, b: &mut Builder, sink: &mut SampleSink<'_>) {
        for item in self.items.drain(..) {
            let input = match item {
                Owned::Mark(m) => {
                    b.mark(m);
                    continue;
                }
                Owned::Sample {
                    event,
                    pid,
                    tid,
                    time,
                    cpu,
                    period,
                    ip,
                    kernel,
                    callchain,
                    user,
                    raw,
                    cgroup,
                } => Input::Sample {
                    event,
                    pid,
                    tid,
                    time,
                    cpu,
                    period,
                    ip,
                    kernel,
                    callchain: &self.words[callchain],
                    user: user.map(|(abi, mask, regs, stack)| UserStack {
                        abi,
                        mask,
                        regs: &self.words[regs],
                        stack: &self.bytes[stack],
                    }),
                    raw: raw.map(|r| &self.bytes[r]),
                    cgroup,
                },
                Owned::Cgroup { id, ref path } => {
                    b.push(Input::Cgroup { id, path });
                    continue;
                }
                Owned::Namespaces {
                    pid,
                    tid,
                    time,
                    cgroup_ns,
                } => Input::Namespaces {
                    pid,
                    tid,
                    time,
                    cgroup_ns,
                },
                Owned::Ksymbol {
                    addr,
                    len,
                    ref name,
                    unregister,
                } => Input::Ksymbol {
                    addr,
                    len,
                    name,
                    unregister,
                },
                Owned::Mmap { pid, mapping } => Input::Mmap { pid, mapping },
                Owned::Comm {
                    pid,
                    tid,
                    name,
                    exec,
                    time,
                } => {
                    b.push_to(
                        Input::Comm {
                            pid,
                            tid,
                            name: &name,
                            exec,
                            time,
                        },
                        sink,
                    );
                    continue;
                }
                Owned::Fork {
                    pid,
                    tid,
                    ppid,
                    ptid,
                    time,
                } => Input::Fork {
                    pid,
                    tid,
                    ppid,
                    ptid,
                    time,
                },
                Owned::Exit { pid, tid, time } => Input::Exit { pid, tid, time },
                Owned::Switch {
                    pid,
                    tid,
                    time,
                    out,
                } => Input::Switch {
                    pid,
                    tid,
                    time,
                    out,
                },
                Owned::Lost(count) => Input::Lost { count },
                Owned::Throttle { time, on } => Input::Throttle { time, on },
                Owned::LostSamples(count) => Input::LostSamples { count },
            };
            b.push_to(input, sink);
        }
    }
}

/// Read `file`'s records on a second thread, decoding them with `dec`, and feed them to
/// `b` on this one; `progress(done)` with the bytes of the data section read so far.
/// Returns the reader's result (as [`PerfData::for_each`]'s).
pub(crate) fn feed(
    file: &PerfData,
    dec: &mut Decoder,
    b: &mut Builder,
    sink: &mut SampleSink<'_>,
    mut progress: impl FnMut(usize),
) -> Result<(), ReadError> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
    for _ in 0..IN_FLIGHT + 1 {
        let _ = empty_tx.send(Batch::default());
    }
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut batch = empty_rx.recv().unwrap_or_default();
            let done = std::cell::Cell::new(0);
            let result = file.for_each(
                |item| {
                    match item {
                        Item::Event { attr, record } => {
                            dec.decode(attr, &record, &mut |fed| batch.push(fed))
                        }
                        Item::User { type_, .. } => dec.user_record(type_),
                        _ => {}
                    }
                    if batch.items.len() >= BATCH {
                        batch.done = done.get();
                        let next = empty_rx.recv().unwrap_or_default();
                        // The builder hung up: it is gone, nothing more to do.
                        let _ = full_tx.send(std::mem::replace(&mut batch, next));
                    }
                },
                |d| done.set(d),
            );
            batch.done = done.get();
            let _ = full_tx.send(batch);
            result
        });
        let mut last = 0;
        for mut batch in full_rx {
            batch.replay(b, sink);
            if batch.done != last {
                last = batch.done;
                progress(last);
            }
            batch.clear();
            let _ = empty_tx.send(batch);
        }
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
