//! Building a [`Profile`] from a stream of records, symbolizing each distinct address once.
//!
//! The input is a small enum ([`Input`]) rather than a perf.data type, so the same builder
//! serves perf.data files (ours and perf's) and live rings (`top`).

use crate::chain_memo::{ChainKey, ChainMemo};
use crate::{EventDesc, Frame, FrameId, Func, Profile, Sample, StackId, Switch, ThreadId};
use perfkit_symbols::{Mapping, Options, ProcessMaps, Symbolizer, UnknownReason};
use perfkit_sys as sys;
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use std::sync::Arc;

/// One record, as the builder needs it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Input<'a> {
    /// `PERF_RECORD_SAMPLE`.
    Sample(SampleInput<'a>),
    /// `PERF_RECORD_CGROUP`: a cgroup's id and path (`record --all-cgroups`).
    Cgroup {
        /// The cgroup id (its inode in the cgroup2 file system).
        id: u64,
        /// Its path below the cgroup2 mount (`/` for the root).
        path: Cow<'a, str>,
    },
    /// `PERF_RECORD_NAMESPACES`: the thread's cgroup namespace (`record --namespaces`).
    Namespaces {
        /// Process id.
        pid: i32,
        /// Thread id.
        tid: i32,
        /// When.
        time: u64,
        /// The cgroup namespace's device and inode.
        cgroup_ns: (u64, u64),
    },
    /// `PERF_RECORD_KSYMBOL`: kernel code (a BPF program) registered or unregistered.
    Ksymbol {
        /// Start address.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// The symbol's name.
        name: Cow<'a, str>,
        /// The unregister flag: the code went away.
        unregister: bool,
    },
    /// `PERF_RECORD_MMAP` / `MMAP2` of an executable mapping.
    Mmap {
        /// Process id (-1 for the kernel).
        pid: i32,
        /// The mapping.
        mapping: Mapping,
    },
    /// `PERF_RECORD_MMAP` / `MMAP2` of a data (non-executable) mapping, which files
    /// recorded with `-d` (`--data-page-size`, `--phys-data`) hold: perf keeps them in the
    /// thread's maps too, so an address in one is named by it.
    DataMmap {
        /// Process id.
        pid: i32,
        /// The mapping.
        mapping: Mapping,
    },
    /// `PERF_RECORD_COMM`.
    Comm {
        /// Process id.
        pid: i32,
        /// Thread id.
        tid: i32,
        /// New name.
        name: Cow<'a, str>,
        /// Because of an exec (the address space was replaced).
        exec: bool,
        /// When.
        time: u64,
    },
    /// `PERF_RECORD_FORK`.
    Fork {
        /// New process id.
        pid: i32,
        /// New thread id.
        tid: i32,
        /// Parent process id.
        ppid: i32,
        /// Parent thread id.
        ptid: i32,
        /// When.
        time: u64,
    },
    /// `PERF_RECORD_EXIT`.
    Exit {
        /// Process id.
        pid: i32,
        /// Thread id.
        tid: i32,
        /// When.
        time: u64,
    },
    /// `PERF_RECORD_SWITCH` (per task).
    Switch {
        /// Process id.
        pid: i32,
        /// Thread id.
        tid: i32,
        /// When.
        time: u64,
        /// Switched out.
        out: bool,
    },
    /// `PERF_RECORD_LOST`: records the kernel dropped from a full ring, reported when
    /// space came back.
    Lost {
        /// How many.
        count: u64,
    },
    /// `PERF_RECORD_THROTTLE` / `UNTHROTTLE`: the kernel stopped (or resumed) sampling an
    /// event that fired too often.
    Throttle {
        /// When.
        time: u64,
        /// Throttled (true) or unthrottled.
        on: bool,
    },
    /// `PERF_RECORD_LOST_SAMPLES`: the kernel's own count of one event's lost samples
    /// (`PERF_FORMAT_LOST`), written at the end of a recording; what perf reports as
    /// "Total Lost Samples".
    LostSamples {
        /// How many.
        count: u64,
    },
}

/// A sample, as the builder needs it ([`Input::Sample`]).
#[derive(Clone, Copy, Debug)]
pub struct SampleInput<'a> {
    /// Index of the event (attr) in the file.
    pub event: u32,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Timestamp.
    pub time: u64,
    /// CPU, if recorded.
    pub cpu: Option<u32>,
    /// Period.
    pub period: u64,
    /// The sampled ip.
    pub ip: u64,
    /// Whether the ip is in the kernel (header misc cpumode).
    pub kernel: bool,
    /// The callchain as recorded, context markers included (empty if none).
    pub callchain: &'a [u64],
    /// User registers and stack copy (`--call-graph dwarf`), unwound here.
    pub user: Option<UserStack<'a>>,
    /// `PERF_SAMPLE_RAW` data (kept for tracepoint events).
    pub raw: Option<&'a [u8]>,
    /// `PERF_SAMPLE_CGROUP`: the task's cgroup id (0: not recorded).
    pub cgroup: u64,
}

impl Input<'_> {
    /// The input with its borrowed parts owned, to keep it beyond the record it came from
    /// ([`crate::batch`]); None for a sample (a batch keeps a sample's slices itself).
    pub(crate) fn into_static(self) -> Option<Input<'static>> {
        Some(match self {
            Input::Sample(_) => return None,
            Input::Cgroup { id, path } => Input::Cgroup {
                id,
                path: Cow::Owned(path.into_owned()),
            },
            Input::Namespaces {
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
            Input::Mmap { pid, mapping } => Input::Mmap { pid, mapping },
            Input::DataMmap { pid, mapping } => Input::DataMmap { pid, mapping },
            Input::Comm {
                pid,
                tid,
                name,
                exec,
                time,
            } => Input::Comm {
                pid,
                tid,
                name: Cow::Owned(name.into_owned()),
                exec,
                time,
            },
            Input::Fork {
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
            Input::Exit { pid, tid, time } => Input::Exit { pid, tid, time },
            Input::Switch {
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
            Input::Ksymbol {
                addr,
                len,
                name,
                unregister,
            } => Input::Ksymbol {
                addr,
                len,
                name: Cow::Owned(name.into_owned()),
                unregister,
            },
            Input::Lost { count } => Input::Lost { count },
            Input::Throttle { time, on } => Input::Throttle { time, on },
            Input::LostSamples { count } => Input::LostSamples { count },
        })
    }
}

/// A sample's `PERF_SAMPLE_REGS_USER` and `PERF_SAMPLE_STACK_USER`.
#[derive(Clone, Copy, Debug)]
pub struct UserStack<'a> {
    /// `PERF_SAMPLE_REGS_ABI_*`.
    pub abi: u64,
    /// `attr.sample_regs_user`.
    pub mask: u64,
    /// Register values in mask order.
    pub regs: &'a [u64],
    /// The valid part of the stack copy (cut to `dyn_size`).
    pub stack: &'a [u8],
}

/// What [`Builder::decay_samples`] merges samples by: thread, stack, CPU, event.
type DecayKey = (u32, Option<u32>, Option<u32>, u32);

/// What a live view's samples fold by as they come ([`Builder::fold_live`]): what
/// [`Builder::decay_samples`] merges them by.
type LiveKey = (ThreadId, Option<StackId>, Option<u32>, u32);

/// A user symbol met ([`Builder`]'s `symbol_funcs`): the addresses of its name and its
/// object's name as the symbolizer gave them, and its start in its file.
type SymbolKey = (usize, usize, u64);

