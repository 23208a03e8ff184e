//! `perfkit stat`: flags into a [`Plan`] of `perfkit-engine`, runs, and perf's layouts.

mod metric_only;
mod output;
mod record;
mod regions;

use crate::exit_error;
use anyhow::{Context, Result, bail};
use perfkit::sys;
use perfkit_engine::stat::{
    Aggr, CheckPlan, ControlCmd, Plan, PmuModel, Progress, Row, RunOptions, RunResult, Runner,
    Scope, StatConfig, State, Switching, summarize,
};
use perfkit_engine::{Error, Slot};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

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
    /// One line per die.
    #[arg(long = "per-die")]
    pub per_die: bool,
    /// One line per cache (perf 6.5's `--per-cache`): of LEVEL (`L2`, `3`), by default the
    /// highest level; the label is `S<socket>-D<die>-L<level>-ID<cache id>`.
    #[arg(long = "per-cache", value_name = "LEVEL", num_args = 0..=1, default_missing_value = "")]
    pub per_cache: Option<String>,
    /// One line per socket.
    #[arg(long = "per-socket")]
    pub per_socket: bool,
    /// One line per NUMA node.
    #[arg(long = "per-node")]
    pub per_node: bool,
    /// Don't merge events of PMUs with the same name (perf's uncore aliases; every
    /// event is its own line here already).
    #[arg(long = "no-merge")]
    pub no_merge: bool,
    /// With -x, -I and --summary: no `summary` column on the totals.
    #[arg(long = "no-csv-summary")]
    pub no_csv_summary: bool,
    /// CSV output with this separator.
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub sep: Option<String>,
    /// JSON output: one object per line, per counter and interval.
    #[arg(short = 'j', long = "json", alias = "json-output")]
    pub json: bool,
    /// Print nothing (perf's `--quiet`: useful with `stat record`); the exit status stays.
    #[arg(long)]
    pub quiet: bool,
    /// With -I: clear the screen before each interval, and print the header again (as
    /// perf's `--interval-clear`).
    #[arg(long = "interval-clear")]
    pub interval_clear: bool,
    /// Put all -e events into one group, as if written `{a,b,...}` (perf's `-g`).
    #[arg(short = 'g', long = "group")]
    pub group: bool,
    /// Write the counts to FILE instead of standard error.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Append to the -o file.
    #[arg(long, requires = "output")]
    pub append: bool,
    /// Print each event's perf_event_attr before opening it.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Start counting MS milliseconds after the command starts; -1: start with the events
    /// disabled (until `--control` enables them).
    #[arg(
        short = 'D',
        long = "delay",
        value_name = "MS",
        allow_hyphen_values = true
    )]
    pub delay: Option<i64>,
    /// Shell command run before each run (with -r).
    #[arg(long, value_name = "CMD")]
    pub pre: Option<String>,
    /// Shell command run after each run (with -r).
    #[arg(long, value_name = "CMD")]
    pub post: Option<String>,
    /// Don't scale multiplexed counts by time enabled / time running.
    #[arg(long = "no-scale", overrides_with = "scale")]
    pub no_scale: bool,
    /// Scale multiplexed counts (the default; perf's `--scale`, the last of the two wins).
    #[arg(long = "scale", overrides_with = "no_scale")]
    pub scale: bool,
    /// Don't count the command's children.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    /// Group digits with commas (default: as the locale does).
    #[arg(short = 'B', long = "big-num", overrides_with = "no_big_num")]
    pub big_num: bool,
    /// Never group digits.
    #[arg(long = "no-big-num")]
    pub no_big_num: bool,
    /// More events: `-d` caches, `-dd` also TLBs and the instruction cache, `-ddd` also
    /// prefetches (perf's lists; missing here they print `<not supported>`).
    #[arg(short = 'd', long = "detailed", action = clap::ArgAction::Count)]
    pub detailed: u8,
    /// Count nothing: only the elapsed time (and the command's CPU times).
    #[arg(short = 'n', long = "null")]
    pub null: bool,
    /// Run `sync` before starting, as perf.
    #[arg(short = 'S', long = "sync")]
    pub sync: bool,
    /// Count user space only (all events).
    #[arg(long = "all-user")]
    pub all_user: bool,
    /// Count the kernel only (all events).
    #[arg(long = "all-kernel")]
    pub all_kernel: bool,
    /// Write the counts to this open file descriptor instead of standard error.
    #[arg(long = "log-fd", value_name = "FD", conflicts_with = "output")]
    pub log_fd: Option<u32>,
    /// Metrics or metric groups (`-M IPC`): from the PMUs' metric tables.
    #[arg(short = 'M', long = "metrics", value_name = "METRICS")]
    pub metrics: Option<String>,
    /// Open the metrics' events ungrouped, each event once for all metrics.
    #[arg(long = "metric-no-group")]
    pub metric_no_group: bool,
    /// Don't share events between metrics: each metric counts its own set of events.
    #[arg(long = "metric-no-merge")]
    pub metric_no_merge: bool,
    /// Print only the metrics, one column each (no counts).
    #[arg(long = "metric-only")]
    pub metric_only: bool,
    /// With -r: print each run's elapsed time and its distance from the mean.
    #[arg(long = "table")]
    pub table: bool,
    /// Take `enable`, `disable`, `ping` and `stop` commands from a descriptor or FIFO while
    /// counting (`fd:CTL[,ACK]` or `fifo:CTL[,ACK]`), acknowledging each on ACK as perf.
    #[arg(long = "control", value_name = "fd:CTL[,ACK]|fifo:CTL[,ACK]")]
    pub control: Option<String>,
    /// perf's top-down metrics (level 1).
    #[arg(long = "topdown")]
    pub topdown: bool,
    /// perf's transaction events (`-T`): Intel TSX counters.
    #[arg(short = 'T', long = "transaction")]
    pub transaction: bool,
    /// Count the command's marked regions (LIKWID marker API, PAPI high-level API) per
    /// region and thread, like `likwid-perfctr -m`; the -e events (default
    /// task-clock,page-faults) are counted inside each region.
    #[arg(long = "regions")]
    pub regions: bool,
    /// An event set (perfmon2): events counted together, one set at a time, switched by
    /// perfkit (`--event-set '{a,b,c}' --event-set '{d,e}'`); with --switch-* every -e
    /// group is a set too. Default switching: every 10 ms.
    #[arg(long = "event-set", value_name = "EVENTS")]
    pub event_sets: Vec<String>,
    /// Switch event sets every MS milliseconds (every -e group is a set).
    #[arg(long = "switch-every", value_name = "MS", conflicts_with = "switch_on")]
    pub switch_every: Option<u64>,
    /// Switch event sets after every N occurrences of EVENT (an overflow of a counter of
    /// EVENT opened beside the sets), e.g. `instructions:u:1000000`.
    #[arg(long = "switch-on", value_name = "EVENT:N")]
    pub switch_on: Option<String>,
    /// Print how the events would be scheduled on this machine's PMUs (which go
    /// together, which would be multiplexed, why a group cannot be scheduled, and a
    /// split), without counting anything.
    #[arg(long = "check")]
    pub check: bool,
    /// The command to run and count.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

