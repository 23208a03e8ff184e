//! `perfkit`: performance counters for Linux.
//!
//! The binary is thin: each subcommand parses its flags with clap (derive) and calls the
//! libraries. Errors print with their whole cause chain and exit non-zero; a closed
//! standard output (`perfkit ... | head`) is not an error.
#![forbid(unsafe_code)]

mod agent;
mod annotate;
mod archive;
mod buildid;
mod control;
mod daemon;
mod data;
mod diff;
mod evlist;
mod exporter;
mod inject;
mod list;
mod perf_options;
mod probe;
mod record;
mod record_args;
mod report;
mod stat;
mod top;
mod top_tui;
mod usage;
mod version;
mod workloads;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

/// Performance counters for Linux: count, sample and read profiles.
#[derive(Parser, Debug)]
#[command(name = "perfkit", version, about, long_about = None)]
struct Cli {
    /// The build-id cache directory (default $PERF_BUILDID_DIR, else ~/.debug), as perf's.
    #[arg(long, value_name = "DIR")]
    buildid_dir: Option<std::path::PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Count events for a command, processes, threads, CPUs or cgroups (like `perf stat`).
    Stat(stat::StatArgs),
    /// Sample a command, processes or CPUs into perf.data (like `perf record`).
    Record(record_args::RecordArgs),
    /// Show a recorded profile (like `perf report --stdio`), or export it.
    Report(report::ReportArgs),
    /// Show sampled functions' instructions and source lines with the share of samples on
    /// each (like `perf annotate --stdio`).
    Annotate(annotate::AnnotateArgs),
    /// Compare profiles: baseline share and delta, ratio or weighted diff per symbol (like
    /// `perf diff`), or a differential flamegraph.
    Diff(diff::DiffArgs),
    /// Print every sample of a recorded profile (like `perf script`).
    Script(report::ScriptArgs),
    /// A live profile of the system, processes or a command (like `perf top`; `--stdio`
    /// for plain text).
    Top(top::TopArgs),
    /// List the events this machine can name, and whether each opens here (like `perf list`).
    List(list::ListArgs),
    /// List the build ids a perf.data file names (like `perf buildid-list`).
    #[command(name = "buildid-list")]
    BuildIdList(buildid::BuildIdListArgs),
    /// Add, remove or list files in perf's build-id cache (like `perf buildid-cache`).
    #[command(name = "buildid-cache")]
    BuildIdCache(buildid::BuildIdCacheArgs),
    /// List the events of a perf.data file (like `perf evlist`).
    Evlist(evlist::EvlistArgs),
    /// Copy a perf.data stream, file or pipe mode either way, adding build ids (like
    /// `perf inject`).
    Inject(inject::InjectArgs),
    /// Define user-space probes (uprobes) on functions of a binary (like `perf probe -x`).
    Probe(probe::ProbeArgs),
    /// Convert a perf.data file (`data convert --to-json FILE`, like `perf data`).
    Data(data::DataArgs),
    /// Pack the build-id cache entries a perf.data file needs into FILE.tar.bz2 (like
    /// `perf archive`).
    Archive(archive::ArchiveArgs),
    /// Run one of perf's test workloads (`test -w noploop`, like `perf test -w`).
    Test(workloads::TestArgs),
    /// Print perfkit's version; with --build-options, perf's build features perfkit has.
    Version(version::VersionArgs),
    /// Run record sessions in the background from a config file, and list, ping, signal
    /// or stop them (like `perf daemon`).
    Daemon(daemon::DaemonArgs),
    /// Serve counters per CPU, cgroup and event to Prometheus (GET /metrics).
    Exporter(exporter::ExporterArgs),
    /// Profile the whole system continuously into pprof files, Pyroscope or Parca.
    Agent(agent::AgentArgs),
}

/// An error that carries the exit status to use (127 for a missing command, ...).
#[derive(Debug)]
pub struct ExitError {
    /// Process exit status.
    pub code: u8,
    /// What to print.
    pub error: anyhow::Error,
}

impl std::fmt::Display for ExitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for ExitError {}

/// Wrap an error with an exit status.
pub fn exit_error(code: u8, error: impl Into<anyhow::Error>) -> anyhow::Error {
    ExitError {
        code,
        error: error.into(),
    }
    .into()
}

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv = agent::continuous_argv(&argv).unwrap_or(argv);
    // perf takes any unambiguous prefix of a long option (`report --task` for `--tasks`).
    let command = Cli::command().mut_subcommands(|c| c.infer_long_args(true));
    let matches = match command.try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) => match usage::explain(&e, &argv) {
            Some((line, code)) => {
                eprintln!("{line}");
                return ExitCode::from(code);
            }
            None => e.exit(),
        },
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if let Some((_, sub)) = matches.subcommand() {
        match &mut cli.cmd {
            Cmd::Stat(a) => a.event_filters = pair_filters(sub, &a.events, &a.filters),
            Cmd::Record(a) => a.event_filters = pair_filters(sub, &a.events, &a.filters),
            _ => {}
        }
    }
    if let Some(dir) = cli.buildid_dir.take() {
        perfkit_symbols::buildid_cache::set_default_dir(dir);
    }
    let result = match cli.cmd {
        Cmd::Stat(args) => stat::run(args),
        Cmd::Record(args) => record::run(args),
        Cmd::Report(args) => report::run_report(args),
        Cmd::Script(args) => report::run_script(args),
        Cmd::Annotate(args) => annotate::run(args),
        Cmd::Diff(args) => diff::run(args),
        Cmd::Top(args) => top::run(args),
        Cmd::List(args) => list::run(args),
        Cmd::BuildIdList(args) => buildid::run_list(args),
        Cmd::BuildIdCache(args) => buildid::run_cache(args),
        Cmd::Version(args) => version::run(args),
        Cmd::Inject(args) => inject::run(args),
        Cmd::Evlist(args) => evlist::run(args),
        Cmd::Test(args) => workloads::run(args),
        Cmd::Probe(args) => probe::run(args),
        Cmd::Data(args) => data::run(args),
        Cmd::Archive(args) => archive::run(args),
        Cmd::Daemon(args) => daemon::run(args),
        Cmd::Exporter(args) => exporter::run(args),
        Cmd::Agent(args) => agent::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let code = e.downcast_ref::<ExitError>().map_or(1, |x| x.code);
            eprintln!("perfkit: {e:#}");
            ExitCode::from(code)
        }
    }
}

/// Give each `--filter` to the `-e` written before it, as perf does.
fn pair_filters(
    m: &clap::ArgMatches,
    events: &[String],
    filters: &[String],
) -> Vec<(String, Vec<String>)> {
    let ev_idx: Vec<usize> = m.indices_of("events").map_or(vec![], |i| i.collect());
    let f_idx: Vec<usize> = m.indices_of("filters").map_or(vec![], |i| i.collect());
    let mut out: Vec<(String, Vec<String>)> =
        events.iter().map(|e| (e.clone(), Vec::new())).collect();
    for (f, fi) in filters.iter().zip(f_idx) {
        match ev_idx.iter().rposition(|&ei| ei < fi) {
            Some(k) => out[k].1.push(f.clone()),
            // A filter before any -e: keep it on the first so the error names it.
            None => {
                if let Some(first) = out.first_mut() {
                    first.1.push(f.clone());
                }
            }
        }
    }
    out
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn clap_definition_is_valid() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
