//! From records to a [`Profile`]: [`load`] reads a whole perf.data file, [`Loader`] is fed
//! records one at a time (a live tool feeds it ring records as they come).

use crate::build::{Builder, Input, SampleInput, SampleSink, UserStack};
use crate::error::LoadError;
use crate::trace_info::TraceInfo;
use crate::{EventDesc, Profile, TraceEvent};
use perfkit_data::{EventAttr, Item, PerfData, ReadError};
use perfkit_records::{ParsedRecord, Record};
use perfkit_symbols::{Mapping, Options};
use perfkit_sys as sys;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// How to build a profile.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Resolve source lines (DWARF `.debug_line`; slower).
    pub srcline: bool,
    /// Resolve inlined functions (DWARF `DW_TAG_inlined_subroutine`; slower).
    pub inline: bool,
    /// Kernel symbols from this file (else perf's build-id cache copy of the recorded
    /// kernel's kallsyms when there is one, else `/proc/kallsyms`).
    pub kallsyms: Option<PathBuf>,
    /// Names as the symbol tables spell them (`--no-demangle`).
    pub no_demangle: bool,
    /// C++ names with their parameters, as perf demangles them with `-v`.
    pub demangle_params: bool,
    /// perf's `--symfs DIR`: look the recorded binaries up under this root.
    pub symfs: Option<PathBuf>,
    /// The report will show callers first (`-g caller`, or the children column by
    /// default): perf's unwinder then looks DWARF-unwound chains up root first, which
    /// changes some inline frame names ([`Builder::unwind_caller_first`]).
    pub caller_order: bool,
    /// Fold like samples as they are read ([`crate::fold`]): what `report` needs, in memory
    /// that does not grow with the samples.
    pub aggregate: Option<crate::fold::Aggregation>,
    /// perf's `-k/--vmlinux FILE`: the core kernel's symbols from this ELF file, taken
    /// (as perf takes it) only when its build id is the recorded kernel's or the
    /// recording has none; otherwise kernel addresses stay unnamed.
    pub vmlinux: Option<PathBuf>,
    /// Threads to read the file with (None: [`crate::pipeline::threads`], from
    /// `PERFKIT_REPORT_THREADS` or the CPUs; 1 is the single-threaded path).
    pub threads: Option<usize>,
    /// perf's `--time` ranges (perf timestamps, ns, as [`crate::timespec::parse`] gives
    /// them; empty: every sample): samples outside them are dropped as they are read,
    /// before the builder sees them, so a report of a slice of a big file holds only what
    /// the slice shows. (Side-band records are all read: names and maps stay right.)
    pub time: Vec<(u64, u64)>,
    /// Drop tracepoint samples' RAW data as they are read: a report that does not show
    /// their fields (no `trace` sort key) then folds them like other samples, instead of
    /// keeping each with its data ([`crate::fold`]).
    pub no_raw: bool,
    /// Drop tracepoint samples' RAW data as [`no_raw`](Self::no_raw) does unless every
    /// event of the file is a tracepoint whose format is known and the file is not a
    /// pipe: what `report` shows of them with its default keys (perf sorts such a file
    /// by `trace`, and any other by keys that do not show the fields).
    pub raw_only_in_tracepoint_files: bool,
    /// Name unnamed user code after its function (`--unnamed function`,
    /// [`crate::unnamed_functions`]) as the profile is built: a streamed load hands out
    /// samples whose frames are renamed already.
    pub unnamed_functions: bool,
}

impl LoadOptions {
    /// The symbolizer's options for these.
    fn symbols(&self) -> Options {
        let mut o = Options {
            srcline: self.srcline,
            inline: self.inline,
            ..Options::default()
        };
        if let Some(k) = &self.kallsyms {
            o.kallsyms = k.clone();
        }
        o.demangle = !self.no_demangle;
        o.demangle_params = self.demangle_params;
        o.symfs = self.symfs.clone();
        o
    }
}

/// What the loader had to say besides the profile.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Diagnostics {
    /// Things skipped or unusual (unknown records, feature sections, tracepoint formats
    /// from this machine rather than from the file), one sentence each.
    pub warnings: Vec<String>,
    /// The nominal sampling interval of the first event in nanoseconds (from
    /// `attr.sample_period`, or `1e9 / attr.sample_freq` in frequency mode), for exports
    /// that want one (Firefox Profiler).
    pub interval_ns: u64,
    /// Set when the data section was cut short or corrupt: the profile holds what was read
    /// before it.
    pub error: Option<ReadError>,
}

