//! `script`: one line per sample in perf script's default layout, with callchains, a
//! choice of fields (`-F`), and JSON lines.

use crate::script_events::{Extras, RegDump, SampleDetail, SideEvent};
use crate::{FrameId, Profile, Sample};
use serde_json::json;
use std::fmt::Write as _;

/// A `-F` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// Command.
    Comm,
    /// Thread id.
    Tid,
    /// Process id.
    Pid,
    /// CPU.
    Cpu,
    /// Timestamp in seconds.
    Time,
    /// Sample period.
    Period,
    /// Event name.
    Event,
    /// Instruction pointer (with the callchain when there is one).
    Ip,
    /// Symbol name.
    Sym,
    /// Symbol offset (`+0x12`, with `sym`).
    Symoff,
    /// Shared object.
    Dso,
    /// Source line.
    Srcline,
    /// A tracepoint sample's fields, formatted by its print fmt.
    Trace,
    /// `PERF_SAMPLE_ADDR` (with its symbol and object for page faults).
    Addr,
    /// `PERF_SAMPLE_DATA_SRC`, decoded.
    DataSrc,
    /// `PERF_SAMPLE_WEIGHT`.
    Weight,
    /// The instruction latency of `PERF_SAMPLE_WEIGHT_STRUCT`.
    InsLat,
    /// `PERF_SAMPLE_PHYS_ADDR`.
    PhysAddr,
    /// `PERF_SAMPLE_DATA_PAGE_SIZE`.
    DataPageSize,
    /// `PERF_SAMPLE_CODE_PAGE_SIZE`.
    CodePageSize,
    /// `PERF_SAMPLE_REGS_INTR`.
    Iregs,
    /// `PERF_SAMPLE_REGS_USER`.
    Uregs,
    /// The header's cpu mode and flags (`K`, `U`, `M`, `E`, `S`, ...).
    Misc,
    /// Branch flags of synthesized branch samples (blank for others).
    Flags,
    /// Wall-clock time of day (needs the file's clock data, `record -k`).
    Tod,
    /// The instruction's bytes at the sample's ip (read from its file).
    Insn,
    /// The length of that instruction.
    Insnlen,
    /// Fields perf prints only for hardware tracing, BPF output or metric events
    /// (`brstack`, `brstacksym`, `brstackoff`, `brstackinsn`, `brstackinsnlen`,
    /// `callindent`, `insn`, `insnlen`, `synth`, `metric`, `srccode`, `ipc`,
    /// `bpf-output`): the name as given.
    Other(&'static str),
}

impl Field {
    /// Parse one field name (perf's names).
    pub fn parse(s: &str) -> Option<Field> {
        Some(match s {
            "comm" => Field::Comm,
            "tid" => Field::Tid,
            "pid" => Field::Pid,
            "cpu" => Field::Cpu,
            "time" => Field::Time,
            "period" => Field::Period,
            "event" => Field::Event,
            "ip" => Field::Ip,
            "sym" => Field::Sym,
            "symoff" => Field::Symoff,
            "dso" => Field::Dso,
            "srcline" => Field::Srcline,
            "trace" => Field::Trace,
            "addr" => Field::Addr,
            "data_src" => Field::DataSrc,
            "weight" => Field::Weight,
            "ins_lat" => Field::InsLat,
            "phys_addr" => Field::PhysAddr,
            "data_page_size" => Field::DataPageSize,
            "code_page_size" => Field::CodePageSize,
            "iregs" => Field::Iregs,
            "uregs" => Field::Uregs,
            "misc" => Field::Misc,
            "flags" => Field::Flags,
            "tod" => Field::Tod,
            "insn" => Field::Insn,
            "insnlen" => Field::Insnlen,
            _ => {
                return OTHER_FIELDS
                    .iter()
                    .find(|f| **f == s)
                    .map(|f| Field::Other(f));
            }
        })
    }
    /// Every field name, in perf 6.1's order (its `-F` help).
    pub const NAMES: &'static str = "comm,tid,pid,time,cpu,event,trace,ip,sym,dso,addr,symoff,srcline,period,iregs,uregs,brstack,brstacksym,flags,data_src,weight,bpf-output,brstackinsn,brstackinsnlen,brstackoff,callindent,insn,insnlen,synth,phys_addr,metric,misc,srccode,ipc,tod,data_page_size,code_page_size,ins_lat";

    /// Whether the field needs a sample's own data beyond the profile
    /// ([`crate::script_events::SampleDetail`]).
    pub fn needs_details(self) -> bool {
        matches!(
            self,
            Field::Addr
                | Field::DataSrc
                | Field::Weight
                | Field::InsLat
                | Field::PhysAddr
                | Field::DataPageSize
                | Field::CodePageSize
                | Field::Iregs
                | Field::Uregs
                | Field::Misc
                | Field::Flags
                | Field::Tod
                | Field::Insn
                | Field::Insnlen
                | Field::Other(
                    "brstack"
                        | "brstacksym"
                        | "brstackoff"
                        | "brstackinsn"
                        | "brstackinsnlen"
                        | "srccode",
                )
        )
    }

