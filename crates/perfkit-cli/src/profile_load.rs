//! Reading a perf.data file into a [`Profile`] (the one place the CLI touches the file).
//!
//! This is a compact file-mode reader (native byte order, uncompressed data) over
//! `perfkit-records`; the full reader (pipe mode, both byte orders, zstd, every feature
//! section, bounded-memory streaming) is the `perfkit-data` crate, which replaces it.

use anyhow::{Context, Result, anyhow, bail};
use perfkit::sys::{self, perf_event_attr};
use perfkit_records::{Endian, MultiParser, ParsedRecord, Record};
use perfkit_report::build::{Builder, Input, UserStack};
use perfkit_report::{EventDesc, Profile};
use perfkit_symbols::{Mapping, Options};
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

const HEADER_SIZE: usize = 104;
const FEAT_HOSTNAME: usize = 3;
const FEAT_OSRELEASE: usize = 4;
const FEAT_VERSION: usize = 5;
const FEAT_ARCH: usize = 6;
const FEAT_CPUDESC: usize = 8;
const FEAT_CMDLINE: usize = 11;
const FEAT_EVENT_DESC: usize = 12;

fn u32_at(b: &[u8], off: usize) -> Result<u32> {
    b.get(off..off + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().unwrap_or([0; 4])))
        .with_context(|| format!("truncated at byte {off} (4 bytes needed)"))
}

fn u64_at(b: &[u8], off: usize) -> Result<u64> {
    b.get(off..off + 8)
        .map(|s| u64::from_ne_bytes(s.try_into().unwrap_or([0; 8])))
        .with_context(|| format!("truncated at byte {off} (8 bytes needed)"))
}

fn attr_from(b: &[u8]) -> perf_event_attr {
    let mut buf = [0u8; 136];
    let n = b.len().min(136);
    buf[..n].copy_from_slice(&b[..n]);
    let u16_ = |o: usize| u16::from_ne_bytes([buf[o], buf[o + 1]]);
    let u32_ = |o: usize| u32::from_ne_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]);
    let u64_ = |o: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&buf[o..o + 8]);
        u64::from_ne_bytes(w)
    };
    let mut a = perf_event_attr::new();
    a.type_ = u32_(0);
    a.size = u32_(4);
    a.config = u64_(8);
    a.sample_period = u64_(16);
    a.sample_type = u64_(24);
    a.read_format = u64_(32);
    a.flags = u64_(40);
    a.wakeup_events = u32_(48);
    a.bp_type = u32_(52);
    a.config1 = u64_(56);
    a.config2 = u64_(64);
    a.branch_sample_type = u64_(72);
    a.sample_regs_user = u64_(80);
    a.sample_stack_user = u32_(88);
    a.clockid = u32_(92) as i32;
    a.sample_regs_intr = u64_(96);
    a.aux_watermark = u32_(104);
    a.sample_max_stack = u16_(108);
    a.aux_sample_size = u32_(112);
    a.aux_action = u32_(116);
    a.sig_data = u64_(120);
    a.config3 = u64_(128);
    a
}

/// A perf.data string: u32 length (padding included), then NUL-padded bytes.
fn string_at(b: &[u8], off: usize) -> Result<(String, usize)> {
    let len = u32_at(b, off)? as usize;
    let s = b
        .get(off + 4..off + 4 + len)
        .with_context(|| format!("string of {len} bytes at {off} runs past the section"))?;
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    Ok((String::from_utf8_lossy(&s[..end]).into_owned(), 4 + len))
}

/// The parts of a perf.data file a report needs.
struct PerfFile {
    bytes: Vec<u8>,
    attrs: Vec<(perf_event_attr, Vec<u64>)>,
    names: Vec<String>,
    data: std::ops::Range<usize>,
    meta: Vec<(String, String)>,
}