fn locale_groups_digits() -> bool {
    let loc = ["LC_ALL", "LC_NUMERIC", "LANG"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .unwrap_or_default();
    !(loc.is_empty() || loc == "C" || loc == "POSIX" || loc.starts_with("C."))
}

fn command_line(cmd: &[OsString]) -> String {
    cmd.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

impl StatArgs {
    fn config(&self) -> Result<StatConfig> {
        let cache = match self.per_cache.as_deref() {
            None => None,
            Some(l) => Some(Aggr::Cache(cache_level(l)?)),
        };
        let picks = [
            (cache.is_some(), cache.unwrap_or_default()),
            (self.no_aggr, Aggr::Cpu),
            (self.per_thread, Aggr::Thread),
            (self.per_core, Aggr::Core),
            (self.per_die, Aggr::Die),
            (self.per_socket, Aggr::Socket),
            (self.per_node, Aggr::Node),
        ];
        let chosen: Vec<Aggr> = picks.iter().filter(|p| p.0).map(|p| p.1).collect();
        if chosen.len() > 1 {
            bail!(
                "choose one of -A, --per-thread, --per-core, --per-die, --per-cache, \
                 --per-socket, --per-node"
            );
        }
        // perf 6.1's messages: top-down needs -a, then a `cpu` PMU with topdown events;
        // the transaction events need a `cpu` PMU with TSX. perf exits with -EINVAL
        // (234) there.
        let einval = |msg: String| crate::exit_error(234, anyhow::anyhow!(msg));
        if self.topdown {
            if !plan_system_wide(self) {
                return Err(einval(
                    "top down event configuration requires system-wide mode (-a)".into(),
                ));
            }
            if !cpu_pmu_has("topdown-") {
                return Err(einval(format!(
                    "System does not support topdown (no `cpu` PMU with topdown events; \
                     PMUs here: {})",
                    pmu_names().join(" ")
                )));
            }
            bail!("--topdown: perfkit does not compute top-down levels yet");
        }
        if self.transaction && !cpu_pmu_has("tx-start") {
            return Err(einval(format!(
                "Cannot set up transaction events: no `cpu` PMU with TSX events (cycles-t, \
                 tx-start) here; PMUs: {}",
                pmu_names().join(" ")
            )));
        }
        if self.transaction {
            bail!("-T: perfkit does not count transaction events yet");
        }
        if self.table && self.repeat < 2 {
            bail!("--table is only supported with -r (give -r N with N > 1)");
        }
        if self.metric_only && self.repeat > 1 {
            bail!("--metric-only is not supported with -r");
        }
        if self.metric_only && self.per_thread {
            bail!("--metric-only is not supported with --per-thread");
        }
        if self.repeat == 0 {
            bail!("-r needs at least 1 run");
        }
        if self.repeat > 1 && self.command.is_empty() {
            bail!("-r repeats a command: give one after --");
        }
        let mut events = self.event_filters.clone();
        if self.group && !events.is_empty() {
            if events.iter().any(|e| e.0.contains('{') || !e.1.is_empty()) {
                bail!(
                    "-g: the events name groups or filters already; write the group as -e '{{a,b}}'"
                );
            }
            let all: Vec<&str> = events.iter().map(|e| e.0.as_str()).collect();
            events = vec![(format!("{{{}}}", all.join(",")), vec![])];
        }
        for set in &self.event_sets {
            let set = set.trim();
            if set.is_empty() {
                bail!(
                    "--event-set: give a list of events, e.g. --event-set '{{cycles,instructions}}'"
                );
            }
            let braced = if set.starts_with('{') {
                set.to_string()
            } else {
                format!("{{{set}}}")
            };
            events.push((braced, vec![]));
        }
        if self.switching()?.is_some() {
            if self.delay.is_some() {
                bail!("event-set switching starts with the first set at once: drop -D");
            }
            if self.control.is_some() {
                bail!(
                    "--control enables and disables events itself: it cannot be used with event-set switching"
                );
            }
            if self.null || self.metrics.is_some() || events.is_empty() {
                bail!("event-set switching needs event sets: give --event-set or -e with groups");
            }
        }
        Ok(StatConfig {
            events,
            pids: self.pid.clone(),
            tids: self.tid.clone(),
            all_cpus: self.all_cpus,
            cpus: self.cpu.clone(),
            cgroup: self.cgroup.clone(),
            for_each_cgroup: self.for_each_cgroup.clone(),
            command: self.command.clone(),
            aggr: chosen.first().copied().unwrap_or_default(),
            detail: self.detailed.min(3),
            null: self.null,
            all_user: self.all_user,
            all_kernel: self.all_kernel,
            metrics: self.metrics.clone(),
            metric_no_group: self.metric_no_group,
            metric_no_merge: self.metric_no_merge,
        })
    }

    fn run_options(&self) -> RunOptions {
        RunOptions {
            inherit: !self.no_inherit,
            delay: self
                .delay
                .filter(|&d| d > 0)
                .map(|d| Duration::from_millis(d as u64)),
            start_disabled: self.delay.is_some_and(|d| d < 0),
            timeout: self.timeout.map(Duration::from_millis),
            // perf: `-I 0` is no interval.
            interval: self.interval_ms().map(Duration::from_millis),
            interval_count: self.interval_count,
            no_scale: self.no_scale,
            switching: self.switching().ok().flatten(),
        }
    }

    /// The event-set switching rule: --switch-every, --switch-on, or every 10 ms when
    /// --event-set is given alone.
    fn switching(&self) -> Result<Option<Switching>> {
        if let Some(on) = &self.switch_on {
            return Switching::parse_on(on)
                .map(Some)
                .map_err(|e| anyhow::anyhow!(e));
        }
        match self.switch_every {
            Some(0) => bail!("--switch-every 0: give a period in milliseconds above 0"),
            Some(ms) => Ok(Some(Switching::Every(Duration::from_millis(ms)))),
            None if !self.event_sets.is_empty() => {
                Ok(Some(Switching::Every(Duration::from_millis(10))))
            }
            None => Ok(None),
        }
    }

    /// The layout of `--metric-only`.
    fn layout(&self) -> metric_only::Layout<'_> {
        match (&self.sep, self.json) {
            (_, true) => metric_only::Layout::Json,
            (Some(sep), _) => metric_only::Layout::Csv(sep),
            _ => metric_only::Layout::Text,
        }
    }

    /// The -I period, if any (`-I 0` is none, as perf).
    fn interval_ms(&self) -> Option<u64> {
        self.interval.filter(|&ms| ms > 0)
    }

    /// perf's header: `Performance counter stats for 'COMMAND'`, `process id '1'`, ...
    fn title(&self, plan: &Plan) -> String {
        match &plan.scope {
            Scope::Command => format!("'{}'", command_line(&self.command)),
            Scope::Threads(_) if plan.system_wide => "'system wide'".to_string(),
            Scope::Threads(_) if self.pid.is_some() => {
                format!("process id '{}'", self.pid.as_deref().unwrap_or(""))
            }
            Scope::Threads(_) => format!("thread id '{}'", self.tid.as_deref().unwrap_or("")),
            _ if self.cpu.is_some() => format!("'CPU(s) {}'", self.cpu.as_deref().unwrap_or("")),
            _ => "'system wide'".to_string(),
        }
    }
}

/// Run `perfkit stat`.
pub fn run(args: StatArgs) -> Result<u8> {
    // `perfkit stat record ...` / `perfkit stat report ...`, as perf's subcommands.
    match args.command.first().and_then(|c| c.to_str()) {
        Some("record") => return record::record(&args.command[1..]),
        Some("report") => return record::report(&args.command[1..]),
        _ => {}
    }
    if args.regions {
        return regions::run(&args);
    }
    let plan = Plan::new(&args.config()?).map_err(|e| match e {
        Error::Parse(_) | Error::NoEvents => anyhow::Error::new(e).context("-e"),
        e => e.into(),
    })?;
    if args.check {
        return check(&plan);
    }
    // A group that can never be scheduled counts nothing: say why and how to split it.
    for w in perfkit_engine::stat::group_warnings(&plan.specs) {
        eprintln!("Warning: {w}");
    }
    let opts = args.run_options();
    let big_num = if args.no_big_num {
        false
    } else {
        args.big_num || locale_groups_digits()
    };
    if args.sync {
        // perf calls sync(2) here; the `sync` program does just that.
        run_shell("sync", "-S")?;
    }
    let mut sink: Box<dyn Write> = if args.quiet {
        Box::new(std::io::sink())
    } else if let Some(fd) = args.log_fd {
        // The descriptor reopened through /proc, appending: a pipe or file the caller opened.
        Box::new(
            std::fs::OpenOptions::new()
                .append(true)
                .open(format!("/proc/self/fd/{fd}"))
                .with_context(|| format!("--log-fd {fd}"))?,
        )
    } else {
        match &args.output {
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
        }
    };
    if args.verbose > 0 {
        for e in &plan.metric_events {
            eprintln!("Parsing metric events '{e}'");
        }
    }
    for note in &plan.notes {
        eprintln!("{note}");
    }
    let mut runner = Runner::new();
    if let Some(c) = &args.control {
        let (ctl, ack) = crate::control::open_control(c)?;
        runner.control(ctl, ack);
    }
    let stop = runner.stop_handle();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing signal handlers")?;
    let sig_handle = signals.handle();
    std::thread::spawn(move || {
        for sig in signals.forever() {
            stop.interrupt(sig);
        }
    });
    let mut all_runs: Vec<RunResult> = Vec::new();
    let mut interval_header_done = false;
    let mut exit = 0u8;
    for run_no in 0..args.repeat {
        if let Some(pre) = &args.pre {
            run_shell(pre, "--pre")?;
        }
        let first = run_no == 0;
        let header_each = args.interval_clear;
        if first
            && !header_each
            && opts.interval.is_some()
            && args.sep.is_none()
            && !args.json
            && !args.metric_only
        {
            writeln!(sink, "{}", output::interval_header(plan.aggr))?;
        }
        let r = runner.run(&plan, &opts, &mut |p| match p {
            Progress::Attrs(evs) if first && args.verbose > 0 => {
                for e in evs {
                    writeln!(sink, "{}", perfkit_engine::describe_attr(&e.attr))?;
                }
                Ok(())
            }
            Progress::Disabled => {
                eprintln!("Events disabled");
                Ok(())
            }
            Progress::Enabled | Progress::Control(ControlCmd::Enable(_)) => {
                eprintln!("Events enabled");
                Ok(())
            }
            Progress::Control(ControlCmd::Disable(_)) => {
                eprintln!("Events disabled");
                Ok(())
            }
            Progress::Interval { secs, rows } => {
                if args.metric_only && !interval_header_done {
                    interval_header_done = true;
                    let mut out = String::new();
                    metric_only::headers(&rows, plan.aggr, true, args.layout(), &mut out);
                    sink.write_all(out.as_bytes())?;
                }
                if header_each {
                    // perf's CONSOLE_CLEAR, on standard output, then the header again.
                    print!("\x1b[H\x1b[2J");
                    std::io::stdout().flush()?;
                    if args.sep.is_none() && !args.json && !args.metric_only {
                        writeln!(sink, "{}", output::interval_header(plan.aggr))?;
                    }
                }
                let prefix = Prefix::Interval(secs);
                print_rows(&args, &rows, prefix, 1, &mut *sink, big_num)
            }
            _ => Ok(()),
        });
        let r = r.map_err(|e| match e {
            Error::Launch(l) => exit_error(l.exit_code() as u8, l),
            Error::Open(_) => exit_error(1, e),
            e => e.into(),
        })?;
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
    sig_handle.close();
    let final_rows = summarize(&plan, &all_runs, args.no_scale);
    if opts.interval.is_none() || args.summary {
        let title = args.title(&plan);
        print_final(
            &args,
            &title,
            plan.aggr,
            &all_runs,
            &final_rows,
            &mut *sink,
            big_num,
        )?;
    }
    if !(args.json || args.sep.is_some())
        && let Some(sets) = all_runs.last().and_then(|r| r.sets.as_ref())
    {
        writeln!(sink, "{}", sets.text())?;
    }
    sink.flush()?;
    Ok(exit)
}

/// `--check`: the plan on this machine's PMU model, nothing opened for the events.
fn check(plan: &Plan) -> Result<u8> {
    match PmuModel::detect() {
        Some(pmu) => {
            print!("{}", CheckPlan::new(pmu, &plan.specs).text());
            Ok(0)
        }
        None => bail!(
            "--check: no hardware PMU here and no libpfm4 model (install libpfm4, or set \
             LIBPFM_FORCE_PMU to a PMU libpfm4 knows, e.g. core or skl)"
        ),
    }
}

/// The PMUs of this machine, by their sysfs names.
fn pmu_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Whether the `cpu` PMU has an event whose name starts with `prefix`.
fn cpu_pmu_has(prefix: &str) -> bool {
    std::fs::read_dir("/sys/bus/event_source/devices/cpu/events")
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
        })
        .unwrap_or(false)
}