    /// perf's name of the field.
    pub fn name(self) -> &'static str {
        match self {
            Field::Comm => "comm",
            Field::Tid => "tid",
            Field::Pid => "pid",
            Field::Cpu => "cpu",
            Field::Time => "time",
            Field::Period => "period",
            Field::Event => "event",
            Field::Ip => "ip",
            Field::Sym => "sym",
            Field::Symoff => "symoff",
            Field::Dso => "dso",
            Field::Srcline => "srcline",
            Field::Trace => "trace",
            Field::Addr => "addr",
            Field::DataSrc => "data_src",
            Field::Weight => "weight",
            Field::InsLat => "ins_lat",
            Field::PhysAddr => "phys_addr",
            Field::DataPageSize => "data_page_size",
            Field::CodePageSize => "code_page_size",
            Field::Iregs => "iregs",
            Field::Uregs => "uregs",
            Field::Misc => "misc",
            Field::Flags => "flags",
            Field::Tod => "tod",
            Field::Insn => "insn",
            Field::Insnlen => "insnlen",
            Field::Other(name) => name,
        }
    }

    /// perf's defaults for raw PMU events (memory sampling: `perf mem`'s events): the
    /// usual fields and each memory field the samples carry.
    pub fn raw_defaults(has_cpu: bool, sample_type: u64) -> Vec<Field> {
        let mut f = Field::defaults(has_cpu);
        for (bit, field) in [
            (perfkit_sys::PERF_SAMPLE_ADDR, Field::Addr),
            (perfkit_sys::PERF_SAMPLE_DATA_SRC, Field::DataSrc),
            (
                perfkit_sys::PERF_SAMPLE_WEIGHT | perfkit_sys::PERF_SAMPLE_WEIGHT_STRUCT,
                Field::Weight,
            ),
            (perfkit_sys::PERF_SAMPLE_PHYS_ADDR, Field::PhysAddr),
            (perfkit_sys::PERF_SAMPLE_DATA_PAGE_SIZE, Field::DataPageSize),
            (perfkit_sys::PERF_SAMPLE_CODE_PAGE_SIZE, Field::CodePageSize),
            (perfkit_sys::PERF_SAMPLE_WEIGHT_STRUCT, Field::InsLat),
        ] {
            if sample_type & bit != 0 {
                f.push(field);
            }
        }
        f
    }

    /// perf's default fields for tracepoint samples: no period, the formatted fields after
    /// the event name (and the callchain, when recorded, on the following lines).
    pub fn tracepoint_defaults(has_cpu: bool) -> Vec<Field> {
        Field::defaults(has_cpu)
            .into_iter()
            .filter(|f| *f != Field::Period)
            .flat_map(|f| match f {
                Field::Event => vec![Field::Event, Field::Trace],
                f => vec![f],
            })
            .collect()
    }

    /// perf's default fields (cpu only when recorded).
    pub fn defaults(has_cpu: bool) -> Vec<Field> {
        let mut f = vec![Field::Comm, Field::Tid];
        if has_cpu {
            f.push(Field::Cpu);
        }
        f.extend([
            Field::Time,
            Field::Period,
            Field::Event,
            Field::Ip,
            Field::Sym,
            Field::Symoff,
            Field::Dso,
        ]);
        f
    }
}

/// A frame's line; `full`: source files with their directories (`--full-source-path`).
fn frame_text(p: &Profile, f: FrameId, fields: &[Field], in_chain: bool, full: bool) -> String {
    let mut s = String::new();
    frame_text_into(p, f, fields, in_chain, full, &mut s);
    s
}

/// [`frame_text`], appended to `s`.
fn frame_text_into(
    p: &Profile,
    f: FrameId,
    fields: &[Field],
    in_chain: bool,
    full: bool,
    s: &mut String,
) {
    let fr = &p.frames[f as usize];
    let func = p.func_of(f);
    if fields.contains(&Field::Ip) {
        // Like perf: callchain entries in files show the file-relative address (kernel
        // modules' the address itself).
        let addr = if in_chain && !func.kernel {
            fr.map_offset.unwrap_or(fr.addr)
        } else {
            fr.addr
        };
        let _ = write!(s, "{addr:>16x}");
    }
    // A function perf's DWARF unwinder found inlined: `name+off (inlined)`, no object.
    let inlined_name = func
        .name
        .strip_suffix(" (inlined)")
        .filter(|_| fr.inlined && fr.sym_offset.is_some());
    if let Some(name) = inlined_name {
        if fields.contains(&Field::Sym) {
            let _ = write!(s, " {name}");
            if let (true, Some(off)) = (fields.contains(&Field::Symoff), fr.sym_offset) {
                let _ = write!(s, "+{off:#x}");
            }
        }
        if fields.contains(&Field::Dso) {
            s.push_str(" (inlined)");
        }
        return;
    }
    if fields.contains(&Field::Sym) {
        let _ = write!(s, " {}", func.name);
        if fields.contains(&Field::Symoff)
            && func.name != "[unknown]"
            && let Some(off) = fr.sym_offset
        {
            let _ = write!(s, "+{off:#x}");
        }
    }
    if fields.contains(&Field::Dso) {
        let _ = write!(s, " ({})", func.dso);
    }
    if fields.contains(&Field::Srcline) {
        // perf's `map__fprintf_srcline`: the object and address where there is no line,
        // nothing outside any object.
        let at = s.len();
        s.push_str("\n  ");
        crate::srcline::push_srcline(p, Some(f), false, full, s);
        if s[at + 3..] == *crate::srcline::UNKNOWN {
            s.truncate(at);
        }
    }
}

/// Callchain lines of frames, each formatted once: one text with every line, and where
/// each frame's is (a line per frame in its own allocation cost a third more memory).
#[derive(Default)]
struct FrameLines {
    text: String,
    /// Per frame: the start and length of its line in `text` (`u32::MAX`: not yet made).
    at: Vec<(u32, u32)>,
}

impl FrameLines {
    /// Append frame `f`'s callchain line to `out`, formatting it the first time.
    fn push(&mut self, p: &Profile, f: FrameId, fields: &[Field], full: bool, out: &mut String) {
        let i = f as usize;
        if self.at.len() <= i {
            // (Frames made since the last sample: a streamed profile grows.)
            self.at.resize(p.frames.len().max(i + 1), (u32::MAX, 0));
        }
        let (start, len) = self.at[i];
        if start != u32::MAX {
            out.push_str(&self.text[start as usize..(start + len) as usize]);
            return;
        }
        let from = out.len();
        frame_text_into(p, f, fields, true, full, out);
        let line = &out[from..];
        // (A text past 4 GiB keeps its later lines unformatted: each is made anew.)
        if let (Ok(start), Ok(end)) = (
            u32::try_from(self.text.len()),
            u32::try_from(self.text.len() + line.len()),
        ) && end != u32::MAX
        {
            self.text.push_str(line);
            self.at[i] = (start, end - start);
        }
    }
}

/// Fields perf prints only for hardware tracing, BPF output and metric events.
const OTHER_FIELDS: [&str; 11] = [
    "brstack",
    "brstacksym",
    "brstackoff",
    "brstackinsn",
    "brstackinsnlen",
    "callindent",
    "synth",
    "metric",
    "srccode",
    "ipc",
    "bpf-output",
];