/// Turns [`Input`]s into a [`Profile`].
pub struct Builder {
    profile: Profile,
    symbolizer: Symbolizer,
    /// Each process's maps (a forked process shares its parent's until either changes).
    maps: HashMap<i32, Arc<ProcessMaps>>,
    /// Each process's data mappings (files recorded with `-d`; empty otherwise): with
    /// `maps` they are perf's one map tree of the thread, the two kept apart (a new
    /// mapping cuts what it overlaps in both) so that code lookups stay as they were.
    data_maps: HashMap<i32, Arc<ProcessMaps>>,
    /// The function of each user symbol met, by the addresses of the symbolizer's name
    /// and object name (it hands out one of each per symbol and object) and the symbol's
    /// start in its file; a hit is checked against the function's names.
    symbol_funcs: HashMap<SymbolKey, crate::FuncId>,
    kernel_maps: ProcessMaps,
    /// Kernel code KSYMBOL records registered (BPF programs), maps of their own.
    ksymbols: perfkit_symbols::Ksymbols,
    memo: HashMap<(i32, u64, u64), u32>,
    /// Frames of the functions inlined at a frame's address (`--inline`), innermost first.
    inlined_at: HashMap<FrameId, Vec<FrameId>>,
    /// DWARF-unwound user frames by (pid, address, maps generation, leaf): the functions
    /// perf's unwinder lists there, innermost first.
    dwarf_frames: HashMap<(i32, u64, u64, bool), Vec<FrameId>>,
    /// Look a DWARF-unwound chain's frames up root first, as perf's unwinder does when
    /// it shows callers first ([`Builder::unwind_caller_first`]).
    unwind_caller_first: bool,
    unknown: HashMap<UnknownReason, u64>,
    chain: Vec<u32>,
    /// Kernel frames whose symbols are looked up in `finish`, when kallsyms (loaded on
    /// another thread meanwhile) is ready.
    pending_kernel: Vec<(u32, perfkit_symbols::KernelPlace)>,
    pending_func: Option<u32>,
    /// Kernel frames by what they are until they are named (their placeholder function,
    /// address and module offset): the frames themselves change when named, so the
    /// profile does not intern them ([`Profile::frame_apart`]).
    kernel_frames: HashMap<(u32, u64, Option<u64>), FrameId>,
    unwinder: Option<perfkit_symbols::unwind::Unwinder>,
    /// Interned [`crate::Image`]s (the index of [`Profile::images`]).
    image_ids: crate::intern::Index,
    /// Each process's main executable (the first file it mapped since its exec).
    main_exe: HashMap<i32, String>,
    /// The recording kernel's build id, for the kernel's image.
    kernel_build_id: Option<Vec<u8>>,
    /// The objects in [`Profile::dso_order`].
    dsos_seen: std::collections::HashSet<String>,
    /// The stack of each distinct frame-pointer callchain.
    chains: ChainMemo,
    /// Like samples folded as they come ([`Builder::aggregate`]).
    folder: Option<crate::fold::Folder>,
    /// A folding builder's tracepoint payloads, one per printed row.
    trace_rows: Option<crate::fold::TraceRows>,
    /// Unnamed frames renamed after their functions as they are made
    /// ([`group_unnamed_functions`](Self::group_unnamed_functions)).
    unnamed: Option<crate::unnamed_functions::FunctionGrouper>,
    /// Functions already named, by file extent (a live view's; see
    /// [`cache_symbol_ranges`](Self::cache_symbol_ranges)).
    sym_ranges: Option<crate::sym_ranges::SymRanges>,
    /// The image last made for a user mapping, by (pid, start, end, file offset): found
    /// again after a check that it is still the same image, without building one.
    image_memo: HashMap<(i32, u64, u64, u64), crate::ImageId>,
    /// With the extent cache: the frame of each named file offset, by (file index of
    /// [`crate::sym_ranges::SymRanges`], offset). Every process running the same binary,
    /// wherever it is mapped (a compiler run per file, each at its own random base),
    /// shares these frames, and so their stacks, instead of making its own.
    file_frames: HashMap<(u32, u64), FrameId>,
    /// A live view's stack of each lone frame, by frame id (`u32::MAX`: none yet): a
    /// sample without a callchain finds its stack without hashing.
    leaf_stacks: Vec<StackId>,
    /// The last sample's (pid, tid) and thread, and (pid, maps generation): a ring's
    /// samples mostly come from one task in a row, so most samples look neither up.
    last_thread: Option<(i32, i32, ThreadId)>,
    last_generation: Option<(i32, u64)>,
    /// [`decay_samples`](Self::decay_samples)'s buffers, kept between refreshes (fresh
    /// ones each time cost page faults as they grow), and where each entry moved (with
    /// [`fold_live`](Self::fold_live)).
    decay_scratch: (Vec<Sample>, HashMap<DecayKey, usize>, Vec<u32>),
    /// A live view's folding index ([`fold_live`](Self::fold_live)): each group's entry in
    /// [`Profile::samples`].
    live: Option<HashMap<LiveKey, u32>>,
    /// Samples are handed out as they come ([`stream`](Self::stream)), not kept.
    stream: bool,
    /// The ids of the sample classes the decoding threads meet ([`crate::classes`]).
    class_ids: Arc<crate::classes::Classes>,
    /// What a sample of each class was last made into (by class id).
    class_slots: Vec<Option<ClassSlot>>,
    /// Samples made from their class's slot (for tests).
    #[cfg(test)]
    pub(crate) class_hits: usize,
}

/// What a sample of a class was made into ([`crate::classes`]), and under which maps
/// (its stack holds while they are the same, as [`crate::chain_memo`]'s).
#[derive(Clone, Copy)]
struct ClassSlot {
    user_generation: u64,
    kernel_generation: u64,
    thread: ThreadId,
    cgroup: u16,
    stack: Option<StackId>,
    chain_broken: bool,
}

/// Samples held at most before [`Builder::push_to`] hands them out.
const STREAM_BATCH: usize = 4096;

/// Where a streaming [`Builder`] hands its samples: the profile as built so far (every
/// frame named) and the samples to show, in the order they came.
pub type SampleSink<'a> = dyn FnMut(&Profile, &[Sample]) + 'a;

impl Builder {
    /// A builder for a file with these events.
    pub fn new(events: Vec<EventDesc>, opts: Options) -> Builder {
        let mut profile = Profile::default();
        profile.events = events;
        // perf makes the kernel's object before reading any record.
        profile.dso_order.push("[kernel.kallsyms]".into());
        Builder {
            dsos_seen: ["[kernel.kallsyms]".to_string()].into_iter().collect(),
            profile,
            symbolizer: Symbolizer::new(opts),
            maps: HashMap::default(),
            data_maps: HashMap::default(),
            symbol_funcs: HashMap::default(),
            kernel_maps: ProcessMaps::new(),
            ksymbols: perfkit_symbols::Ksymbols::new(),
            memo: HashMap::default(),
            inlined_at: HashMap::default(),
            dwarf_frames: HashMap::default(),
            unwind_caller_first: false,
            unknown: HashMap::default(),
            chain: Vec::new(),
            pending_kernel: Vec::new(),
            pending_func: None,
            kernel_frames: HashMap::default(),
            unwinder: None,
            image_ids: crate::intern::Index::default(),
            main_exe: HashMap::default(),
            kernel_build_id: None,
            chains: ChainMemo::default(),
            folder: None,
            trace_rows: None,
            unnamed: None,
            sym_ranges: None,
            image_memo: HashMap::default(),
            file_frames: HashMap::default(),
            leaf_stacks: Vec::new(),
            last_thread: None,
            last_generation: None,
            decay_scratch: Default::default(),
            live: None,
            stream: false,
            class_ids: Arc::default(),
            class_slots: Vec::new(),
            #[cfg(test)]
            class_hits: 0,
        }
    }

    /// Hand samples out as they come instead of keeping them (`script`, whose memory then
    /// grows with the distinct stacks and threads, not with the samples): feed the builder
    /// with [`push_to`](Self::push_to) and end with [`flush`](Self::flush).
    pub fn stream(&mut self) {
        self.stream = true;
    }

    /// [`push`](Self::push), handing the samples out to `sink` when streaming: at most
    /// every [`STREAM_BATCH`] samples, and before a record that names a thread, so each
    /// sample is shown with the names the records before it gave (as perf's ordered
    /// processing shows them). Where the batches end depends only on the records, so the
    /// output is the same however the records were read.
    pub fn push_to(&mut self, input: Input<'_>, sink: &mut SampleSink<'_>) {
        if !self.stream {
            return self.push(input);
        }
        if matches!(input, Input::Comm { .. } | Input::Fork { .. }) {
            self.flush(sink);
        }
        self.push(input);
        if self.profile.samples.len() >= STREAM_BATCH {
            self.flush(sink);
        }
    }

    /// When streaming, hand the samples held to `sink` (their kernel frames named first)
    /// and forget them.
    pub fn flush(&mut self, sink: &mut SampleSink<'_>) {
        if !self.stream || self.profile.samples.is_empty() {
            return;
        }
        self.resolve_kernel_frames();
        self.trace_symbols();
        if let Some(g) = &mut self.unnamed {
            g.group_new(&mut self.profile);
        }
        let samples = std::mem::take(&mut self.profile.samples);
        sink(&self.profile, &samples);
        self.profile.samples = samples;
        self.profile.samples.clear();
        self.profile.raw.clear();
    }

    /// Name unnamed user code after its function, as
    /// [`crate::unnamed_functions::group_by_function`] names it (`--unnamed function`):
    /// the frames made since the last hand-out, before each [`flush`](Self::flush) hands
    /// samples out, and every frame in [`finish`](Self::finish).
    pub fn group_unnamed_functions(&mut self) {
        self.unnamed.get_or_insert_with(Default::default);
    }

    /// The kernel's symbols for tracepoint formats that print addresses (`%pS`).
    fn trace_symbols(&mut self) {
        if self.profile.trace_kernel.symbols.is_none()
            && self
                .profile
                .events
                .iter()
                .any(|e| e.trace.as_ref().is_some_and(|t| t.uses_symbols()))
        {
            self.profile.trace_kernel.symbols = self.symbolizer.kernel_symbols();
        }
    }

    /// Name a new user address inside a function already named in the same file from that
    /// function's extent, without the symbolizer (`crate::sym_ranges`): for a live view,
    /// which meets new addresses, processes and mappings all the time. The answers are the
    /// symbolizer's; nothing changes when source lines or inlined functions are wanted.
    pub fn cache_symbol_ranges(&mut self) {
        let o = self.symbolizer.options();
        if !o.srcline && !o.inline {
            self.sym_ranges.get_or_insert_with(Default::default);
        }
    }

    /// Fold like samples into one as they come, for a live view that ages them with
    /// [`decay_samples`](Self::decay_samples): samples of one thread, stack, CPU and
    /// event add their periods to one entry (the one the decay would merge them into),
    /// whose time is the latest and whose [`Sample::count`] grows by one each. The
    /// entries stay in the order of their first samples, so every sum and count a view
    /// sees is the one it would see in the samples one by one; the view and the decay then
    /// cost what is distinct, not what came in since the last refresh. Two differences:
    /// a thread renamed since the last decay counts all its samples of a stack under its
    /// new name at once (the decay merged them so anyway), and rows of equal weight keep
    /// the order first seen (the decay sorted them by time). Tracepoint samples (with RAW
    /// data) stay one by one.
    pub fn fold_live(&mut self) {
        if self.live.is_none() {
            let mut index = HashMap::default();
            Self::index_live(&self.profile, &mut index);
            self.live = Some(index);
        }
    }

    /// Rebuild a live folding index from the samples as they are.
    fn index_live(p: &Profile, index: &mut HashMap<LiveKey, u32>) {
        index.clear();
        for (i, s) in p.samples.iter().enumerate() {
            if s.raw.is_none() {
                let key = (s.thread, s.stack, s.cpu, s.event);
                index.entry(key).or_insert(i as u32);
            }
        }
    }

    /// Fold like samples into one as they come (see [`crate::fold`]): for reports, whose
    /// memory then grows with the distinct stacks and threads, not with the samples.
    pub fn aggregate(&mut self, how: crate::fold::Aggregation) {
        self.profile.folded = true;
        self.folder = Some(crate::fold::Folder::new(how));
        self.trace_rows = Some(crate::fold::TraceRows::default());
    }

    /// The recording kernel's build id (the file header's), carried on the kernel's image.
    pub fn kernel_build_id(&mut self, id: Option<Vec<u8>>) {
        self.kernel_build_id = id;
    }

