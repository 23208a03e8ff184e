//! `script`: one line per sample in perf script's default layout, with callchains, a
//! choice of fields (`-F`), and JSON lines.

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
            _ => return None,
        })
    }
    /// Every field name, for error messages.
    pub const NAMES: &'static str =
        "comm, tid, pid, cpu, time, period, event, ip, sym, symoff, dso, srcline, trace";

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

fn frame_text(p: &Profile, f: FrameId, fields: &[Field], in_chain: bool) -> String {
    let fr = &p.frames[f as usize];
    let func = p.func_of(f);
    let mut s = String::new();
    if fields.contains(&Field::Ip) {
        // Like perf: callchain entries in files show the file-relative address.
        let addr = if in_chain {
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
        return s;
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
    if fields.contains(&Field::Srcline)
        && let Some((file, line)) = &fr.srcline
    {
        let _ = write!(s, "\n  {file}:{line}");
    }
    s
}

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
}

/// Renders samples, formatting each distinct frame once (a profile's callchains repeat
/// the same frames over and over; formatting them is most of `script`'s work otherwise).
pub struct ScriptWriter<'p> {
    profile: &'p Profile,
    fields: Vec<Field>,
    /// The fields of tracepoint samples, when they differ (perf's per-type defaults).
    trace_fields: Option<Vec<Field>>,
    chain_lines: Vec<Option<Box<str>>>,
    event_width: usize,
    time_format: TimeFormat,
    first_time: Option<u64>,
    prev_time: Option<u64>,
    callchains: bool,
}

impl<'p> ScriptWriter<'p> {
    /// A writer of `fields` for samples of `profile`.
    pub fn new(profile: &'p Profile, fields: &[Field]) -> Self {
        ScriptWriter {
            profile,
            fields: fields.to_vec(),
            trace_fields: None,
            chain_lines: vec![None; profile.frames.len()],
            event_width: event_width(profile),
            time_format: TimeFormat::default(),
            first_time: None,
            prev_time: None,
            callchains: true,
        }
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

    /// Append one sample's text to `out`.
    pub fn sample(&mut self, s: &Sample, out: &mut String) {
        let p = self.profile;
        let time = Shown {
            time: self.shown_time(s.time),
            ns: self.time_format.ns,
        };
        if let Some((ev, raw)) = trace_of(p, s) {
            let fields = self.trace_fields.as_ref().unwrap_or(&self.fields);
            let chain = self.callchains && has_chain(p, s);
            sample_head(p, s, fields, chain, self.event_width, time, out);
            if fields.contains(&Field::Trace) {
                out.push(' ');
                ev.text_into(raw, &p.trace_kernel, out);
            }
            if chain && wants_frames(fields) {
                for f in p.stack_frames(s.stack) {
                    out.push_str("\n\t");
                    out.push_str(&frame_text(p, f, fields, true));
                }
                out.push('\n');
            }
            out.push('\n');
            return;
        }
        let fields = &self.fields;
        if !self.callchains || !has_chain(p, s) {
            return sample_line(p, s, fields, time, false, out);
        }
        sample_head(p, s, fields, true, self.event_width, time, out);
        if !wants_frames(fields) {
            out.push('\n');
            return;
        }
        out.push(' ');
        for f in p.stack_frames(s.stack) {
            let line = self.chain_lines[f as usize]
                .get_or_insert_with(|| frame_text(p, f, fields, true).into_boxed_str());
            out.push_str("\n\t");
            out.push_str(line);
        }
        out.push_str("\n\n");
    }
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
    fields
        .iter()
        .any(|f| matches!(f, Field::Ip | Field::Sym | Field::Dso | Field::Srcline))
}

/// A timestamp as printed.
#[derive(Clone, Copy)]
struct Shown {
    time: u64,
    ns: bool,
}

/// The columns before the frames: comm, tid, cpu, time, period, event.
fn sample_head(
    p: &Profile,
    s: &Sample,
    fields: &[Field],
    chain: bool,
    event_width: usize,
    time: Shown,
    out: &mut String,
) {
    let start = out.len();
    sample_fields(p, s, fields, chain, event_width, time, out);
    // perf ends each field with a space where perfkit starts the next with one: the
    // first field has no space before it.
    if !fields.contains(&Field::Comm) && out[start..].starts_with(' ') {
        out.remove(start);
    }
    // ... and the last one keeps its space when no frame follows.
    if !wants_frames(fields) && out.ends_with(':') {
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
    time: Shown,
    out: &mut String,
) {
    let t = &p.threads[s.thread as usize];
    if fields.contains(&Field::Comm) {
        // perf pads the command to 16 columns, except before a callchain.
        if chain && fields.contains(&Field::Ip) {
            out.push_str(t.name_at(s.time));
        } else {
            push_right(out, t.name_at(s.time), 16);
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
        out.push_str(" [");
        push_num(out, u64::from(cpu), 3, '0');
        out.push(']');
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
        time: s.time,
        ns: false,
    };
    sample_line(p, s, fields, time, has_chain(p, s), out)
}

/// [`sample_text`] with the time to print and whether to print the callchain.
fn sample_line(
    p: &Profile,
    s: &Sample,
    fields: &[Field],
    time: Shown,
    chain: bool,
    out: &mut String,
) {
    let frames: Vec<FrameId> = p.stack_frames(s.stack).collect();
    sample_head(p, s, fields, chain, event_width(p), time, out);
    if wants_frames(fields) {
        if chain {
            out.push(' ');
            for &f in &frames {
                out.push_str("\n\t");
                out.push_str(&frame_text(p, f, fields, true));
            }
            out.push('\n');
        } else if let Some(&f) = frames
            .iter()
            .find(|&&f| !p.frames[f as usize].inlined)
            .or(frames.first())
        {
            let _ = write!(out, "  {}", frame_text(p, f, fields, false));
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
        assert!(out.contains("app    10 \n\t hot_loop"), "{out:?}");
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