/// perf's delivery of `PERF_SAMPLE_READ` samples: each counter read in the sample (every
/// member of a `{a,b}:S` group, or the event alone) becomes a sample of its own event,
/// with the growth of that counter since its last read as the period; no growth, no
/// sample.
#[derive(Clone, Default)]
struct SampleRead {
    /// Event index of each counter id.
    attr_of: HashMap<u64, usize>,
    /// Last value read of each counter id.
    last: HashMap<u64, u64>,
}

impl SampleRead {
    fn new(attrs: &[EventAttr]) -> SampleRead {
        let mut attr_of = HashMap::new();
        for (i, a) in attrs.iter().enumerate() {
            for &id in &a.ids {
                attr_of.insert(id, i);
            }
        }
        SampleRead {
            attr_of,
            last: HashMap::new(),
        }
    }

    /// `(event, period)` of each read value of this sample that grew.
    fn split(&mut self, read: &perfkit_records::ReadValues<'_>, out: &mut Vec<(usize, u64)>) {
        out.clear();
        for v in read.iter() {
            let Some(id) = v.id else { continue };
            let Some(&ev) = self.attr_of.get(&id) else {
                continue;
            };
            let before = self.last.insert(id, v.value).unwrap_or(0);
            let period = v.value.wrapping_sub(before);
            if period != 0 {
                out.push((ev, period));
            }
        }
    }
}

/// perf's own record types a profile does not need and that are not worth a warning.
fn expected_user_record(type_: u32) -> bool {
    matches!(
        type_,
        sys::PERF_RECORD_FINISHED_INIT
            | sys::PERF_RECORD_ID_INDEX
            | sys::PERF_RECORD_THREAD_MAP
            | sys::PERF_RECORD_CPU_MAP
            | sys::PERF_RECORD_TIME_CONV
            | sys::PERF_RECORD_EVENT_UPDATE
            | sys::PERF_RECORD_HEADER_BUILD_ID
            | sys::PERF_RECORD_HEADER_TRACING_DATA
            | sys::PERF_RECORD_HEADER_ATTR
            | sys::PERF_RECORD_HEADER_FEATURE
            | sys::PERF_RECORD_FINISHED_ROUND
    )
}

/// Builds a [`Profile`] from records fed one at a time, in time order: kernel records
/// (`PERF_RECORD_SAMPLE`, `MMAP`/`MMAP2`, `COMM`, `FORK`, `EXIT`, `SWITCH`, `LOST`) decoded
/// by `perfkit-records` with the index of their event, and perf's own records (type 64
/// and up) raw. [`load`] feeds it a file; a live tool feeds it its rings' records.
///
/// ```
/// use perfkit_data::EventAttr;
/// use perfkit_report::load::{LoadOptions, Loader};
/// use perfkit_report::trace_info::TraceInfo;
///
/// let mut attr = perfkit_sys::perf_event_attr::default();
/// attr.type_ = perfkit_sys::PERF_TYPE_SOFTWARE;
/// let events = [EventAttr { attr, ids: vec![1], name: "cpu-clock".into() }];
/// let loader = Loader::new(&events, TraceInfo::default(), &LoadOptions::default());
/// // ... loader.record(0, &parsed) for each record of the ring ...
/// let (profile, diagnostics) = loader.finish();
/// assert!(profile.samples.is_empty());
/// assert!(diagnostics.error.is_none());
/// ```
pub struct Loader {
    builder: Builder,
    dec: Decoder,
    diag: Diagnostics,
}

/// What a [`Decoder`] gives for a record: the builder's input, or a timeline mark.
pub(crate) enum Fed<'a> {
    /// An input of the builder.
    Input(Input<'a>),
    /// A mark (lost records) for the timeline.
    Mark(crate::Mark),
}

/// The record-to-[`Input`] half of a [`Loader`]: everything it needs of the file (ids of
/// counters read in samples, fixed periods, the build-id table) and nothing of the profile,
/// so it can run on the reading thread while the builder runs on another
/// ([`crate::pipeline`]).
#[derive(Clone)]
pub(crate) struct Decoder {
    reads: SampleRead,
    chain: Vec<u64>,
    regs: Vec<u64>,
    split: Vec<(usize, u64)>,
    pub(crate) skipped: BTreeMap<u32, u64>,
    /// Build ids the file's HEADER_BUILD_ID gives by file name, for mappings whose records
    /// carry none (MMAP, MMAP2 with inode fields): the symbolizer then uses a local file only
    /// if its build id matches.
    file_build_ids: HashMap<String, Vec<u8>>,
    /// Per event: the period of samples without `PERF_SAMPLE_PERIOD` (perf shows
    /// `attr.sample_period` for a fixed period, 1 in frequency mode).
    fixed_period: Vec<u64>,
    /// Only samples in these ranges go on ([`LoadOptions::time`]).
    time: Vec<(u64, u64)>,
    /// Samples go on without their RAW data ([`LoadOptions::no_raw`]).
    no_raw: bool,
}