    /// Intern the image of `m` in process `pid` (-1: the kernel).
    fn image(&mut self, pid: i32, m: &Mapping) -> crate::ImageId {
        let kernel = pid == -1;
        let main = !kernel && self.main_exe.get(&pid).is_some_and(|p| *p == m.path);
        let at = (pid, m.start, m.end, m.pgoff);
        // The image made last time for this mapping, if it is still the one: found without
        // making one (a path and build id copied and hashed) for each new frame.
        if let Some(&id) = self.image_memo.get(&at).filter(|_| !kernel) {
            let im = &self.profile.images[id as usize];
            if im.path == m.path && im.build_id == m.build_id && im.main == main {
                return id;
            }
        }
        let image = crate::Image {
            pid,
            start: m.start,
            end: m.end,
            pgoff: m.pgoff,
            path: if kernel && m.path.starts_with("[kernel.kallsyms]") {
                "[kernel.kallsyms]".to_string()
            } else {
                m.path.clone()
            },
            build_id: if kernel && m.build_id.is_none() {
                self.kernel_build_id.clone()
            } else {
                m.build_id.clone()
            },
            main,
        };
        let id = self.image_ids.intern(&mut self.profile.images, image);
        if !kernel {
            self.image_memo.insert(at, id);
        }
        id
    }

    /// Start loading kernel symbols in the background (when the file has kernel samples).
    pub fn prefetch_kernel_symbols(&mut self) {
        self.symbolizer.prefetch_kernel();
    }

    /// Note an object perf would make a `struct dso` for now (see
    /// [`Profile::dso_order`]).
    pub fn note_dso(&mut self, path: &str) {
        if self.dsos_seen.insert(path.to_string()) {
            self.profile.dso_order.push(path.to_string());
        }
    }

    /// The recording's event groups.
    pub fn groups(&mut self, groups: Vec<crate::EventGroup>) {
        self.profile.groups = groups;
    }

    /// Add header facts (`--header`).
    pub fn meta(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.profile.meta.push((key.into(), value.into()));
    }

    /// Add a timeline event (a lost-records record with its time).
    pub fn mark(&mut self, mark: crate::Mark) {
        self.profile.marks.push(mark);
    }

    fn thread(&mut self, pid: i32, tid: i32, time: u64) -> ThreadId {
        let id = match self.last_thread {
            Some((p, t, id))
                if (p, t) == (pid, tid)
                    && self
                        .profile
                        .threads
                        .get(id as usize)
                        .is_some_and(|t| (t.pid, t.tid) == (pid, tid)) =>
            {
                id
            }
            _ => {
                let id = self.profile.thread(pid, tid);
                self.last_thread = Some((pid, tid, id));
                id
            }
        };
        self.thread_seen(id, pid, tid, time);
        id
    }

    /// What a record of thread (pid, tid), whose id is `id`, at `time` does to the
    /// thread: its first record starts it (and names the idle task), every one may end it.
    fn thread_seen(&mut self, id: ThreadId, pid: i32, tid: i32, time: u64) {
        let t = &mut self.profile.threads[id as usize];
        if t.names.is_empty() {
            t.start = time;
            if pid == 0 && tid == 0 {
                // The idle task has no COMM record; perf names it `swapper`.
                t.names.push((0, "swapper".to_string()));
            }
        }
        t.end = t.end.max(time);
    }

    /// How samples are folded as they come, when they are ([`aggregate`](Self::aggregate)):
    /// the decoding threads may then merge like samples first ([`crate::batch`]).
    pub(crate) fn folding(&self) -> Option<crate::fold::Aggregation> {
        self.folder
            .as_ref()
            .filter(|_| !self.stream && self.live.is_none())
            .map(crate::fold::Folder::how)
    }

    /// [`folding`](Self::folding), with the table the decoding threads give sample class
    /// ids from ([`crate::classes`]) as they merge like samples.
    pub(crate) fn merging(
        &self,
    ) -> Option<(crate::fold::Aggregation, Arc<crate::classes::Classes>)> {
        self.folding().map(|f| (f, self.class_ids.clone()))
    }

    /// Whether thread (pid, tid) has had one name from `from` to `to` (its samples then
    /// fold under one name); a thread not seen yet has none.
    pub(crate) fn one_name_between(&self, pid: i32, tid: i32, from: u64, to: u64) -> bool {
        let Some(id) = self.profile.thread_id(pid, tid) else {
            return true;
        };
        let names = &self.profile.threads[id as usize].names;
        // The name at time t is the last one given at t or before (`fold`): the index
        // grows with t, so the same index at both ends is the same all along.
        let at = |t: u64| names.iter().rposition(|(n, _)| *n <= t);
        at(from) == at(to)
    }

    /// Fold the samples waiting to be folded.
    pub(crate) fn flush_folder(&mut self) {
        if let Some(f) = &mut self.folder {
            f.flush(&mut self.profile);
        }
    }

    /// [`push`](Self::push) a sample that stands for `count` like samples (its period
    /// their sum), folding it at once; its thread. Only for a folding builder whose
    /// waiting samples are folded ([`flush_folder`](Self::flush_folder)).
    /// `class`: its class id ([`crate::classes`]), if it has one.
    pub(crate) fn push_merged(
        &mut self,
        input: SampleInput<'_>,
        count: u32,
        class: Option<u32>,
    ) -> ThreadId {
        let mut sample = self.sample_of(input, class);
        sample.count = count;
        let thread = sample.thread;
        match &mut self.folder {
            Some(f) => f.fold_class(&mut self.profile, sample, class),
            None => self.keep(sample, class),
        }
        thread
    }

    /// [`push_to`](Self::push_to) a sample of class `class` ([`crate::classes`]), if it
    /// has one: the same profile, found faster.
    pub(crate) fn push_class(
        &mut self,
        input: SampleInput<'_>,
        class: Option<u32>,
        sink: &mut SampleSink<'_>,
    ) {
        if class.is_none() || self.stream {
            return self.push_to(Input::Sample(input), sink);
        }
        let sample = self.sample_of(input, class);
        self.keep(sample, class);
    }

    /// What a sample of thread `id` at `time` does to the thread's times (as
    /// [`push`](Self::push) does), for a merged sample's others; it is the last sample
    /// read so far ([`Profile::last_sample`]).
    pub(crate) fn touch_thread(&mut self, id: ThreadId, time: u64) {
        self.profile.last_sample = time;
        let t = &mut self.profile.threads[id as usize];
        if t.names.is_empty() {
            t.start = time;
        }
        t.end = t.end.max(time);
    }

    /// How many samples the profile holds so far.
    pub fn samples_len(&self) -> usize {
        self.profile.samples.len() + self.folder.as_ref().map_or(0, |f| f.pending())
    }

    /// Feed one record (in time order).
    pub fn push(&mut self, input: Input<'_>) {
        if matches!(
            input,
            Input::Mmap { .. } | Input::DataMmap { .. } | Input::Fork { .. }
        ) {
            // A process's maps change: its generation is looked up again.
            self.last_generation = None;
        }
        match input {
            Input::Mmap { pid, mapping } => {
                if !mapping.is_kernel() && pid != -1 {
                    self.note_dso(&mapping.path);
                }
                if let Some(id) = &mapping.build_id
                    && !self.profile.dso_build_ids.contains_key(&mapping.path)
                {
                    self.profile
                        .dso_build_ids
                        .insert(mapping.path.clone(), id.clone());
                }
                if pid == -1 || mapping.is_kernel() {
                    self.kernel_maps.insert(mapping);
                } else {
                    if !mapping.is_anonymous() && !mapping.path.starts_with('[') {
                        self.main_exe
                            .entry(pid)
                            .or_insert_with(|| mapping.path.clone());
                    }
                    if let Some(d) = self.data_maps.get_mut(&pid) {
                        Arc::make_mut(d).cut(mapping.start, mapping.end);
                    }
                    Arc::make_mut(self.maps.entry(pid).or_default()).insert(mapping);
                }
            }
            Input::DataMmap { pid, mapping } => {
                if pid == -1 || mapping.is_kernel() {
                    return;
                }
                // perf makes the object of every mapping it is told of.
                self.note_dso(&mapping.path);
                if let Some(m) = self.maps.get_mut(&pid) {
                    Arc::make_mut(m).cut(mapping.start, mapping.end);
                }
                Arc::make_mut(self.data_maps.entry(pid).or_default()).insert(mapping);
            }
            Input::Comm {
                pid,
                tid,
                name,
                exec,
                time,
            } => {
                // An exec keeps the old maps, as perf's do: samples inside execve() and
                // before the new program's MMAPs still name the old program's code, and
                // each new mapping replaces what it overlaps. The main executable is the
                // new program's: its first file mapping after the exec claims it.
                if exec {
                    self.main_exe.remove(&pid);
                }
                let id = self.thread(pid, tid, time);
                let t = &mut self.profile.threads[id as usize];
                if t.names.last().is_none_or(|(_, n)| *n != name) {
                    t.names.push((time, name.into_owned()));
                }
            }
            Input::Fork {
                pid,
                tid,
                ppid,
                ptid,
                time,
            } => {
                // A new thread inherits its parent's name; a new process its address space.
                let parent = self.profile.thread(ppid, ptid);
                let parent = &self.profile.threads[parent as usize];
                let name = (!parent.names.is_empty()).then(|| parent.name().to_string());
                if pid != ppid
                    && let Some(m) = self.maps.get(&ppid).cloned()
                {
                    self.maps.insert(pid, m);
                    if let Some(d) = self.data_maps.get(&ppid).cloned() {
                        self.data_maps.insert(pid, d);
                    }
                    if let Some(exe) = self.main_exe.get(&ppid).cloned() {
                        self.main_exe.insert(pid, exe);
                    }
                }
                let id = self.thread(pid, tid, time);
                let t = &mut self.profile.threads[id as usize];
                if let Some(name) = name.filter(|_| t.names.is_empty()) {
                    t.names.push((time, name));
                }
            }
            Input::Ksymbol {
                addr,
                len,
                name,
                unregister,
            } => {
                if unregister {
                    self.ksymbols.unregister(addr);
                } else {
                    self.ksymbols.register(addr, len, &name);
                }
            }
            Input::Cgroup { id, path } => {
                self.profile.cgroup_names.insert(id, path.into_owned());
            }
            Input::Namespaces {
                pid,
                tid,
                time,
                cgroup_ns,
            } => {
                let id = self.thread(pid, tid, time);
                self.profile.threads[id as usize]
                    .cgroup_ns
                    .push((time, cgroup_ns));
            }
            Input::Exit { pid, tid, time } => {
                let id = self.thread(pid, tid, time);
                self.profile.threads[id as usize].end = time;
            }
            Input::Switch {
                pid,
                tid,
                time,
                out,
            } => {
                let thread = self.thread(pid, tid, time);
                // (A folded profile's reports have no timeline to mark them on.)
                if self.folder.is_none() && !self.stream {
                    self.profile.switches.push(Switch { thread, time, out });
                }
            }
            Input::Lost { count } => self.profile.lost_records += count,
            Input::Throttle { time, on } => self.profile.marks.push(crate::Mark {
                time,
                thread: None,
                kind: if on {
                    crate::MarkKind::Throttle
                } else {
                    crate::MarkKind::Unthrottle
                },
            }),
            Input::LostSamples { count } => self.profile.lost += count,
            Input::Sample(s) => {
                let sample = self.sample(s);
                self.keep(sample, None);
            }
        }
    }

