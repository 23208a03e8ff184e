//! `perfkit list`: the events this machine can name, and whether each opens here.

use std::io::Write;

use anyhow::Context;
use clap::Args;
use perfkit_events::list::{self, ListOptions};

/// Arguments of `perfkit list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only these: a kind (hw, sw, cache, pmu, raw, breakpoint, uprobe, tracepoint, pfm) or
    /// a glob or substring of event names (`'sched:*'`, `cache`, `faults`).
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// perf's JSON list (`perf list -j`, newer than perf 6.1): an array of {Unit,
    /// EventName, EventAlias, ScaleUnit, EventType, BriefDescription} and metric objects.
    #[arg(long, short = 'j')]
    pub json: bool,
    /// perfkit's own JSON document, with availability: {"events": [{name, aliases, kind,
    /// description, pmu, unit, scale, encoding, available: {status, reason}}], "notes": [...]}.
    #[arg(long)]
    pub json_full: bool,
    /// Do not print descriptions.
    #[arg(long)]
    pub no_desc: bool,
    /// Do not try to open events to see whether they are available.
    #[arg(long)]
    pub no_probe: bool,
    /// Leave out libpfm4's events (there can be thousands).
    #[arg(long)]
    pub no_pfm: bool,
    /// Print the names only, space-separated (for shell completion).
    #[arg(long)]
    pub raw_dump: bool,
    /// Write the list to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Print each event's encoding (`type=N,config=0x...`) below it.
    #[arg(long)]
    pub details: bool,
    /// Also print deprecated events (perfkit has none: accepted for perf's scripts).
    #[arg(long)]
    pub deprecated: bool,
}

/// Run `perfkit list`.
pub fn run(args: ListArgs) -> anyhow::Result<u8> {
    // `perfkit list metric|metricgroup`: the CPU's metric table, as perf lists it.
    if let [word] = args.filters.as_slice()
        && let Some(what) = perfkit_events::metrics::Listing::of_filter(word)
    {
        let sink: Box<dyn Write> = match &args.output {
            Some(path) => Box::new(
                std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))?,
            ),
            None => Box::new(std::io::stdout().lock()),
        };
        let mut out = std::io::BufWriter::new(sink);
        let metrics = perfkit_events::metrics::Metrics::system();
        if args.json {
            let none = list::Catalogue::default();
            perfkit_events::list_json::write_perf_json(&none, &metrics, &mut out)
        } else {
            metrics.write_listing(what, args.raw_dump, args.details, &mut out)
        }
        .and_then(|()| out.flush())
        .context("writing the list")?;
        return Ok(0);
    }
    let env = perfkit_engine::env();
    let opts = ListOptions {
        // perf's --raw-dump leaves out what does not open here, as its listing does.
        probe: !args.no_probe,
        libpfm: !args.no_pfm,
    };
    // perf's kinds beside others (`list metric sw`): the metric listing first, as above;
    // SDT: a note (perfkit does not list them yet).
    let mut filters: Vec<&str> = Vec::new();
    for f in &args.filters {
        if let Some(what) = perfkit_events::metrics::Listing::of_filter(f) {
            if !args.json && !args.json_full {
                let mut out = std::io::stdout().lock();
                perfkit_events::metrics::Metrics::system()
                    .write_listing(what, args.raw_dump, args.details, &mut out)
                    .and_then(|()| out.flush())
                    .context("writing the list")?;
            }
        } else if f == "sdt" {
            eprintln!(
                "perfkit list: SDT events are not listed yet (perf lists those of the \
                 binaries in its build-id cache)"
            );
        } else {
            filters.push(f);
        }
    }
    if filters.is_empty() && args.filters.len() > filters.len() {
        if args.json {
            let mut out = std::io::stdout().lock();
            let metrics = perfkit_events::metrics::Metrics::system();
            perfkit_events::list_json::write_perf_json(
                &list::Catalogue::default(),
                &metrics,
                &mut out,
            )
            .context("writing the list")?;
        }
        return Ok(0);
    }
    let cat = list::catalogue_of(env, &filters, &opts);
    let sink: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = std::io::BufWriter::new(sink);
    if args.raw_dump {
        write_raw_dump(&cat, env.tracefs(), &mut out)
    } else if args.json {
        // Metrics in the array too, as perf's, unless only other kinds were asked for.
        let metrics = if args.filters.is_empty()
            || args
                .filters
                .iter()
                .any(|f| perfkit_events::metrics::Listing::of_filter(f).is_some())
        {
            perfkit_events::metrics::Metrics::system()
        } else {
            perfkit_events::metrics::Metrics::default()
        };
        perfkit_events::list_json::write_perf_json(&cat, &metrics, &mut out)
    } else if args.json_full {
        list::write_json(&cat, &mut out)
    } else {
        list::write_text_with(&cat, !args.no_desc, args.details, &mut out)
    }
    .and_then(|()| out.flush())
    .context("writing the list")?;
    Ok(0)
}

/// perf 6.1's `--raw-dump`: the names its listing prints, each followed by a space.
/// Hardware, software and cache events that do not open here are left out and the rest
/// sorted by name; the tool events follow the software events; tracepoints are those
/// with an `id` (ftrace's own events have none), sorted by their whole name; the syntax
/// lines (`rNNN`, `mem:`, `uprobe:`) are not names and are left out. Other kinds keep the
/// catalogue's order.
fn write_raw_dump(
    cat: &list::Catalogue,
    tracefs: Option<&std::path::Path>,
    w: &mut impl Write,
) -> std::io::Result<()> {
    use list::Kind;
    let sorted = |k: Kind| {
        matches!(
            k,
            Kind::Hardware | Kind::Software | Kind::Cache | Kind::Tracepoint
        )
    };
    let has_id = |name: &str| {
        let Some((sys, ev)) = name.split_once(':') else {
            return true;
        };
        tracefs.is_none_or(|t| t.join("events").join(sys).join(ev).join("id").exists())
    };
    let mut i = 0;
    while i < cat.entries.len() {
        let kind = cat.entries[i].kind;
        let run = cat.entries[i..]
            .iter()
            .take_while(|e| e.kind == kind)
            .count();
        let mut names: Vec<&str> = cat.entries[i..i + run]
            .iter()
            .filter(|e| match kind {
                Kind::Hardware | Kind::Software | Kind::Cache => {
                    e.available.as_bool() != Some(false)
                }
                Kind::Tracepoint => has_id(&e.name),
                Kind::Raw | Kind::Breakpoint | Kind::Uprobe => false,
                _ => true,
            })
            .map(|e| e.name.as_str())
            .collect();
        if sorted(kind) {
            names.sort_unstable();
        }
        if kind == Kind::Software {
            names.extend(["duration_time", "user_time", "system_time"]);
        }
        for n in names {
            write!(w, "{n} ")?;
        }
        i += run;
    }
    Ok(())
}