/// A `-F` argument as perf takes it: a list of fields (optionally after an event type,
/// `sw:comm,tid`), or changes to the defaults (`+srcline`, `-period`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSpec {
    /// The fields named outright (None: the defaults, changed by `add` and `remove`).
    pub explicit: Option<Vec<Field>>,
    /// `+field`: added to the defaults.
    pub add: Vec<Field>,
    /// `-field`: taken from the defaults.
    pub remove: Vec<Field>,
}

/// Event types perf accepts before the fields (`-F sw:comm,tid`).
const FIELD_TYPES: [&str; 8] = [
    "hw",
    "sw",
    "trace",
    "raw",
    "synth",
    "bpf-output",
    "break",
    "bpf",
];

impl FieldSpec {
    /// Parse the comma-separated items of `-F` (an unknown field is the error).
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<FieldSpec, String> {
        let mut spec = FieldSpec::default();
        for (i, item) in items.iter().enumerate() {
            let mut item = item.as_ref().trim();
            if i == 0
                && let Some((ty, rest)) = item.split_once(':')
                && FIELD_TYPES.contains(&ty)
            {
                item = rest;
            }
            if item.is_empty() {
                continue;
            }
            let parse = |f: &str| Field::parse(f).ok_or_else(|| f.to_string());
            if let Some(f) = item.strip_prefix('+') {
                spec.add.push(parse(f)?);
            } else if let Some(f) = item.strip_prefix('-') {
                spec.remove.push(parse(f)?);
            } else {
                spec.explicit
                    .get_or_insert_with(Vec::new)
                    .push(parse(item)?);
            }
        }
        Ok(spec)
    }

    /// `defaults` with the additions and removals applied.
    pub fn apply(&self, defaults: Vec<Field>) -> Vec<Field> {
        let mut f: Vec<Field> = defaults
            .into_iter()
            .filter(|f| !self.remove.contains(f))
            .collect();
        for a in &self.add {
            if !f.contains(a) {
                f.push(*a);
            }
        }
        f
    }
}

/// What a timestamp is printed relative to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeBase {
    /// The perf clock's value (perf's default).
    #[default]
    Absolute,
    /// The first sample printed (`--reltime`).
    First,
    /// The previous sample printed (`--deltatime`).
    Previous,
}

/// How the `time` field is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeFormat {
    /// Nine digits after the point (`--ns`), not six.
    pub ns: bool,
    /// Relative to what.
    pub base: TimeBase,
    /// perf's `-L` layout of the columns before the time (comm in 8 columns, cpu as a
    /// bare number).
    pub latency: bool,
}

/// Renders samples, formatting each distinct frame once (a profile's callchains repeat
/// the same frames over and over; formatting them is most of `script`'s work otherwise).
pub struct ScriptWriter<'p> {
    fields: Vec<Field>,
    /// The fields of tracepoint samples, when they differ (perf's per-type defaults).
    trace_fields: Option<Vec<Field>>,
    chain_lines: FrameLines,
    /// Each event's callchain lines, for events printed with their own fields
    /// ([`with_event_fields`](Self::with_event_fields)): formatted once per frame and
    /// event, as `chain_lines` are for the common fields.
    event_chain_lines: Vec<FrameLines>,
    event_width: usize,
    time_format: TimeFormat,
    first_time: Option<u64>,
    prev_time: Option<u64>,
    callchains: bool,
    /// Each sample's own fields and the side-band records, when asked for.
    extras: Option<&'p Extras>,
    /// Fields per event where they differ from `fields` (perf's per-type defaults).
    event_fields: Vec<Option<Vec<Field>>>,
    /// perf pads `data_src` to the widest printed so far.
    data_src_width: usize,
    /// The wall-clock time of perf clock 0 (ns), for `tod`.
    tod_base: Option<i128>,
    /// Most callchain entries printed (`--max-stack`).
    max_stack: usize,
    /// The command to print for the sample being written, when it is not the thread's
    /// name at its time.
    comm_now: Option<String>,
    /// `srccode`: each thread's last printed source line, and the source files read.
    srccode: crate::script_srccode::SrcCode,
    /// `--full-source-path`: `srcline` names files with their directories.
    full_source_path: bool,
}

impl<'p> ScriptWriter<'p> {
    /// A writer of `fields` for samples of `profile` (or of a profile still being built,
    /// with these events: each method takes the profile as it is then).
    pub fn new(profile: &Profile, fields: &[Field]) -> Self {
        ScriptWriter {
            fields: fields.to_vec(),
            trace_fields: None,
            chain_lines: FrameLines::default(),
            event_chain_lines: Vec::new(),
            event_width: event_width(profile),
            time_format: TimeFormat::default(),
            first_time: None,
            prev_time: None,
            callchains: true,
            extras: None,
            event_fields: Vec::new(),
            data_src_width: 0,
            tod_base: None,
            max_stack: usize::MAX,
            comm_now: None,
            srccode: Default::default(),
            full_source_path: false,
        }
    }

    /// Name source files with their directories in `srcline` (`--full-source-path`).
    pub fn with_full_source_path(mut self, on: bool) -> Self {
        self.full_source_path = on;
        self
    }

    /// Print samples' own fields from `extras` and its side-band records
    /// ([`side_event`](Self::side_event)).
    pub fn with_extras(mut self, extras: &'p Extras) -> Self {
        self.extras = Some(extras);
        self
    }

    /// Print samples of event `event` with these fields.
    pub fn with_event_fields(mut self, event: usize, fields: Vec<Field>) -> Self {
        if self.event_fields.len() <= event {
            self.event_fields.resize(event + 1, None);
        }
        self.event_fields[event] = Some(fields);
        self
    }

    /// Print `tod` from the file's clock data: the wall-clock and perf-clock readings
    /// taken together (ns).
    pub fn with_clock(mut self, wall_ns: u64, perf_ns: u64) -> Self {
        self.tod_base = Some(i128::from(wall_ns) - i128::from(perf_ns));
        self
    }

    /// Print at most `n` callchain entries (`--max-stack`).
    pub fn with_max_stack(mut self, n: usize) -> Self {
        self.max_stack = n;
        self
    }

    /// Print timestamps this way.
    pub fn with_time_format(mut self, f: TimeFormat) -> Self {
        self.time_format = f;
        self
    }

