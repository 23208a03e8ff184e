//! `perfkit evlist`: the events of a perf.data file, as `perf evlist` prints them (`-v` all
//! attr fields on one line, `-F` the sample frequency or period, `-g` groups as `{a,b}`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use perfkit_data::PerfData;

/// Arguments of `perfkit evlist`.
#[derive(Args, Debug)]
pub struct EvlistArgs {
    /// Input file name (`-` for a pipe).
    #[arg(short, long, default_value = "perf.data")]
    pub input: PathBuf,
    /// Show all event attr details.
    #[arg(short, long)]
    pub verbose: bool,
    /// Show the sample frequency (or period).
    #[arg(short = 'F', long)]
    pub freq: bool,
    /// Show event group information (alone: perf refuses it with other options).
    #[arg(short, long, conflicts_with_all = ["verbose", "freq"])]
    pub group: bool,
    /// Don't complain about a file owned by another user.
    #[arg(short, long)]
    pub force: bool,
    /// Each tracepoint's own fields, from the file's tracing data (perf's `--trace-fields`).
    #[arg(long = "trace-fields")]
    pub trace_fields: bool,
}

/// perf's one-line form of an attr: `field: value, field: value` in perf's order.
fn attr_one_line(attr: &perfkit::sys::perf_event_attr) -> String {
    perfkit_events::attr_lines(attr)
        .iter()
        .filter_map(|l| {
            // "  NAME<padding> VALUE": values never hold spaces; names may.
            let (name, value) = l.trim_end().rsplit_once(' ')?;
            Some(format!("{}: {value}", name.trim()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The fields of the tracepoint with this id, from the `format` files of the file's
/// tracing data, less the `common_` ones: `prev_comm,prev_pid,...`.
fn trace_fields(formats: &[String], id: u64) -> Option<String> {
    let format = formats
        .iter()
        .find(|f| f.lines().any(|l| l.trim() == format!("ID: {id}")))?;
    let names: Vec<&str> = format
        .lines()
        .filter_map(|l| l.trim().strip_prefix("field:"))
        .filter_map(|f| f.split(';').next())
        .filter_map(|decl| decl.split_whitespace().last())
        .map(|n| n.split('[').next().unwrap_or(n))
        .filter(|n| !n.starts_with("common_"))
        .collect();
    Some(names.join(","))
}

/// Run `perfkit evlist`.
pub fn run(args: EvlistArgs) -> anyhow::Result<u8> {
    let data =
        PerfData::open(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let names: Vec<&str> = data.attrs.iter().map(|a| a.name.as_str()).collect();
    if args.trace_fields {
        let formats: Vec<String> = data
            .features
            .tracing_data
            .as_deref()
            .and_then(|b| perfkit_data::tracing_data::TracingData::parse(b).ok())
            .map(|t| t.formats().map(|(_, f)| f.into_owned()).collect())
            .unwrap_or_default();
        for a in &data.attrs {
            let fields = (a.attr.type_ == perfkit::sys::PERF_TYPE_TRACEPOINT)
                .then(|| trace_fields(&formats, a.attr.config))
                .flatten();
            match fields {
                Some(f) => writeln!(out, "{}: trace_fields: {f}", a.name)?,
                None => writeln!(out, "{}: (not a tracepoint)", a.name)?,
            }
        }
        out.flush()?;
        return Ok(0);
    }
    let mut i = 0;
    while i < data.attrs.len() {
        let a = &data.attrs[i];
        if args.group
            && let Some((gname, _, nr)) = data
                .features
                .group_desc
                .iter()
                .find(|(_, leader, nr)| *leader as usize == i && *nr > 1)
        {
            let end = (i + *nr as usize).min(names.len());
            let prefix = if gname.starts_with('{') { "" } else { gname };
            writeln!(out, "{prefix}{{{}}}", names[i..end].join(","))?;
            i = end;
            continue;
        }
        let mut line = a.name.clone();
        if args.verbose {
            line = format!("{line}: {}", attr_one_line(&a.attr));
        } else if args.freq {
            if a.attr.has(perfkit::sys::attr_flags::FREQ) {
                line = format!("{line}: sample_freq={}", a.attr.sample_period);
            } else if a.attr.sample_period != 0 {
                line = format!("{line}: sample_period={}", a.attr.sample_period);
            }
        }
        writeln!(out, "{line}")?;
        i += 1;
    }
    out.flush()?;
    Ok(0)
}
