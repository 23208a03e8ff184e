//! `perfkit daemon`: perf's record-session daemon (`start`, `stop`, `signal`, `ping`, and
//! the session list without a subcommand). The daemon is `perfkit_engine::daemon`; this
//! file parses perf's flags, puts the daemon in the background and prints answers.
//! Errors print as perf's do (`failed: ...`), so scripts that look for that word find it.

use anyhow::{Context, Result, anyhow};
use clap::{Args, Subcommand};
use perfkit_engine::daemon::{self, DaemonConfig, Request, ServeOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// `perfkit daemon [start|stop|signal|ping] [--config FILE] [--base DIR] [-v] [-x SEP]`.
#[derive(Args, Debug)]
pub struct DaemonArgs {
    #[command(subcommand)]
    cmd: Option<DaemonCmd>,
    /// More detail in the session list (paths and uptime).
    #[arg(short = 'v', long = "verbose", global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// The config file (default /etc/perfconfig, else ~/.perfconfig).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// The base directory, overriding the config's `daemon.base`.
    #[arg(long, global = true, value_name = "PATH")]
    base: Option<PathBuf>,
    /// List one line per process with fields separated by SEP (default `,`).
    #[arg(short = 'x', long = "field-separator", global = true, num_args = 0..=1, default_missing_value = ",", value_name = "SEP")]
    field_separator: Option<String>,
}

#[derive(Subcommand, Debug)]
enum DaemonCmd {
    /// Start the daemon and its sessions (in the background unless -f).
    Start {
        /// Stay in the foreground, logging to standard output.
        #[arg(short = 'f', long = "foreground")]
        foreground: bool,
    },
    /// Stop every session and the daemon.
    Stop,
    /// Send SIGUSR2 to the sessions (a --switch-output session writes a file).
    Signal {
        /// Only this session.
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
    },
    /// Ping the sessions' control FIFOs (OK or FAIL per session).
    Ping {
        /// Only this session.
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
    },
}

/// Run `perfkit daemon`.
pub fn run(args: DaemonArgs) -> Result<u8> {
    match go(args) {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("failed: {e:#}");
            Ok(1)
        }
    }
}

fn go(args: DaemonArgs) -> Result<u8> {
    let config = daemon::find_config(args.config.as_deref())?;
    let opts = ServeOptions {
        config: config.clone(),
        base: args.base.clone(),
        exe: std::env::current_exe().context("finding perfkit's own executable")?,
    };
    let cfg = DaemonConfig::load(&config)?;
    let base = opts.base_dir(&cfg)?;
    let request = match args.cmd {
        Some(DaemonCmd::Start { foreground: true }) => return serve(&opts),
        Some(DaemonCmd::Start { foreground: false }) => return start(&opts, &base),
        Some(DaemonCmd::Stop) => Request::Stop,
        Some(DaemonCmd::Signal { session }) => Request::Signal(session),
        Some(DaemonCmd::Ping { session }) => Request::Ping(session),
        None => {
            let sep = match args.field_separator.as_deref() {
                None => None,
                Some(s) => Some(
                    s.chars()
                        .next()
                        .ok_or_else(|| anyhow!("-x needs a separator character (e.g. -x:)"))?,
                ),
            };
            Request::List {
                verbose: args.verbose > 0,
                sep,
            }
        }
    };
    print!("{}", daemon::send(&base, &request)?);
    Ok(0)
}

/// The daemon in this process, until `stop`, SIGINT or SIGTERM.
fn serve(opts: &ServeOptions) -> Result<u8> {
    let done = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, done.clone())?;
    }
    daemon::serve(opts, done, &mut std::io::stdout())?;
    Ok(0)
}

/// Start the daemon in the background (its own process group, logging to BASE/output)
/// and return once it answers on its socket, or say why it did not start.
fn start(opts: &ServeOptions, base: &std::path::Path) -> Result<u8> {
    // Another daemon on this base is refused here, in the foreground, in perf's words.
    drop(daemon::check_lock(base)?);
    let log_path = base.join("output");
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let mut cmd = std::process::Command::new(&opts.exe);
    cmd.arg("daemon")
        .arg("start")
        .arg("--foreground")
        .arg("--config")
        .arg(&opts.config);
    if let Some(b) = &opts.base {
        cmd.arg("--base").arg(b);
    }
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .current_dir(base)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("starting the daemon process")?;
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if let Some(st) = child.try_wait()? {
            let out = std::fs::read_to_string(&log_path).unwrap_or_default();
            let last = out
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            let last = last.strip_prefix("failed: ").unwrap_or(last);
            return Err(anyhow!(
                "the daemon ended at start ({st}): {last} (see {})",
                log_path.display()
            ));
        }
        if std::os::unix::net::UnixStream::connect(base.join("control")).is_ok() {
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(anyhow!(
        "the daemon did not answer on {} within 30 s (see {})",
        base.join("control").display(),
        log_path.display()
    ))
}