    /// Print callchains (default) or only each sample's own address (`-G`).
    pub fn with_callchains(mut self, on: bool) -> Self {
        self.callchains = on;
        self
    }

    /// The time to print for a sample at `t`.
    fn shown_time(&mut self, t: u64) -> u64 {
        let shown = match self.time_format.base {
            TimeBase::Absolute => t,
            TimeBase::First => t.saturating_sub(*self.first_time.get_or_insert(t)),
            TimeBase::Previous => self.prev_time.map_or(0, |p| t.saturating_sub(p)),
        };
        self.prev_time = Some(t);
        shown
    }

    /// Print tracepoint samples with these fields (perf's defaults for them differ from
    /// the other events').
    pub fn with_trace_fields(mut self, fields: Vec<Field>) -> Self {
        self.trace_fields = Some(fields);
        self
    }

    /// Append sample number `index` of the profile to `out`, with its own fields when
    /// they were asked for.
    pub fn sample_at(&mut self, p: &Profile, index: usize, s: &Sample, out: &mut String) {
        if self.event_fields.is_empty()
            && self
                .extras
                .is_none_or(|e| e.details.is_empty() && e.comms.is_empty())
        {
            // Nothing beyond the profile was asked for: the plain path.
            return self.sample(p, s, out);
        }
        let detail = self.extras.and_then(|e| e.details.get(index));
        if let Some(c) = self.extras.and_then(|e| e.comms.get(&index)) {
            self.comm_now = Some(c.clone());
        }
        self.sample_with(p, s, detail, out)
    }

    /// Append one sample to `out` with its own fields `detail` (as a streamed load gives
    /// them: [`crate::script_events::stream`]) where they are asked for.
    pub fn sample_with(
        &mut self,
        p: &Profile,
        s: &Sample,
        detail: Option<&SampleDetail>,
        out: &mut String,
    ) {
        let own = self
            .event_fields
            .get(s.event as usize)
            .and_then(Option::as_ref);
        let fields = own.unwrap_or(&self.fields);
        if let Some(d) = detail.filter(|_| fields.iter().any(|f| f.needs_details()))
            && trace_of(p, s).is_none()
        {
            let fields = fields.clone();
            return self.detailed(p, s, d, &fields, out);
        }
        if own.is_some_and(|f| *f != self.fields) {
            // This event's fields and its own cache of frame lines, swapped in for one
            // sample (nothing allocated per sample).
            let event = s.event as usize;
            if self.event_chain_lines.len() <= event {
                self.event_chain_lines
                    .resize_with(event + 1, FrameLines::default);
            }
            self.swap_event(event);
            self.sample(p, s, out);
            self.swap_event(event);
            return;
        }
        self.sample(p, s, out)
    }

    /// Print the next sample with this command instead of its thread's name at its time
    /// (perf's unordered mode names a thread as the records read so far named it; see
    /// [`crate::script_events::SampleComms`]).
    pub fn comm_for_next(&mut self, comm: Option<String>) {
        self.comm_now = comm;
    }

    /// Append one sample of `p` to `out`.
    pub fn sample(&mut self, p: &Profile, s: &Sample, out: &mut String) {
        let comm = self.comm_now.take();
        let time = Shown {
            comm: comm.as_deref(),
            time: self.shown_time(s.time),
            ns: self.time_format.ns,
            latency: self.time_format.latency,
        };
        if let Some((ev, raw)) = trace_of(p, s) {
            let fields = self.trace_fields.as_ref().unwrap_or(&self.fields);
            let chain = self.callchains && has_chain(p, s);
            sample_head(p, s, fields, chain, self.event_width, time, out);
            if fields.contains(&Field::Trace) {
                ev.text_into(raw, &p.trace_kernel, out);
            }
            // (perf's default tracepoint fields have the ip only where the samples have
            // callchains; fields the user gives print the ip of a sample without one.)
            let own_ip = self.trace_fields.is_none();
            if wants_frames(fields) && (chain || own_ip) {
                if chain {
                    for f in p.stack_frames(s.stack).take(self.chain_len(s)) {
                        out.push_str("\n\t");
                        out.push_str(&frame_text(p, f, fields, true, self.full_source_path));
                    }
                    out.push('\n');
                } else if let Some(f) = p
                    .sample_frame(s.stack)
                    .or_else(|| p.stack_frames(s.stack).next())
                {
                    out.push(' ');
                    out.push_str(&frame_text(p, f, fields, false, self.full_source_path));
                }
            }
            out.push('\n');
            return;
        }
        let fields = &self.fields;
        // perf drops `trace` from the fields of other events (`'trace' not valid for
        // software events. Ignoring.`) and prints nothing of an event left with none.
        if fields.iter().all(|f| *f == Field::Trace) {
            return;
        }
        if !self.callchains || !has_chain(p, s) {
            return sample_line(p, s, fields, time, false, self.full_source_path, out);
        }
        sample_head(p, s, fields, true, self.event_width, time, out);
        if !wants_frames(fields) {
            out.push('\n');
            return;
        }
        let n = self.chain_len(s);
        for f in p.stack_frames(s.stack).take(n) {
            out.push_str("\n\t");
            self.chain_lines
                .push(p, f, &self.fields, self.full_source_path, out);
        }
        out.push_str("\n\n");
    }
}