fn open_file(path: &Path) -> Result<PerfFile> {
    if path.as_os_str() == "-" {
        bail!("reading perf.data from standard input (pipe mode) needs the perfkit-data reader");
    }
    let bytes = std::fs::read(path).with_context(|| {
        format!(
            "cannot read {} (record one with `perfkit record -- COMMAND`)",
            path.display()
        )
    })?;
    let magic = bytes
        .get(..8)
        .context("the file is empty or shorter than a header")?;
    if magic == b"2ELIFREP" {
        bail!(
            "this file was written on a machine of the other byte order; this version reads native files only"
        );
    }
    if magic == b"PERFFILE" {
        bail!("this is a perf.data file in the obsolete version-1 format");
    }
    if magic != b"PERFILE2" {
        bail!(
            "not a perf.data file (magic {:?})",
            String::from_utf8_lossy(magic)
        );
    }
    let hsize = u64_at(&bytes, 8)? as usize;
    if hsize == 16 {
        bail!("this file is in pipe mode; this version reads file mode only");
    }
    if hsize < HEADER_SIZE {
        bail!("header size {hsize} is smaller than perf's {HEADER_SIZE}");
    }
    let attr_size = u64_at(&bytes, 16)? as usize;
    let (attrs_off, attrs_len) = (u64_at(&bytes, 24)? as usize, u64_at(&bytes, 32)? as usize);
    let (data_off, data_len) = (u64_at(&bytes, 40)? as usize, u64_at(&bytes, 48)? as usize);
    if attr_size < 16 + sys::PERF_ATTR_SIZE_VER0 as usize {
        bail!("attr_size {attr_size} is too small");
    }
    let mut attrs = Vec::new();
    for i in 0..attrs_len / attr_size {
        let at = attrs_off + i * attr_size;
        let raw = bytes
            .get(at..at + attr_size - 16)
            .with_context(|| format!("attr {i} at byte {at} runs past the end of the file"))?;
        let attr = attr_from(raw);
        let ids_off = u64_at(&bytes, at + attr_size - 16)? as usize;
        let ids_len = u64_at(&bytes, at + attr_size - 8)? as usize;
        let ids_bytes = bytes
            .get(ids_off..ids_off.saturating_add(ids_len))
            .with_context(|| format!("ids of attr {i} at byte {ids_off} run past the end"))?;
        let ids = ids_bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        attrs.push((attr, ids));
    }
    if attrs.is_empty() {
        bail!("the file describes no events (empty attrs section)");
    }
    let data_end = data_off.saturating_add(data_len);
    let mut names: Vec<String> = attrs.iter().map(|(a, _)| perfkit::attr_name(a)).collect();
    let mut meta = Vec::new();
    // Feature sections: an index of {offset, size} per set bit, after the data.
    let mut feats = Vec::new();
    for bit in 0..256usize {
        let byte = bytes.get(72 + bit / 8).copied().unwrap_or(0);
        if byte & (1 << (bit % 8)) != 0 {
            feats.push(bit);
        }
    }
    for (i, bit) in feats.iter().enumerate() {
        let idx = data_end + i * 16;
        let (Ok(off), Ok(size)) = (u64_at(&bytes, idx), u64_at(&bytes, idx + 8)) else {
            break; // a file cut short before its feature index: keep the data
        };
        let Some(sec) = bytes.get(off as usize..(off as usize).saturating_add(size as usize))
        else {
            continue;
        };
        let label = match *bit {
            FEAT_HOSTNAME => "hostname",
            FEAT_OSRELEASE => "os release",
            FEAT_VERSION => "perf version",
            FEAT_ARCH => "arch",
            FEAT_CPUDESC => "cpudesc",
            FEAT_CMDLINE => "cmdline",
            FEAT_EVENT_DESC => "",
            _ => continue,
        };
        if *bit == FEAT_CMDLINE {
            let n = u32_at(sec, 0).unwrap_or(0) as usize;
            let mut at = 4;
            let mut parts = Vec::new();
            for _ in 0..n.min(4096) {
                let Ok((s, used)) = string_at(sec, at) else {
                    break;
                };
                parts.push(s);
                at += used;
            }
            meta.push((label.into(), parts.join(" ")));
        } else if *bit == FEAT_EVENT_DESC {
            let n = u32_at(sec, 0).unwrap_or(0) as usize;
            let asz = u32_at(sec, 4).unwrap_or(0) as usize;
            let mut at = 8;
            for slot in names.iter_mut().take(n) {
                at += asz;
                let Ok(nr_ids) = u32_at(sec, at) else { break };
                let Ok((name, used)) = string_at(sec, at + 4) else {
                    break;
                };
                at += 4 + used + 8 * nr_ids as usize;
                *slot = name;
            }
        } else if let Ok((s, _)) = string_at(sec, 0) {
            meta.push((label.into(), s));
        }
    }
    let data = data_off.min(bytes.len())..data_end.min(bytes.len());
    if data_end > bytes.len() {
        meta.push((
            "warning".into(),
            format!(
                "the data section ends at byte {data_end} but the file has {} bytes",
                bytes.len()
            ),
        ));
    }
    Ok(PerfFile {
        bytes,
        attrs,
        names,
        data,
        meta,
    })
}

