//! `perfkit stat record` (counts into a perf.data file or stream, as perf's stat records)
//! and `perfkit stat report` (such a file, perf's or perfkit's, printed as `stat` does).

use super::StatArgs;
use anyhow::{Context, Result, bail};
use clap::Parser;
use perfkit_data::{PerfData, PerfDataWriter, WriteOptions};
use perfkit_engine::stat::{Plan, Runner, read_stat, stat_records};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

/// `perfkit stat record`'s flags: those of `stat`, `-o` naming the perf.data file.
#[derive(Parser, Debug)]
#[command(
    name = "perfkit stat record",
    about = "Count and write perf's stat records"
)]
struct RecordCli {
    #[command(flatten)]
    stat: StatArgs,
}

/// `perfkit stat report`'s flags.
#[derive(Parser, Debug)]
#[command(
    name = "perfkit stat report",
    about = "Print the counts of a stat perf.data"
)]
struct ReportCli {
    /// The perf.data file (`-` for standard input).
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
}

fn parse<T: Parser>(name: &str, rest: &[OsString]) -> T {
    T::try_parse_from(std::iter::once(OsString::from(name)).chain(rest.iter().cloned()))
        .unwrap_or_else(|e| e.exit())
}

/// `perfkit stat record ARGS`: count as `stat` does, write the records, print nothing.
pub fn record(rest: &[OsString]) -> Result<u8> {
    let mut args = parse::<RecordCli>("perfkit stat record", rest).stat;
    args.event_filters = args.events.iter().map(|e| (e.clone(), vec![])).collect();
    let plan = Plan::new(&args.config()?)?;
    let opts = args.run_options();
    let run = Runner::new().run(&plan, &opts, &mut |_| Ok(()))?;
    let path = args.output.clone().unwrap_or_else(|| "perf.data".into());
    let pipe = path.as_os_str() == "-";
    let recs = stat_records(&run, plan.aggr, args.interval_ms().unwrap_or(0), pipe);
    let mut w = if pipe {
        PerfDataWriter::pipe_attrs_only(
            Box::new(std::io::stdout()),
            recs.events,
            WriteOptions::default(),
        )
    } else {
        PerfDataWriter::create(&path, recs.events, WriteOptions::default())
    }
    .with_context(|| format!("-o {}", path.display()))?;
    for r in recs.head.iter().chain(&recs.counts) {
        w.write_record(&[r])?;
    }
    let cmdline: Vec<String> = std::env::args().collect();
    w.finish(&cmdline)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(run.status.map_or(0, |s| s.shell_code().clamp(0, 255) as u8))
}

/// `perfkit stat report [-i FILE]`: the file's counts in `stat`'s text layout, totals over
/// every CPU and thread.
pub fn report(rest: &[OsString]) -> Result<u8> {
    let cli = parse::<ReportCli>("perfkit stat report", rest);
    let data = if cli.input.as_os_str() == "-" {
        PerfData::from_reader(Box::new(std::io::stdin()))
    } else {
        if !cli.input.exists() {
            bail!(
                "{}: no such file (write one with `perfkit stat record`)",
                cli.input.display()
            );
        }
        PerfData::open(&cli.input)
    }
    .with_context(|| format!("-i {}", cli.input.display()))?;
    let rep = read_stat(&data).with_context(|| format!("-i {}", cli.input.display()))?;
    // perf names a stream 'pipe' and a file by the command line that recorded it.
    let title = if data.pipe {
        "pipe".to_string()
    } else {
        data.features.cmdline.join(" ")
    };
    let mut out = String::new();
    out.push_str(&format!("\n Performance counter stats for '{title}':\n\n"));
    for r in &rep.rows {
        super::output::text_row(r, None, super::locale_groups_digits(), &mut out);
    }
    out.push('\n');
    if let Some(ns) = rep.elapsed_ns {
        out.push_str(&format!(
            "{:>18.9} seconds time elapsed\n\n",
            ns as f64 / 1e9
        ));
    }
    // As perf: on standard error, like `stat`'s counts.
    std::io::stderr().write_all(out.as_bytes())?;
    Ok(0)
}