impl ScriptWriter<'_> {
    /// Exchange the common fields and frame lines with event `event`'s own.
    fn swap_event(&mut self, event: usize) {
        if let Some(Some(own)) = self.event_fields.get_mut(event) {
            std::mem::swap(&mut self.fields, own);
            std::mem::swap(&mut self.chain_lines, &mut self.event_chain_lines[event]);
        }
    }

    /// How many callchain entries to print of `s` (`--max-stack`; none of a chain perf
    /// discards, see [`Sample::chain_broken`]).
    fn chain_len(&self, s: &Sample) -> usize {
        if s.chain_broken { 0 } else { self.max_stack }
    }

    /// The prefix perf prints before a sample's or a record's own text: comm, pid/tid,
    /// cpu, misc, tod and time, each followed by a space.
    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        fields: &[Field],
        comm: &str,
        pid: i32,
        tid: i32,
        cpu: Option<u32>,
        misc: u16,
        type_: u32,
        time: u64,
        chain: bool,
        out: &mut String,
    ) {
        let latency = self.time_format.latency;
        if fields.contains(&Field::Comm) {
            if latency {
                push_right(out, &comm.chars().take(8).collect::<String>(), 8);
                out.push(' ');
            } else if chain && fields.contains(&Field::Ip) {
                out.push_str(comm);
                out.push(' ');
            } else {
                push_right(out, comm, 16);
                out.push(' ');
            }
        }
        let (has_pid, has_tid) = (fields.contains(&Field::Pid), fields.contains(&Field::Tid));
        if has_pid && has_tid {
            let _ = write!(out, "{pid:>5}/{tid:<5} ");
        } else if has_pid {
            let _ = write!(out, "{pid:>5} ");
        } else if has_tid {
            let _ = write!(out, "{tid:>5} ");
        }
        // (perf leaves the cpu out of the default fields of an event whose samples lack
        // it, and so of the side-band records that event carries.)
        if fields.contains(&Field::Cpu)
            && let Some(cpu) = cpu
        {
            if latency {
                let _ = write!(out, "{cpu:>3} ");
            } else {
                out.push('[');
                push_num(out, u64::from(cpu), 3, '0');
                out.push_str("] ");
            }
        }
        if fields.contains(&Field::Misc) {
            let start = out.len();
            push_misc(out, misc, type_);
            let n = out.len() - start;
            for _ in n..6 {
                out.push(' ');
            }
            if n >= 6 {
                out.push(' ');
            }
        }
        if fields.contains(&Field::Tod) {
            out.push_str(&self.tod(time));
            out.push(' ');
        }
        if fields.contains(&Field::Time) {
            let t = self.shown_time(time);
            push_num(out, t / 1_000_000_000, 5, ' ');
            out.push('.');
            if self.time_format.ns {
                push_num(out, t % 1_000_000_000, 9, '0');
            } else {
                push_num(out, t % 1_000_000_000 / 1000, 6, '0');
            }
            out.push_str(": ");
        }
    }

    /// perf's time of day for a perf-clock timestamp (`%F %H:%M:%S.usec`, UTC).
    fn tod(&self, time: u64) -> String {
        let Some(base) = self.tod_base else {
            return "disabled".into();
        };
        let ns = base + i128::from(time);
        let (secs, sub) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
        let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (y, m, d) = crate::header::civil_date(days as i64);
        let frac = if self.time_format.ns {
            format!("{sub:09}")
        } else {
            format!("{:06}", sub / 1000)
        };
        format!(
            "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{frac}",
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        )
    }

    /// A sample with its own fields, in perf's order (`process_event`).
    fn detailed(
        &mut self,
        p: &Profile,
        s: &Sample,
        d: &SampleDetail,
        fields: &[Field],
        out: &mut String,
    ) {
        let t = &p.threads[s.thread as usize];
        let chain = self.callchains && has_chain(p, s) && fields.contains(&Field::Ip);
        let comm = self.comm_now.take();
        self.start(
            fields,
            comm.as_deref().unwrap_or_else(|| t.name_at(s.time)),
            t.pid,
            t.tid,
            s.cpu,
            d.misc,
            perfkit_sys::PERF_RECORD_SAMPLE,
            s.time,
            chain,
            out,
        );
        if fields.contains(&Field::Period) {
            push_num(out, s.period, 10, ' ');
            out.push(' ');
        }
        if fields.contains(&Field::Event) {
            let ev = p
                .events
                .get(s.event as usize)
                .map_or("", |e| e.name.as_str());
            push_right(out, ev, self.event_width);
            out.push_str(": ");
        }
        if fields.contains(&Field::Flags) {
            let _ = write!(out, "  {:<21} ", "");
        }
        if fields.contains(&Field::Addr) {
            let _ = write!(out, "{:>16x}", d.addr);
            if let Some(a) = &d.addr_symbol {
                if fields.contains(&Field::Sym) {
                    out.push(' ');
                    out.push_str(&a.name);
                    if fields.contains(&Field::Symoff)
                        && let Some(off) = a.offset
                    {
                        let _ = write!(out, "+{off:#x}");
                    }
                }
                if fields.contains(&Field::Dso) {
                    let _ = write!(out, " ({})", a.dso);
                }
            }
        }
        if fields.contains(&Field::DataSrc) {
            let mut text = format!(
                "{:>16x} {}",
                d.data_src,
                crate::data_src::describe(d.data_src)
            );
            // perf formats it into 100 bytes: longer decodings lose their end.
            text.truncate(99);
            self.data_src_width = self.data_src_width.max(text.len());
            let _ = write!(out, "{text:<w$}", w = self.data_src_width);
        }
        if fields.contains(&Field::Weight) {
            let _ = write!(out, "{:>16}", d.weight);
        }
        if fields.contains(&Field::InsLat) {
            let _ = write!(out, "{:>16}", d.ins_lat);
        }
        if fields.contains(&Field::Ip) {
            if chain {
                out.push('\n');
                for f in p.stack_frames(s.stack).take(self.chain_len(s)) {
                    out.push('\t');
                    out.push_str(&frame_text(p, f, fields, true, self.full_source_path));
                    out.push('\n');
                }
            } else {
                if let Some(f) = p
                    .sample_frame(s.stack)
                    .or_else(|| p.stack_frames(s.stack).next())
                {
                    out.push(' ');
                    out.push_str(&frame_text(p, f, fields, false, self.full_source_path));
                }
            }
        }
        let arch = self.extras.map_or("", |e| e.arch.as_str());
        let masks = self
            .extras
            .and_then(|e| e.events.get(s.event as usize))
            .map_or((0, 0), |e| (e.regs_intr, e.regs_user));
        if fields.contains(&Field::Iregs) {
            push_regs(out, d.iregs.as_ref(), masks.0, arch);
        }
        if fields.contains(&Field::Uregs) {
            push_regs(out, d.uregs.as_ref(), masks.1, arch);
        }
        // perf prints one of them, in this order of preference.
        let dso = fields.contains(&Field::Dso);
        if fields.contains(&Field::Other("brstack")) {
            crate::script_brstack::push_brstack(out, &d.branches, dso, false);
        } else if fields.contains(&Field::Other("brstacksym")) {
            crate::script_brstack::push_brstacksym(out, &d.branches, dso);
        } else if fields.contains(&Field::Other("brstackoff")) {
            crate::script_brstack::push_brstack(out, &d.branches, dso, true);
        }
        if fields.contains(&Field::Insnlen) {
            let _ = write!(out, " ilen: {}", d.insn.len());
        }
        if fields.contains(&Field::Insn) && !d.insn.is_empty() {
            out.push_str(" insn:");
            for b in &d.insn {
                let _ = write!(out, " {b:02x}");
            }
        }
        if fields.contains(&Field::Other("brstackinsn"))
            || fields.contains(&Field::Other("brstackinsnlen"))
        {
            out.push_str(&d.branch_insns);
        }
        if fields.contains(&Field::PhysAddr) {
            let _ = write!(out, "{:>16x}", d.phys_addr);
        }
        if fields.contains(&Field::DataPageSize) {
            out.push(' ');
            push_page_size(out, d.data_page_size);
        }
        if fields.contains(&Field::CodePageSize) {
            out.push(' ');
            push_page_size(out, d.code_page_size);
        }
        out.push('\n');
        if fields.contains(&Field::Other("srccode")) {
            let leaf = p.stack_frames(s.stack).next();
            let at = leaf.and_then(|f| p.frames[f as usize].srcline.as_ref());
            self.srccode.push(s.thread, at, out);
        }
    }

    /// Append a side-band record (`--show-task-events` ...) as perf prints it: the
    /// prefix fields of its event, then perf's text for the record.
    pub fn side_event(&mut self, p: &Profile, e: &SideEvent, out: &mut String) {
        if e.type_ == perfkit_sys::PERF_RECORD_FINISHED_ROUND {
            // perf prints a round's end without the sample prefix.
            out.push_str(&e.text);
            return;
        }
        let fields = self
            .event_fields
            .get(e.event)
            .and_then(Option::as_ref)
            .unwrap_or(&self.fields)
            .clone();
        let chain = self.callchains && p.events.get(e.event).is_some_and(|ev| ev.callchain);
        self.start(
            &fields, &e.comm, e.pid, e.tid, e.cpu, e.misc, e.type_, e.time, chain, out,
        );
        out.push_str(&e.text);
    }
}

