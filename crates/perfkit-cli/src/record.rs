//! `perfkit record`: flags into an opened event list and a [`Recorder`] from
//! `perfkit-engine`; the file naming of `--switch-output`; messages.

use crate::exit_error;
use crate::record_args::RecordArgs;
use anyhow::{Context, Result, anyhow, bail};
use perfkit_data::{PerfDataWriter, WriteOptions};
use perfkit_engine::sampling::{sampling_attrs, tracking_attr};
use perfkit_engine::threads::{DrainLayout, ThreadSpec};
use perfkit_engine::{OpenOptions, Place, Poll, Recorder, Workload};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
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

/// `perf.data.YYYYMMDDhhmmsscc` (UTC: hundredths of a second last), as perf names
/// switched and `--timestamp-filename` files (perf uses local time; UTC here).
fn rotated_name(output: &Path) -> PathBuf {
    // Two switches within one hundredth of a second would share a name: the second waits
    // for the next hundredth rather than replacing the first file.
    loop {
        let name = timestamped(output);
        if !name.exists() {
            return name;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn timestamped(output: &Path) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = (secs / 86400, secs % 86400);
    let (y, m, d) = perfkit_report::header::civil_date(days as i64);
    let mut name = output.as_os_str().to_owned();
    name.push(format!(
        ".{y:04}{m:02}{d:02}{:02}{:02}{:02}{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        now.subsec_millis() / 10
    ));
    PathBuf::from(name)
}

/// Run `perfkit record`. A reader that closes the output pipe stops the recording with
/// perf's status (141, its SIGPIPE death) and says so, wherever the write failed (the
/// header, the preamble or a round): not the silent success of a closed pipe after
/// `report | head`.
pub fn run(args: RecordArgs) -> Result<u8> {
    record(args).map_err(|e| {
        if e.downcast_ref::<crate::ExitError>().is_none() && crate::is_broken_pipe(&e) {
            exit_error(
                141,
                anyhow!("the output pipe was closed: recording stopped and the command ended"),
            )
        } else {
            e
        }
    })
}

fn record(args: RecordArgs) -> Result<u8> {
    let switch = args
        .switch_output
        .as_deref()
        .map(parse_switch)
        .transpose()?;
    if args.user_regs.as_deref() == Some("?") || args.intr_regs.as_deref() == Some("?") {
        let names: Vec<&str> = perfkit_engine::sampling::REGISTERS
            .iter()
            .map(|r| r.0)
            .collect();
        eprintln!("available registers: {} ", names.join(" "));
        return Ok(0);
    }
    let to_pipe = args.output.as_os_str() == "-";
    if (switch.is_some() || args.timestamp_filename) && to_pipe {
        bail!(
            "--switch-output and --timestamp-filename write files: they cannot be used with -o -"
        );
    }
    // --control: commands arrive from a reader thread and are carried out between polls.
    // The channel opens first, so a controller (perf daemon) can reach it while the
    // events are still being opened; what it sends waits for the loop.
    let (control_rx, mut control_ack) = match &args.control {
        Some(spec) => {
            let (ctl, ack) = crate::control::open_control(spec)?;
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                perfkit_engine::control::read_commands(ctl, |cmd| tx.send(cmd).is_ok());
            });
            (Some(rx), ack)
        }
        None => (None, None),
    };
    let system_wide = args.all_cpus || args.cpu.is_some();
    let sopts = args.sampling_options(system_wide)?;
    let max_size = args.max_size()?;
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
    for w in perfkit_engine::stat::group_warnings(&specs) {
        eprintln!("Warning: {w}");
    }
    let cpus = perfkit_engine::cpus(args.cpu.as_deref())?;
    let pages = args.ring_pages(cpus.len())?;
    args.mmap_flush(pages)?;
    // --threads: who drains which CPU's ring (checked before anything is opened, as
    // perf checks it); without it one thread for a few CPUs, more on bigger machines.
    let layout = match &args.threads {
        Some(spec) => {
            let possible = perfkit::cpus::possible().unwrap_or_else(|_| cpus.clone());
            DrainLayout::new(&ThreadSpec::parse(spec), &cpus, &possible)
                .map_err(|e| exit_error(e.exit_code(), e))?
        }
        None => DrainLayout::default_for(&cpus),
    };
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
    // With -p/-t the command only times the recording (as perf): the attached tasks are
    // recorded, not the command.
    let command_is_target = child.is_some() && !system_wide && attached.is_empty();
    let tasks: Vec<i32> = match &child {
        _ if system_wide => vec![-1],
        Some(c) if command_is_target => vec![c.pid()],
        _ => attached.clone(),
    };
    if args.off_cpu {
        specs.push(perfkit_engine::offcpu::offcpu_spec()?);
    }
    sampling_attrs(&mut specs, &sopts);
    if args.off_cpu
        && let Some(s) = specs.last_mut()
    {
        perfkit_engine::offcpu::offcpu_attr(&mut s.attr);
    }
    // -D: the sampling events start disabled; a tracking event carries the side-band
    // records from the command's exec, as perf does.
    let mut tracking = if sopts.tracking_event {
        let mut t = perfkit_engine::parse(&["dummy".to_string()])?;
        for s in &mut t {
            tracking_attr(s, &sopts);
            // perf's name for it.
            s.name = "dummy:HG".to_string();
        }
        t
    } else {
        Vec::new()
    };
    if args.verbose > 0 {
        for s in specs.iter().chain(&tracking) {
            eprintln!("{}", perfkit_engine::describe_attr(&s.attr));
        }
    }
    let n_main = specs.len();
    let places = Place::on_cpus(&cpus, &tasks);
    let opts = OpenOptions {
        cycles_fallback: default_event,
        inherit: !args.no_inherit,
        enable_on_exec: child.is_some() && attached.is_empty() && tracking.is_empty(),
        ..OpenOptions::default()
    };
    let mut opened = perfkit_engine::open(&specs, &places, &opts)
        .require_all()
        .map_err(|e| branch_refusal(e, &specs, sopts.branch_sample_type))?;
    if !tracking.is_empty() {
        let topts = OpenOptions {
            enable_on_exec: child.is_some() && attached.is_empty(),
            ..opts
        };
        let t = perfkit_engine::open(&tracking, &places, &topts).require_all()?;
        opened.events.extend(t.events);
        tracking.clear();
    }
    let n_events = opened.events.len();
    if !args.quiet {
        for n in &opened.notes {
            eprintln!("perfkit: {n}");
        }
    }
    let mut rec = Recorder::new(opened, pages)?;
    if args.off_cpu {
        let off = perfkit_engine::offcpu::OffCpu::open(&places, &opts, &sopts, pages)
            .context("--off-cpu")?;
        rec = rec.with_off_cpu(off)?;
    }
    // The draining threads, and this thread that writes what they copy, run at a higher
    // priority where the kernel allows it (root): on busy CPUs they are scheduled before
    // the rings fill. The command was forked before, at its own priority.
    rec.set_drain_priority(Some(perfkit_engine::DrainPriority::RECORD));
    perfkit_engine::DrainPriority::RECORD.apply_to_current_thread();
    // Compressing takes the writer long enough that the rings are better drained into
    // memory meanwhile; uncompressed, the writer writes straight from the rings.
    rec.set_lend_records(args.compress.is_none());
    rec.start_draining(&layout)?;
    let stopper = rec.stopper();

    // Signals: Ctrl-C at any point ends the recording cleanly (and goes to the command
    // once it runs), never killing perfkit mid-file; SIGUSR2 switches files.
    let child_pid = Arc::new(AtomicI32::new(0));
    let early_signal = Arc::new(AtomicI32::new(0));
    let switch_now = Arc::new(AtomicU32::new(0));
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
                    switch_now.fetch_add(1, Ordering::SeqCst);
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
        no_build_ids: args.no_buildid,
    };
    // The existing tasks are listed and synthesized before counting starts, as perf does
    // (reading /proc under sampling is slow, and nothing would drain the rings), then the
    // tasks that started meanwhile are listed and read, still before counting starts: read
    // later, a task could already carry a name it took after counting started, which its
    // COMM (time 0) would give its earlier samples. A task started in the short gap left
    // is unnamed until its own COMM, as in perf (a launched command enables at its exec).
    let delay = args.delay.unwrap_or(0);
    let pids: Vec<i32> = if system_wide {
        perfkit_engine::sideband::all_pids()
    } else {
        attached.clone()
    };
    // perf's BPF side-band thread: the programs loaded from now on are read as they load,
    // for the file's BPF sections (without the rights to watch every CPU, perf goes on
    // without it too).
    let bpf_watch = (!args.no_bpf_event && !to_pipe)
        .then(perfkit_engine::bpf_watch::BpfWatcher::start)
        .and_then(|r| r.ok());
    let add_bpf_seen = |w: &mut PerfDataWriter| {
        if let Some(watch) = &bpf_watch {
            let seen = watch.seen();
            w.add_bpf_programs(seen.programs);
            w.add_bpf_btfs(seen.btfs);
        }
    };
    let mut made = rec.make_preamble(&pids);
    // The command's namespaces (`--namespaces`), which perf synthesizes for it too.
    if let Some(c) = child.as_ref().filter(|_| command_is_target) {
        made.records.extend(rec.task_namespaces(c.pid()));
    }
    let late: Vec<i32> = if system_wide {
        let known: std::collections::HashSet<i32> = pids.iter().copied().collect();
        perfkit_engine::sideband::all_pids()
            .into_iter()
            .filter(|p| !known.contains(p))
            .collect()
    } else {
        Vec::new()
    };
    made.records.extend(rec.task_records(&late));
    if delay != 0 && !args.quiet {
        eprintln!("Events disabled");
    }
    let create = |rec: &Recorder, path: &Path| -> Result<PerfDataWriter> {
        if to_pipe {
            PerfDataWriter::pipe(Box::new(std::io::stdout()), rec.file_events(), wopts)
        } else {
            PerfDataWriter::create(path, rec.file_events(), wopts)
        }
        .with_context(|| format!("cannot create {}", path.display()))
    };
    // A switched file starts with what perf synthesizes; `extra` adds the launched
    // command once it runs.
    let start_file_at = |rec: &Recorder, path: &Path, extra: &[i32]| -> Result<PerfDataWriter> {
        let mut w = create(rec, path)?;
        let all: Vec<i32> = pids.iter().chain(&late).chain(extra).copied().collect();
        rec.write_preamble(&mut w, &all)?;
        Ok(w)
    };
    let mut w = create(&rec, &args.output)?;
    rec.write_made_preamble(&mut w, &made)?;
    drop(made);
    // Counting starts once the file and its preamble are written: creating the file can
    // wait on the disk (16 ms under load), and meanwhile nothing writes the rings' records,
    // so small rings overflowed.
    if !command_is_target {
        if delay == 0 {
            rec.enable()?;
        } else {
            rec.enable_events(n_main..n_events)?;
        }
    }
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
            // The rings go on draining while the command execs (with -a they count
            // already).
            let (started, written) =
                rec.poll_while(&mut w, || Workload::start(c, move |_| stopper.stop()));
            let wl = started.map_err(launch_error)?;
            child_pid.store(wl.pid(), Ordering::SeqCst);
            if let Err(e) = written {
                wl.terminate(Duration::from_secs(2));
                return Err(if e.is_broken_pipe() {
                    e.into()
                } else {
                    exit_error(1, e)
                });
            }
            Some(wl)
        }
        None => None,
    };
    // On a failure the command is stopped, not left running without its recorder.
    let stop_workload = |e: perfkit_engine::Error| -> anyhow::Error {
        if let Some(w) = &workload {
            w.terminate(Duration::from_secs(2));
        }
        if e.is_broken_pipe() {
            // `run` gives every closed pipe perf's 141 and its message.
            return e.into();
        }
        exit_error(1, e)
    };

    let cmdline: Vec<String> = std::env::args().collect();
    let mut file_started = std::time::Instant::now();
    // -D N: the sampling events enable N ms after the command started (-1: never).
    let mut enable_at =
        (delay > 0).then(|| std::time::Instant::now() + Duration::from_millis(delay as u64));
    let mut size_limited = false;
    let mut ending = false;
    loop {
        let mut timeout = Duration::from_millis(100);
        if let Some(at) = enable_at {
            timeout = timeout.min(at.saturating_duration_since(std::time::Instant::now()));
        }
        let polled = (!ending).then(|| rec.poll(&mut w, timeout));
        match polled {
            Some(Ok(Poll::Continue)) => {}
            Some(Err(e)) => return Err(stop_workload(e)),
            // SIGUSR2s that came before the end still write their files, as perf handles
            // its switch trigger before it leaves its loop.
            _ if switch == Some(Switch::Signal) && switch_now.load(Ordering::SeqCst) > 0 => {
                ending = true
            }
            _ => break,
        }
        for cmd in control_rx.iter().flat_map(|rx| rx.try_iter()) {
            use perfkit_engine::control::ControlCmd;
            match &cmd {
                ControlCmd::Enable(_) => rec.enable().map_err(stop_workload)?,
                ControlCmd::Disable(_) => rec.disable(),
                ControlCmd::Ping => {}
                // As SIGTERM: the command ends (its end stops the recording), or the
                // recording stops when there is none.
                ControlCmd::Stop => match &workload {
                    Some(wl) => {
                        let _ = perfkit::kill(wl.pid(), signal_hook::consts::SIGTERM);
                    }
                    None => stopper.stop(),
                },
            }
            if let Some(ack) = &mut control_ack {
                perfkit_engine::control::acknowledge(ack)
                    .context("writing the --control acknowledgement")?;
            }
            if args.verbose > 0 {
                eprintln!("perfkit record: control command {cmd:?} carried out");
            }
        }
        if let Some(at) = enable_at
            && std::time::Instant::now() >= at
        {
            rec.enable_events(0..n_main).map_err(stop_workload)?;
            enable_at = None;
            if !args.quiet {
                eprintln!("Events enabled");
            }
        }
        if let Some(max) = max_size
            && w.data_size() >= max
        {
            if !args.quiet {
                eprintln!(
                    "[ perf record: perf size limit reached ({} KB), stopping session ]",
                    w.data_size() >> 10
                );
            }
            size_limited = true;
            if let Some(wl) = &workload {
                let _ = perfkit::kill(wl.pid(), signal_hook::consts::SIGTERM);
            }
            break;
        }
        let due = match switch {
            // Each SIGUSR2 is one file, however close together they come.
            Some(Switch::Signal) => switch_now
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok(),
            Some(Switch::Size(n)) => w.data_size() >= n,
            Some(Switch::Time(d)) => file_started.elapsed() >= d,
            None => false,
        };
        if due {
            // Finish this file under a timestamped name, then start the next one.
            let extra: Vec<i32> = workload
                .iter()
                .filter(|_| command_is_target)
                .map(Workload::pid)
                .collect();
            let next = start_file_at(&rec, &pending_path(&args.output), &extra)?;
            let mut done = std::mem::replace(&mut w, next);
            add_bpf_seen(&mut done);
            done.finish(&cmdline)
                .with_context(|| format!("writing {}", args.output.display()))?;
            let name = rotated_name(&args.output);
            std::fs::rename(&args.output, &name)
                .with_context(|| format!("renaming {}", args.output.display()))?;
            std::fs::rename(pending_path(&args.output), &args.output)
                .with_context(|| format!("renaming the next file to {}", args.output.display()))?;
            file_started = std::time::Instant::now();
            if !args.quiet {
                eprintln!(
                    "[ perf record: dump data: Woken up {} times ]\n[ perf record: Dump {} ]",
                    rec.stats().wakeups,
                    name.display()
                );
            }
        }
    }
    let stats = rec.finish(&mut w).map_err(stop_workload)?;
    // The side-band thread reads what its rings still hold before it gives its programs.
    if let Some(seen) = bpf_watch.map(perfkit_engine::bpf_watch::BpfWatcher::stop) {
        w.add_bpf_programs(seen.programs);
        w.add_bpf_btfs(seen.btfs);
    }
    sig_handle.close();
    let original = w.uncompressed_size();
    let compressed = w.is_compressed();
    let data_bytes = w.data_size();
    let bytes = match w.finish(&cmdline) {
        Ok(b) => b,
        Err(e) => return Err(stop_workload(perfkit_engine::Error::Write(e))),
    };
    if !args.no_buildid_cache && !args.no_buildid && !to_pipe {
        fill_buildid_cache(&args.output);
    }
    if !args.quiet {
        eprintln!(
            "[ perf record: Woken up {} times to write data ]",
            stats.wakeups
        );
        if stats.lost_chunks > 0 {
            eprintln!(
                "Warning:\nProcessed {} events and lost {} chunks!\n\nCheck IO/CPU overload!\n",
                stats.records, stats.lost_chunks
            );
        }
    }
    let renamed = switch.is_some() || args.timestamp_filename;
    let mut written = args.output.clone();
    if renamed {
        let name = rotated_name(&args.output);
        std::fs::rename(&args.output, &name)
            .with_context(|| format!("renaming {}", args.output.display()))?;
        if !args.quiet {
            eprintln!("[ perf record: Dump {} ]", name.display());
        }
        written = name;
    }
    if !args.quiet {
        eprintln!(
            "{}",
            summary(&Summary {
                // perf counts no bytes and no samples in pipe mode.
                bytes: if to_pipe { 0 } else { bytes },
                path: &written.display().to_string(),
                samples: if to_pipe { 0 } else { stats.samples },
                compressed: compressed.then_some((original, data_bytes)),
            })
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
    if size_limited {
        // perfkit ended the command itself, as perf does: not a failure.
        return Ok(0);
    }
    Ok(status.map_or(0, |s| s.shell_code().clamp(0, 255) as u8))
}

/// What the last line of a recording says.
struct Summary<'a> {
    /// Bytes of the file (data only in pipe mode).
    bytes: u64,
    /// The file written last (`-` for a pipe): with `--switch-output` or
    /// `--timestamp-filename` its real timestamped name, where perf prints
    /// `PATH.<timestamp>` literally.
    path: &'a str,
    /// Samples written.
    samples: u64,
    /// Original and compressed data bytes, with `-z`.
    compressed: Option<(u64, u64)>,
}