    /// [`sample`](Self::sample), for a sample of class `class` ([`crate::classes`]): what
    /// the last sample of the class was made into, while the maps are the same (the
    /// class's stack then is, as [`crate::chain_memo`] says; its thread and cgroup are
    /// interned already, and the class fixes the callchain's markers).
    fn sample_of(&mut self, s: SampleInput<'_>, class: Option<u32>) -> Sample {
        let Some(c) = class
            .filter(|_| s.user.is_none() && s.raw.is_none() && self.live.is_none() && !self.stream)
        else {
            return self.sample(s);
        };
        let c = c as usize;
        let user_generation = self.maps.get(&s.pid).map_or(0, |m| m.generation());
        let kernel_generation = self.kernel_generation();
        if let Some(Some(slot)) = self.class_slots.get(c)
            && slot.user_generation == user_generation
            && slot.kernel_generation == kernel_generation
        {
            let slot = *slot;
            #[cfg(test)]
            {
                self.class_hits += 1;
            }
            self.last_thread = Some((s.pid, s.tid, slot.thread));
            self.thread_seen(slot.thread, s.pid, s.tid, s.time);
            return Sample {
                time: s.time,
                thread: slot.thread,
                cpu: s.cpu,
                event: s.event,
                period: s.period,
                stack: slot.stack,
                raw: None,
                chain_broken: slot.chain_broken,
                count: 1,
                cgroup: slot.cgroup,
            };
        }
        let sample = self.sample(s);
        if self.class_slots.len() <= c {
            self.class_slots.resize(c + 1, None);
        }
        self.class_slots[c] = Some(ClassSlot {
            user_generation,
            kernel_generation,
            thread: sample.thread,
            cgroup: sample.cgroup,
            stack: sample.stack,
            chain_broken: sample.chain_broken,
        });
        sample
    }

    /// A sample input as the profile's [`Sample`] (its thread, cgroup and stack interned,
    /// its frames named), not kept yet.
    fn sample(&mut self, s: SampleInput<'_>) -> Sample {
        let SampleInput {
            pid,
            ip,
            kernel,
            callchain,
            ..
        } = s;
        let thread = self.thread(pid, s.tid, s.time);
        let cgroup = self.profile.cgroup_index(s.cgroup);
        let raw = s
            .raw
            .filter(|_| {
                self.profile
                    .events
                    .get(s.event as usize)
                    .is_some_and(|e| e.trace.is_some())
            })
            .map(|r| self.keep_raw(s.event, r));
        let mut chain = std::mem::take(&mut self.chain);
        chain.clear();
        let mut cached = None;
        let dwarf = s.user.filter(|u| !u.stack.is_empty() && u.abi != 0);
        if let Some(u) = dwarf {
            // dwarf mode: the kernel's part of the chain, then the user stack
            // unwound from the registers and stack copy.
            self.push_callchain(&mut chain, pid, callchain, kernel, true);
            // As perf's unwinders: a caller's frame is looked up at its return
            // address - 1 (inside the call), which is also the address printed.
            let unwound = self.unwind(pid, &u);
            if self.unwind_caller_first {
                // Root first: the frames' names can depend on the order they
                // are first looked up in (perfkit-symbols' a2l_names).
                let mut scratch = Vec::new();
                for (i, &addr) in unwound.iter().enumerate().rev() {
                    let addr = if i == 0 { addr } else { addr.wrapping_sub(1) };
                    self.push_dwarf_frame(&mut scratch, pid, addr, i == 0);
                }
            }
            for (i, addr) in unwound.into_iter().enumerate() {
                let addr = if i == 0 { addr } else { addr.wrapping_sub(1) };
                self.push_dwarf_frame(&mut chain, pid, addr, i == 0);
            }
        } else if let Some(stack) = (self.live.is_none() || !callchain.is_empty())
            .then(|| {
                self.chains
                    .get(&self.chain_key(pid, ip, kernel, callchain), callchain)
            })
            .flatten()
        {
            cached = Some(stack);
        } else if callchain.is_empty() {
            self.push_frame(&mut chain, pid, ip, kernel);
            // A live view's lone frame: its stack by frame id, not by hashing.
            if self.live.is_some()
                && let [f] = chain[..]
            {
                let at = f as usize;
                if self.leaf_stacks.len() <= at {
                    self.leaf_stacks.resize(at + 1, u32::MAX);
                }
                if self.leaf_stacks[at] == u32::MAX {
                    self.leaf_stacks[at] = self.profile.stack(f, None);
                }
                cached = Some(Some(self.leaf_stacks[at]));
            }
        } else {
            // Return addresses are looked up as they are, as perf does, so names and
            // offsets agree with `perf report` and `perf script`.
            self.push_callchain(&mut chain, pid, callchain, kernel, false);
        }
        // perf knows three context markers; any other discards the chain.
        let chain_broken = callchain.iter().any(|&a| {
            a >= sys::PERF_CONTEXT_MAX
                && !matches!(
                    a,
                    sys::PERF_CONTEXT_HV | sys::PERF_CONTEXT_KERNEL | sys::PERF_CONTEXT_USER
                )
        });
        // Stored leaf first; the prefix tree is built from the root.
        let stack = match cached {
            Some(stack) => stack,
            None => {
                let stack = self.profile.stack_from_root(chain.iter().rev().copied());
                // A live view's samples without a chain skip the memo: its
                // frame memo already names an ip once for every process (a
                // kernel one for all), where this one would grow by every
                // process that ever ran the same code.
                if dwarf.is_none() && (self.live.is_none() || !callchain.is_empty()) {
                    let key = self.chain_key(pid, ip, kernel, callchain);
                    self.chains.insert(key, callchain, stack);
                }
                stack
            }
        };
        self.chain = chain;
        Sample {
            time: s.time,
            thread,
            cpu: s.cpu,
            event: s.event,
            period: s.period,
            stack,
            raw,
            chain_broken,
            count: 1,
            cgroup,
        }
    }

    /// Keep a tracepoint sample's payload; its index in [`Profile::raw`]. A folding
    /// builder keeps one payload per printed row ([`crate::fold::TraceRows`]).
    fn keep_raw(&mut self, event: u32, raw: &[u8]) -> u32 {
        if self.trace_rows.is_none() || self.stream || self.live.is_some() {
            return self.profile.raw.push(raw);
        }
        if self.trace_rows.as_ref().is_some_and(|r| !r.symbols_read) {
            self.trace_symbols();
        }
        match &mut self.trace_rows {
            Some(rows) => {
                rows.symbols_read = true;
                rows.raw_index(&mut self.profile, event, raw)
            }
            None => self.profile.raw.push(raw),
        }
    }

    /// Keep a sample: folded, merged into a live view's entry, or as it is; `class`: its
    /// class id ([`crate::classes`]), if it has one.
    fn keep(&mut self, sample: Sample, class: Option<u32>) {
        let Sample {
            thread,
            stack,
            cpu,
            event,
            period,
            time,
            ..
        } = sample;
        match (&mut self.folder, &mut self.live) {
            (Some(f), _) => {
                self.profile.last_sample = time;
                f.push_class(&mut self.profile, sample, class)
            }
            (None, Some(index)) if sample.raw.is_none() => {
                let p = &mut self.profile;
                let key = (thread, stack, cpu, event);
                let n = p.samples.len() as u32;
                let i = *index.entry(key).or_insert(n);
                if i == n {
                    p.samples.push(sample);
                } else {
                    let s = &mut p.samples[i as usize];
                    s.period += period;
                    s.time = s.time.max(time);
                    s.count += 1;
                }
            }
            (None, _) => self.profile.samples.push(sample),
        }
    }

    /// What a frame-pointer sample's stack depends on besides its callchain (see
    /// [`crate::chain_memo`]).
    fn chain_key(&self, pid: i32, ip: u64, kernel: bool, callchain: &[u64]) -> ChainKey {
        ChainKey {
            pid,
            user_generation: self.maps.get(&pid).map_or(0, |m| m.generation()),
            kernel_generation: self.kernel_generation(),
            kernel,
            ip: if callchain.is_empty() { ip } else { 0 },
        }
    }

    /// Unwind a dwarf-mode sample's user stack; counts incomplete walks.
    fn unwind(&mut self, pid: i32, u: &UserStack<'_>) -> Vec<u64> {
        let Some(arch) = perfkit_symbols::unwind::Arch::native() else {
            return Vec::new();
        };
        let empty = ProcessMaps::new();
        let maps = self.maps.get(&pid).map_or(&empty, |m| &**m);
        let regs = perfkit_symbols::unwind::UserRegs {
            abi: u.abi,
            mask: u.mask,
            values: u.regs,
        };
        let out = self
            .unwinder
            .get_or_insert_with(perfkit_symbols::unwind::Unwinder::new)
            .unwind(
                &mut self.symbolizer,
                arch,
                pid.max(0) as u32,
                maps,
                &regs,
                u.stack,
            );
        if !out.is_complete() {
            self.profile.incomplete_stacks += 1;
        }
        out.frames
    }