/// `--per-event-dump`: each event's samples (those `keep` passes) written to
/// `INPUT.EVENT.dump`, as perf names the files; per event: the file, its size and its
/// number of samples.
pub fn per_event_dump(
    p: &Profile,
    sw: &mut ScriptWriter<'_>,
    input: &std::path::Path,
    keep: impl Fn(&Sample) -> bool,
) -> std::io::Result<Vec<(std::path::PathBuf, u64, u64)>> {
    let mut dump = EventDump::create(input, p.events.iter().map(|e| e.name.as_str()))?;
    for (i, s) in p.samples.iter().enumerate() {
        if keep(s) {
            dump.write(p, sw, i, s)?;
        }
    }
    dump.finish()
}

/// The files of `--per-event-dump`, written one sample at a time as they come (a
/// streamed `script` keeps no sample; [`per_event_dump`] writes a whole profile's).
pub struct EventDump {
    /// Per event: its file, the writer, bytes and samples written.
    files: Vec<(
        std::path::PathBuf,
        std::io::BufWriter<std::fs::File>,
        u64,
        u64,
    )>,
    text: String,
}

impl EventDump {
    /// Create `INPUT.EVENT.dump` for each event named (in the file's order), empty.
    pub fn create<'n>(
        input: &std::path::Path,
        events: impl Iterator<Item = &'n str>,
    ) -> std::io::Result<EventDump> {
        let mut files = Vec::new();
        for e in events {
            let mut name = input.as_os_str().to_owned();
            name.push(format!(".{e}.dump"));
            let path = std::path::PathBuf::from(name);
            let f = std::fs::File::create(&path)?;
            files.push((path, std::io::BufWriter::new(f), 0u64, 0u64));
        }
        Ok(EventDump {
            files,
            text: String::new(),
        })
    }

    /// Write sample `s` (the `i`th of the file) into its event's file.
    pub fn write(
        &mut self,
        p: &Profile,
        sw: &mut ScriptWriter<'_>,
        i: usize,
        s: &Sample,
    ) -> std::io::Result<()> {
        self.put(s, |text| sw.sample_at(p, i, s, text))
    }

    /// [`write`](Self::write) for a sample given with its own fields `detail`
    /// ([`ScriptWriter::sample_with`]).
    pub fn write_with(
        &mut self,
        p: &Profile,
        sw: &mut ScriptWriter<'_>,
        s: &Sample,
        detail: Option<&SampleDetail>,
    ) -> std::io::Result<()> {
        self.put(s, |text| sw.sample_with(p, s, detail, text))
    }

    /// Append the text `format` makes of `s` to its event's file.
    fn put(&mut self, s: &Sample, format: impl FnOnce(&mut String)) -> std::io::Result<()> {
        use std::io::Write as _;
        let Some((_, w, bytes, n)) = self.files.get_mut(s.event as usize) else {
            return Ok(());
        };
        self.text.clear();
        format(&mut self.text);
        w.write_all(self.text.as_bytes())?;
        *bytes += self.text.len() as u64;
        *n += 1;
        Ok(())
    }

    /// Flush the files; per event: the file, its size and its number of samples.
    pub fn finish(self) -> std::io::Result<Vec<(std::path::PathBuf, u64, u64)>> {
        use std::io::Write as _;
        self.files
            .into_iter()
            .map(|(path, mut w, bytes, n)| w.flush().map(|()| (path, bytes, n)))
            .collect()
    }
}

