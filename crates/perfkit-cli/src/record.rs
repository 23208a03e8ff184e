//! `perfkit record`: flags into an opened event list and a [`Recorder`] from
//! `perfkit-engine`; the file naming of `--switch-output`; messages.

use crate::exit_error;
use crate::record_args::RecordArgs;
use anyhow::{Context, Result, anyhow, bail};
use perfkit_data::{PerfDataWriter, WriteOptions};
use perfkit_engine::sampling::{SamplingOptions, sampling_attrs};
use perfkit_engine::{OpenOptions, Place, Poll, Recorder, Workload};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

/// When `--switch-output` starts a new file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Switch {
    /// On SIGUSR2.
    Signal,
    /// When the data reaches this many bytes.
    Size(u64),
    /// After this long.
    Time(Duration),
}

fn parse_switch(s: &str) -> Result<Switch> {
    if s == "signal" {
        return Ok(Switch::Signal);
    }
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| anyhow!("--switch-output={s}: use signal, a size (100M) or a time (30s)"))?;
    Ok(match unit {
        "B" | "b" => Switch::Size(n),
        "K" | "k" => Switch::Size(n << 10),
        "M" => Switch::Size(n << 20),
        "G" | "g" => Switch::Size(n << 30),
        "s" => Switch::Time(Duration::from_secs(n)),
        "m" => Switch::Time(Duration::from_secs(n * 60)),
        "h" => Switch::Time(Duration::from_secs(n * 3600)),
        "d" => Switch::Time(Duration::from_secs(n * 86400)),
        _ => bail!("--switch-output={s}: unknown unit `{unit}` (B, K, M, G; s, m, h, d)"),
    })
}

/// Where the next file is written while the current one is finished.
fn pending_path(output: &Path) -> PathBuf {
    let mut p = output.as_os_str().to_owned();
    p.push(".next");
    PathBuf::from(p)
}

/// `perf.data.YYYYMMDDhhmmssmmm` (UTC), as perf names switched files.
fn rotated_name(output: &Path) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let mut name = output.as_os_str().to_owned();
    name.push(format!(
        ".{y:04}{m:02}{d:02}{:02}{:02}{:02}{:03}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        now.subsec_millis()
    ));
    PathBuf::from(name)
}

