//! `perf data convert --to-json`'s format (perf 6.1, `linux-perf-json-version` 1): the
//! file's headers, then every sample with its time, pid, tid, cpu (when sampled), comm and
//! call chain of `{ip, symbol, dso}` frames, laid out as perf writes it (tabs, one field a
//! line) so that the two tools' files compare line by line.

use std::io::{self, Write};

use crate::Profile;

/// What [`write`] prints in `"headers"` (from the perf.data header and feature sections).
#[derive(Clone, Debug, Default)]
pub struct JsonHeaders {
    /// The file's modification time, `YYYY-MM-DDTHH:MM:SSZ` (UTC).
    pub captured_on: Option<String>,
    /// Offset and size of the data section (file mode only).
    pub data: Option<(u64, u64)>,
    /// `HEADER_HOSTNAME`.
    pub hostname: Option<String>,
    /// `HEADER_OSRELEASE`.
    pub os_release: Option<String>,
    /// `HEADER_ARCH`.
    pub arch: Option<String>,
    /// `HEADER_CPUDESC`.
    pub cpu_desc: Option<String>,
    /// `HEADER_CPUID`.
    pub cpuid: Option<String>,
    /// `HEADER_NRCPUS`: online, available.
    pub nrcpus: Option<(u32, u32)>,
    /// `HEADER_VERSION`.
    pub perf_version: Option<String>,
    /// `HEADER_CMDLINE`.
    pub cmdline: Vec<String>,
}

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Lines of one JSON object at `indent` tabs: `"key": value` pairs, commas between.
fn object(out: &mut impl Write, indent: usize, fields: &[(&str, String)]) -> io::Result<()> {
    let tabs = "\t".repeat(indent);
    for (i, (k, v)) in fields.iter().enumerate() {
        let comma = if i + 1 < fields.len() { "," } else { "" };
        writeln!(out, "{tabs}\"{k}\": {v}{comma}")?;
    }
    Ok(())
}

/// Write `profile` in perf's JSON form. Returns the number of samples written.
pub fn write(profile: &Profile, headers: &JsonHeaders, out: &mut impl Write) -> io::Result<u64> {
    writeln!(out, "{{")?;
    writeln!(out, "\t\"linux-perf-json-version\": 1,")?;
    writeln!(out, "\t\"headers\": {{")?;
    let mut h: Vec<(&str, String)> = vec![("header-version", "1".into())];
    if let Some(t) = &headers.captured_on {
        h.push(("captured-on", q(t)));
    }
    if let Some((off, size)) = headers.data {
        h.push(("data-offset", off.to_string()));
        h.push(("data-size", size.to_string()));
        h.push(("feat-offset", (off + size).to_string()));
    }
    for (k, v) in [
        ("hostname", &headers.hostname),
        ("os-release", &headers.os_release),
        ("arch", &headers.arch),
        ("cpu-desc", &headers.cpu_desc),
        ("cpuid", &headers.cpuid),
    ] {
        if let Some(v) = v {
            h.push((k, q(v)));
        }
    }
    if let Some((online, avail)) = headers.nrcpus {
        h.push(("nrcpus-online", online.to_string()));
        h.push(("nrcpus-avail", avail.to_string()));
    }
    if let Some(v) = &headers.perf_version {
        h.push(("perf-version", q(v)));
    }
    if !headers.cmdline.is_empty() {
        let args: Vec<String> = headers
            .cmdline
            .iter()
            .map(|a| format!("\t\t\t{}", q(a)))
            .collect();
        h.push(("cmdline", format!("[\n{}\n\t\t]", args.join(",\n"))));
    }
    object(out, 2, &h)?;
    writeln!(out, "\t}},")?;
    writeln!(out, "\t\"samples\": [")?;
    let mut n = 0u64;
    for s in &profile.samples {
        if n > 0 {
            writeln!(out, "\t\t}},")?;
        }
        writeln!(out, "\t\t{{")?;
        let t = &profile.threads[s.thread as usize];
        let mut f: Vec<(&str, String)> = vec![
            ("timestamp", s.time.to_string()),
            ("pid", t.pid.to_string()),
            ("tid", t.tid.to_string()),
        ];
        if let Some(cpu) = s.cpu {
            f.push(("cpu", cpu.to_string()));
        }
        f.push(("comm", q(t.name_at(s.time))));
        let frames: Vec<String> = profile
            .stack_frames(s.stack)
            .map(|id| {
                let fr = &profile.frames[id as usize];
                let func = profile.func_of(id);
                let mut lines = vec![format!("\t\t\t\t\t\"ip\": \"{:#x}\"", fr.addr)];
                // As perf: the dso only with a symbol (an unnamed frame is its address alone).
                if func.name != "[unknown]" && !func.name.is_empty() {
                    lines.push(format!("\t\t\t\t\t\"symbol\": {}", q(&func.name)));
                    if func.dso != "[unknown]" && !func.dso.is_empty() {
                        let dso = perfkit_symbols::dso_short_name(&func.dso);
                        lines.push(format!("\t\t\t\t\t\"dso\": {}", q(&dso)));
                    }
                }
                format!("\t\t\t\t{{\n{}\n\t\t\t\t}}", lines.join(",\n"))
            })
            .collect();
        let chain = if frames.is_empty() {
            "[\n\t\t\t]".to_owned()
        } else {
            format!("[\n{}\n\t\t\t]", frames.join(",\n"))
        };
        f.push(("callchain", chain));
        object(out, 3, &f)?;
        n += 1;
    }
    if n > 0 {
        writeln!(out, "\t\t}}")?;
    }
    writeln!(out, "\t]")?;
    writeln!(out, "}}")?;
    Ok(n)
}