    /// Push the frames of a sample's `callchain`, each in the kernel or user space its
    /// last context marker says (`kernel`: the sample's own before any marker); with
    /// `kernel_only`, only the kernel's (a DWARF sample's user part is unwound instead).
    fn push_callchain(
        &mut self,
        chain: &mut Vec<FrameId>,
        pid: i32,
        callchain: &[u64],
        kernel: bool,
        kernel_only: bool,
    ) {
        let mut in_kernel = kernel;
        for &addr in callchain {
            if addr >= sys::PERF_CONTEXT_MAX {
                in_kernel = matches!(
                    addr,
                    sys::PERF_CONTEXT_KERNEL | sys::PERF_CONTEXT_GUEST_KERNEL
                );
                continue;
            }
            if in_kernel || !kernel_only {
                self.push_frame(chain, pid, addr, in_kernel);
            }
        }
    }

    /// Changes whenever the kernel's maps or its KSYMBOL maps do (both draw from one
    /// counter).
    fn kernel_generation(&self) -> u64 {
        self.kernel_maps
            .generation()
            .max(self.ksymbols.generation())
    }

    /// `kernel`: the address came in the kernel's part of the sample (its cpumode or its
    /// callchain context). As perf, that alone picks the maps it is looked up in: a
    /// kernel-half address in the user part has no map (`[.]`), a user address in the
    /// kernel part none either (`[k]`).
    fn frame(&mut self, pid: i32, addr: u64, kernel: bool) -> u32 {
        let generation = if kernel {
            self.kernel_generation()
        } else {
            match self.last_generation {
                Some((p, g)) if p == pid => g,
                _ => {
                    let g = self.maps_generation(pid);
                    self.last_generation = Some((pid, g));
                    g
                }
            }
        };
        let key = (if kernel { -1 } else { pid }, addr, generation);
        if let Some(&f) = self.memo.get(&key) {
            return f;
        }
        if kernel {
            // The kernel map the recording puts it in decides its object (a module's,
            // `[unknown]` outside them all); module addresses print relative to the map.
            let place = perfkit_symbols::kernel_place(&self.kernel_maps, &self.ksymbols, addr);
            // Interned now by address, named in `finish`; a BPF program's address is
            // another frame once the program is gone (the same address, another place).
            let func = match &place {
                perfkit_symbols::KernelPlace::Ksymbol(k) => self.profile.func(Func {
                    name: "[kernel address]".into(),
                    dso: k.name.to_string(),
                    kernel: true,
                }),
                _ => *self.pending_func.get_or_insert_with(|| {
                    self.profile.func(Func {
                        name: "[kernel address]".into(),
                        dso: "[kernel.kallsyms]".into(),
                        kernel: true,
                    })
                }),
            };
            let map_offset = matches!(place, perfkit_symbols::KernelPlace::Module { .. })
                .then(|| place.map_ip(addr));
            // Named in place later: told apart here by what it is until then.
            let frame = match self.kernel_frames.entry((func, addr, map_offset)) {
                std::collections::hash_map::Entry::Occupied(e) => *e.get(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    *e.insert(self.profile.frame_apart(Frame {
                        func,
                        addr,
                        map_offset,
                        sym_offset: None,
                        srcline: None,
                        inlined: false,
                    }))
                }
            };
            self.pending_kernel.push((frame, place));
            if let Some(m) = self.kernel_maps.find(addr).cloned() {
                let image = self.image(-1, &m);
                self.profile.frame_images.entry(frame).or_insert(image);
            }
            self.memo.insert(key, frame);
            return frame;
        }
        if perfkit_symbols::is_kernel_address(addr) {
            let func = self.profile.func(Func {
                name: "[unknown]".into(),
                dso: "[unknown]".into(),
                kernel: false,
            });
            *self
                .unknown
                .entry(perfkit_symbols::UnknownReason::NoMapping)
                .or_default() += 1;
            let frame = self.profile.frame(Frame {
                func,
                addr,
                map_offset: None,
                sym_offset: None,
                srcline: None,
                inlined: false,
            });
            self.memo.insert(key, frame);
            return frame;
        }
        if !self.data_maps.is_empty()
            && let Some(frame) = self.data_frame(pid, addr)
        {
            self.memo.insert(key, frame);
            return frame;
        }
        if let Some(ranges) = &self.sym_ranges
            && let Some(m) = self.maps.get(&pid).and_then(|maps| maps.find(addr))
            && !m.is_anonymous()
            && (!m.path.starts_with('[') || m.path == "[vdso]")
            && let Some((func, sym_offset, file)) = ranges.find(m, m.file_offset(addr))
        {
            let map_offset = m.file_offset(addr);
            // Named before in this file, in this process or another.
            if let Some(&frame) = self.file_frames.get(&(file, map_offset)) {
                self.memo.insert(key, frame);
                return frame;
            }
            // The mapping's image as `image` would give it, when it made it last time.
            let main = self.main_exe.get(&pid).is_some_and(|p| *p == m.path);
            let known = self
                .image_memo
                .get(&(pid, m.start, m.end, m.pgoff))
                .copied()
                .filter(|&id| {
                    let im = &self.profile.images[id as usize];
                    im.path == m.path
                        && im.build_id.as_deref() == m.build_id.as_deref()
                        && im.main == main
                });
            // (Else the mapping, owned: making its image needs the whole builder.)
            let image: Result<crate::ImageId, Mapping> = known.ok_or_else(|| m.clone());
            let frame = self.profile.frame(Frame {
                func,
                addr,
                map_offset: Some(map_offset),
                sym_offset: Some(sym_offset),
                srcline: None,
                inlined: false,
            });
            let image = match image {
                Ok(id) => id,
                Err(m) => self.image(pid, &m),
            };
            self.profile.frame_images.entry(frame).or_insert(image);
            self.file_frames.insert((file, map_offset), frame);
            self.memo.insert(key, frame);
            return frame;
        }
        // The process's maps, held here (not copied) while the builder changes.
        let maps = self.maps.get(&pid).cloned().unwrap_or_default();
        let mapping = maps
            .find(addr)
            .filter(|m| !m.is_anonymous() && (!m.path.starts_with('[') || m.path == "[vdso]"));
        let sym = self.symbolizer.symbolize(pid.max(0) as u32, &maps, addr);
        let map_offset = mapping.map(|m| m.file_offset(addr));
        if let Some(r) = sym.unknown_reason
            && sym.symbol.is_none()
        {
            *self.unknown.entry(r).or_default() += 1;
        }
        let dso: Arc<str> = sym.dso.clone();
        let new_func = || Func {
            name: sym.name().to_string(),
            dso: dso.to_string(),
            kernel,
        };
        let func = match &sym.symbol {
            Some(s) => {
                // Where the symbol starts in its file (the same in every process).
                let start = map_offset.unwrap_or(addr).wrapping_sub(s.offset);
                // The symbolizer hands out one name and one object name for each symbol
                // and object: by them, the function is found without making it again
                // (and checked, so that a name's address can never stand for another).
                let key = (
                    Arc::as_ptr(&s.name) as *const u8 as usize,
                    Arc::as_ptr(&dso) as *const u8 as usize,
                    start,
                );
                let known = self.symbol_funcs.get(&key).copied().filter(|&f| {
                    let f = &self.profile.funcs[f as usize];
                    f.kernel == kernel && *f.name == *s.name && *f.dso == *dso
                });
                match known {
                    Some(f) => f,
                    None => {
                        let f = self.profile.func_at(new_func(), start);
                        self.symbol_funcs.insert(key, f);
                        f
                    }
                }
            }
            None => self.profile.func(new_func()),
        };
        let mut shared = None;
        if let Some(s) = &sym.symbol {
            self.profile.sym_sizes.insert(func, s.size);
            if s.object {
                self.profile.data_objects.insert(func);
            }
            if self.sym_ranges.is_some()
                && sym.inlined.is_empty()
                && sym.srcline.is_none()
                && let Some(m) = &mapping
                && let Some((start, end)) = self.symbolizer.symbol_extent(m, addr)
                && let Some(ranges) = &mut self.sym_ranges
            {
                let off = m.file_offset(addr);
                let file = ranges.insert(m, start, end, func, s.offset - (off - start));
                shared = Some((file, off));
            }
        }
        let frame = self.profile.frame(Frame {
            func,
            addr,
            map_offset,
            sym_offset: sym.symbol.as_ref().map(|s| s.offset),
            srcline: sym.srcline.as_ref().map(|l| (l.file.to_string(), l.line)),
            inlined: false,
        });
        if let Some(m) = &mapping {
            let image = self.image(pid, m);
            self.profile.frame_images.entry(frame).or_insert(image);
        }
        if !sym.inlined.is_empty() {
            let inl: Vec<FrameId> = sym
                .inlined
                .iter()
                .map(|i| {
                    let func = self.profile.func(Func {
                        name: format!("{} (inlined)", i.function.as_deref().unwrap_or("[unknown]")),
                        dso: dso.to_string(),
                        kernel,
                    });
                    self.profile.frame(Frame {
                        func,
                        addr,
                        map_offset,
                        sym_offset: None,
                        srcline: i.srcline.as_ref().map(|l| (l.file.to_string(), l.line)),
                        inlined: true,
                    })
                })
                .collect();
            self.inlined_at.insert(frame, inl);
        }
        if let Some(at) = shared {
            self.file_frames.entry(at).or_insert(frame);
        }
        self.memo.insert(key, frame);
        frame
    }

    /// The generation of `pid`'s maps, code and data: each change makes a new one (the
    /// generations are one counter's values, so the larger of the two is new as well).
    fn maps_generation(&self, pid: i32) -> u64 {
        let code = self.maps.get(&pid).map_or(0, |m| m.generation());
        if self.data_maps.is_empty() {
            return code;
        }
        code.max(self.data_maps.get(&pid).map_or(0, |m| m.generation()))
    }

