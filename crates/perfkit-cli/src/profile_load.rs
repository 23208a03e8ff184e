//! Reading a perf.data file into a [`Profile`] (the one place the CLI touches the file).
//!
//! This is a compact file-mode reader (native byte order, uncompressed data) over
//! `perfkit-records`; the full reader (pipe mode, both byte orders, zstd, every feature
//! section, bounded-memory streaming) is the `perfkit-data` crate, which replaces it.

use anyhow::{Result, anyhow};
use perfkit::sys;
use perfkit_data::{Item, PerfData};
use perfkit_records::{ParsedRecord, Record};
use perfkit_report::build::{Builder, Input, UserStack};
use perfkit_report::{EventDesc, Profile, TraceEvent};
use perfkit_symbols::{Mapping, Options};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// How to build the profile.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Resolve source lines.
    pub srcline: bool,
    /// Resolve inlined functions.
    pub inline: bool,
    /// Kernel symbols from this file.
    pub kallsyms: Option<PathBuf>,
    /// Show a progress bar on standard error for large files.
    pub progress: bool,
}

/// What the reader had to say besides the profile.
#[derive(Debug, Default)]
pub struct Diagnostics {
    /// Things skipped or unusual (unknown records, features).
    pub warnings: Vec<String>,
    /// The nominal sampling interval (for the Firefox export).
    pub interval_ns: u64,
    /// Set when the file was cut short: the report shows what was read, then this error.
    pub error: Option<anyhow::Error>,
}

impl Diagnostics {
    /// Exit status after output: an error for a truncated or corrupt file.
    pub fn exit_code(&self) -> Result<u8> {
        match &self.error {
            Some(e) => Err(anyhow!("{e:#}")),
            None => Ok(0),
        }
    }
}

/// perf's delivery of `PERF_SAMPLE_READ` samples: each counter read in the sample (every
/// member of a `{a,b}:S` group, or the event alone) becomes a sample of its own event,
/// with the growth of that counter since its last read as the period; no growth, no
/// sample.
#[derive(Default)]
struct SampleRead {
    /// Event index of each counter id.
    attr_of: HashMap<u64, usize>,
    /// Last value read of each counter id.
    last: HashMap<u64, u64>,
}

