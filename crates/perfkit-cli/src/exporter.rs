//! `perfkit exporter`: counters over HTTP in Prometheus' text format (flags into
//! [`perfkit_fleet::Exporter`], served by [`perfkit_fleet::serve`]).

use anyhow::{Context, Result};
use perfkit_fleet::cgroups::CgroupSelection;
use perfkit_fleet::{Exporter, ExporterOptions};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Flags of `perfkit exporter`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "Serve counters per CPU, cgroup and event to Prometheus (GET /metrics)",
    after_help = "Examples:\n  perfkit exporter --listen :9669\n  perfkit exporter -e task-clock,context-switches --cgroup-tree system.slice\n  perfkit exporter -G system.slice/nginx.service,user.slice -I 5000"
)]
pub struct ExporterArgs {
    /// Address to listen on (`HOST:PORT`, `:PORT` for every address; port 0 picks one and
    /// prints it).
    #[arg(short = 'l', long, default_value = ":9669")]
    pub listen: String,
    /// Events to count (perf's syntax; default task-clock, context-switches,
    /// cpu-migrations, page-faults).
    #[arg(short = 'e', long = "events", alias = "event")]
    pub events: Vec<String>,
    /// Read the counters at most every MS milliseconds; a scrape in between gets the last
    /// reading.
    #[arg(
        short = 'I',
        long = "interval",
        default_value_t = 1000,
        value_name = "MS"
    )]
    pub interval: u64,
    /// Count in these cgroups (names relative to the cgroup root, as `perf stat -G`).
    #[arg(
        short = 'G',
        long = "for-each-cgroup",
        alias = "cgroup",
        value_delimiter = ','
    )]
    pub cgroups: Vec<String>,
    /// Count in every cgroup at and below this directory (relative to the cgroup root, or
    /// absolute); cgroups that appear or vanish are picked up or dropped.
    #[arg(long = "cgroup-tree", value_name = "DIR")]
    pub cgroup_tree: Vec<String>,
    /// At most this many cgroups.
    #[arg(long = "max-cgroups", default_value_t = 256)]
    pub max_cgroups: usize,
    /// Only these CPUs (e.g. 0,2-3).
    #[arg(short = 'C', long = "cpu")]
    pub cpu: Option<String>,
    /// No whole-CPU series (only the cgroups').
    #[arg(long = "no-system-wide")]
    pub no_system_wide: bool,
    /// The `host` label (default: the host name).
    #[arg(long)]
    pub host: Option<String>,
}

/// Run `perfkit exporter` until SIGINT/SIGTERM.
pub fn run(args: ExporterArgs) -> Result<u8> {
    let mut opts = ExporterOptions::default();
    if !args.events.is_empty() {
        opts.events = args.events.clone();
    }
    opts.interval = Duration::from_millis(args.interval);
    opts.cgroups = CgroupSelection {
        names: args.cgroups.clone(),
        trees: args.cgroup_tree.clone(),
    };
    opts.max_cgroups = args.max_cgroups;
    opts.cpus = args.cpu.clone();
    opts.system_wide = !args.no_system_wide;
    if let Some(h) = &args.host {
        opts.host = h.clone();
    }
    if args.no_system_wide && opts.cgroups.is_empty() {
        anyhow::bail!(
            "--no-system-wide leaves nothing to count: add -G CGROUPS or --cgroup-tree DIR"
        );
    }
    let exporter = Exporter::new(opts).map_err(|e| {
        let hint = e.hint();
        let err = anyhow::Error::new(e);
        match hint {
            Some(h) => err.context(h),
            None => err,
        }
    })?;
    for (event, why) in exporter.unsupported() {
        eprintln!("perfkit: {event}: not counted ({why})");
    }
    let addr = if args.listen.starts_with(':') {
        format!("0.0.0.0{}", args.listen)
    } else {
        args.listen.clone()
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    perfkit_fleet::serve(exporter, &addr, &stop, |bound| {
        eprintln!("perfkit exporter: listening on http://{bound}/metrics");
    })
    .with_context(|| format!("--listen {}", args.listen))?;
    let _ = stop.load(Ordering::Relaxed);
    Ok(0)
}
