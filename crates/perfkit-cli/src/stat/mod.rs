//! `perfkit stat`: count events for a command, processes, threads, CPUs or cgroups.

mod counters;
mod output;

use crate::events::{self, EventSpec};
use crate::exit_error;
use crate::topology;
use anyhow::{Context, Result, anyhow, bail};
use counters::{Instance, OpenConfig, OpenEvent, Slot};
use output::{Row, State};
use perfkit::sys;
use perfkit::{ChildUsage, Count, ExitStatus, PausedChild};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Flags of `perfkit stat`, named as perf names them.
#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "Count events for a command, processes, threads, CPUs or cgroups",
    after_help = "Examples:\n  perfkit stat -- ls -l\n  perfkit stat -e task-clock,page-faults -r 5 -- ./bench\n  perfkit stat -a -A -I 1000 --interval-count 3\n  perfkit stat -p 1234 --timeout 2000 -j"
)]
pub struct StatArgs {
    /// Events to count (perf's syntax, comma separated; `perfkit list` shows them).
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Tracepoint filter for the -e before it (`--filter 'prev_pid == 0'`), like perf.
    #[arg(long = "filter", value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Each -e with the --filter options that follow it (filled in by `main`).
    #[arg(skip)]
    pub event_filters: Vec<(String, Vec<String>)>,
    /// Count existing processes (all their threads), comma separated.
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub pid: Option<String>,
    /// Count existing threads, comma separated.
    #[arg(short = 't', long = "tid", value_name = "TID")]
    pub tid: Option<String>,
    /// System-wide: every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Only these CPUs (e.g. `0,2-3`); implies system-wide.
    #[arg(short = 'C', long = "cpu", value_name = "CPU-LIST")]
    pub cpu: Option<String>,
    /// Count only tasks of these cgroups (paths below the cgroup mount), per event.
    #[arg(short = 'G', long = "cgroup", value_name = "CGROUP")]
    pub cgroup: Option<String>,
    /// Count every event once for each of these cgroups.
    #[arg(long = "for-each-cgroup", value_name = "CGROUPS")]
    pub for_each_cgroup: Option<String>,
    /// Stop after this many milliseconds.
    #[arg(long = "timeout", value_name = "MS")]
    pub timeout: Option<u64>,
    /// Run the command N times and print mean and relative standard deviation.
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// Print counts every MS milliseconds.
    #[arg(short = 'I', long = "interval-print", value_name = "MS")]
    pub interval: Option<u64>,
    /// Stop after this many intervals.
    #[arg(long = "interval-count", value_name = "N", requires = "interval")]
    pub interval_count: Option<u64>,
    /// With -I, also print the totals at the end.
    #[arg(long)]
    pub summary: bool,
    /// Don't aggregate: one line per CPU.
    #[arg(short = 'A', long = "no-aggr")]
    pub no_aggr: bool,
    /// One line per thread.
    #[arg(long = "per-thread")]
    pub per_thread: bool,
    /// One line per physical core.
    #[arg(long = "per-core")]
    pub per_core: bool,
    /// One line per socket.
    #[arg(long = "per-socket")]
    pub per_socket: bool,
    /// One line per NUMA node.
    #[arg(long = "per-node")]
    pub per_node: bool,
    /// CSV output with this separator.
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub sep: Option<String>,
    /// JSON output: one object per line, per counter and interval.
    #[arg(short = 'j', long = "json")]
    pub json: bool,
    /// Write the counts to FILE instead of standard error.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Append to the -o file.
    #[arg(long, requires = "output")]
    pub append: bool,
    /// Print each event's perf_event_attr before opening it.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Start counting MS milliseconds after the command starts.
    #[arg(short = 'D', long = "delay", value_name = "MS")]
    pub delay: Option<u64>,
    /// Shell command run before each run (with -r).
    #[arg(long, value_name = "CMD")]
    pub pre: Option<String>,
    /// Shell command run after each run (with -r).
    #[arg(long, value_name = "CMD")]
    pub post: Option<String>,
    /// Don't scale multiplexed counts by time enabled / time running.
    #[arg(long = "no-scale")]
    pub no_scale: bool,
    /// Don't count the command's children.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    /// Group digits with commas (default: as the locale does).
    #[arg(short = 'B', long = "big-num", overrides_with = "no_big_num")]
    pub big_num: bool,
    /// Never group digits.
    #[arg(long = "no-big-num")]
    pub no_big_num: bool,
    /// The command to run and count.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Whom the counters are attached to.
#[derive(Debug, Clone, PartialEq)]
enum Scope {
    /// The launched command (inherit, enable_on_exec).
    Command,
    /// Existing threads.
    Threads(Vec<(i32, String)>),
    /// CPUs (with or without a command).
    Cpus(Vec<u32>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggr {
    Global,
    Cpu,
    Thread,
    Core,
    Socket,
    Node,
}

enum Msg {
    Exited(ExitStatus, ChildUsage),
    Stop,
}

fn comm_of(tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

fn parse_ids(s: &str, what: &str) -> Result<Vec<i32>> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.trim()
                .parse::<i32>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| anyhow!("`{p}` in {what} `{s}` is not a process id"))
        })
        .collect()
}