impl SampleRead {
    fn new(attrs: &[perfkit_data::EventAttr]) -> SampleRead {
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

fn feed(
    b: &mut Builder,
    attr_index: usize,
    rec: &ParsedRecord<'_>,
    chain: &mut Vec<u64>,
    regs: &mut Vec<u64>,
    reads: &mut SampleRead,
    split: &mut Vec<(usize, u64)>,
) {
    let time = rec.time().unwrap_or(0);
    let (pid, tid) = (
        rec.sample_id.pid.unwrap_or(-1),
        rec.sample_id.tid.unwrap_or(-1),
    );
    match &rec.record {
        Record::Sample(s) => {
            chain.clear();
            if let Some(c) = &s.callchain {
                chain.extend(c.iter());
            }
            regs.clear();
            let user = match (&s.regs_user, &s.stack_user) {
                (Some(r), Some(st)) => {
                    regs.extend(r.iter().map(|(_, v)| v));
                    Some(UserStack {
                        abi: r.abi,
                        mask: r.mask(),
                        regs,
                        stack: st.valid(),
                    })
                }
                _ => None,
            };
            let one = [(attr_index, s.period.unwrap_or(1))];
            let events: &[(usize, u64)] = match &s.read {
                Some(r) => {
                    reads.split(r, split);
                    split
                }
                None => &one,
            };
            for &(event, period) in events {
                b.push(Input::Sample {
                    event: event as u32,
                    pid: s.pid.unwrap_or(-1),
                    tid: s.tid.unwrap_or(-1),
                    time: s.time.unwrap_or(time),
                    cpu: s.cpu,
                    period,
                    ip: s.ip.unwrap_or(0),
                    kernel: rec.cpumode() == sys::PERF_RECORD_MISC_KERNEL,
                    callchain: chain,
                    user,
                    raw: s.raw,
                });
            }
        }
        Record::Mmap(m) if !m.data => b.push(Input::Mmap {
            pid: m.pid,
            mapping: Mapping {
                start: m.addr,
                end: m.addr.saturating_add(m.len),
                pgoff: m.pgoff,
                path: String::from_utf8_lossy(m.filename).into_owned(),
                build_id: None,
            },
        }),
        Record::Mmap2(m) if !m.data => b.push(Input::Mmap {
            pid: m.pid,
            mapping: Mapping {
                start: m.addr,
                end: m.addr.saturating_add(m.len),
                pgoff: m.pgoff,
                path: String::from_utf8_lossy(m.filename).into_owned(),
                build_id: match &m.file_id {
                    perfkit_records::Mmap2FileId::BuildId(id) => Some(id.as_bytes().to_vec()),
                    _ => None,
                },
            },
        }),
        Record::Comm(c) => b.push(Input::Comm {
            pid: c.pid,
            tid: c.tid,
            name: &String::from_utf8_lossy(c.comm),
            exec: c.exec,
            time,
        }),
        Record::Fork(t) => b.push(Input::Fork {
            pid: t.pid,
            tid: t.tid,
            ppid: t.ppid,
            ptid: t.ptid,
            time: t.time,
        }),
        Record::Exit(t) => b.push(Input::Exit {
            pid: t.pid,
            tid: t.tid,
            time: t.time,
        }),
        Record::Switch(s) => b.push(Input::Switch {
            pid,
            tid,
            time,
            out: s.out,
        }),
        Record::Lost(l) => b.push(Input::Lost { count: l.lost }),
        _ => {}
    }
}

/// Read `path` and build the symbolized profile.
pub fn load_profile(path: &Path, opts: &LoadOptions) -> Result<(Profile, Diagnostics)> {
    let file = PerfData::open(path).map_err(|e| {
        let hint = if path.exists() || path.as_os_str() == "-" {
            String::new()
        } else {
            " (record one with `perfkit record -- COMMAND`)".to_string()
        };
        anyhow!("{}: {e}{hint}", path.display())
    })?;
    let mut sym_opts = Options {
        srcline: opts.srcline,
        inline: opts.inline,
        ..Options::default()
    };
    if let Some(k) = &opts.kallsyms {
        sym_opts.kallsyms = k.clone();
    } else if let Some(copy) = file
        .features
        .build_ids
        .iter()
        .find(|b| b.filename == "[kernel.kallsyms]")
        .and_then(|b| perfkit_symbols::cached_kallsyms(&b.build_id, &sym_opts.kallsyms))
    {
        // As perf: the build-id cache's copy of this kernel's symbols, when it is the
        // running kernel at the same address.
        sym_opts.kallsyms = copy;
    }
    let (trace_info, trace_warning) = trace_formats(&file);
    let formats = &trace_info.formats;
    let events = file
        .attrs
        .iter()
        .map(|a| EventDesc {
            name: a.name.clone(),
            callchain: a.attr.sample_type & sys::PERF_SAMPLE_CALLCHAIN != 0,
            trace: (a.attr.type_ == sys::PERF_TYPE_TRACEPOINT)
                .then(|| formats.iter().find(|f| f.id == a.attr.config))
                .flatten()
                .map(|f| Box::new(TraceEvent::new(f.clone()))),
        })
        .collect();
    let mut builder = Builder::new(events, sym_opts);
    builder.printk_formats(trace_info.printk);
    // Almost every profile has kernel samples; reading kallsyms overlaps the file parse.
    builder.prefetch_kernel_symbols();
    let ft = &file.features;
    for (k, v) in [
        ("hostname", &ft.hostname),
        ("os release", &ft.osrelease),
        ("perf version", &ft.version),
        ("arch", &ft.arch),
        ("cpudesc", &ft.cpudesc),
        ("cpuid", &ft.cpuid),
    ] {
        if let Some(v) = v {
            builder.meta(k, v.clone());
        }
    }
    if let Some((on, avail)) = ft.nrcpus {
        builder.meta("nrcpus online", on.to_string());
        builder.meta("nrcpus avail", avail.to_string());
    }
    if let Some(kb) = ft.total_mem_kb {
        builder.meta("total memory", format!("{kb} kB"));
    }
    if !ft.cmdline.is_empty() {
        builder.meta("cmdline", ft.cmdline.join(" "));
    }
    for a in &file.attrs {
        builder.meta(
            "event",
            format!(
                "name = {}, id = {:?}, type = {}, config = {:#x}",
                a.name, a.ids, a.attr.type_, a.attr.config
            ),
        );
    }
    if let Some(c) = ft.compressed {
        builder.meta(
            "compressed",
            format!("zstd, level = {}, ratio = {}", c.level, c.ratio),
        );
    }
    let mut diag = Diagnostics {
        interval_ns: file.attrs.first().map_or(250_000, |a| {
            if a.attr.has(sys::attr_flags::FREQ) && a.attr.sample_period > 0 {
                1_000_000_000 / a.attr.sample_period
            } else {
                a.attr.sample_period
            }
        }),
        warnings: file.warnings.clone(),
        ..Diagnostics::default()
    };
    diag.warnings.extend(trace_warning);
    for (bit, why) in &ft.unparsed {
        diag.warnings
            .push(format!("feature section {bit} skipped: {why}"));
    }
    let mut chain = Vec::new();
    let mut regs = Vec::new();
    let mut reads = SampleRead::new(&file.attrs);
    let mut split = Vec::new();
    let total = file.data_len().max(1);
    let show = opts.progress && std::io::stderr().is_terminal() && total > 16 << 20;
    let mut shown = 0;
    let mut skipped: std::collections::BTreeMap<u32, u64> = Default::default();
    let result = file.for_each(
        |item| match item {
            Item::Event { attr, record } => feed(
                &mut builder,
                attr,
                &record,
                &mut chain,
                &mut regs,
                &mut reads,
                &mut split,
            ),
            Item::User { type_, .. } => {
                if !matches!(
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
                ) {
                    *skipped.entry(type_).or_default() += 1;
                }
            }
        },
        |done| {
            if show && done * 100 / total >= shown + 5 {
                shown = done * 100 / total;
                eprint!("\rreading {}: {shown:3}%", path.display());
                let _ = std::io::stderr().flush();
            }
        },
    );
    if show {
        eprintln!("\rreading {}: 100%", path.display());
    }
    for (t, n) in skipped {
        diag.warnings.push(format!(
            "skipped {n} records of type {t} (not needed for this report)"
        ));
    }
    if let Err(e) = result {
        diag.error = Some(anyhow!(
            "{}: {e}; the report shows what was read before it",
            path.display()
        ));
    }
    Ok((builder.finish(), diag))
}

/// `script -D`: dump every record in file order.
pub fn dump_raw(path: &Path) -> Result<u8> {
    let file = PerfData::open(path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let parser = file
        .parser()
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (i, a) in file.attrs.iter().enumerate() {
        writeln!(
            out,
            "# attr {i}: {} ids {:?}\n{}",
            a.name,
            a.ids,
            perfkit_events::format_attr(&a.attr).trim_end()
        )?;
    }
    let r = file.walk(|off, type_, misc, body| {
        let name = perfkit_records::record_type_name(type_).unwrap_or("unknown");
        let _ = writeln!(
            out,
            "\n{off:#x} [{:#x}]: event: {type_} ({name}) misc {misc:#x}",
            body.len() + 8
        );
        match parser.parse(type_, misc, body) {
            Ok((i, rec)) => {
                let _ = writeln!(out, "  attr {i}: {:?}", rec.record);
            }
            Err(e) => {
                let _ = writeln!(out, "  (not decoded: {e})");
            }
        }
        Ok(())
    });
    out.flush()?;
    r.map_err(|e| anyhow!("{}: {e}", path.display()))?;
    Ok(0)
}

/// The tracepoint formats of a file: from its tracing data (HEADER_TRACING_DATA), else
/// from this machine's tracefs by id (right when the file was recorded on this boot of
/// this machine), with a warning saying so.
#[derive(Default)]
struct TraceInfo {
    formats: Vec<perfkit_events::tracefs::TraceFormat>,
    printk: Vec<(u64, String)>,
}

/// The recorded tracepoints' formats and the kernel's printk strings: from the file's
/// tracing data, else (with a warning) from this machine's tracefs.
fn trace_formats(file: &perfkit_data::PerfData) -> (TraceInfo, Option<String>) {
    use perfkit_events::printfmt::parse_printk_formats;
    use perfkit_events::tracefs::{self, TraceFormat};
    let ids: Vec<u64> = file
        .attrs
        .iter()
        .filter(|a| a.attr.type_ == sys::PERF_TYPE_TRACEPOINT)
        .map(|a| a.attr.config)
        .collect();
    if ids.is_empty() {
        return (TraceInfo::default(), None);
    }
    if let Some(blob) = &file.features.tracing_data {
        return match perfkit_data::tracing_data::TracingData::parse(blob) {
            Ok(t) => (
                TraceInfo {
                    formats: t
                        .formats()
                        .filter_map(|(_, text)| TraceFormat::parse(&text).ok())
                        .collect(),
                    printk: parse_printk_formats(&String::from_utf8_lossy(&t.printk)),
                },
                None,
            ),
            Err(e) => (
                TraceInfo::default(),
                Some(format!("{e}: tracepoint fields are not shown")),
            ),
        };
    }
    let local = tracefs::find_tracefs().map(|t| {
        let formats: Vec<TraceFormat> = ids
            .iter()
            .filter_map(|&id| {
                let name = tracefs::name_of_id(&t, id)?;
                let (sys, ev) = name.split_once(':')?;
                TraceFormat::read(&t, sys, ev).ok()
            })
            .collect();
        (formats, t)
    });
    match local {
        Some((formats, t)) if !formats.is_empty() => (
            TraceInfo {
                formats,
                printk: std::fs::read_to_string(t.join("printk_formats"))
                    .map(|text| parse_printk_formats(&text))
                    .unwrap_or_default(),
            },
            Some(
                "the file has no tracing data (HEADER_TRACING_DATA): tracepoint fields are \
                 decoded with this machine's tracefs formats"
                    .into(),
            ),
        ),
        _ => (
            TraceInfo::default(),
            Some(
                "the file has no tracing data and tracefs has no such tracepoints: \
                 tracepoint fields are not shown"
                    .into(),
            ),
        ),
    }
}
