//! `perfkit agent`: continuous whole-system profiling, one gzipped pprof per window,
//! written to a rotated directory and/or sent to Pyroscope or Parca (flags into
//! [`perfkit_fleet::Agent`], [`perfkit_fleet::sink::DirSink`] and
//! [`perfkit_fleet::upload::Uploader`]).

use anyhow::{Context, Result, bail};
use perfkit_fleet::sink::DirSink;
use perfkit_fleet::upload::{Endpoint, Target, Uploader};
use perfkit_fleet::{Agent, AgentOptions};
use std::path::PathBuf;
use std::time::Duration;

/// Flags of `perfkit agent`.
#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "Profile the whole system continuously: one pprof profile every N seconds, to a directory, Pyroscope or Parca",
    after_help = "`perfkit record --continuous FLAGS` is `perfkit agent FLAGS`.\n\nExamples:\n  perfkit agent -d /var/lib/perfkit/profiles\n  perfkit agent --pyroscope http://pyroscope:4040 --name myhost.cpu\n  perfkit agent --parca http://parca:7070 --no-symbolize"
)]
pub struct AgentArgs {
    /// Write each profile to this directory (rotated: see --max-files, --max-bytes).
    #[arg(short = 'd', long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Keep at most this many profiles in the directory.
    #[arg(long = "max-files", default_value_t = 8640)]
    pub max_files: usize,
    /// Keep at most this many MiB of profiles in the directory.
    #[arg(long = "max-mib", default_value_t = 512)]
    pub max_mib: u64,
    /// Send each profile to Pyroscope (`http://HOST:4040`).
    #[arg(long, value_name = "URL")]
    pub pyroscope: Option<String>,
    /// Send each profile to Parca (`http://HOST:7070`).
    #[arg(long, value_name = "URL")]
    pub parca: Option<String>,
    /// Application name (Pyroscope) or series name (Parca).
    #[arg(long)]
    pub name: Option<String>,
    /// A label of every profile sent (Pyroscope's `{k=v}`, a Parca series label), beside
    /// `host`; repeat for more.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Trust the certificates in this PEM file for https:// endpoints (a private CA or a
    /// self-signed server), beside the usual public roots.
    #[arg(long = "ca-cert", value_name = "PEM")]
    pub ca_cert: Option<PathBuf>,
    /// Profiles waiting for the endpoint are kept here (default: DIR/.spool, else
    /// /var/spool/perfkit-agent).
    #[arg(long = "spool-dir", value_name = "DIR")]
    pub spool_dir: Option<PathBuf>,
    /// At most this many MiB wait in the spool (the oldest go first beyond it).
    #[arg(long = "spool-mib", default_value_t = 256)]
    pub spool_mib: u64,
    /// Samples per second per CPU.
    #[arg(short = 'F', long = "freq", default_value_t = 19)]
    pub freq: u64,
    /// Seconds per profile.
    #[arg(short = 'w', long = "window", default_value_t = 10.0)]
    pub window: f64,
    /// Stop after this many profiles (default: run until SIGINT/SIGTERM).
    #[arg(long)]
    pub count: Option<u64>,
    /// The sampling event.
    #[arg(short = 'e', long = "event", default_value = "cpu-clock")]
    pub event: String,
    /// Call chains: fp or dwarf[,SIZE].
    #[arg(long = "call-graph", default_value = "fp")]
    pub call_graph: String,
    /// Only these CPUs (e.g. 0,2-3).
    #[arg(short = 'C', long = "cpu")]
    pub cpu: Option<String>,
    /// Leave user-space frames as addresses with build ids, for the profile store to
    /// symbolize.
    #[arg(long = "no-symbolize")]
    pub no_symbolize: bool,
    /// Whole system (always: accepted as `perfkit record --continuous -a` gives it).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Call chains (always taken; see --call-graph).
    #[arg(short = 'g')]
    pub callchains: bool,
    /// The `host` label (default: the host name).
    #[arg(long)]
    pub host: Option<String>,
    /// Print one line per profile.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

/// `perfkit record --continuous ARGS` as `perfkit agent ARGS` (the agent is record's
/// continuous form, with the agent's flags); None for any other command line.
pub fn continuous_argv(argv: &[std::ffi::OsString]) -> Option<Vec<std::ffi::OsString>> {
    if argv.get(1)? != "record" {
        return None;
    }
    let end = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    let at = argv[..end].iter().position(|a| a == "--continuous")?;
    let mut out = argv.to_vec();
    out.remove(at);
    out[1] = "agent".into();
    Some(out)
}

/// Run `perfkit agent`.
pub fn run(args: AgentArgs) -> Result<u8> {
    if args.output_dir.is_none() && args.pyroscope.is_none() && args.parca.is_none() {
        bail!("nowhere to put profiles: give --output-dir DIR, --pyroscope URL or --parca URL");
    }
    if args.pyroscope.is_some() && args.parca.is_some() {
        bail!("give one of --pyroscope and --parca (run two agents for two stores)");
    }
    if !(args.window > 0.0 && args.window.is_finite()) {
        bail!(
            "--window {}: give a positive number of seconds",
            args.window
        );
    }
    if args.freq == 0 {
        bail!("--freq 0: give a positive number of samples per second");
    }
    let call_graph = args
        .call_graph
        .parse()
        .map_err(|e: String| anyhow::anyhow!(e))?;
    let mut opts = AgentOptions {
        event: args.event.clone(),
        frequency: args.freq,
        window: Duration::from_secs_f64(args.window),
        cpus: args.cpu.clone(),
        call_graph,
        symbolize: !args.no_symbolize,
        ..AgentOptions::default()
    };
    if let Some(h) = &args.host {
        opts.host = h.clone();
    }
    let host = opts.host.clone();
    let sink = match &args.output_dir {
        Some(d) => Some(
            DirSink::new(d, "cpu", args.max_mib << 20, args.max_files)
                .with_context(|| format!("--output-dir {}", d.display()))?,
        ),
        None => None,
    };
    opts.scratch_dir = match &args.output_dir {
        Some(d) => d.join(".work"),
        None => std::env::temp_dir(),
    };
    let endpoint = match (&args.pyroscope, &args.parca) {
        (Some(url), _) => Some(Endpoint::Pyroscope {
            url: url.clone(),
            name: args.name.clone().unwrap_or_else(|| "perfkit.cpu".into()),
        }),
        (_, Some(url)) => Some(Endpoint::Parca {
            url: url.clone(),
            name: args
                .name
                .clone()
                .unwrap_or_else(|| "parca_agent_cpu".into()),
        }),
        _ => None,
    };
    let uploader = match endpoint {
        Some(endpoint) => {
            let mut labels = vec![("host".to_string(), host.clone())];
            for l in &args.labels {
                let Some((k, v)) = l.split_once('=') else {
                    bail!("--label {l}: give KEY=VALUE");
                };
                labels.push((k.to_string(), v.to_string()));
            }
            let target = Target {
                endpoint,
                labels,
                rate_hz: args.freq,
            };
            target.check().map_err(anyhow::Error::msg)?;
            let http =
                perfkit_fleet::upload::http_client(args.ca_cert.as_deref()).context("--ca-cert")?;
            let spool = args.spool_dir.clone().unwrap_or_else(|| {
                perfkit_fleet::upload::default_spool(args.output_dir.as_deref())
            });
            Some(
                Uploader::start(target, http, &spool, args.spool_mib << 20)
                    .with_context(|| format!("--spool-dir {}", spool.display()))?,
            )
        }
        None => {
            if args.ca_cert.is_some() || !args.labels.is_empty() {
                bail!("--ca-cert and --label are for --pyroscope or --parca");
            }
            None
        }
    };
    let mut agent = Agent::new(opts).map_err(|e| {
        let hint = match &e {
            perfkit_fleet::agent::AgentError::Engine(e) => e.hint(),
            _ => None,
        };
        let err = anyhow::Error::new(e);
        match hint {
            Some(h) => err.context(h),
            None => err,
        }
    })?;
    let stopper = agent.stopper();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            stopper.stop();
        }
    });
    let mut n = 0u64;
    let count = args.count;
    let verbose = args.verbose;
    let up = uploader.as_ref();
    agent.run(|profile| {
        n += 1;
        let mut written = None;
        if let Some(s) = &sink {
            let (path, _) = s.write(&profile)?;
            written = Some(path);
        }
        if let Some(u) = up {
            let dropped = u.push(&profile)?;
            if dropped > 0 {
                eprintln!(
                    "perfkit agent: the spool is full: {dropped} oldest profile(s) dropped (raise --spool-mib)"
                );
            }
        }
        if verbose {
            eprintln!(
                "perfkit agent: {} samples, {} lost, {} bytes{}",
                profile.samples,
                profile.lost,
                profile.gz.len(),
                written.map_or(String::new(), |p| format!(" -> {}", p.display()))
            );
        }
        if let Some(u) = up {
            let last = u.stats.last_error.lock().map(|mut e| e.take());
            if let Ok(Some(e)) = last {
                eprintln!("perfkit agent: {e}");
            }
        }
        Ok(count.is_none_or(|c| n < c))
    })?;
    if let Some(u) = uploader {
        u.finish(Duration::from_secs(5));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::continuous_argv;
    use std::ffi::OsString;

    fn argv(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn record_continuous_is_the_agent() {
        assert_eq!(
            continuous_argv(&argv("perfkit record -F 49 --continuous -d /x")),
            Some(argv("perfkit agent -F 49 -d /x"))
        );
        assert_eq!(
            continuous_argv(&argv("perfkit record -F 49 -- sleep 1")),
            None
        );
        assert_eq!(
            continuous_argv(&argv("perfkit record -- prog --continuous")),
            None,
            "the command's own flags are not ours"
        );
        assert_eq!(continuous_argv(&argv("perfkit stat --continuous")), None);
        assert_eq!(continuous_argv(&argv("perfkit")), None);
    }
}