    /// The frame of a user address in a data mapping and in no code mapping, as perf names
    /// it from the one map tree it keeps: the mapping's object; the address relative to
    /// the file (perf's `map__map_ip`), except in anonymous memory, the stack, the heap and
    /// SysV shared memory, which perf maps one to one and gives no symbols; a symbol where
    /// the file has one covering it.
    fn data_frame(&mut self, pid: i32, addr: u64) -> Option<FrameId> {
        if self.maps.get(&pid).is_some_and(|m| m.find(addr).is_some()) {
            return None;
        }
        let d = self.data_maps.get(&pid)?.find(addr)?.clone();
        let (name, sym_offset, object, size, map_offset) = if d.is_identity_mapped() {
            ("[unknown]".to_string(), None, false, None, None)
        } else {
            let sym = self.symbolizer.symbolize_in_mapping(&d, addr);
            match &sym.symbol {
                Some(s) => (
                    s.name.to_string(),
                    Some(s.offset),
                    s.object,
                    Some(s.size),
                    Some(d.file_offset(addr)),
                ),
                None => (
                    "[unknown]".to_string(),
                    None,
                    false,
                    None,
                    Some(d.file_offset(addr)),
                ),
            }
        };
        let func = Func {
            name,
            dso: d.path.clone(),
            kernel: false,
        };
        let func = match (sym_offset, map_offset) {
            (Some(off), Some(at)) => self.profile.func_at(func, at.wrapping_sub(off)),
            _ => self.profile.func(func),
        };
        if let Some(size) = size {
            self.profile.sym_sizes.insert(func, size);
        }
        if object {
            self.profile.data_objects.insert(func);
        }
        Some(self.profile.frame(Frame {
            func,
            addr,
            map_offset,
            sym_offset,
            srcline: None,
            inlined: false,
        }))
    }

    /// Push `addr`'s frame onto a leaf-first chain: the functions inlined there first
    /// (innermost first, with `--inline`), then the function it is in.
    fn push_frame(&mut self, chain: &mut Vec<FrameId>, pid: i32, addr: u64, kernel: bool) {
        let f = self.frame(pid, addr, kernel);
        if let Some(inl) = self.inlined_at.get(&f) {
            chain.extend_from_slice(inl);
        }
        chain.push(f);
    }

    /// Push a DWARF-unwound user frame as perf's unwinder reports it: where the file has
    /// debug information, every function DWARF places at the address, innermost first,
    /// each named by DWARF; one whose name is not the ELF symbol's is perf's "inlined"
    /// frame (the offset still from the symbol). When DWARF does not name the leaf's ELF
    /// symbol (`init_cpu_features` in `init_cpu_features.constprop.0`, `__GI_mprotect` at
    /// `mprotect`), the symbol's frame is still the one its sample counts for in perf's
    /// report: [`Profile::leaf_symbols`] keeps it.
    fn push_dwarf_frame(&mut self, chain: &mut Vec<FrameId>, pid: i32, addr: u64, leaf: bool) {
        let generation = self.maps_generation(pid);
        let key = (pid, addr, generation, leaf);
        if let Some(v) = self.dwarf_frames.get(&key) {
            chain.extend_from_slice(v);
            return;
        }
        let frames = self.dwarf_chain(pid, addr);
        let frames = match frames {
            Some((v, outer_matches)) => {
                if leaf
                    && !outer_matches
                    && let Some(&first) = v.first()
                {
                    let mut own = Vec::new();
                    self.push_frame(&mut own, pid, addr, false);
                    if let Some(&f) = own.last() {
                        self.profile.leaf_symbols.insert(first, f);
                    }
                }
                v
            }
            None => {
                let mut v = Vec::new();
                self.push_frame(&mut v, pid, addr, false);
                v
            }
        };
        chain.extend_from_slice(&frames);
        self.dwarf_frames.insert(key, frames);
    }

    /// The frames DWARF names at `addr` and whether the outermost is the ELF symbol.
    fn dwarf_chain(&mut self, pid: i32, addr: u64) -> Option<(Vec<FrameId>, bool)> {
        if perfkit_symbols::is_kernel_address(addr) {
            return None;
        }
        let empty = ProcessMaps::new();
        let maps = self.maps.get(&pid).map_or(&empty, |m| &**m);
        let map_offset = maps
            .find(addr)
            .filter(|m| !m.is_anonymous() && (!m.path.starts_with('[') || m.path == "[vdso]"))
            .map(|m| m.file_offset(addr));
        let sym = self
            .symbolizer
            .symbolize_chain(pid.max(0) as u32, maps, addr);
        let symbol = sym.symbol.as_ref()?;
        if sym.inlined.is_empty() {
            return None;
        }
        let outer_matches = sym
            .inlined
            .last()
            .and_then(|f| f.function.as_deref())
            .is_some_and(|n| n == &*symbol.name);
        let dso = sym.dso.to_string();
        let mut out = Vec::with_capacity(sym.inlined.len());
        for i in &sym.inlined {
            let name = i.function.as_deref().unwrap_or("??");
            let real = name == &*symbol.name;
            let func = self.profile.func(Func {
                name: if real {
                    name.to_string()
                } else {
                    format!("{name} (inlined)")
                },
                dso: dso.clone(),
                kernel: false,
            });
            out.push(self.profile.frame(Frame {
                func,
                addr,
                map_offset,
                sym_offset: Some(symbol.offset),
                srcline: None,
                inlined: !real,
            }));
        }
        Some((out, outer_matches))
    }

    /// Look each DWARF-unwound chain up root first, as perf's unwinder does when its
    /// callchain order is callers first (`report -g caller`, and `report`'s children mode
    /// by default): perf's inline frame names depend on the order addresses are first
    /// looked up in.
    pub fn unwind_caller_first(&mut self, on: bool) {
        self.unwind_caller_first = on;
    }

    /// The size of the user stack copy the recording asked for (the largest of its events).
    pub fn stack_user_size(&mut self, size: u64) {
        self.profile.stack_user_size = self.profile.stack_user_size.max(size);
    }

    /// Samples whose user stack could not be fully unwound.
    pub fn add_incomplete_stack(&mut self) {
        self.profile.incomplete_stacks += 1;
    }

    /// The traced kernel's `printk_formats` (address, string), for tracepoint fields that
    /// point at them.
    pub fn printk_formats(&mut self, formats: impl IntoIterator<Item = (u64, String)>) {
        self.profile.trace_kernel.printk.extend(formats);
    }

    /// The symbolizer's options (kallsyms, symfs, ... as the loader resolved them for the
    /// file): for another symbolizer of the same file (`script`'s sample addresses).
    pub(crate) fn symbol_options(&self) -> perfkit_symbols::Options {
        self.symbolizer.options().clone()
    }

    /// Explanations of the symbolizer (kptr_restrict ...), for the report header.
    pub fn diagnostics(&self) -> &[String] {
        self.symbolizer.diagnostics()
    }

    /// A builder that symbolizes with `symbolizer`, kept from an earlier profile of the same
    /// machine (a live tool's windows): its files and kernel symbols stay loaded; get it
    /// back with [`finish_keeping_symbolizer`](Self::finish_keeping_symbolizer).
    pub fn with_symbolizer(events: Vec<EventDesc>, symbolizer: Symbolizer) -> Builder {
        let mut me = Builder::new(events, Options::default());
        me.symbolizer = symbolizer;
        me
    }

    /// Name the kernel frames seen so far (kernel symbols load in the background and are
    /// looked up in one pass): a live view calls this before each look at the profile.
    pub fn resolve_kernel_frames(&mut self) {
        for (f, place) in std::mem::take(&mut self.pending_kernel) {
            let addr = self.profile.frames[f as usize].addr;
            let sym = self.symbolizer.symbolize_kernel_in(addr, &place);
            if let Some(r) = sym.unknown_reason
                && sym.symbol.is_none()
            {
                *self.unknown.entry(r).or_default() += 1;
            }
            let func = Func {
                name: sym.name().to_string(),
                dso: sym.dso.to_string(),
                kernel: true,
            };
            // A symbol is told apart by its start as perf keeps it: a BPF program's is
            // relative to its own map (0), so programs of one name (loaded again, or
            // twice) are one row, as in perf.
            let func = match &sym.symbol {
                Some(s) => {
                    let start = addr.wrapping_sub(s.offset);
                    let start = match &place {
                        perfkit_symbols::KernelPlace::Ksymbol(_) => place.map_ip(start),
                        _ => start,
                    };
                    self.profile.func_at(func, start)
                }
                None => self.profile.func(func),
            };
            if let Some(s) = &sym.symbol {
                self.profile.sym_sizes.insert(func, s.size);
                if s.object {
                    self.profile.data_objects.insert(func);
                }
            }
            let frame = &mut self.profile.frames[f as usize];
            frame.func = func;
            frame.sym_offset = sym.symbol.as_ref().map(|s| s.offset);
            frame.srcline = sym.srcline.as_ref().map(|l| (l.file.to_string(), l.line));
        }
    }

    /// The profile as built so far (kernel frames named by
    /// [`resolve_kernel_frames`](Self::resolve_kernel_frames)).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Forget the samples (not the threads, maps and symbols): `top -z`.
    pub fn clear_samples(&mut self) {
        self.profile.samples.clear();
        if let Some(index) = &mut self.live {
            index.clear();
        }
        if let Some(f) = &mut self.folder {
            f.clear();
        }
    }