impl Loader {
    /// The options its symbolizer names the file's addresses with.
    pub(crate) fn symbol_options(&self) -> perfkit_symbols::Options {
        self.builder.symbol_options()
    }

    /// A loader for records of these events (attrs, with the ids their samples carry and
    /// their names), decoding tracepoint samples with `trace`'s formats.
    pub fn new(events: &[EventAttr], trace: TraceInfo, opts: &LoadOptions) -> Loader {
        let mut me = Loader::with_symbols(events, trace, opts.symbols());
        me.take_options(opts);
        me
    }

    /// What `opts` asks of the decoder and the builder beyond naming: time ranges, RAW
    /// data, callchain order, folding.
    fn take_options(&mut self, opts: &LoadOptions) {
        self.dec.time = opts.time.clone();
        self.dec.no_raw = opts.no_raw;
        self.builder.unwind_caller_first(opts.caller_order);
        if let Some(how) = opts.aggregate {
            self.builder.aggregate(how);
        }
        if opts.unnamed_functions {
            self.builder.group_unnamed_functions();
        }
    }

    fn with_symbols(events: &[EventAttr], trace: TraceInfo, symbols: Options) -> Loader {
        Loader::with_symbolizer(events, trace, perfkit_symbols::Symbolizer::new(symbols))
    }

    fn with_symbolizer(
        events: &[EventAttr],
        trace: TraceInfo,
        symbolizer: perfkit_symbols::Symbolizer,
    ) -> Loader {
        let descs = events
            .iter()
            .map(|a| EventDesc {
                name: a.name.clone(),
                callchain: a.attr.sample_type & sys::PERF_SAMPLE_CALLCHAIN != 0,
                trace: (a.attr.type_ == sys::PERF_TYPE_TRACEPOINT)
                    .then(|| trace.formats.iter().find(|f| f.id == a.attr.config))
                    .flatten()
                    .map(|f| Box::new(TraceEvent::new(f.clone()))),
            })
            .collect();
        let mut builder = Builder::with_symbolizer(descs, symbolizer);
        builder.printk_formats(trace.printk);
        for a in events {
            builder.stack_user_size(u64::from(a.attr.sample_stack_user));
        }
        // Almost every profile has kernel samples; reading kallsyms overlaps the records.
        builder.prefetch_kernel_symbols();
        let diag = Diagnostics {
            interval_ns: events.first().map_or(250_000, |a| {
                if a.attr.has(sys::attr_flags::FREQ) && a.attr.sample_period > 0 {
                    1_000_000_000 / a.attr.sample_period
                } else {
                    a.attr.sample_period
                }
            }),
            warnings: trace.warning.into_iter().collect(),
            error: None,
        };
        Loader {
            builder,
            dec: Decoder {
                reads: SampleRead::new(events),
                chain: Vec::new(),
                regs: Vec::new(),
                split: Vec::new(),
                skipped: BTreeMap::new(),
                file_build_ids: HashMap::new(),
                fixed_period: events
                    .iter()
                    .map(|e| {
                        if e.attr.has(sys::attr_flags::FREQ) {
                            1
                        } else {
                            e.attr.sample_period.max(1)
                        }
                    })
                    .collect(),
                time: Vec::new(),
                no_raw: false,
            },
            diag,
        }
    }

    /// A loader for `file`'s records: its events, tracepoint formats (from its tracing
    /// data, else this machine's tracefs), the kernel symbols of its build-id cache entry,
    /// and its header facts as the profile's `meta` (`report --header`).
    pub fn for_file(file: &PerfData, opts: &LoadOptions) -> Loader {
        Loader::for_file_reusing(file, opts, None)
    }

