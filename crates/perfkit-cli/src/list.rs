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
    /// One JSON document: {"events": [{name, aliases, kind, description, pmu, unit, scale,
    /// encoding, available: {status, reason}}], "notes": [...]}.
    #[arg(long, short = 'j')]
    pub json: bool,
    /// Do not print descriptions.
    #[arg(long)]
    pub no_desc: bool,
    /// Do not try to open events to see whether they are available.
    #[arg(long)]
    pub no_probe: bool,
    /// Leave out libpfm4's events (there can be thousands).
    #[arg(long)]
    pub no_pfm: bool,
}

/// Run `perfkit list`.
pub fn run(args: ListArgs) -> anyhow::Result<u8> {
    let env = perfkit_engine::env();
    let opts = ListOptions {
        probe: !args.no_probe,
        libpfm: !args.no_pfm,
    };
    let filters: Vec<&str> = args.filters.iter().map(String::as_str).collect();
    let cat = list::catalogue_of(env, &filters, &opts);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.json {
        list::write_json(&cat, &mut out)
    } else {
        list::write_text(&cat, !args.no_desc, &mut out)
    }
    .and_then(|()| out.flush())
    .context("writing the list")?;
    Ok(0)
}