/// `--per-cache`'s level: empty for the highest, else `L2`, `l3` or `2`.
fn cache_level(s: &str) -> Result<u8> {
    if s.is_empty() {
        return Ok(0);
    }
    let digits = s.trim_start_matches(['L', 'l']);
    match digits.parse::<u8>() {
        Ok(n @ 1..=4) => Ok(n),
        _ => bail!("--per-cache={s}: give a cache level such as L2 or L3"),
    }
}

fn plan_system_wide(args: &StatArgs) -> bool {
    args.all_cpus || args.cpu.is_some()
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

/// What goes before a row's count.
#[derive(Clone, Copy)]
enum Prefix {
    /// Nothing (the totals).
    None,
    /// The interval's timestamp.
    Interval(f64),
    /// The totals after intervals with -x and --summary: perf's `summary` column.
    Summary,
}

fn print_rows(
    args: &StatArgs,
    rows: &[Row],
    prefix: Prefix,
    runs: usize,
    sink: &mut dyn Write,
    big_num: bool,
) -> std::io::Result<()> {
    let interval = match prefix {
        Prefix::Interval(t) => Some(t),
        _ => None,
    };
    let mut out = String::new();
    if args.metric_only {
        metric_only::lines(rows, interval, args.layout(), &mut out);
        sink.write_all(out.as_bytes())?;
        return Ok(());
    }
    for r in rows {
        if args.json {
            out.push_str(&output::json_row(r, interval, runs));
            out.push('\n');
        } else if let Some(sep) = &args.sep {
            let col = match prefix {
                Prefix::None => None,
                Prefix::Interval(t) => Some(output::interval_stamp(t)),
                Prefix::Summary => Some(format!("{:>16}", "summary")),
            };
            output::csv_row(r, col.as_deref(), runs, sep, &mut out);
        } else {
            output::text_row(r, interval, big_num, &mut out);
        }
    }
    sink.write_all(out.as_bytes())?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn print_final(
    args: &StatArgs,
    title: &str,
    aggr: Aggr,
    runs: &[RunResult],
    rows: &[Row],
    sink: &mut dyn Write,
    big_num: bool,
) -> Result<()> {
    let machine = args.json || args.sep.is_some();
    let mut out = String::new();
    if !machine {
        out.push_str(&format!("\n Performance counter stats for {}", title));
        if runs.len() > 1 {
            out.push_str(&format!(" ({} runs)", runs.len()));
        }
        out.push_str(":\n\n");
    }
    if args.metric_only {
        metric_only::headers(rows, aggr, false, args.layout(), &mut out);
    }
    sink.write_all(out.as_bytes())?;
    let prefix = if args.sep.is_some()
        && args.interval_ms().is_some()
        && args.summary
        && !args.no_csv_summary
    {
        Prefix::Summary
    } else {
        Prefix::None
    };
    print_rows(args, rows, prefix, runs.len(), sink, big_num)?;
    if machine {
        return Ok(());
    }
    let mut out = String::new();
    let elapsed: Vec<f64> = runs.iter().map(|r| r.elapsed.as_secs_f64()).collect();
    // perf -n: the elapsed time right below the title, one more blank line at the end.
    if !args.null {
        out.push('\n');
    }
    match perfkit_engine::stat::mean_stddev_of_mean(&elapsed) {
        Some((mean, sd)) => {
            // perf: at most two more significant digits than the deviation.
            let p = output::precision(sd) + 2;
            if args.table {
                output::run_table(&elapsed, mean, p, &mut out);
            }
            let pct = perfkit_engine::stat::rel_stddev_pct(mean, sd);
            out.push_str(&format!("{mean:>18.p$} +- {sd:.p$} seconds time elapsed"));
            // perf prints the deviation only when there is one.
            if pct != 0.0 {
                out.push_str(&format!("  ( +-{pct:>6.2}% )"));
            }
            out.push('\n');
        }
        None => out.push_str(&format!(
            "{:>18.9} seconds time elapsed\n",
            elapsed.first().copied().unwrap_or(0.0)
        )),
    }
    // perf prints the command's CPU times only for a command counted on its own.
    if runs.len() == 1
        && !plan_system_wide(args)
        && let Some(u) = runs[0].usage
    {
        // perf: one more blank line after the CPU times.
        out.push_str(&format!(
            "\n{:>18.9} seconds user\n{:>18.9} seconds sys\n\n",
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