    /// [`for_file`](Self::for_file) with a symbolizer kept from an earlier file recorded on
    /// this machine (a live tool's windows, see [`load_reusing`]): files and kernel symbols
    /// are loaded once, not once per file.
    pub fn for_file_reusing(
        file: &PerfData,
        opts: &LoadOptions,
        symbolizer: Option<perfkit_symbols::Symbolizer>,
    ) -> Loader {
        let mut symbols = opts.symbols();
        let kernel_id = crate::origin::kernel_build_id(file);
        let mut other_kernel = None;
        let cached =
            kernel_id.and_then(|want| perfkit_symbols::cached_kallsyms(want, &symbols.kallsyms));
        let mut vmlinux_mismatch = None;
        if let Some(v) = &opts.vmlinux {
            let have = perfkit_symbols::vmlinux::build_id(v).ok().flatten();
            match (kernel_id, have) {
                (Some(want), have)
                    if have
                        .as_deref()
                        .is_none_or(|h| !crate::origin::same_build_id(want, h)) =>
                {
                    symbols.kallsyms = PathBuf::new();
                    vmlinux_mismatch = Some(v.clone());
                }
                _ => symbols.vmlinux = Some(v.clone()),
            }
        } else if opts.kallsyms.is_none() {
            if let Some(copy) = cached {
                // As perf: the build-id cache's copy of this kernel's symbols, when it is
                // the running kernel at the same address.
                symbols.kallsyms = copy;
            } else if let Some(why) = crate::origin::other_kernel(kernel_id, file) {
                // Another kernel recorded this: this machine's symbols would give its
                // addresses wrong names (`_einittext+0x35273f86`). Leave them unnamed.
                symbols.kallsyms = PathBuf::new();
                other_kernel = Some(why);
            }
        }
        let mut me = match symbolizer {
            Some(s) => Loader::with_symbolizer(&file.attrs, TraceInfo::for_file(file), s),
            None => Loader::with_symbols(&file.attrs, TraceInfo::for_file(file), symbols),
        };
        me.builder.kernel_build_id(kernel_id.map(<[u8]>::to_vec));
        me.take_options(opts);
        if opts.raw_only_in_tracepoint_files {
            let events = &me.builder.profile().events;
            let trace_sorted =
                !file.pipe && !events.is_empty() && events.iter().all(|e| e.trace.is_some());
            me.dec.no_raw |= !trace_sorted;
        }
        let warnings = std::mem::take(&mut me.diag.warnings);
        me.diag.warnings = file.warnings.clone();
        me.diag.warnings.extend(warnings);
        if let Some(v) = vmlinux_mismatch {
            me.diag.warnings.push(format!(
                "{}: its build id is not the recorded kernel's: kernel addresses are left \
                 unnamed, as perf leaves them (give the recorded kernel's vmlinux)",
                v.display()
            ));
        }
        if let Some(why) = other_kernel {
            me.diag.warnings.push(format!(
                "the recording's kernel is not the running one ({why}): kernel addresses are \
                 left unnamed (give its kallsyms with --kallsyms, or add it to the build-id \
                 cache)"
            ));
        }
        // perf makes an object for each entry of the build-id table as it reads the header.
        for b in &file.features.build_ids {
            if !b.filename.starts_with("[kernel.kallsyms]") {
                me.builder.note_dso(&b.filename);
            }
        }
        me.dec.file_build_ids = file
            .features
            .build_ids
            .iter()
            .filter(|b| !b.filename.starts_with("[kernel.kallsyms]"))
            .map(|b| (b.filename.clone(), b.build_id.clone()))
            .collect();
        let ft = &file.features;
        me.builder.groups(
            ft.group_desc
                .iter()
                .map(|(name, leader, members)| crate::EventGroup {
                    // perf's dummy name of a group without one.
                    name: (name != "{anon_group}").then(|| name.clone()),
                    leader: *leader,
                    members: *members,
                })
                .collect(),
        );
        for (k, v) in [
            ("hostname", &ft.hostname),
            ("os release", &ft.osrelease),
            ("perf version", &ft.version),
            ("arch", &ft.arch),
            ("cpudesc", &ft.cpudesc),
            ("cpuid", &ft.cpuid),
        ] {
            if let Some(v) = v {
                me.meta(k, v.clone());
            }
        }
        if let Some((on, avail)) = ft.nrcpus {
            me.meta("nrcpus online", on.to_string());
            me.meta("nrcpus avail", avail.to_string());
        }
        if let Some(kb) = ft.total_mem_kb {
            me.meta("total memory", format!("{kb} kB"));
        }
        if !ft.cmdline.is_empty() {
            me.meta("cmdline", ft.cmdline.join(" "));
        }
        for a in &file.attrs {
            me.meta(
                "event",
                format!(
                    "name = {}, id = {:?}, type = {}, config = {:#x}",
                    a.name, a.ids, a.attr.type_, a.attr.config
                ),
            );
        }
        if let Some(c) = ft.compressed {
            me.meta(
                "compressed",
                format!("zstd, level = {}, ratio = {}", c.level, c.ratio),
            );
        }
        for (bit, why) in &ft.unparsed {
            me.diag
                .warnings
                .push(format!("feature section {bit} skipped: {why}"));
        }
        me
    }