fn locale_groups_digits() -> bool {
    let loc = ["LC_ALL", "LC_NUMERIC", "LANG"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_default();
    !(loc.is_empty() || loc == "C" || loc == "POSIX" || loc.starts_with("C."))
}

struct Plan {
    scope: Scope,
    aggr: Aggr,
    instances: Vec<Instance>,
    cgroup_names: Vec<String>,
    cgroups: Vec<OwnedFd>,
    specs: Vec<EventSpec>,
    /// The cgroup (index into `cgroups`) each spec counts, for -G / --for-each-cgroup.
    spec_cgroup: Vec<Option<usize>>,
    title: String,
}

fn plan(args: &StatArgs) -> Result<Plan> {
    let system_wide = args.all_cpus || args.cpu.is_some();
    let online = topology::online_cpus();
    let cpus = match &args.cpu {
        Some(list) => {
            let cpus = topology::parse_cpu_list(list).context("-C")?;
            if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
                bail!(
                    "-C {list}: CPU {bad} is not online (online CPUs: {})",
                    fmt_cpu_list(&online)
                );
            }
            cpus
        }
        None => online.clone(),
    };
    let scope = if let Some(p) = &args.pid {
        let mut threads = Vec::new();
        for pid in parse_ids(p, "-p")? {
            let tids = perfkit::threads_of(pid)
                .map_err(|_| exit_error(1, anyhow!("-p {pid}: no such process")))?;
            threads.extend(tids.into_iter().map(|t| (t, comm_of(t))));
        }
        Scope::Threads(threads)
    } else if let Some(t) = &args.tid {
        let mut threads = Vec::new();
        for tid in parse_ids(t, "-t")? {
            if !std::path::Path::new(&format!("/proc/{tid}")).exists() {
                bail!("-t {tid}: no such thread");
            }
            threads.push((tid, comm_of(tid)));
        }
        Scope::Threads(threads)
    } else if system_wide || args.cgroup.is_some() || args.for_each_cgroup.is_some() {
        Scope::Cpus(cpus.clone())
    } else if args.command.is_empty() {
        bail!(
            "nothing to count: give a command (`perfkit stat -- COMMAND`), -p PID, -t TID, -a or -C CPUS"
        );
    } else {
        Scope::Command
    };
    let picks = [
        (args.no_aggr, Aggr::Cpu),
        (args.per_thread, Aggr::Thread),
        (args.per_core, Aggr::Core),
        (args.per_socket, Aggr::Socket),
        (args.per_node, Aggr::Node),
    ];
    let chosen: Vec<Aggr> = picks.iter().filter(|p| p.0).map(|p| p.1).collect();
    if chosen.len() > 1 {
        bail!("choose one of -A, --per-thread, --per-core, --per-socket, --per-node");
    }
    let aggr = chosen.first().copied().unwrap_or(Aggr::Global);
    match (&scope, aggr) {
        (Scope::Cpus(_), Aggr::Thread) => {
            bail!(
                "--per-thread needs -p or -t (per-thread counts of a whole CPU are not available)"
            )
        }
        (Scope::Threads(_), Aggr::Cpu | Aggr::Core | Aggr::Socket | Aggr::Node) => {
            bail!("-A, --per-core, --per-socket and --per-node need -a or -C")
        }
        (Scope::Command, a) if a != Aggr::Global => {
            bail!("per-CPU and per-thread output need -a, -C, -p or -t")
        }
        _ => {}
    }
    if args.repeat == 0 {
        bail!("-r needs at least 1 run");
    }
    if args.repeat > 1 && args.command.is_empty() {
        bail!("-r repeats a command: give one after --");
    }

    let mut cgroup_names = Vec::new();
    let mut cgroups = Vec::new();
    let cg_list = args.cgroup.as_ref().or(args.for_each_cgroup.as_ref());
    if let Some(list) = cg_list {
        let root = cgroup_root()?;
        for name in list.split(',').filter(|s| !s.is_empty()) {
            let path = root.join(name.trim_start_matches('/'));
            let f = std::fs::File::open(&path)
                .with_context(|| format!("cgroup `{name}`: cannot open {}", path.display()))?;
            cgroups.push(OwnedFd::from(f));
            cgroup_names.push(name.to_string());
        }
    }

    let mut specs = if args.events.is_empty() {
        events::default_stat_events(matches!(scope, Scope::Cpus(_)))
    } else {
        events::parse_with_filters(&args.event_filters)?
    };
    // -G pairs cgroups with events in order; --for-each-cgroup repeats every event.
    let mut cg_of_spec: Vec<Option<usize>> = vec![None; specs.len()];
    if args.for_each_cgroup.is_some() {
        let base = specs.clone();
        specs.clear();
        cg_of_spec.clear();
        for cg in 0..cgroups.len() {
            for s in &base {
                let mut s = s.clone();
                s.group += cg * base.len();
                specs.push(s);
                cg_of_spec.push(Some(cg));
            }
        }
    } else if args.cgroup.is_some() {
        for (i, c) in cg_of_spec.iter_mut().enumerate() {
            *c = Some(i.min(cgroups.len().saturating_sub(1)));
        }
    }

    let instances = match &scope {
        Scope::Command => vec![Instance {
            tid: 0,
            cpu: -1,
            cgroup: None,
        }],
        Scope::Threads(ts) => ts
            .iter()
            .map(|(t, _)| Instance {
                tid: *t,
                cpu: -1,
                cgroup: None,
            })
            .collect(),
        Scope::Cpus(cs) => cs
            .iter()
            .map(|&c| Instance {
                tid: -1,
                cpu: c as i32,
                cgroup: None,
            })
            .collect(),
    };
    let title = match &scope {
        Scope::Command => format!("'{}'", command_line(&args.command)),
        Scope::Threads(_) if args.pid.is_some() => {
            format!("process id '{}'", args.pid.as_deref().unwrap_or(""))
        }
        Scope::Threads(_) => format!("thread id '{}'", args.tid.as_deref().unwrap_or("")),
        Scope::Cpus(_) if args.cpu.is_some() => {
            format!("'CPU(s) {}'", args.cpu.as_deref().unwrap_or(""))
        }
        Scope::Cpus(_) => "'system wide'".to_string(),
    };
    Ok(Plan {
        scope,
        aggr,
        instances,
        cgroup_names,
        cgroups,
        specs,
        spec_cgroup: cg_of_spec,
        title,
    })
}