/// perf's last line, byte for byte: `[ perf record: Captured and wrote 0.001 MB perf.data
/// (3 samples) ]` (MB of 2^20 bytes; no sample count when there are none; with `-z` the
/// original size and the ratio instead). perf's words are kept, `perf record` included, so
/// that scripts reading perf's output read perfkit's.
fn summary(s: &Summary<'_>) -> String {
    let mib = |b: u64| b as f64 / 1024.0 / 1024.0;
    let mut line = format!(
        "[ perf record: Captured and wrote {:.3} MB {}",
        mib(s.bytes),
        s.path,
    );
    match s.compressed {
        Some((orig, comp)) if comp > 0 => line.push_str(&format!(
            ", compressed (original {:.3} MB, ratio is {:.3})",
            mib(orig),
            orig as f64 / comp as f64
        )),
        _ if s.samples > 0 => line.push_str(&format!(" ({} samples)", s.samples)),
        _ => {}
    }
    line.push_str(" ]");
    line
}

/// `-b`/`-j` on events whose PMU has no branch stacks: perf's refusal.
fn branch_refusal(
    e: perfkit_engine::Error,
    specs: &[perfkit_engine::EventSpec],
    branch: u64,
) -> anyhow::Error {
    if branch == 0 {
        return e.into();
    }
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    anyhow::Error::new(e).context(format!(
        "{}: PMU Hardware or event type doesn't support branch stack sampling",
        names.join(",")
    ))
}

/// The build-id cache filled from the recording's build-id table, as perf fills it at the
/// end of a recording (`-N`/`--no-buildid-cache` and `-B` skip it). A file that cannot be
/// added is a warning: the recording itself is done.
fn fill_buildid_cache(output: &Path) {
    let Ok(file) = perfkit_data::PerfData::open(output) else {
        return;
    };
    let cache = perfkit_symbols::buildid_cache::BuildIdCache::default_location();
    let kernel = perfkit_data::synth::kernel_build_id();
    let table = file
        .features
        .build_ids
        .iter()
        .map(|b| (b.filename.as_str(), b.build_id.as_slice()));
    for e in cache.fill(table, kernel.as_deref()).errors {
        eprintln!("perfkit: build-id cache: {e}");
    }
}

fn launch_error(e: perfkit_engine::Error) -> anyhow::Error {
    let code = match &e {
        perfkit_engine::Error::Launch(l) => l.exit_code() as u8,
        _ => 1,
    };
    exit_error(code, e)
}