    /// Name new addresses inside functions already named from their extents (a live
    /// view's cache; see [`Builder::cache_symbol_ranges`](crate::build::Builder::cache_symbol_ranges)).
    pub fn cache_symbol_ranges(&mut self) {
        self.builder.cache_symbol_ranges();
    }

    /// Fold like samples as they come, for a live view that decays them (see
    /// [`Builder::fold_live`](crate::build::Builder::fold_live)).
    pub fn fold_live(&mut self) {
        self.builder.fold_live();
    }

    /// Add a header fact (`key : value`, shown by `report --header`).
    pub fn meta(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.builder.meta(key, value);
    }

    /// Add a warning to the [`Diagnostics`].
    pub fn warn(&mut self, warning: impl Into<String>) {
        self.diag.warnings.push(warning.into());
    }

    /// Feed one kernel record of event `attr_index` (an index into the events given to
    /// [`new`](Self::new)). Records the profile does not use are ignored.
    pub fn record(&mut self, attr_index: usize, rec: &ParsedRecord<'_>) {
        let b = &mut self.builder;
        self.dec.decode(attr_index, rec, &mut |fed| match fed {
            Fed::Input(i) => b.push(i),
            Fed::Mark(m) => b.mark(m),
        });
    }

    /// How many samples the profile holds so far (a record may become several: one per
    /// counter of a `PERF_SAMPLE_READ` group).
    pub fn samples_len(&self) -> usize {
        self.builder.samples_len()
    }

    /// Feed one of perf's own records (`PERF_RECORD_*` type 64 and up). None is needed
    /// for the profile; unexpected types are counted in a warning.
    pub fn user_record(&mut self, type_: u32) {
        self.dec.user_record(type_);
    }

    /// Hand the samples out as they are built ([`Builder::stream`]) instead of keeping
    /// them: see [`item_to`](Self::item_to) and [`flush_to`](Self::flush_to).
    pub(crate) fn stream_samples(&mut self) {
        self.builder.stream();
    }

    /// Hand the samples still held to `sink` (the end of a streamed load).
    pub(crate) fn flush_to(&mut self, sink: &mut SampleSink<'_>) {
        self.builder.flush(sink);
    }

    /// [`item`](Self::item), a streaming builder's samples going to `sink`
    /// ([`Builder::push_to`]).
    pub(crate) fn item_to(&mut self, item: Item<'_>, sink: &mut SampleSink<'_>) {
        match item {
            Item::Event { attr, record } => self.record_to(attr, &record, sink),
            Item::User { type_, .. } => self.user_record(type_),
            _ => {}
        }
    }

    /// [`record`](Self::record), a streaming builder's samples going to `sink`.
    pub(crate) fn record_to(
        &mut self,
        attr_index: usize,
        rec: &ParsedRecord<'_>,
        sink: &mut SampleSink<'_>,
    ) {
        let b = &mut self.builder;
        self.dec.decode(attr_index, rec, &mut |fed| match fed {
            Fed::Input(i) => b.push_to(i, sink),
            Fed::Mark(m) => b.mark(m),
        });
    }

    /// Feed a record as [`PerfData::for_each`] delivers it.
    pub fn item(&mut self, item: Item<'_>) {
        match item {
            Item::Event { attr, record } => self.record(attr, &record),
            Item::User { type_, .. } => self.user_record(type_),
            // A kind of item added later: nothing the profile uses yet.
            _ => {}
        }
    }

    /// The profile so far, every frame named: a live view (`top`) looks at it between
    /// batches of records.
    pub fn profile(&mut self) -> &Profile {
        self.builder.resolve_kernel_frames();
        self.builder.profile()
    }

    /// Forget the samples so far, keeping threads, maps and symbols (`top -z`).
    pub fn clear_samples(&mut self) {
        self.builder.clear_samples();
    }

    /// Merge and age the samples so far by `num / den` (perf top's decay between refreshes;
    /// see [`Builder::decay_samples`](crate::build::Builder::decay_samples)).
    pub fn decay_samples(&mut self, num: u64, den: u64) {
        self.builder.decay_samples(num, den);
    }

    /// [`finish`](Self::finish), keeping the symbolizer for the next file.
    pub fn finish_keeping_symbolizer(
        mut self,
    ) -> (Profile, Diagnostics, perfkit_symbols::Symbolizer) {
        for (t, n) in std::mem::take(&mut self.dec.skipped) {
            self.diag.warnings.push(format!(
                "skipped {n} records of type {t} (not needed for this report)"
            ));
        }
        let (profile, symbolizer) = self.builder.finish_keeping_symbolizer();
        (profile, self.diag, symbolizer)
    }