/// Run `perfkit record`.
pub fn run(args: RecordArgs) -> Result<u8> {
    let switch = args
        .switch_output
        .as_deref()
        .map(parse_switch)
        .transpose()?;
    if switch.is_some() && args.output.as_os_str() == "-" {
        bail!("--switch-output writes files: it cannot be used with -o -");
    }
    let call_graph = args.call_graph()?;
    let sampling = args.sampling()?;
    let pages = args.ring_pages()?;
    let default_event = args.events.is_empty();
    let mut specs = if default_event {
        perfkit_engine::parse(&["cycles".to_string()])?
    } else {
        perfkit_engine::parse_with_filters(&args.event_filters).map_err(|e| match e {
            perfkit_engine::Error::Parse(_) | perfkit_engine::Error::NoEvents => {
                anyhow::Error::new(e).context("-e")
            }
            e => e.into(),
        })?
    };
    let system_wide = args.all_cpus || args.cpu.is_some();
    let cpus = perfkit_engine::cpus(args.cpu.as_deref())?;
    let mut attached: Vec<i32> = Vec::new();
    if let Some(p) = &args.pid {
        attached.extend(perfkit_engine::threads_of_pids(p)?);
    }
    if let Some(t) = &args.tid {
        attached.extend(perfkit_engine::existing_tids(t)?);
    }
    if args.command.is_empty() && attached.is_empty() && !system_wide {
        bail!(
            "nothing to record: give a command (`perfkit record -- COMMAND`), -p PID, -t TID, -a or -C CPUS"
        );
    }
    let child = if args.command.is_empty() {
        None
    } else {
        Some(Workload::prepare(&args.command).map_err(launch_error)?)
    };
    let tasks: Vec<i32> = match &child {
        _ if system_wide => vec![-1],
        Some(c) => vec![c.pid()],
        None => attached.clone(),
    };
    sampling_attrs(
        &mut specs,
        &SamplingOptions {
            sampling,
            call_graph,
            sample_cpu: args.sample_cpu || system_wide,
        },
    );
    if args.verbose > 0 {
        for s in &specs {
            eprintln!("{}", perfkit_engine::describe_attr(&s.attr));
        }
    }
    let places: Vec<Place> = cpus
        .iter()
        .flat_map(|&cpu| {
            tasks.iter().map(move |&t| match t {
                -1 => Place::cpu(cpu),
                t => Place::thread_on_cpu(t, cpu),
            })
        })
        .collect();
    let opts = OpenOptions {
        cycles_fallback: default_event,
        inherit: !args.no_inherit,
        enable_on_exec: child.is_some(),
        ..OpenOptions::default()
    };
    let opened = perfkit_engine::open(&specs, &places, &opts).require_all()?;
    if !args.quiet {
        for n in &opened.notes {
            eprintln!("perfkit: {n}");
        }
    }
    let mut rec = Recorder::new(opened, pages)?;
    let stopper = rec.stopper();

    // Signals: Ctrl-C at any point ends the recording cleanly (and goes to the command
    // once it runs), never killing perfkit mid-file; SIGUSR2 switches files.
    let child_pid = Arc::new(AtomicI32::new(0));
    let early_signal = Arc::new(AtomicI32::new(0));
    let switch_now = Arc::new(AtomicBool::new(false));
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGUSR2,
    ])?;
    let sig_handle = signals.handle();
    {
        let (stopper, child_pid, early, switch_now) = (
            stopper.clone(),
            child_pid.clone(),
            early_signal.clone(),
            switch_now.clone(),
        );
        std::thread::spawn(move || {
            for sig in signals.forever() {
                if sig == signal_hook::consts::SIGUSR2 {
                    switch_now.store(true, Ordering::SeqCst);
                    continue;
                }
                early
                    .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
                    .ok();
                match child_pid.load(Ordering::SeqCst) {
                    pid if pid > 0 => {
                        let _ = perfkit::kill(pid, sig);
                    }
                    _ => stopper.stop(),
                }
            }
        });
    }

    let wopts = WriteOptions {
        compress: args.compress,
        chunk: pages * 4096,
    };
    let to_pipe = args.output.as_os_str() == "-";
    // Counting starts before the existing tasks are listed, so a task started in between
    // is in the list or sends its own COMM/FORK records, never neither (a launched command
    // enables at its exec instead).
    if child.is_none() || system_wide {
        rec.enable()?;
    }
    let pids: Vec<i32> = if system_wide {
        perfkit_engine::sideband::all_pids()
    } else {
        attached.clone()
    };
    // A file starts with what perf synthesizes; `extra` adds the launched command once it
    // runs (a switched file).
    let start_file_at = |rec: &Recorder, path: &Path, extra: &[i32]| -> Result<PerfDataWriter> {
        let mut w = if to_pipe {
            PerfDataWriter::pipe(Box::new(std::io::stdout()), rec.file_events(), wopts)
        } else {
            PerfDataWriter::create(path, rec.file_events(), wopts)
        }
        .with_context(|| format!("cannot create {}", path.display()))?;
        let all: Vec<i32> = pids.iter().chain(extra).copied().collect();
        rec.write_preamble(&mut w, &all)?;
        Ok(w)
    };
    let mut w = start_file_at(&rec, &args.output, &[])?;
    let mut status = None;
    let workload = match child {
        // Interrupted before the command started: it never runs (dropping it ends it).
        Some(_) if early_signal.load(Ordering::SeqCst) != 0 => {
            status = Some(perfkit::ExitStatus::Signaled(
                early_signal.load(Ordering::SeqCst),
            ));
            None
        }
        Some(c) => {
            let stopper = stopper.clone();
            let w = Workload::start(c, move |_| stopper.stop()).map_err(launch_error)?;
            child_pid.store(w.pid(), Ordering::SeqCst);
            Some(w)
        }
        None => None,
    };
    // On a failure the command is stopped, not left running without its recorder.
    let stop_workload = |e: perfkit_engine::Error| -> anyhow::Error {
        if let Some(w) = &workload {
            w.terminate(Duration::from_secs(2));
        }
        if e.is_broken_pipe() {
            return exit_error(
                141,
                anyhow!("the output pipe was closed: recording stopped and the command ended"),
            );
        }
        exit_error(1, e)
    };

    let cmdline: Vec<String> = std::env::args().collect();
    let mut file_started = std::time::Instant::now();
    loop {
        match rec.poll(&mut w, Duration::from_millis(100)) {
            Ok(Poll::Continue) => {}
            Ok(_) => break,
            Err(e) => return Err(stop_workload(e)),
        }
        let due = match switch {
            Some(Switch::Signal) => switch_now.swap(false, Ordering::SeqCst),
            Some(Switch::Size(n)) => w.data_size() >= n,
            Some(Switch::Time(d)) => file_started.elapsed() >= d,
            None => false,
        };
        if due {
            // Finish this file under a timestamped name, then start the next one.
            let extra: Vec<i32> = workload.iter().map(Workload::pid).collect();
            let next = start_file_at(&rec, &pending_path(&args.output), &extra)?;
            std::mem::replace(&mut w, next)
                .finish(&cmdline)
                .with_context(|| format!("writing {}", args.output.display()))?;
            let name = rotated_name(&args.output);
            std::fs::rename(&args.output, &name)
                .with_context(|| format!("renaming {}", args.output.display()))?;
            std::fs::rename(pending_path(&args.output), &args.output)
                .with_context(|| format!("renaming the next file to {}", args.output.display()))?;
            file_started = std::time::Instant::now();
            if !args.quiet {
                eprintln!(
                    "[ perfkit record: dump data: woken up {} times ]\n[ perfkit record: dump {} ]",
                    rec.stats().wakeups,
                    name.display()
                );
            }
        }
    }
    let stats = rec.finish(&mut w).map_err(stop_workload)?;
    sig_handle.close();
    let bytes = match w.finish(&cmdline) {
        Ok(b) => b,
        Err(e) => return Err(stop_workload(perfkit_engine::Error::Write(e))),
    };
    if switch.is_some() {
        let name = rotated_name(&args.output);
        std::fs::rename(&args.output, &name)
            .with_context(|| format!("renaming {}", args.output.display()))?;
        if !args.quiet {
            eprintln!("[ perfkit record: dump {} ]", name.display());
        }
    }
    if !args.quiet {
        eprintln!(
            "[ perfkit record: woken up {} times to write data ]\n\
             [ perfkit record: wrote {} samples to {} ({:.3} MB); {} lost, {} throttled ]",
            stats.wakeups,
            stats.samples,
            args.output.display(),
            bytes as f64 / 1e6,
            stats.lost,
            stats.throttled,
        );
        if stats.lost > 0 {
            eprintln!(
                "perfkit: {} samples were lost: use a bigger ring (-m) or a lower frequency (-F)",
                stats.lost
            );
        }
    }
    if let Some(w) = &workload {
        status = w.wait_timeout(Duration::from_secs(5)).map(|s| s.0);
    }
    Ok(status.map_or(0, |s| s.shell_code().clamp(0, 255) as u8))
}

fn launch_error(e: perfkit_engine::Error) -> anyhow::Error {
    let code = match &e {
        perfkit_engine::Error::Launch(l) => l.exit_code() as u8,
        _ => 1,
    };
    exit_error(code, e)
}