fn cgroup_root() -> Result<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").context("reading /proc/mounts")?;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 2 && f[2] == "cgroup2" {
            return Ok(PathBuf::from(f[1]));
        }
    }
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 3 && f[2] == "cgroup" && f[3].contains("perf_event") {
            return Ok(PathBuf::from(f[1]));
        }
    }
    bail!("no cgroup2 (or perf_event cgroup v1) file system is mounted")
}

fn command_line(cmd: &[OsString]) -> String {
    cmd.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

fn fmt_cpu_list(cpus: &[u32]) -> String {
    cpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Open every spec on `instances`; a group is opened at once, on the instances of its
/// cgroup when it has one.
fn open_events(
    plan: &Plan,
    instances: &[Instance],
    cfg: &OpenConfig<'_>,
    log: &mut dyn Write,
) -> Vec<OpenEvent> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < plan.specs.len() {
        let g = plan.specs[i].group;
        let mut j = i;
        while j < plan.specs.len() && plan.specs[j].group == g {
            j += 1;
        }
        let cg = plan.spec_cgroup[i];
        let insts: Vec<Instance> = instances
            .iter()
            .map(|inst| Instance {
                cgroup: cg,
                ..inst.clone()
            })
            .collect();
        let mut opened = counters::open_all(&plan.specs[i..j], &insts, cfg, log);
        for ev in &mut opened {
            ev.cgroup = cg;
        }
        out.extend(opened);
        i = j;
    }
    out
}

/// Run `perfkit stat`.
pub fn run(args: StatArgs) -> Result<u8> {
    let plan = plan(&args)?;
    let big_num = if args.no_big_num {
        false
    } else {
        args.big_num || locale_groups_digits()
    };
    let mut sink: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(args.append)
                .truncate(!args.append)
                .open(p)
                .with_context(|| format!("-o {}", p.display()))?,
        ),
        None => Box::new(std::io::stderr()),
    };
    let mut all_runs: Vec<RunResult> = Vec::new();
    let mut exit = 0u8;
    for run_no in 0..args.repeat {
        if let Some(pre) = &args.pre {
            run_shell(pre, "--pre")?;
        }
        let r = run_once(&args, &plan, &mut *sink, big_num, run_no == 0)?;
        if let Some(post) = &args.post {
            run_shell(post, "--post")?;
        }
        exit = r.status.map_or(0, |s| s.shell_code().clamp(0, 255) as u8);
        let stop = r.interrupted;
        all_runs.push(r);
        if stop {
            break;
        }
    }
    let final_rows = summarize(&args, &plan, &all_runs);
    if args.interval.is_none() || args.summary {
        print_final(&args, &plan, &all_runs, &final_rows, &mut *sink, big_num)?;
    }
    sink.flush()?;
    Ok(exit)
}