    /// The symbolized profile, and what was noticed on the way.
    pub fn finish(self) -> (Profile, Diagnostics) {
        let (profile, diag, _) = self.finish_keeping_symbolizer();
        (profile, diag)
    }
}

impl Decoder {
    /// Turn one kernel record into the builder's inputs, given to `emit` in order.
    pub(crate) fn decode(
        &mut self,
        attr_index: usize,
        rec: &ParsedRecord<'_>,
        emit: &mut dyn FnMut(Fed<'_>),
    ) {
        let time = rec.time().unwrap_or(0);
        let (pid, tid) = (
            rec.sample_id.pid.unwrap_or(-1),
            rec.sample_id.tid.unwrap_or(-1),
        );
        match &rec.record {
            Record::Sample(s) => {
                self.chain.clear();
                if let Some(c) = &s.callchain {
                    self.chain.extend(c.iter());
                }
                self.regs.clear();
                let user = match (&s.regs_user, &s.stack_user) {
                    (Some(r), Some(st)) => {
                        self.regs.extend(r.iter().map(|(_, v)| v));
                        Some(UserStack {
                            abi: r.abi,
                            mask: r.mask(),
                            regs: &self.regs,
                            stack: st.valid(),
                        })
                    }
                    _ => None,
                };
                let fixed = self.fixed_period.get(attr_index).copied().unwrap_or(1);
                let one = [(attr_index, s.period.unwrap_or(fixed))];
                let events: &[(usize, u64)] = match &s.read {
                    Some(r) => {
                        self.reads.split(r, &mut self.split);
                        &self.split
                    }
                    None => &one,
                };
                // (After the split: a counter read outside the ranges still sets the base
                // the next read grows from.)
                if !crate::timespec::keeps(&self.time, s.time.unwrap_or(time)) {
                    return;
                }
                for &(event, period) in events {
                    emit(Fed::Input(Input::Sample(SampleInput {
                        event: event as u32,
                        pid: s.pid.unwrap_or(-1),
                        tid: s.tid.unwrap_or(-1),
                        time: s.time.unwrap_or(time),
                        cpu: s.cpu,
                        period,
                        ip: s.ip.unwrap_or(0),
                        kernel: rec.cpumode() == sys::PERF_RECORD_MISC_KERNEL,
                        callchain: &self.chain,
                        user,
                        raw: s.raw.filter(|_| !self.no_raw),
                        cgroup: s.cgroup.unwrap_or(0),
                    })));
                }
            }
            Record::Ksymbol(k) => emit(Fed::Input(Input::Ksymbol {
                addr: k.addr,
                len: u64::from(k.len),
                name: std::borrow::Cow::Borrowed(bytes_str(k.name)),
                unregister: k.flags & sys::PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER != 0,
            })),
            Record::Mmap(m) => {
                let mapping = Mapping {
                    start: m.addr,
                    end: m.addr.saturating_add(m.len),
                    pgoff: m.pgoff,
                    path: String::from_utf8_lossy(m.filename).into_owned(),
                    build_id: self.file_build_ids.get(bytes_str(m.filename)).cloned(),
                };
                emit(Fed::Input(mmap_input(m.pid, m.data, mapping)))
            }
            Record::Mmap2(m) => {
                let mapping = Mapping {
                    start: m.addr,
                    end: m.addr.saturating_add(m.len),
                    pgoff: m.pgoff,
                    path: String::from_utf8_lossy(m.filename).into_owned(),
                    build_id: match &m.file_id {
                        perfkit_records::Mmap2FileId::BuildId(id) => Some(id.as_bytes().to_vec()),
                        _ => self.file_build_ids.get(bytes_str(m.filename)).cloned(),
                    },
                };
                emit(Fed::Input(mmap_input(m.pid, m.data, mapping)))
            }
            Record::Comm(c) => emit(Fed::Input(Input::Comm {
                pid: c.pid,
                tid: c.tid,
                name: String::from_utf8_lossy(c.comm),
                exec: c.exec,
                time,
            })),
            Record::Cgroup(c) => emit(Fed::Input(Input::Cgroup {
                id: c.id,
                path: String::from_utf8_lossy(c.path),
            })),
            Record::Namespaces(n) => {
                // perf's CGROUP_NS_INDEX.
                if let Some(l) = n.get(6) {
                    emit(Fed::Input(Input::Namespaces {
                        pid: n.pid,
                        tid: n.tid,
                        time,
                        cgroup_ns: (l.dev, l.ino),
                    }));
                }
            }
            Record::Fork(t) => emit(Fed::Input(Input::Fork {
                pid: t.pid,
                tid: t.tid,
                ppid: t.ppid,
                ptid: t.ptid,
                time: t.time,
            })),
            Record::Exit(t) => emit(Fed::Input(Input::Exit {
                pid: t.pid,
                tid: t.tid,
                time: t.time,
            })),
            Record::Switch(s) => emit(Fed::Input(Input::Switch {
                pid,
                tid,
                time,
                out: s.out,
            })),
            Record::Lost(l) => {
                emit(Fed::Input(Input::Lost { count: l.lost }));
                emit(Fed::Mark(crate::Mark {
                    time,
                    thread: None,
                    kind: crate::MarkKind::Lost(l.lost),
                }));
            }
            Record::Throttle(t) => emit(Fed::Input(Input::Throttle {
                time: t.time,
                on: true,
            })),
            Record::Unthrottle(t) => emit(Fed::Input(Input::Throttle {
                time: t.time,
                on: false,
            })),
            Record::LostSamples(l) => emit(Fed::Input(Input::LostSamples { count: l.lost })),
            _ => {}
        }
    }

    /// Count one of perf's own records; unexpected types become a warning.
    pub(crate) fn user_record(&mut self, type_: u32) {
        if !expected_user_record(type_) {
            *self.skipped.entry(type_).or_default() += 1;
        }
    }
}

/// Read every record of `file` (in time order) into a symbolized [`Profile`].
///
/// A data section cut short or corrupt is not an error here: the profile holds what was
/// read before it and [`Diagnostics::error`] says what went wrong (as perf reports what it
/// read).
///
/// ```
/// use perfkit_data::{FileEvent, PerfData, PerfDataWriter, WriteOptions, record};
/// use perfkit_report::load::{LoadOptions, load};
/// use perfkit_sys as sys;
///
/// // A tiny recording: process "demo" (pid 42) and one cpu-clock sample of it.
/// let mut attr = sys::perf_event_attr::default();
/// attr.type_ = sys::PERF_TYPE_SOFTWARE;
/// attr.config = sys::PERF_COUNT_SW_CPU_CLOCK;
/// attr.sample_type =
///     sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME | sys::PERF_SAMPLE_PERIOD;
/// let events = vec![FileEvent { attr, name: "cpu-clock".into(), ids: vec![7] }];
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("perf.data");
/// let mut w = PerfDataWriter::create(&path, events, WriteOptions::default())?;
/// let comm: Vec<u8> = [&42u32.to_ne_bytes()[..], &42u32.to_ne_bytes(), b"demo\0\0\0\0"].concat();
/// w.write_record(&[&record(sys::PERF_RECORD_COMM, 0, &comm, &[])])?;
/// let sample: Vec<u8> = [
///     &0x1000u64.to_ne_bytes()[..], // ip
///     &42u32.to_ne_bytes(),         // pid
///     &42u32.to_ne_bytes(),         // tid
///     &1_000u64.to_ne_bytes(),      // time
///     &250_000u64.to_ne_bytes(),    // period
/// ]
/// .concat();
/// w.write_record(&[&record(sys::PERF_RECORD_SAMPLE, sys::PERF_RECORD_MISC_USER, &sample, &[])])?;
/// w.finish_round()?;
/// w.finish(&[])?;
///
/// let file = PerfData::open(&path)?;
/// let (profile, diagnostics) = load(&file, &LoadOptions::default())?;
/// assert_eq!(profile.samples.len(), 1);
/// let sample = &profile.samples[0];
/// assert_eq!(sample.period, 250_000);
/// assert_eq!(profile.threads[sample.thread as usize].name(), "demo");
/// assert!(diagnostics.error.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load(file: &PerfData, opts: &LoadOptions) -> Result<(Profile, Diagnostics), LoadError> {
    load_with_progress(file, opts, |_, _| {})
}

