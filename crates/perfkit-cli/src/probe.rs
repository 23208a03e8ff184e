//! `perfkit probe`: user-space probes (uprobes) as `perf probe -x BINARY` defines them:
//! add `FUNC` or `FUNC%return` (`-a`, or bare arguments), delete (`-d`, globs as perf's),
//! list (`-l`), and list a binary's functions (`--funcs`). Kernel probes are refused with
//! the reason. The work is `perfkit_symbols::uprobe_events`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use perfkit_symbols::uprobe_events::{
    UprobeDef, UprobeEvents, function_offset, functions, group_for,
};

use crate::exit_error;

/// perf probe's exit status when a probe cannot be added or deleted.
const PROBE_FAILED: u8 = 254;

/// Arguments of `perfkit probe`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// The binary (executable or library) to probe.
    #[arg(short = 'x', long = "exec", value_name = "BINARY")]
    pub exec: Option<PathBuf>,
    /// Add a probe: `FUNC`, `FUNC%return` or `EVENT=FUNC[%return]`.
    #[arg(short, long, value_name = "PROBE")]
    pub add: Vec<String>,
    /// Delete probes: `GROUP:EVENT` or `EVENT`, with `*` globs.
    #[arg(short, long, value_name = "EVENT")]
    pub del: Vec<String>,
    /// List the probes defined (optionally only those matching a glob).
    #[arg(short, long, value_name = "FILTER", num_args = 0..=1, default_missing_value = "*")]
    pub list: Option<String>,
    /// List the functions of the binary given with -x (optionally matching a glob).
    #[arg(short = 'F', long, value_name = "FILTER", num_args = 0..=1, default_missing_value = "*")]
    pub funcs: Option<String>,
    /// Add a probe even if an event of that name exists (as `EVENT_1`).
    #[arg(short, long)]
    pub force: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Be more verbose.
    #[arg(short, long)]
    pub verbose: bool,
    /// One probe to add, as with -a (the words joined, as perf joins them).
    #[arg(value_name = "PROBE")]
    pub probes: Vec<String>,
}

fn uprobe_events() -> anyhow::Result<UprobeEvents> {
    let tracefs = perfkit_data::tracing_data::tracefs().context(
        "tracefs is not mounted: mount it with `mount -t tracefs nodev /sys/kernel/tracing`",
    )?;
    if !tracefs.join("uprobe_events").exists() {
        bail!("this kernel has no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS)");
    }
    Ok(UprobeEvents::new(&tracefs))
}

/// Run `perfkit probe`.
pub fn run(args: ProbeArgs) -> anyhow::Result<u8> {
    if let Some(filter) = &args.funcs {
        let Some(bin) = &args.exec else {
            bail!(
                "--funcs lists a binary's functions: give it with -x BINARY (kernel functions are not supported)"
            );
        };
        let mut last = String::new();
        for (name, _) in functions(bin)? {
            if name != last && perfkit_events::glob::matches(filter, &name) {
                println!("{name}");
            }
            last = name;
        }
        return Ok(0);
    }
    let mut status = 0;
    for pattern in &args.del {
        status = status.max(delete(pattern, args.quiet)?);
    }
    // As perf: bare words make one probe (`FUNC ARG...`), -a one probe each.
    let bare = (!args.probes.is_empty()).then(|| args.probes.join(" "));
    let adds: Vec<&String> = args.add.iter().chain(&bare).collect();
    if !adds.is_empty() {
        let Some(bin) = &args.exec else {
            eprintln!(
                "Debuginfo-analysis is not supported: perfkit probe adds user-space probes \
                 (-x BINARY FUNC) only; kernel probes need kprobe_events, which {}",
                if Path::new("/sys/kernel/tracing/kprobe_events").exists() {
                    "perfkit does not write yet"
                } else {
                    "this kernel lacks (no CONFIG_KPROBE_EVENTS)"
                }
            );
            eprintln!("  Error: Failed to add events.");
            return Ok(PROBE_FAILED);
        };
        for spec in adds {
            status = status.max(add(bin, spec, &args)?);
        }
    }
    if let Some(filter) = &args.list {
        list(filter)?;
    }
    if args.del.is_empty() && args.add.is_empty() && args.probes.is_empty() && args.list.is_none() {
        return Err(exit_error(
            129,
            anyhow::anyhow!("nothing to do: give -x BINARY FUNC, -a, -d, -l or --funcs"),
        ));
    }
    Ok(status)
}