fn run_shell(cmd: &str, flag: &str) -> Result<()> {
    let st = std::process::Command::new("sh")
        .args(["-c", cmd])
        .status()
        .with_context(|| format!("{flag} `{cmd}`"))?;
    if !st.success() {
        bail!("{flag} `{cmd}` failed with {st}");
    }
    Ok(())
}

/// What one run measured.
struct RunResult {
    instances: Vec<Instance>,
    events: Vec<OpenEvent>,
    counts: Vec<Vec<Option<Count>>>,
    elapsed: Duration,
    status: Option<ExitStatus>,
    usage: Option<ChildUsage>,
    interrupted: bool,
}

fn run_once(
    args: &StatArgs,
    plan: &Plan,
    sink: &mut dyn Write,
    big_num: bool,
    first: bool,
) -> Result<RunResult> {
    let (tx, rx) = mpsc::channel::<Msg>();
    // The child is forked first (held before exec) so counters can attach to it.
    let child = if args.command.is_empty() {
        None
    } else {
        let (prog, rest) = args
            .command
            .split_first()
            .ok_or_else(|| anyhow!("empty command"))?;
        Some(PausedChild::spawn(prog, rest).map_err(|e| {
            let code = e.exit_code() as u8;
            exit_error(code, e)
        })?)
    };
    let instances = match (&plan.scope, &child) {
        (Scope::Command, Some(c)) => vec![Instance {
            tid: c.pid(),
            cpu: -1,
            cgroup: None,
        }],
        _ => plan.instances.clone(),
    };
    let cfg = OpenConfig {
        inherit: !args.no_inherit,
        enable_on_exec: plan.scope == Scope::Command && args.delay.is_none(),
        cgroups: &plan.cgroups,
        verbose: args.verbose > 0 && first,
    };
    let events = open_events(plan, &instances, &cfg, sink);
    check_opened(&events)?;

    let sig_child = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing signal handlers")?;
    let sig_handle = signals.handle();
    {
        let tx = tx.clone();
        let sig_child = sig_child.clone();
        std::thread::spawn(move || {
            for sig in signals.forever() {
                let pid = sig_child.load(std::sync::atomic::Ordering::SeqCst);
                if pid > 0 {
                    let _ = perfkit::kill(pid, sig);
                } else {
                    let _ = tx.send(Msg::Stop);
                }
            }
        });
    }

    let start = Instant::now();
    let enable_now = plan.scope != Scope::Command || args.delay.is_some();
    if !enable_now || args.delay.is_none() {
        for c in counters::leaders(&events) {
            if plan.scope != Scope::Command {
                let _ = c.enable();
            }
        }
    }
    if let Some(child) = child {
        let pid = child.start().map_err(|e| {
            let code = e.exit_code() as u8;
            exit_error(code, e)
        })?;
        sig_child.store(pid, std::sync::atomic::Ordering::SeqCst);
        let tx = tx.clone();
        std::thread::spawn(move || {
            if let Ok((st, usage)) = perfkit::wait_with_usage(pid) {
                let _ = tx.send(Msg::Exited(st, usage));
            }
        });
    }
    if let Some(d) = args.delay {
        if plan.scope == Scope::Command {
            eprintln!("Events disabled");
        }
        std::thread::sleep(Duration::from_millis(d));
        for c in counters::leaders(&events) {
            let _ = c.enable();
        }
        if plan.scope == Scope::Command {
            eprintln!("Events enabled");
        }
    }

    let deadline = args.timeout.map(|ms| start + Duration::from_millis(ms));
    let mut status = None;
    let mut usage = None;
    let mut interrupted = false;
    // Interval deltas start from zero: everything since counting began belongs to the
    // first interval (a snapshot here would already include the command's start-up).
    let mut last: Vec<Vec<Option<Count>>> =
        events.iter().map(|e| vec![None; e.slots.len()]).collect();
    let mut last_t = start;
    let mut intervals = 0u64;
    let mut stopped_early = false;
    if first && args.interval.is_some() && args.sep.is_none() && !args.json {
        writeln!(sink, "#           time             counts unit events")?;
    }
    loop {
        let mut wait = args.interval.map(Duration::from_millis);
        if let Scope::Threads(_) = plan.scope {
            // Attached tasks are polled so counting stops when they are all gone.
            wait = Some(wait.map_or(TASK_POLL, |w| w.min(TASK_POLL)));
        }
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now());
            wait = Some(wait.map_or(left, |w| w.min(left)));
        }
        let msg = match wait {
            Some(w) => match rx.recv_timeout(w) {
                Ok(m) => Some(m),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => Some(Msg::Stop),
            },
            None => Some(rx.recv().unwrap_or(Msg::Stop)),
        };
        let now = Instant::now();
        let timed_out = deadline.is_some_and(|d| now >= d);
        let interval_due = args.interval.is_some_and(|ms| {
            now.duration_since(last_t) >= Duration::from_millis(ms) || msg.is_some() || timed_out
        });
        if interval_due {
            let counts = counters::read_all(&events);
            let d = counters::delta(&counts, &last);
            let rows = build_rows(
                args,
                plan,
                &instances,
                &events,
                &d,
                now.duration_since(last_t),
            );
            print_rows(
                args,
                &rows,
                Some(now.duration_since(start).as_secs_f64()),
                sink,
                big_num,
            )?;
            last = counts;
            last_t = now;
            intervals += 1;
        }
        match msg {
            Some(Msg::Exited(st, u)) => {
                status = Some(st);
                usage = Some(u);
                break;
            }
            Some(Msg::Stop) => {
                interrupted = true;
                break;
            }
            None => {}
        }
        if timed_out || args.interval_count.is_some_and(|n| intervals >= n) {
            stopped_early = true;
            break;
        }
        if let Scope::Threads(ts) = &plan.scope
            && child_pid(&sig_child).is_none()
            && ts.iter().all(|(t, _)| !task_alive(*t))
        {
            break;
        }
    }
    let elapsed = start.elapsed();
    for c in counters::leaders(&events) {
        let _ = c.disable();
    }
    let counts = counters::read_all(&events);
    sig_handle.close();
    // A command still running when counting stopped (timeout, interval count) is
    // left running, as perf does for -p; a launched command is waited for.
    if status.is_none() && sig_child.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        let pid = sig_child.load(std::sync::atomic::Ordering::SeqCst);
        let _ = perfkit::kill(pid, libc::SIGTERM);
        if let Ok(Msg::Exited(_, u)) = rx.recv_timeout(Duration::from_secs(5)) {
            usage = Some(u);
        }
    }
    // perfkit ended the command itself (timeout, interval count): that is success.
    if stopped_early && status.is_none() {
        status = Some(ExitStatus::Exited(0));
    }
    Ok(RunResult {
        instances,
        events,
        counts,
        elapsed,
        status,
        usage,
        interrupted,
    })
}