    /// Age the samples as perf top does between refreshes: samples of one thread, stack,
    /// CPU and event merge into one (the latest time) whose period is scaled by
    /// `num / den`; those that reach zero go. The view then weighs recent samples most,
    /// and its cost stays bounded by the distinct stacks, not the time top has run.
    ///
    /// Each entry left counts as one sample ([`Sample::count`]) until more fold into it
    /// ([`fold_live`](Self::fold_live)), as when the samples are kept one by one. Samples
    /// folded as they came are already merged: they are only scaled, and stay in the order
    /// first seen; else the merged samples are put in time order.
    pub fn decay_samples(&mut self, num: u64, den: u64) {
        let scale = |p: u64| (u128::from(p) * u128::from(num) / u128::from(den.max(1))) as u64;
        if let Some(index) = &mut self.live {
            // Folded as they came: every entry is already one of its kind. Scale them in
            // place, in the order first seen; those that reach zero go, and the index
            // follows the entries that move.
            let samples = &mut self.profile.samples;
            let moved = &mut self.decay_scratch.2;
            moved.clear();
            let mut kept = 0usize;
            for i in 0..samples.len() {
                let mut s = samples[i];
                s.period = scale(s.period);
                s.count = 1;
                if s.period > 0 {
                    samples[kept] = s;
                    moved.push(kept as u32);
                    kept += 1;
                } else {
                    moved.push(u32::MAX);
                }
            }
            if kept < samples.len() {
                samples.truncate(kept);
                index.retain(|_, at| match moved[*at as usize] {
                    u32::MAX => false,
                    to => {
                        *at = to;
                        true
                    }
                });
            }
            return;
        }
        let (out, merged, _) = &mut self.decay_scratch;
        let (mut out, mut merged) = (std::mem::take(out), std::mem::take(merged));
        out.clear();
        merged.clear();
        for s in self.profile.samples.drain(..) {
            if s.raw.is_some() {
                out.push(s);
                continue;
            }
            match merged.entry((s.thread, s.stack, s.cpu, s.event)) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    let m = &mut out[*e.get()];
                    m.period += s.period;
                    m.time = m.time.max(s.time);
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(out.len());
                    out.push(s);
                }
            }
        }
        for s in &mut out {
            s.period = scale(s.period);
            s.count = 1;
        }
        out.retain(|s| s.period > 0);
        // In time order; entries are unique by (thread, stack, CPU, event) but for raw
        // samples, so an unstable sort (no scratch buffer) on the whole key is stable.
        out.sort_unstable_by_key(|s| (s.time, s.thread, s.stack, s.cpu, s.event, s.raw));
        let drained = std::mem::replace(&mut self.profile.samples, out);
        self.decay_scratch.0 = drained;
        self.decay_scratch.1 = merged;
    }

    /// The profile.
    pub fn finish(self) -> Profile {
        self.finish_keeping_symbolizer().0
    }

    /// The profile, and the symbolizer for the next one.
    pub fn finish_keeping_symbolizer(mut self) -> (Profile, Symbolizer) {
        if let Some(f) = &mut self.folder {
            f.flush(&mut self.profile);
        }
        self.resolve_kernel_frames();
        if let Some(g) = &mut self.unnamed {
            g.group_new(&mut self.profile);
        }
        self.profile.forget_interning();
        let mut reasons: Vec<(String, u64)> = self
            .unknown
            .iter()
            .map(|(r, n)| (r.to_string(), *n))
            .collect();
        reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
        self.profile.unknown.by_reason = reasons;
        self.trace_symbols();
        for d in self.symbolizer.diagnostics() {
            self.profile.meta.push(("note".into(), d.clone()));
        }
        (self.profile, self.symbolizer)
    }
}

#[cfg(test)]
mod decay {
    use super::*;

    #[test]
    fn decay_merges_like_samples_and_scales_their_period() {
        let mut b = Builder::new(Vec::new(), Options::default());
        b.profile = crate::model::testing::sample_profile();
        let before: u64 = b.profile.samples.iter().map(|s| s.period).sum();
        b.decay_samples(7, 8);
        let after: u64 = b.profile.samples.iter().map(|s| s.period).sum();
        assert_eq!(after, before / 8 * 7, "every period scaled by 7/8");
        // 100 samples of 3 stacks on 2 CPUs, split over 2 threads: at most 6 entries left.
        assert!(b.profile.samples.len() <= 6, "{}", b.profile.samples.len());
        assert!(b.profile.samples.windows(2).all(|w| w[0].time <= w[1].time));
        for _ in 0..200 {
            b.decay_samples(7, 8);
        }
        assert!(
            b.profile.samples.is_empty(),
            "old samples fade out entirely"
        );
    }
    /// A builder fed this process's maps and name, folding live or not.
    fn live_builder(live: bool) -> Builder {
        let mut b = Builder::new(
            vec![EventDesc {
                name: "cpu-clock".into(),
                callchain: false,
                trace: None,
            }],
            Options::default(),
        );
        b.cache_symbol_ranges();
        if live {
            b.fold_live();
        }
        let pid = std::process::id() as i32;
        for m in perfkit_symbols::read_proc_maps(std::process::id())
            .unwrap()
            .iter()
        {
            b.push(Input::Mmap {
                pid,
                mapping: m.clone(),
            });
        }
        b.push(Input::Comm {
            pid,
            tid: pid,
            name: "tester".into(),
            exec: false,
            time: 1,
        });
        b
    }

    #[test]
    fn folding_as_samples_come_shows_what_samples_one_by_one_show() {
        use crate::report::SortKey;
        use crate::top::{Live, View, ViewOptions, view, view_live};
        let (mut plain, mut live) = (live_builder(false), live_builder(true));
        let pid = std::process::id() as i32;
        let ip = decay_marker as *const () as usize as u64;
        let feed = |b: &mut Builder, round: u64| {
            let time = 10 + 100 * round;
            for i in 0..60u64 {
                let (tid, cpu) = (pid + (i % 2) as i32, Some((i % 3 % 2) as u32));
                b.push(Input::Sample(SampleInput {
                    event: 0,
                    pid,
                    tid,
                    time: time + i,
                    cpu,
                    period: 1000 + 37 * i + round,
                    ip: ip + i % 5,
                    kernel: false,
                    callchain: &[],
                    user: None,
                    raw: None,
                    cgroup: 0,
                }));
                if i == 30 {
                    // A rename halfway through the first round.
                    b.push(Input::Comm {
                        pid,
                        tid: pid + 1,
                        name: "renamed".into(),
                        exec: false,
                        time: time + i,
                    });
                }
            }
        };
        // Rows of equal weight may come in another order (first seen against the time
        // the decay sorts by): compare them by weight, then keys.
        let norm = |mut v: View| {
            v.rows
                .sort_by(|a, b| b.overhead.total_cmp(&a.overhead).then(a.keys.cmp(&b.keys)));
            v
        };
        let mut state = Live::default();
        for round in 0..4 {
            feed(&mut plain, round);
            feed(&mut live, round);
            assert!(live.profile.samples.len() < plain.profile.samples.len());
            let mut sorts = vec![
                vec![SortKey::Dso, SortKey::Sym],
                vec![SortKey::Sym],
                vec![SortKey::Pid, SortKey::Sym],
                vec![SortKey::Cpu],
            ];
            if round > 0 {
                // A renamed thread's samples of a stack go under its new name at the
                // decay: folding puts them there at once.
                sorts.push(vec![SortKey::Comm, SortKey::Dso, SortKey::Sym]);
                sorts.push(vec![SortKey::Tid, SortKey::Cpu]);
            }
            for sort in sorts {
                let opts = ViewOptions {
                    sort,
                    ..ViewOptions::default()
                };
                let want = norm(view(&plain.profile, &opts));
                assert!(!want.rows.is_empty());
                assert_eq!(norm(view(&live.profile, &opts)), want, "{opts:?}");
                // A live view's state kept across refreshes and option changes.
                assert_eq!(
                    norm(view_live(&live.profile, &opts, &mut state)),
                    want,
                    "{opts:?}"
                );
            }
            plain.decay_samples(7, 8);
            live.decay_samples(7, 8);
        }
        for _ in 0..200 {
            live.decay_samples(7, 8);
        }
        assert!(live.profile.samples.is_empty(), "old samples fade out");
        // Samples come back into a fresh entry.
        feed(&mut live, 9);
        assert_eq!(
            live.profile.samples.iter().map(|s| s.count).sum::<u32>(),
            60
        );
    }

    #[inline(never)]
    fn decay_marker() -> u64 {
        decay_marker as *const () as usize as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn marker_function() -> u64 {
        marker_function as *const () as usize as u64
    }

    #[test]
    fn samples_of_this_process_are_symbolized() {
        let maps = perfkit_symbols::read_proc_maps(std::process::id()).unwrap();
        let mut b = Builder::new(
            vec![EventDesc {
                name: "cpu-clock".into(),
                callchain: true,
                trace: None,
            }],
            Options::default(),
        );
        let pid = std::process::id() as i32;
        for m in maps.iter() {
            b.push(Input::Mmap {
                pid,
                mapping: m.clone(),
            });
        }
        b.push(Input::Comm {
            pid,
            tid: pid,
            name: "tester".into(),
            exec: false,
            time: 1,
        });
        let ip = marker_function() + 2;
        let chain = [sys::PERF_CONTEXT_USER, ip, ip];
        for t in 0..3 {
            b.push(Input::Sample(SampleInput {
                event: 0,
                pid,
                tid: pid,
                time: 10 + t,
                cpu: Some(0),
                period: 1,
                ip,
                kernel: false,
                callchain: &chain,
                user: None,
                raw: None,
                cgroup: 0,
            }));
        }
        b.push(Input::Lost { count: 4 });
        b.push(Input::LostSamples { count: 9 });
        let p = b.finish();
        assert_eq!(p.samples.len(), 3);
        assert_eq!((p.lost, p.lost_records), (9, 4));
        let leaf = p.stack_frames(p.samples[0].stack).next().unwrap();
        assert!(
            p.func_of(leaf).name.ends_with("marker_function"),
            "{:?}",
            p.func_of(leaf)
        );
        assert_eq!(p.frames[leaf as usize].sym_offset, Some(2));
        // Same stack for all three samples: interned once.
        assert_eq!(p.samples[0].stack, p.samples[2].stack);
        assert_eq!(p.threads[0].name(), "tester");
    }
}

#[cfg(test)]
mod symbol_ranges {
    use super::*;