fn add(bin: &Path, spec: &str, args: &ProbeArgs) -> anyhow::Result<u8> {
    let (name, point) = match spec.split_once('=') {
        Some((n, p)) => (Some(n), p),
        None => (None, spec),
    };
    let (func, is_return) = match point.strip_suffix("%return") {
        Some(f) => (f, true),
        None => (point, false),
    };
    if func.contains([':', '@', ' ']) || func.is_empty() {
        eprintln!(
            "perfkit probe: '{spec}': only FUNC and FUNC%return are supported yet (no lines, files or arguments)"
        );
        eprintln!("  Error: Failed to add events.");
        return Ok(PROBE_FAILED);
    }
    let bin = std::fs::canonicalize(bin).with_context(|| format!("{}", bin.display()))?;
    let offset = match function_offset(&bin, func) {
        Ok(o) => o,
        Err(e @ perfkit_symbols::uprobe_events::ProbeError::NotFound(_)) => {
            eprintln!("{e}");
            eprintln!("  Error: Failed to add events.");
            return Ok(PROBE_FAILED);
        }
        Err(e) => return Err(e.into()),
    };
    let events = uprobe_events()?;
    let existing = events.list()?;
    let group = group_for(&bin);
    let base = match name {
        Some(n) => n.to_owned(),
        None if is_return => format!("{func}__return"),
        None => func.to_owned(),
    };
    let taken = |e: &str| existing.iter().any(|d| d.group == group && d.event == e);
    let mut event = base.clone();
    if taken(&event) {
        if !args.force {
            eprintln!("Error: event \"{event}\" already exists.");
            eprintln!(" Hint: Remove existing event by 'perf probe -d'");
            eprintln!("       or force duplicates by 'perf probe -f'");
            eprintln!("  Error: Failed to add events.");
            return Ok(PROBE_FAILED);
        }
        event = (1..)
            .map(|i| format!("{base}_{i}"))
            .find(|e| !taken(e))
            .unwrap_or(base);
    }
    let def = UprobeDef {
        group: group.clone(),
        event: event.clone(),
        path: bin.clone(),
        offset,
        is_return,
    };
    events.add(&def)?;
    if !args.quiet {
        let ret = if is_return { "%return" } else { "" };
        eprintln!("Added new event:");
        eprintln!("  {group}:{event} (on {func}{ret} in {})", bin.display());
        eprintln!();
        eprintln!("You can now use it in all perf tools, such as:");
        eprintln!();
        eprintln!("\tperf record -e {group}:{event} -aR sleep 1");
        eprintln!();
    }
    Ok(0)
}

fn delete(pattern: &str, quiet: bool) -> anyhow::Result<u8> {
    let events = uprobe_events()?;
    let (gpat, epat) = pattern.split_once(':').unwrap_or(("*", pattern));
    let mut hit = false;
    for d in events.list()? {
        if perfkit_events::glob::matches(gpat, &d.group)
            && perfkit_events::glob::matches(epat, &d.event)
        {
            events.remove(&d.group, &d.event)?;
            hit = true;
            if !quiet {
                eprintln!("Removed event: {}:{}", d.group, d.event);
            }
        }
    }
    if !hit {
        eprintln!("\"{pattern}\" does not hit any event.");
        eprintln!("  Error: Failed to delete events.");
        return Ok(PROBE_FAILED);
    }
    Ok(0)
}

fn list(filter: &str) -> anyhow::Result<()> {
    let events = uprobe_events()?;
    for d in events.list()? {
        let full = format!("{}:{}", d.group, d.event);
        if !perfkit_events::glob::matches(filter, &full)
            && !perfkit_events::glob::matches(filter, &d.event)
        {
            continue;
        }
        let func = functions(&d.path)
            .ok()
            .and_then(|fs| fs.into_iter().find(|(_, off)| *off == d.offset))
            .map_or_else(|| format!("{:#x}", d.offset), |(n, _)| n);
        let ret = if d.is_return { "%return" } else { "" };
        println!("  {full} (on {func}{ret} in {})", d.path.display());
    }
    Ok(())
}