/// Records of the data section in file order: (offset, type, misc, body). Stops with an
/// error at the first malformed header.
fn walk<'f>(
    file: &'f PerfFile,
    mut f: impl FnMut(usize, u32, u16, &'f [u8]) -> Result<()>,
) -> Result<()> {
    let mut off = file.data.start;
    while off < file.data.end {
        let (Ok(w0), Ok(w1)) = (u32_at(&file.bytes, off), u32_at(&file.bytes, off + 4)) else {
            bail!("truncated record header at byte {off}");
        };
        let (type_, misc, size) = (w0, (w1 & 0xffff) as u16, (w1 >> 16) as usize);
        if size < 8 {
            bail!("record at byte {off} has an impossible size {size}");
        }
        let Some(body) = file.bytes.get(off + 8..off + size) else {
            bail!(
                "record at byte {off} ({size} bytes) runs past the end of the file: it was cut short"
            );
        };
        f(off, type_, misc, body)?;
        off += size;
        // AUXTRACE records are followed by their payload, not counted in the header.
        if type_ == sys::PERF_RECORD_AUXTRACE {
            off += u64_at(body, 0).unwrap_or(0) as usize;
        }
    }
    Ok(())
}

fn feed(
    b: &mut Builder,
    attr_index: usize,
    rec: &ParsedRecord<'_>,
    chain: &mut Vec<u64>,
    regs: &mut Vec<u64>,
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
            b.push(Input::Sample {
                event: attr_index as u32,
                pid: s.pid.unwrap_or(-1),
                tid: s.tid.unwrap_or(-1),
                time: s.time.unwrap_or(time),
                cpu: s.cpu,
                period: s.period.unwrap_or(1),
                ip: s.ip.unwrap_or(0),
                kernel: rec.cpumode() == sys::PERF_RECORD_MISC_KERNEL,
                callchain: chain,
                user,
            });
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
    let file = open_file(path).with_context(|| path.display().to_string())?;
    let parser = MultiParser::new(
        Endian::NATIVE,
        file.attrs.iter().map(|(a, ids)| (ids.as_slice(), a)),
    )
    .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let mut sym_opts = Options {
        srcline: opts.srcline,
        inline: opts.inline,
        ..Options::default()
    };
    if let Some(k) = &opts.kallsyms {
        sym_opts.kallsyms = k.clone();
    }
    let events = file
        .names
        .iter()
        .zip(&file.attrs)
        .map(|(n, (a, _))| EventDesc {
            name: n.clone(),
            callchain: a.sample_type & sys::PERF_SAMPLE_CALLCHAIN != 0,
        })
        .collect();
    let mut builder = Builder::new(events, sym_opts);
    // Almost every profile has kernel samples; reading kallsyms overlaps the file parse.
    builder.prefetch_kernel_symbols();
    for (k, v) in &file.meta {
        builder.meta(k.clone(), v.clone());
    }
    let mut diag = Diagnostics {
        interval_ns: file.attrs.first().map_or(250_000, |(a, _)| {
            if a.has(sys::attr_flags::FREQ) && a.sample_period > 0 {
                1_000_000_000 / a.sample_period
            } else {
                a.sample_period
            }
        }),
        ..Diagnostics::default()
    };
    // One round at a time: collect (time, record offset) — 16 bytes a record, whatever
    // its size — sort by time (stable), then parse again and feed. Buffering parsed
    // records instead would cost hundreds of bytes a record for a whole round.
    let mut round: Vec<(u64, usize)> = Vec::new();
    let mut last_time = 0u64;
    let mut chain = Vec::new();
    let mut regs = Vec::new();
    let total = file.data.len().max(1);
    let show = opts.progress && std::io::stderr().is_terminal() && total > 16 << 20;
    let mut shown = 0;
    let mut skipped: std::collections::BTreeMap<u32, u64> = Default::default();
    let bytes = &file.bytes;
    let mut flush = |round: &mut Vec<(u64, usize)>, b: &mut Builder| {
        round.sort_by_key(|r| r.0);
        for &(_, off) in round.iter() {
            let (Ok(w0), Ok(w1)) = (u32_at(bytes, off), u32_at(bytes, off + 4)) else {
                continue;
            };
            let size = (w1 >> 16) as usize;
            let body = &bytes[off + 8..off + size];
            if let Ok((i, rec)) = parser.parse(w0, (w1 & 0xffff) as u16, body) {
                feed(b, i, &rec, &mut chain, &mut regs);
            }
        }
        round.clear();
    };
    let result = walk(&file, |off, type_, misc, body| {
        if type_ == sys::PERF_RECORD_FINISHED_ROUND {
            flush(&mut round, &mut builder);
        } else if type_ >= sys::PERF_RECORD_USER_TYPE_START {
            if !matches!(
                type_,
                sys::PERF_RECORD_FINISHED_INIT
                    | sys::PERF_RECORD_ID_INDEX
                    | sys::PERF_RECORD_THREAD_MAP
                    | sys::PERF_RECORD_CPU_MAP
                    | sys::PERF_RECORD_TIME_CONV
                    | sys::PERF_RECORD_EVENT_UPDATE
                    | sys::PERF_RECORD_HEADER_BUILD_ID
            ) {
                *skipped.entry(type_).or_default() += 1;
            }
        } else {
            let (_, rec) = parser
                .parse(type_, misc, body)
                .map_err(|e| anyhow!("record at byte {off}: {e}"))?;
            let t = rec.time().unwrap_or(last_time);
            last_time = t;
            round.push((t, off));
        }
        if show && off * 100 / total >= shown + 5 {
            shown = off * 100 / total;
            eprint!("\rreading {}: {shown:3}%", path.display());
            let _ = std::io::stderr().flush();
        }
        Ok(())
    });
    flush(&mut round, &mut builder);
    if show {
        eprintln!("\rreading {}: 100%", path.display());
    }
    for (t, n) in skipped {
        let what = if t == sys::PERF_RECORD_COMPRESSED || t == sys::PERF_RECORD_COMPRESSED2 {
            " (zstd-compressed data: this version cannot decompress it)"
        } else {
            ""
        };
        diag.warnings
            .push(format!("skipped {n} records of type {t}{what}"));
    }
    if let Err(e) = result {
        diag.error = Some(anyhow!(
            "{}: {e:#}; the report shows what was read before it",
            path.display()
        ));
    }
    Ok((builder.finish(), diag))
}

/// `script -D`: dump every record in file order.
pub fn dump_raw(path: &Path) -> Result<u8> {
    let file = open_file(path).with_context(|| path.display().to_string())?;
    let parser = MultiParser::new(
        Endian::NATIVE,
        file.attrs.iter().map(|(a, ids)| (ids.as_slice(), a)),
    )
    .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (i, (a, ids)) in file.attrs.iter().enumerate() {
        writeln!(
            out,
            "# attr {i}: {} ids {ids:?}\n{}",
            file.names[i],
            crate::events::describe_attr(a)
        )?;
    }
    let r = walk(&file, |off, type_, misc, body| {
        let name = perfkit_records::record_type_name(type_).unwrap_or("unknown");
        writeln!(
            out,
            "\n{off:#x} [{:#x}]: event: {type_} ({name}) misc {misc:#x}",
            body.len() + 8
        )?;
        match parser.parse(type_, misc, body) {
            Ok((i, rec)) => writeln!(out, "  attr {i}: {:?}", rec.record)?,
            Err(e) => writeln!(out, "  (not decoded: {e})")?,
        }
        Ok(())
    });
    out.flush()?;
    r.with_context(|| path.display().to_string())?;
    Ok(0)
}