/// [`load`], calling `progress(done, total)` with the bytes of the data section read so
/// far (about every MiB; `total` is 0 for a pipe-mode stream, whose size is not known).
pub fn load_with_progress(
    file: &PerfData,
    opts: &LoadOptions,
    progress: impl FnMut(usize, usize),
) -> Result<(Profile, Diagnostics), LoadError> {
    load_into(file, opts, None, progress)
}

/// [`load_with_progress`], handing the samples to `sink` as they are built, in the file's
/// order, instead of keeping them (`script`: memory then grows with the distinct stacks,
/// threads and symbols, not with the samples). `sink` gets the profile as built so far,
/// every frame named, and the next samples; what comes back is the profile without
/// samples. The samples and the profile state each sees are the same whatever
/// [`crate::pipeline::threads`] says ([`Builder::push_to`]).
pub fn stream(
    file: &PerfData,
    opts: &LoadOptions,
    sink: &mut SampleSink<'_>,
    progress: impl FnMut(usize, usize),
) -> Result<(Profile, Diagnostics), LoadError> {
    load_into(file, opts, Some(sink), progress)
}

fn load_into(
    file: &PerfData,
    opts: &LoadOptions,
    sink: Option<&mut SampleSink<'_>>,
    mut progress: impl FnMut(usize, usize),
) -> Result<(Profile, Diagnostics), LoadError> {
    // The one error before any record: samples that cannot be told apart.
    file.parser().map_err(LoadError::Read)?;
    let streaming = sink.is_some();
    let new_loader = || {
        let mut loader = Loader::for_file(file, opts);
        if streaming {
            loader.builder.stream();
        }
        loader
    };
    let mut loader = new_loader();
    let mut ignore = |_: &Profile, _: &[crate::Sample]| {};
    let sink: &mut SampleSink<'_> = match sink {
        Some(s) => s,
        None => &mut ignore,
    };
    // A load that starts again (below) hands out the samples it already gave once more:
    // they are skipped.
    let (given, skip) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
    let mut sink = |p: &Profile, samples: &[crate::Sample]| {
        let k = skip.get().min(samples.len());
        skip.set(skip.get() - k);
        if k < samples.len() {
            given.set(given.get() + samples.len() - k);
            sink(p, &samples[k..]);
        }
    };
    let total = file.data_len();
    let threads = opts
        .threads
        .filter(|&n| n > 0)
        .unwrap_or_else(crate::pipeline::threads);
    let mut fanned = None;
    if threads > 2 && crate::fan_out::possible(file) {
        let Loader { builder, dec, .. } = &mut loader;
        fanned = crate::fan_out::fan_out(file, dec, builder, &mut sink, threads - 2, |done| {
            progress(done, total)
        });
        if fanned.is_none() {
            // A record did not decode: start again on the path that stops at it as the
            // single-threaded one does.
            loader = new_loader();
            skip.set(given.get());
        }
    }
    let result = if let Some(result) = fanned {
        result
    } else if threads > 1 {
        let Loader { builder, dec, .. } = &mut loader;
        crate::pipeline::feed(file, dec, builder, &mut sink, |done| progress(done, total))
    } else {
        file.for_each(
            |item| loader.item_to(item, &mut sink),
            |done| progress(done, total),
        )
    };
    loader.builder.flush(&mut sink);
    let (profile, mut diag) = loader.finish();
    diag.error = result.err();
    Ok((profile, diag))
}