/// perf's letters for a record's misc bits (`script -F misc`).
fn push_misc(out: &mut String, misc: u16, type_: u32) {
    use perfkit_sys as sys;
    let cpumode = misc & sys::PERF_RECORD_MISC_CPUMODE_MASK;
    // As perf: each mode whose bits are all set (a hypervisor sample shows `KUH`).
    let has = |m: u16| cpumode & m == m;
    for (m, c) in [
        (sys::PERF_RECORD_MISC_KERNEL, 'K'),
        (sys::PERF_RECORD_MISC_USER, 'U'),
        (sys::PERF_RECORD_MISC_HYPERVISOR, 'H'),
        (sys::PERF_RECORD_MISC_GUEST_KERNEL, 'G'),
        (sys::PERF_RECORD_MISC_GUEST_USER, 'g'),
    ] {
        if has(m) {
            out.push(c);
        }
    }
    match type_ {
        sys::PERF_RECORD_MMAP | sys::PERF_RECORD_MMAP2
            if misc & sys::PERF_RECORD_MISC_MMAP_DATA != 0 =>
        {
            out.push('M')
        }
        sys::PERF_RECORD_COMM if misc & sys::PERF_RECORD_MISC_COMM_EXEC != 0 => out.push('E'),
        sys::PERF_RECORD_SWITCH | sys::PERF_RECORD_SWITCH_CPU_WIDE
            if misc & sys::PERF_RECORD_MISC_SWITCH_OUT != 0 =>
        {
            out.push('S');
            if misc & sys::PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0 {
                out.push('p');
            }
        }
        _ => {}
    }
}

/// A register dump as perf prints it: ` ABI:2    AX:0x0    BX:0x3 ...`.
fn push_regs(out: &mut String, regs: Option<&RegDump>, mask: u64, arch: &str) {
    let Some(r) = regs.filter(|r| r.abi != 0) else {
        return;
    };
    let _ = write!(out, " ABI:{} ", r.abi);
    let bits = (0..64u32).filter(|b| mask & (1 << b) != 0);
    for (reg, v) in bits.zip(&r.values) {
        let _ = write!(
            out,
            "{:>5}:{v:#x} ",
            crate::script_events::reg_name(arch, reg)
        );
    }
}

/// A page size as perf names it (`4K`, `2M`, `N/A` for none).
fn push_page_size(out: &mut String, size: u64) {
    if size == 0 {
        out.push_str("N/A");
        return;
    }
    let (mut n, mut unit) = (size, 0);
    while n / 1024 > 1 && unit < 3 {
        n /= 1024;
        unit += 1;
    }
    let _ = write!(out, "{n}{}", ['B', 'K', 'M', 'G'][unit]);
}

/// A tracepoint sample's format and RAW data.
fn trace_of<'p>(p: &'p Profile, s: &Sample) -> Option<(&'p crate::model::TraceEvent, &'p [u8])> {
    let ev = p.events.get(s.event as usize)?.trace.as_ref()?;
    let raw = p.raw.get(s.raw? as usize)?;
    Some((ev, raw))
}

/// perf right-aligns event names to the longest of the file.
fn event_width(p: &Profile) -> usize {
    p.events.iter().map(|e| e.name.len()).max().unwrap_or(0)
}

/// `s` right-aligned in `width` columns (what `{:>width$}` does, without the formatter).
fn push_right(out: &mut String, s: &str, width: usize) {
    for _ in s.chars().count()..width {
        out.push(' ');
    }
    out.push_str(s);
}

/// The decimal digits of `n` in `buf`.
fn digits(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[i..]).unwrap_or("")
}

/// `n` right-aligned in `width` columns, padded with `fill`.
fn push_num(out: &mut String, n: u64, width: usize, fill: char) {
    let mut buf = [0u8; 20];
    let d = digits(n, &mut buf);
    for _ in d.len()..width {
        out.push(fill);
    }
    out.push_str(d);
}

/// Whether the sample's event recorded callchains (then perf prints them on their own
/// lines, however short).
fn has_chain(p: &Profile, s: &Sample) -> bool {
    p.events.get(s.event as usize).is_some_and(|e| e.callchain) && s.stack.is_some()
}

fn wants_frames(fields: &[Field]) -> bool {
    // perf 6.1 prints sym, dso, symoff and srcline as parts of the ip: without `ip` none
    // of them shows.
    fields.contains(&Field::Ip)
}

/// A timestamp as printed, and the layout of the columns before it.
#[derive(Clone, Copy)]
struct Shown<'a> {
    time: u64,
    /// The command to print instead of the thread's name at `time` (perf's unordered
    /// mode names a thread as the records so far named it).
    comm: Option<&'a str>,
    ns: bool,
    /// perf's `-L` layout: comm in 8 columns, cpu as a bare number.
    latency: bool,
}

/// The columns before the frames: comm, tid, cpu, time, period, event.
fn sample_head(
    p: &Profile,
    s: &Sample,
    fields: &[Field],
    chain: bool,
    event_width: usize,
    time: Shown<'_>,
    out: &mut String,
) {
    let start = out.len();
    sample_fields(p, s, fields, chain, event_width, time, out);
    // perf ends each field with a space where sample_fields starts each with one: the
    // first field loses its space and the last one gains one (`perf 1234 `, `EVENT: `).
    if out.len() > start {
        if !fields.contains(&Field::Comm) && out[start..].starts_with(' ') {
            out.remove(start);
        }
        out.push(' ');
    }
}

/// The fields of [`sample_head`], each after a space.
fn sample_fields(
    p: &Profile,
    s: &Sample,
    fields: &[Field],
    chain: bool,
    event_width: usize,
    time: Shown<'_>,
    out: &mut String,
) {
    let t = &p.threads[s.thread as usize];
    if fields.contains(&Field::Comm) {
        let name = time.comm.unwrap_or_else(|| t.name_at(s.time));
        // perf pads the command to 16 columns, except before a callchain; `-L` cuts and
        // pads it to 8.
        if time.latency {
            push_right(out, &name.chars().take(8).collect::<String>(), 8);
        } else if chain && fields.contains(&Field::Ip) {
            out.push_str(name);
        } else {
            push_right(out, name, 16);
        }
    }
    if fields.contains(&Field::Pid) && fields.contains(&Field::Tid) {
        let _ = write!(out, " {:>5}/{:<5}", t.pid, t.tid);
    } else if fields.contains(&Field::Tid) {
        let _ = write!(out, " {:>5}", t.tid);
    } else if fields.contains(&Field::Pid) {
        let _ = write!(out, " {:>5}", t.pid);
    }
    if fields.contains(&Field::Cpu)
        && let Some(cpu) = s.cpu
    {
        if time.latency {
            let _ = write!(out, " {cpu:>3}");
        } else {
            out.push_str(" [");
            push_num(out, u64::from(cpu), 3, '0');
            out.push(']');
        }
    }
    if fields.contains(&Field::Time) {
        out.push(' ');
        push_num(out, time.time / 1_000_000_000, 5, ' ');
        out.push('.');
        if time.ns {
            push_num(out, time.time % 1_000_000_000, 9, '0');
        } else {
            push_num(out, time.time % 1_000_000_000 / 1000, 6, '0');
        }
        out.push(':');
    }
    if fields.contains(&Field::Period) {
        out.push(' ');
        push_num(out, s.period, 10, ' ');
    }
    if fields.contains(&Field::Event) {
        let ev = p
            .events
            .get(s.event as usize)
            .map_or("", |e| e.name.as_str());
        out.push(' ');
        push_right(out, ev, event_width);
        out.push(':');
    }
}