const TASK_POLL: Duration = Duration::from_millis(100);

fn child_pid(p: &std::sync::atomic::AtomicI32) -> Option<i32> {
    Some(p.load(std::sync::atomic::Ordering::SeqCst)).filter(|&p| p > 0)
}

/// Whether a task exists and is not a zombie.
fn task_alive(tid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{tid}/stat")) {
        Ok(s) => {
            let state = s
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z' | 'X') | None)
        }
        Err(_) => false,
    }
}

/// If nothing at all could be opened because of errors, stop with the reason.
fn check_opened(events: &[OpenEvent]) -> Result<()> {
    let any_open = events
        .iter()
        .flat_map(|e| &e.slots)
        .any(|s| matches!(s, Slot::Open(_)));
    let first_err = events.iter().flat_map(|e| &e.slots).find_map(|s| match s {
        Slot::Failed(e) => Some(e),
        _ => None,
    });
    if !any_open && let Some(e) = first_err {
        let mut msg = format!("{e}");
        if let Some(h) = e.hint() {
            msg.push_str(&format!("\n  hint: {h}"));
        }
        return Err(exit_error(1, anyhow!(msg)));
    }
    // Only unsupported events: as perf, not an error. The command still runs, each event
    // shows `<not supported>`, and the note about missing hardware counters says why.
    Ok(())
}