/// [`load`] with a symbolizer kept from an earlier file recorded on this machine (None the
/// first time), given back for the next: a live tool that cuts its recording into many
/// files (`perfkit agent`) loads each shared object and the kernel's symbols once.
pub fn load_reusing(
    file: &PerfData,
    opts: &LoadOptions,
    symbolizer: Option<perfkit_symbols::Symbolizer>,
) -> Result<(Profile, Diagnostics, perfkit_symbols::Symbolizer), LoadError> {
    file.parser().map_err(LoadError::Read)?;
    let mut loader = Loader::for_file_reusing(file, opts, symbolizer);
    let result = file.for_each(|item| loader.item(item), |_| {});
    let (profile, mut diag, symbolizer) = loader.finish_keeping_symbolizer();
    diag.error = result.err();
    Ok((profile, diag, symbolizer))
}

/// Open the perf.data file (or pipe-mode stream, `-` for standard input) at `path` and
/// [`load`] it.
pub fn load_path(path: &Path, opts: &LoadOptions) -> Result<(Profile, Diagnostics), LoadError> {
    let file = open(path)?;
    load(&file, opts)
}

/// Open `path` (`-`: standard input) as a perf.data file or pipe-mode stream.
pub fn open(path: &Path) -> Result<PerfData, LoadError> {
    PerfData::open(path).map_err(|source| LoadError::Open {
        path: path.to_path_buf(),
        source,
    })
}

/// A file name as the HEADER_BUILD_ID keys are written (names that are not UTF-8 match none).
fn bytes_str(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or("")
}

/// The input of a mapping record: a code mapping, or a data one (`PERF_RECORD_MISC_MMAP_DATA`).
fn mmap_input(pid: i32, data: bool, mapping: Mapping) -> Input<'static> {
    if data {
        Input::DataMmap { pid, mapping }
    } else {
        Input::Mmap { pid, mapping }
    }
}