    /// Samples at many addresses of this process's code (several processes of the same
    /// files, as a machine running one program many times): with the extent cache, every
    /// frame, function and offset is what the symbolizer alone gives.
    #[test]
    fn cached_extents_name_frames_as_the_symbolizer_does() {
        let maps = perfkit_symbols::read_proc_maps(std::process::id()).unwrap();
        let code: Vec<&Mapping> = maps
            .iter()
            .filter(|m| !m.is_anonymous() && !m.path.starts_with('[') && m.end - m.start > 0x1000)
            .collect();
        let build = |cache: bool| {
            let mut b = Builder::new(
                vec![EventDesc {
                    name: "cpu-clock".into(),
                    callchain: false,
                    trace: None,
                }],
                Options::default(),
            );
            if cache {
                b.cache_symbol_ranges();
            }
            for pid in [100, 200, 300] {
                for m in maps.iter() {
                    b.push(Input::Mmap {
                        pid,
                        mapping: m.clone(),
                    });
                }
                // Every 13th byte of the first 64 KiB of each code mapping, as samples.
                for m in &code {
                    let mut a = m.start;
                    while a < m.end.min(m.start + 0x10000) {
                        b.push(Input::Sample(SampleInput {
                            event: 0,
                            pid,
                            tid: pid,
                            time: 10,
                            cpu: Some(0),
                            period: 1,
                            ip: a,
                            kernel: false,
                            callchain: &[],
                            user: None,
                            raw: None,
                            cgroup: 0,
                        }));
                        a += 13 + u64::from(pid == 200) * 7;
                    }
                }
            }
            let extents = b.sym_ranges.as_ref().map_or(0, |r| r.len());
            (b.finish(), extents)
        };
        let ((plain, _), (cached, extents)) = (build(false), build(true));
        assert!(extents > 50, "{extents} extents known");
        assert_eq!(plain.samples.len(), cached.samples.len());
        let named = |p: &Profile, s: &Sample| {
            let f = &p.frames[p.sample_frame(s.stack).unwrap() as usize];
            let func = &p.funcs[f.func as usize];
            (
                f.addr,
                func.name.clone(),
                func.dso.clone(),
                f.sym_offset,
                f.map_offset,
            )
        };
        let mut named_count = 0;
        for (a, b) in plain.samples.iter().zip(&cached.samples) {
            let (x, y) = (named(&plain, a), named(&cached, b));
            assert_eq!(x, y);
            named_count += usize::from(x.1 != "[unknown]");
        }
        assert!(named_count > 1000, "{named_count} samples named");
        assert_eq!(plain.frame_images.len(), cached.frame_images.len());
    }
}

#[cfg(test)]
mod shared_frames {
    use super::*;
    use crate::report::SortKey;
    use crate::top::{ViewOptions, view};

    /// A live builder (extent cache, live folding), or the plain one.
    fn builder(live: bool) -> Builder {
        let mut b = Builder::new(
            vec![EventDesc {
                name: "cpu-clock".into(),
                callchain: false,
                trace: None,
            }],
            Options::default(),
        );
        if live {
            b.cache_symbol_ranges();
            b.fold_live();
        }
        b
    }

    /// Feed process `pid`'s maps, name and exit-free samples at every 11th byte of the
    /// first 16 KiB of each of its code mappings (file offsets from `offsets`, so every
    /// process is sampled at the same places of the same files).
    fn feed(b: &mut Builder, pid: i32, maps: &ProcessMaps, time: u64) -> usize {
        b.push(Input::Comm {
            pid,
            tid: pid,
            name: "sleep".into(),
            exec: true,
            time,
        });
        for m in maps.iter() {
            b.push(Input::Mmap {
                pid,
                mapping: m.clone(),
            });
        }
        let mut n = 0;
        for m in maps.iter().filter(|m| !m.path.starts_with('[')) {
            let mut a = m.start;
            while a < m.end.min(m.start + 0x4000) {
                b.push(Input::Sample(SampleInput {
                    event: 0,
                    pid,
                    tid: pid,
                    time: time + 1,
                    cpu: Some(0),
                    period: 1000,
                    ip: a,
                    kernel: false,
                    callchain: &[],
                    user: None,
                    raw: None,
                    cgroup: 0,
                }));
                a += 11;
                n += 1;
            }
        }
        n
    }

    /// A sample's place as a row would show it: name, object, symbol and file offsets,
    /// and its period.
    type Named = (String, String, Option<u64>, Option<u64>, u64);

    /// Two real processes of one binary, each where ASLR put it: the live builder reads
    /// each file once and names the second process's samples with the first one's
    /// frames (so stacks, and the view's rows, are shared too); every name, symbol offset
    /// and file offset is what the plain builder gives, and the rows of the first process
    /// keep their names after it exited.
    #[test]
    fn processes_of_one_binary_share_frames_and_tables() {
        let spawn = || {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .expect("sleep runs")
        };
        let (mut one, mut two) = (spawn(), spawn());
        let maps_of = |c: &std::process::Child| {
            // Until the exec is done, /proc shows the parent's image.
            for _ in 0..500 {
                // The dynamic loader maps (and re-protects) libraries after the exec:
                // read the maps once the process sleeps, so both are read alike.
                let asleep = std::fs::read_to_string(format!("/proc/{}/stat", c.id()))
                    .ok()
                    .and_then(|st| {
                        st.rsplit_once(')')
                            .map(|(_, r)| r.trim_start().starts_with('S'))
                    })
                    .unwrap_or(false);
                let m = perfkit_symbols::read_proc_maps(c.id()).expect("its maps");
                if asleep && m.iter().any(|m| m.path.ends_with("/sleep")) {
                    return m;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            panic!("sleep {} never showed its binary in /proc", c.id());
        };
        let (m1, m2) = (maps_of(&one), maps_of(&two));
        let _ = (one.kill(), two.kill(), one.wait(), two.wait());
        let base = |m: &ProcessMaps| {
            m.iter()
                .find(|m| m.path.ends_with("/sleep"))
                .map(|m| m.start)
        };
        let aslr = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space")
            .is_ok_and(|s| s.trim() != "0");
        if aslr {
            assert_ne!(base(&m1), base(&m2), "ASLR places the two processes apart");
        } else {
            eprintln!("ASLR is off: both processes map sleep at one place");
        }
        let (pid1, pid2) = (one.id() as i32, two.id() as i32);
        let (mut live, mut plain) = (builder(true), builder(false));
        let n1 = feed(&mut live, pid1, &m1, 10);
        feed(&mut plain, pid1, &m1, 10);
        // Frames of named code ([unknown] ones stay one per address, as report keeps
        // them, and rows of their own).
        let named_frames = |p: &Profile| {
            p.frames
                .iter()
                .filter(|f| p.funcs[f.func as usize].name != "[unknown]")
                .count()
        };
        let (frames1, files1) = (named_frames(&live.profile), live.symbolizer.files_loaded());
        // The first process exits before the second starts.
        live.push(Input::Exit {
            pid: pid1,
            tid: pid1,
            time: 20,
        });
        plain.push(Input::Exit {
            pid: pid1,
            tid: pid1,
            time: 20,
        });
        let n2 = feed(&mut live, pid2, &m2, 30);
        feed(&mut plain, pid2, &m2, 30);
        assert!(n1 > 1000 && n2 == n1, "{n1} and {n2} samples");
        assert_eq!(
            live.symbolizer.files_loaded(),
            files1,
            "the second process's files were loaded for the first"
        );
        assert!(frames1 > 20, "{frames1} named frames");
        assert_eq!(
            named_frames(&live.profile),
            frames1,
            "the second process's samples are named by the first one's frames"
        );
        assert!(
            named_frames(&plain.profile) > frames1 || !aslr,
            "without the cache each process has its own frames ({} against {frames1})",
            named_frames(&plain.profile)
        );
        // Every sample named as the symbolizer alone names it.
        let named = |p: &Profile, thread: u32| {
            let mut out: Vec<Named> = p
                .samples
                .iter()
                .filter(|s| s.thread == thread)
                .map(|s| {
                    let f = &p.frames[p.sample_frame(s.stack).unwrap() as usize];
                    let func = &p.funcs[f.func as usize];
                    (
                        func.name.clone(),
                        func.dso.clone(),
                        f.sym_offset,
                        f.map_offset,
                        s.period,
                    )
                })
                .collect();
            out.sort();
            out
        };
        let (live_p, plain_p) = (live.finish(), plain.finish());
        for pid in [pid1, pid2] {
            let t = |p: &Profile| {
                p.threads
                    .iter()
                    .position(|t| t.tid == pid)
                    .expect("the thread") as u32
            };
            // Live: like samples folded, so sum them per (name, dso, offsets).
            let fold = |v: Vec<Named>| {
                let mut m: std::collections::BTreeMap<_, u64> = Default::default();
                for (a, b, c, d, p) in v {
                    *m.entry((a, b, c, d)).or_default() += p;
                }
                m
            };
            let want = fold(named(&plain_p, t(&plain_p)));
            assert!(
                want.keys().filter(|k| k.0 != "[unknown]").count() > 20,
                "{} named places",
                want.len()
            );
            assert_eq!(fold(named(&live_p, t(&live_p))), want, "pid {pid}");
        }
        // The view: the same rows, the exited process's included.
        for sort in [
            vec![SortKey::Dso, SortKey::Sym],
            vec![SortKey::Pid, SortKey::Sym],
        ] {
            let opts = ViewOptions {
                sort,
                ..ViewOptions::default()
            };
            let rows = |p: &Profile| {
                let mut r: Vec<(Vec<String>, u64)> = view(p, &opts)
                    .rows
                    .into_iter()
                    .map(|r| (r.keys, r.samples))
                    .collect();
                r.sort();
                r
            };
            let want = rows(&plain_p);
            assert!(
                want.iter()
                    .any(|(k, _)| k.iter().any(|k| k.contains(&pid1.to_string()))
                        || opts.sort[0] == SortKey::Dso),
                "{want:?}"
            );
            assert_eq!(rows(&live_p), want, "{opts:?}");
        }
    }
}