/// The aggregation bucket of instance `i`.
fn bucket(
    plan: &Plan,
    inst: &Instance,
    places: &BTreeMap<u32, topology::CpuPlace>,
) -> (String, &'static str) {
    let place = places
        .get(&(inst.cpu.max(0) as u32))
        .copied()
        .unwrap_or_default();
    match plan.aggr {
        Aggr::Global => (String::new(), ""),
        Aggr::Cpu => (format!("CPU{}", inst.cpu), "cpu"),
        Aggr::Thread => {
            let comm = match &plan.scope {
                Scope::Threads(ts) => ts
                    .iter()
                    .find(|(t, _)| *t == inst.tid)
                    .map_or_else(|| "?".to_string(), |(_, c)| c.clone()),
                _ => "?".into(),
            };
            (format!("{comm}-{}", inst.tid), "thread")
        }
        Aggr::Core => (
            format!("S{}-D{}-C{}", place.socket, place.die, place.core),
            "core",
        ),
        Aggr::Socket => (format!("S{}", place.socket), "socket"),
        Aggr::Node => (format!("N{}", place.node), "node"),
    }
}

fn build_rows(
    args: &StatArgs,
    plan: &Plan,
    instances: &[Instance],
    events: &[OpenEvent],
    counts: &[Vec<Option<Count>>],
    elapsed: Duration,
) -> Vec<Row> {
    let cpus: Vec<u32> = instances
        .iter()
        .filter(|i| i.cpu >= 0)
        .map(|i| i.cpu as u32)
        .collect();
    let places = topology::places(&cpus);
    // bucket label -> (kind, ncpus)
    let mut order: Vec<(String, &'static str)> = Vec::new();
    let mut ncpus: BTreeMap<String, usize> = BTreeMap::new();
    for inst in instances {
        let b = bucket(plan, inst, &places);
        *ncpus.entry(b.0.clone()).or_default() += 1;
        if !order.contains(&b) {
            order.push(b);
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    for (label, kind) in &order {
        let mut bucket_rows = Vec::new();
        for (ev, evc) in events.iter().zip(counts) {
            let (mut value, mut enabled, mut running) = (0f64, 0u64, 0u64);
            let (mut any_open, mut any_unsupported, mut any_failed, mut any_counted) =
                (false, false, false, false);
            for ((slot, c), inst) in ev.slots.iter().zip(evc).zip(instances) {
                if &bucket(plan, inst, &places).0 != label {
                    continue;
                }
                match slot {
                    Slot::Open(_) => any_open = true,
                    Slot::NotSupported => any_unsupported = true,
                    Slot::Failed(_) => any_failed = true,
                }
                let Some(c) = c else { continue };
                let e = c.time_enabled.unwrap_or(0);
                let r = c.time_running.unwrap_or(0);
                enabled += e;
                running += r;
                let v = if args.no_scale {
                    Some(c.value)
                } else {
                    perfkit::scale(c.value, e, r).value()
                };
                // A counter that did not run (in this interval) is not counted, as perf
                // prints it; only counts without times are taken as they are.
                if let Some(v) = v
                    && (r > 0 || c.time_enabled.is_none())
                {
                    any_counted = true;
                    value += v as f64 * ev.spec.scale;
                }
            }
            let state = if any_counted {
                State::Counted
            } else if any_open {
                State::NotCounted
            } else if any_failed {
                State::Failed
            } else {
                let _ = any_unsupported;
                State::NotSupported
            };
            let cg = ev.cgroup.and_then(|i| plan.cgroup_names.get(i).cloned());
            bucket_rows.push(Row {
                label: label.clone(),
                label_kind: kind,
                ncpus: matches!(plan.aggr, Aggr::Core | Aggr::Socket | Aggr::Node)
                    .then(|| ncpus.get(label).copied().unwrap_or(0)),
                event: ev.name.clone(),
                attr: ev.spec.attr,
                unit: ev.spec.unit.clone(),
                cgroup: cg,
                state,
                value,
                running,
                enabled,
                runs: Vec::new(),
                metric: None,
            });
        }
        output::compute_metrics(&mut bucket_rows, elapsed.as_nanos() as f64);
        rows.extend(bucket_rows);
    }
    // perf prints -A rows event by event, CPU by CPU.
    if plan.aggr == Aggr::Cpu {
        let n = events.len();
        let mut by_event = Vec::with_capacity(rows.len());
        for e in 0..n {
            by_event.extend(rows.iter().skip(e).step_by(n).cloned());
        }
        rows = by_event;
    }
    // perf prints --per-thread rows event by event, each event's threads by count, the
    // largest first, and the threads that did not run last.
    if plan.aggr == Aggr::Thread {
        let n = events.len();
        let mut by_event = Vec::with_capacity(rows.len());
        for e in 0..n {
            let mut of_event: Vec<Row> = rows.iter().skip(e).step_by(n).cloned().collect();
            of_event.sort_by(|a, b| {
                (a.state != State::Counted)
                    .cmp(&(b.state != State::Counted))
                    .then(b.value.total_cmp(&a.value))
            });
            by_event.extend(of_event);
        }
        rows = by_event;
    }
    rows
}

fn print_rows(
    args: &StatArgs,
    rows: &[Row],
    interval: Option<f64>,
    sink: &mut dyn Write,
    big_num: bool,
) -> Result<()> {
    let mut out = String::new();
    for r in rows {
        if args.json {
            out.push_str(&output::json_row(r, interval).to_string());
            out.push('\n');
        } else if let Some(sep) = &args.sep {
            output::csv_row(r, interval, sep, &mut out);
        } else {
            output::text_row(r, interval, big_num, &mut out);
        }
    }
    sink.write_all(out.as_bytes())?;
    Ok(())
}

/// Rows over all runs: values are means, with every run kept for statistics.
fn summarize(args: &StatArgs, plan: &Plan, runs: &[RunResult]) -> Vec<Row> {
    let mut per_run: Vec<Vec<Row>> = runs
        .iter()
        .map(|r| build_rows(args, plan, &r.instances, &r.events, &r.counts, r.elapsed))
        .collect();
    let Some(mut rows) = per_run.first().cloned() else {
        return Vec::new();
    };
    if runs.len() > 1 {
        for (i, row) in rows.iter_mut().enumerate() {
            let vals: Vec<f64> = per_run
                .iter()
                .filter_map(|rs| rs.get(i))
                .filter(|r| r.state == State::Counted)
                .map(|r| r.value)
                .collect();
            if !vals.is_empty() {
                row.value = vals.iter().sum::<f64>() / vals.len() as f64;
                row.state = State::Counted;
            }
            row.runs = vals;
            row.running = per_run
                .iter()
                .filter_map(|rs| rs.get(i))
                .map(|r| r.running)
                .sum();
            row.enabled = per_run
                .iter()
                .filter_map(|rs| rs.get(i))
                .map(|r| r.enabled)
                .sum();
        }
        let mean_elapsed = runs
            .iter()
            .map(|r| r.elapsed.as_nanos() as f64)
            .sum::<f64>()
            / runs.len() as f64;
        for r in &mut rows {
            r.metric = None;
        }
        // Metrics over the means, bucket by bucket.
        let mut start = 0;
        while start < rows.len() {
            let label = rows[start].label.clone();
            let mut end = start;
            while end < rows.len() && rows[end].label == label {
                end += 1;
            }
            output::compute_metrics(&mut rows[start..end], mean_elapsed);
            start = end;
        }
    }
    per_run.clear();
    rows
}

fn print_final(
    args: &StatArgs,
    plan: &Plan,
    runs: &[RunResult],
    rows: &[Row],
    sink: &mut dyn Write,
    big_num: bool,
) -> Result<()> {
    let machine = args.json || args.sep.is_some();
    let mut out = String::new();
    if !machine {
        out.push_str(&format!("\n Performance counter stats for {}", plan.title));
        if runs.len() > 1 {
            out.push_str(&format!(" ({} runs)", runs.len()));
        }
        out.push_str(":\n\n");
    }
    sink.write_all(out.as_bytes())?;
    print_rows(args, rows, None, sink, big_num)?;
    if machine {
        return Ok(());
    }
    let mut out = String::new();
    let elapsed: Vec<f64> = runs.iter().map(|r| r.elapsed.as_secs_f64()).collect();
    out.push('\n');
    match output::mean_stddev_of_mean(&elapsed) {
        Some((mean, sd)) => out.push_str(&format!(
            "{mean:>18.9} +- {sd:.9} seconds time elapsed  ( +- {:>5.2}% )\n",
            output::rel_stddev_pct(mean, sd)
        )),
        None => out.push_str(&format!(
            "{:>18.9} seconds time elapsed\n",
            elapsed.first().copied().unwrap_or(0.0)
        )),
    }
    if runs.len() == 1
        && let Some(u) = runs[0].usage
    {
        out.push_str(&format!(
            "\n{:>18.9} seconds user\n{:>18.9} seconds sys\n",
            u.user_ns as f64 / 1e9,
            u.sys_ns as f64 / 1e9
        ));
    }
    out.push('\n');
    // Notes: no hardware counters here; permission problems and what did work.
    let hw_rows: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            matches!(
                r.attr.type_,
                sys::PERF_TYPE_HARDWARE | sys::PERF_TYPE_HW_CACHE | sys::PERF_TYPE_RAW
            )
        })
        .collect();
    if !hw_rows.is_empty() && hw_rows.iter().all(|r| r.state == State::NotSupported) {
        out.push_str(
            "Note: this machine has no hardware counters (no PMU; usual in virtual machines): \
             only software events can be counted here (`perfkit list` shows what opens).\n",
        );
    }
    if let Some(run) = runs.first() {
        let failed: Vec<&perfkit::Error> = run
            .events
            .iter()
            .flat_map(|e| &e.slots)
            .filter_map(|s| match s {
                Slot::Failed(e) => Some(e),
                _ => None,
            })
            .collect();
        if let Some(e) = failed.first() {
            let worked: Vec<&str> = run
                .events
                .iter()
                .filter(|e| e.slots.iter().any(|s| matches!(s, Slot::Open(_))))
                .map(|e| e.name.as_str())
                .collect();
            out.push_str(&format!("Some events could not be opened: {e}\n"));
            if let Some(h) = e.hint() {
                out.push_str(&format!("  hint: {h}\n"));
            }
            if !worked.is_empty() {
                out.push_str(&format!("  counted: {}\n", worked.join(", ")));
            }
        }
    }
    sink.write_all(out.as_bytes())?;
    Ok(())
}