/// One sample in perf script's text layout (callchains on the following lines).
pub fn sample_text(p: &Profile, s: &Sample, fields: &[Field], out: &mut String) {
    let time = Shown {
        comm: None,
        time: s.time,
        ns: false,
        latency: false,
    };
    sample_line(p, s, fields, time, has_chain(p, s), false, out)
}

/// [`sample_text`] with the time to print and whether to print the callchain.
fn sample_line(
    p: &Profile,
    s: &Sample,
    fields: &[Field],
    time: Shown<'_>,
    chain: bool,
    full: bool,
    out: &mut String,
) {
    let frames: Vec<FrameId> = p.stack_frames(s.stack).collect();
    sample_head(p, s, fields, chain, event_width(p), time, out);
    if wants_frames(fields) {
        if chain {
            // (perf discards a broken chain: no frames.)
            for &f in frames
                .iter()
                .take(if s.chain_broken { 0 } else { usize::MAX })
            {
                out.push_str("\n\t");
                out.push_str(&frame_text(p, f, fields, true, full));
            }
            out.push('\n');
        } else if let Some(f) = p.sample_frame(s.stack).or(frames.first().copied()) {
            // perf puts one space before the ip (the fields before it end with another).
            let _ = write!(out, " {}", frame_text(p, f, fields, false, full));
        }
    }
    out.push('\n');
}

/// One sample as a JSON object (field names documented in the README).
pub fn sample_json(p: &Profile, s: &Sample) -> serde_json::Value {
    let t = &p.threads[s.thread as usize];
    let frames: Vec<serde_json::Value> = p
        .stack_frames(s.stack)
        .map(|f| {
            let fr = &p.frames[f as usize];
            let func = p.func_of(f);
            let mut o = json!({
                "ip": format!("{:#x}", fr.addr),
                "sym": func.name,
                "dso": func.dso,
                "kernel": func.kernel,
            });
            if let Some(off) = fr.sym_offset {
                o["symoff"] = json!(off);
            }
            if let Some((file, line)) = &fr.srcline {
                o["srcline"] = json!(format!("{file}:{line}"));
            }
            if fr.inlined {
                o["inlined"] = json!(true);
            }
            o
        })
        .collect();
    let mut o = json!({
        "type": "sample",
        "comm": t.name_at(s.time),
        "pid": t.pid,
        "tid": t.tid,
        "time": s.time,
        "period": s.period,
        "event": p.events.get(s.event as usize).map_or("", |e| e.name.as_str()),
    });
    if let Some(cpu) = s.cpu {
        o["cpu"] = json!(cpu);
    }
    if let Some(leaf) = frames
        .iter()
        .find(|f| f.get("inlined").is_none())
        .or(frames.first())
    {
        o["ip"] = leaf["ip"].clone();
        o["sym"] = leaf["sym"].clone();
        o["dso"] = leaf["dso"].clone();
    }
    o["callchain"] = json!(frames);
    if let Some((ev, raw)) = trace_of(p, s) {
        o["trace"] = json!(ev.text(raw, &p.trace_kernel));
        if let Ok(fields) = ev.format.decode(raw, false) {
            o["fields"] = serde_json::Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| {
                        use perfkit_trace::tracefs::Value;
                        let v = match v {
                            Value::Signed(x) => json!(x),
                            Value::Unsigned(x) => json!(x),
                            Value::Str(x) => json!(x),
                            Value::Array(x) => json!(x),
                            Value::Bytes(x) => json!(x),
                            // A kind of value added later: serde's form of it.
                            other => json!(other),
                        };
                        (k.to_string(), v)
                    })
                    .collect(),
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::sample_profile;

    #[test]
    fn perf_layout() {
        let p = sample_profile();
        let mut out = String::new();
        sample_text(&p, &p.samples[0], &Field::defaults(true), &mut out);
        assert!(
            out.starts_with("app    10 [000]     0.001000:     250000 cpu-clock: "),
            "{out:?}"
        );
        assert!(
            out.contains("\n\t            3004 hot_loop+0x4 (/usr/bin/app)"),
            "{out}"
        );
        assert!(
            out.contains("\n\t            1000 main+0x0 (/usr/bin/app)"),
            "{out}"
        );
        let mut out = String::new();
        sample_text(
            &p,
            &p.samples[0],
            &[Field::Comm, Field::Tid, Field::Sym],
            &mut out,
        );
        // (perf 6.1 prints sym only as a part of ip.)
        assert_eq!(out, "             app    10 \n");
        let mut out = String::new();
        sample_text(
            &p,
            &p.samples[0],
            &[Field::Comm, Field::Tid, Field::Ip, Field::Sym],
            &mut out,
        );
        assert!(
            out.starts_with("app    10 \n\t            3004 hot_loop\n"),
            "{out:?}"
        );
    }

    #[test]
    fn json_fields() {
        let p = sample_profile();
        let v = sample_json(&p, &p.samples[9]);
        assert_eq!(v["comm"], "app");
        assert_eq!(v["sym"], "do_syscall_64");
        assert_eq!(v["callchain"].as_array().unwrap().len(), 3);
        assert_eq!(v["callchain"][0]["kernel"], true);
        assert_eq!(v["cpu"], 1);
    }
}
