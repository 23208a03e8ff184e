//! `perfkit top`: a live profile. The engine opens the events (the same open path and
//! sampling attrs as `record`), the recorder hands each ring record to a profile
//! [`Loader`] (symbols resolved as addresses first appear, cached), and every refresh
//! draws [`perfkit_report::top::view`] of it: as plain text with `--stdio`, else in the
//! terminal UI ([`crate::top_tui`]).

use anyhow::{Context, Result, bail};
use perfkit_data::EventAttr;
use perfkit_engine::sampling::{CallGraph, Sampling, SamplingOptions, sampling_attrs};
use perfkit_engine::{OpenOptions, Place, Poll, Recorder, Workload};
use perfkit_report::load::{LoadOptions, Loader};
use perfkit_report::report::SortKey;
use perfkit_report::top::{self, Status, ViewOptions};
use perfkit_report::trace_info::TraceInfo;
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Flags of `perfkit top`, named as perf names them.
#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "A live profile of the system, processes or a command, refreshed as it runs",
    after_help = "Examples:\n  perfkit top\n  perfkit top --stdio -d 1 -E 10\n  perfkit top -p 1234 -g\n  perfkit top -e cpu-clock -e page-faults --off-cpu\n  perfkit top --stdio -- ./my-program\n\nKeys: Up/Down/PgUp/PgDn/Home/End move, Right (and Enter without -g) opens the row's menu\n(annotate, zoom into its DSO or thread, filter to it, call chains, next event, save),\nwith -g Enter or + folds/unfolds the row's call-graph tree and E/C expand/collapse\nevery tree, d/t zoom into the row's DSO/thread (again: out), a annotates the symbol,\nTab/Shift-Tab switch events, / filters, s/S change the sort keys, P writes the view\nto perf.hist.N, q or Ctrl-C quits."
)]
pub struct TopArgs {
    /// Every CPU (the default without -p, -t or a command).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Only these processes.
    #[arg(short = 'p', long = "pid")]
    pub pid: Option<String>,
    /// Only these threads.
    #[arg(short = 't', long = "tid")]
    pub tid: Option<String>,
    /// Only these CPUs.
    #[arg(short = 'C', long = "cpu")]
    pub cpu: Option<String>,
    /// Events, in perf's syntax (default cycles, which is cpu-clock without a PMU).
    #[arg(short = 'e', long = "event")]
    pub events: Vec<String>,
    /// Samples per second (default 4000).
    #[arg(short = 'F', long = "freq")]
    pub freq: Option<u64>,
    /// Sample every N events instead.
    #[arg(short = 'c', long = "count")]
    pub count: Option<u64>,
    /// Record call chains: the children (cumulative) column, and each row's call-graph
    /// tree (under the row with --stdio, unfolded with Enter/+/E in the UI).
    #[arg(short = 'g')]
    pub callgraph: bool,
    /// Sort keys: dso, sym, comm, pid, tid, cpu (default dso,sym).
    #[arg(short = 's', long = "sort", value_delimiter = ',')]
    pub sort: Vec<String>,
    /// Hide kernel symbols.
    #[arg(
        short = 'K',
        long = "hide_kernel_symbols",
        alias = "hide-kernel-symbols"
    )]
    pub hide_kernel: bool,
    /// Hide user symbols.
    #[arg(short = 'U', long = "hide_user_symbols", alias = "hide-user-symbols")]
    pub hide_user: bool,
    /// Seconds between refreshes (default 2).
    #[arg(short = 'd', long = "delay", default_value_t = 2.0)]
    pub delay: f64,
    /// Zero the history at each refresh (else it decays: 7/8 of its weight stays).
    #[arg(short = 'z', long = "zero")]
    pub zero: bool,
    /// At most this many rows (--stdio default: as many as the terminal, LINES or 25 lines hold).
    #[arg(short = 'E', long = "entries")]
    pub entries: Option<usize>,
    /// Hide rows below this percentage.
    #[arg(long = "percent-limit", default_value_t = 0.0)]
    pub percent_limit: f64,
    /// Plain refreshing text instead of the terminal UI (for logs and CI; the default when
    /// standard output is not a terminal).
    #[arg(long)]
    pub stdio: bool,
    /// Stop after this many refreshes (perfkit's; perf top runs until interrupted).
    #[arg(long = "refreshes", value_name = "N")]
    pub refreshes: Option<u64>,
    /// Off-CPU time too, as its own event (`offcpu-time`, nanoseconds asleep per task and
    /// user stack), as `record --off-cpu` gathers it without BPF.
    #[arg(long = "off-cpu")]
    pub off_cpu: bool,
    /// Do not watch for BPF programs loaded while top runs (perf's side-band thread: it
    /// keeps each program's JIT code and line info, so that its `bpf_prog_*` row
    /// annotates even after the program is gone).
    #[arg(long = "no-bpf-event")]
    pub no_bpf_event: bool,
    /// Ring buffer pages per CPU (a power of two).
    #[arg(short = 'm', long = "mmap-pages", default_value_t = 128)]
    pub pages: usize,
    /// A command to run and profile (top ends when it does, in --stdio mode).
    #[arg(last = true)]
    pub command: Vec<OsString>,
}

/// The sort presets `s`/`S` cycle through in the TUI.
pub const SORT_PRESETS: &[&[SortKey]] = &[
    &[SortKey::Dso, SortKey::Sym],
    &[SortKey::Sym],
    &[SortKey::Comm, SortKey::Dso, SortKey::Sym],
    &[SortKey::Pid, SortKey::Sym],
    &[SortKey::Comm],
    &[SortKey::Dso],
];

/// A running session: the recorder, the profile it feeds, and what the status line says.
pub struct Session {
    /// Drains the rings.
    pub recorder: Recorder,
    /// Builds the profile.
    pub loader: Loader,
    /// The launched command, if any.
    pub workload: Option<Workload>,
    /// What the view shows.
    pub view: ViewOptions,
    /// Status line facts.
    pub status: Status,
    /// Zero the history at each refresh.
    pub zero: bool,
    /// perf top's BPF side-band thread: the programs loaded since top started.
    bpf: Option<perfkit_engine::bpf_watch::BpfWatcher>,
    live: top::Live,
    samples_at_refresh: u64,
    refreshed_at: Instant,
}

impl Session {
    /// Drain what the rings hold (waiting up to `timeout` for data).
    pub fn pump(&mut self, timeout: Duration) -> Result<Poll> {
        let loader = &mut self.loader;
        let p = self
            .recorder
            .poll_parsed(timeout, |i, r| loader.record(i, r))?;
        Ok(p)
    }

    /// Drain what the rings hold without waiting.
    pub fn drain(&mut self) -> Result<()> {
        let loader = &mut self.loader;
        self.recorder.drain_parsed(|i, r| loader.record(i, r))?;
        Ok(())
    }

    /// Take a snapshot of the view and update the rate; `-z` then forgets the samples.
    pub fn snapshot(&mut self) -> top::View {
        match self.snapshot_events(false).pop() {
            Some(v) => v,
            None => self.view_now(),
        }
    }

    /// The view of the profile as it is (after a key changed what it shows).
    pub fn view_now(&mut self) -> top::View {
        top::view_live(self.loader.profile(), &self.view, &mut self.live)
    }

    /// [`snapshot`](Self::snapshot) of the shown event, or with `all` of every event
    /// that has samples (the `--stdio` screens), in event order.
    pub fn snapshot_events(&mut self, all: bool) -> Vec<top::View> {
        let stats = self.recorder.stats();
        let dt = self.refreshed_at.elapsed().as_secs_f64().max(1e-3);
        self.status.rate = (stats.samples - self.samples_at_refresh) as f64 / dt;
        self.status.lost = stats.lost;
        self.samples_at_refresh = stats.samples;
        self.refreshed_at = Instant::now();
        // Off-CPU time: the sleeps that ended since the last refresh.
        let loader = &mut self.loader;
        self.recorder.off_cpu_parsed(|i, r| loader.record(i, r));
        let profile = self.loader.profile();
        let views = if all {
            let mut v = Vec::new();
            for e in 0..profile.events.len() {
                let opts = top::ViewOptions {
                    event: e,
                    ..self.view.clone()
                };
                let view = top::view_live(profile, &opts, &mut self.live);
                if view.events[e].1 > 0 {
                    v.push(view);
                }
            }
            if v.is_empty() {
                // Nothing sampled yet: the first event's empty screen.
                v.push(top::view_live(profile, &self.view, &mut self.live));
            }
            v
        } else {
            vec![top::view_live(profile, &self.view, &mut self.live)]
        };
        if self.zero {
            self.loader.clear_samples();
        } else {
            // perf top's decay: older samples weigh 7/8 less at each refresh.
            self.loader.decay_samples(7, 8);
        }
        views
    }

    /// The code of the BPF programs loaded since top started (read as each loaded, so
    /// also of programs unloaded since), for annotating their `bpf_prog_*` symbols.
    pub fn bpf_code(&self) -> perfkit_report::bpf_code::BpfCode {
        match &self.bpf {
            Some(w) => {
                let seen = w.seen();
                perfkit_report::bpf_code::BpfCode::live(seen.programs, seen.btfs)
            }
            None => Default::default(),
        }
    }

    /// Whether the launched command has ended.
    pub fn command_done(&self) -> bool {
        self.workload.as_ref().is_some_and(|w| w.status().is_some())
    }
}

/// Open the events and start sampling, as the flags say.
pub fn start(args: &TopArgs) -> Result<Session> {
    if args.delay <= 0.0 || !args.delay.is_finite() {
        bail!(
            "-d {}: the delay must be a positive number of seconds",
            args.delay
        );
    }
    if args.hide_kernel && args.hide_user {
        bail!("-K and -U together hide everything: give one of them");
    }
    let mut sort = Vec::new();
    for k in &args.sort {
        sort.push(
            SortKey::parse(k.trim())
                .with_context(|| format!("--sort: unknown key `{k}` (keys: {})", SortKey::NAMES))?,
        );
    }
    let default_event = args.events.is_empty();
    let mut specs = if default_event {
        perfkit_engine::parse(&["cycles".to_string()])?
    } else {
        perfkit_engine::parse(&args.events).context("-e")?
    };
    if args.off_cpu {
        specs.push(perfkit_engine::offcpu::offcpu_spec()?);
    }
    let sampling = match (args.count, args.freq) {
        (Some(c), _) if c > 0 => Sampling::Period(c),
        (Some(_), _) => bail!("-c 0: the period must be at least 1"),
        (None, Some(0)) => bail!("-F 0: the frequency must be at least 1"),
        (None, f) => Sampling::Freq(f.unwrap_or(4000)),
    };
    let sopts = SamplingOptions {
        sampling,
        call_graph: if args.callgraph {
            CallGraph::Fp
        } else {
            CallGraph::None
        },
        sample_cpu: true,
        no_bpf_event: args.no_bpf_event,
        ..SamplingOptions::default()
    };
    sampling_attrs(&mut specs, &sopts);
    if args.off_cpu
        && let Some(s) = specs.last_mut()
    {
        perfkit_engine::offcpu::offcpu_attr(&mut s.attr);
    }
    let cpus = perfkit_engine::cpus(args.cpu.as_deref())?;
    let mut attached: Vec<i32> = Vec::new();
    if let Some(p) = &args.pid {
        attached.extend(perfkit_engine::threads_of_pids(p)?);
    }
    if let Some(t) = &args.tid {
        attached.extend(perfkit_engine::existing_tids(t)?);
    }
    let child = if args.command.is_empty() {
        None
    } else {
        Some(Workload::prepare(&args.command)?)
    };
    let system_wide = args.all_cpus || (attached.is_empty() && child.is_none());
    let tasks: Vec<i32> = match &child {
        _ if system_wide => vec![-1],
        Some(c) => vec![c.pid()],
        None => attached.clone(),
    };
    let places = Place::on_cpus(&cpus, &tasks);
    let opts = OpenOptions {
        cycles_fallback: default_event,
        inherit: true,
        enable_on_exec: child.is_some() && !system_wide,
        ..OpenOptions::default()
    };
    let opened = perfkit_engine::open(&specs, &places, &opts).require_all()?;
    let mut recorder = Recorder::new(opened, args.pages)?;
    // perf top's BPF side-band thread (`evlist__add_bpf_sb_event`): without the rights
    // to watch every CPU, top goes on without it, as perf does.
    let bpf = (!args.no_bpf_event)
        .then(perfkit_engine::bpf_watch::BpfWatcher::start)
        .and_then(|r| r.ok());
    if args.off_cpu {
        let off = perfkit_engine::offcpu::OffCpu::open(&places, &opts, &sopts, args.pages)
            .context("--off-cpu")?;
        recorder = recorder.with_off_cpu(off)?;
    }
    let events: Vec<EventAttr> = recorder
        .file_events()
        .into_iter()
        .map(|e| EventAttr {
            attr: e.attr,
            ids: e.ids,
            name: e.name,
        })
        .collect();
    let mut loader = Loader::new(&events, TraceInfo::default(), &LoadOptions::default());
    loader.cache_symbol_ranges();
    // Like samples fold as they come: each refresh's view and decay cost the distinct
    // stacks, not the samples since the last one.
    loader.fold_live();
    if child.is_none() || system_wide {
        recorder.enable()?;
    }
    let pids: Vec<i32> = if system_wide {
        perfkit_engine::sideband::all_pids()
    } else {
        attached.clone()
    };
    recorder.preamble_parsed(&pids, |i, r| loader.record(i, r));
    let workload = match child {
        Some(c) => Some(Workload::start(c, |_| {})?),
        None => None,
    };
    let target = if system_wide {
        match &args.cpu {
            Some(c) => format!("CPU {c}"),
            None => format!("all, {} CPUs", cpus.len()),
        }
    } else if let Some(w) = &workload {
        format!("command, pid {}", w.pid())
    } else {
        format!("{} threads", attached.len())
    };
    let sampling = match sampling {
        Sampling::Freq(f) => format!("{f}Hz"),
        Sampling::Period(c) => format!("period {c}"),
    };
    Ok(Session {
        recorder,
        loader,
        workload,
        view: ViewOptions {
            sort: if sort.is_empty() {
                SORT_PRESETS[0].to_vec()
            } else {
                sort
            },
            children: args.callgraph,
            hide_kernel: args.hide_kernel,
            hide_user: args.hide_user,
            percent_limit: args.percent_limit,
            entries: args.entries,
            filter: None,
            zoom: None,
            event: 0,
            graph: args.callgraph,
        },
        status: Status {
            sampling,
            target,
            ..Status::default()
        },
        zero: args.zero,
        bpf,
        live: top::Live::default(),
        samples_at_refresh: 0,
        refreshed_at: Instant::now(),
    })
}

/// Run `perfkit top`.
pub fn run(args: TopArgs) -> Result<u8> {
    let mut s = start(&args)?;
    let stop = s.recorder.stopper();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])?;
    let sig_handle = signals.handle();
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            stop.stop();
        }
    });
    // Without a terminal (a pipe, a log), the plain text screens, as perf top does.
    let result = if args.stdio || !std::io::stdout().is_terminal() {
        run_stdio(&mut s, &args)
    } else {
        crate::top_tui::run(&mut s, &args)
    };
    sig_handle.close();
    if let Some(w) = &s.workload {
        w.terminate(Duration::from_secs(1));
    }
    result
}

fn run_stdio(s: &mut Session, args: &TopArgs) -> Result<u8> {
    let delay = Duration::from_secs_f64(args.delay);
    // perf top --stdio's screen: the terminal's size, else LINES/COLUMNS, else 25x80; as
    // many rows as fit below the header unless -E says.
    let term = ratatui::crossterm::terminal::size().ok();
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|c| c.parse::<usize>().ok())
    };
    let width = env("COLUMNS")
        .or(term.map(|t| usize::from(t.0)))
        .unwrap_or(80);
    let height = env("LINES")
        .or(term.map(|t| usize::from(t.1)))
        .unwrap_or(25);
    if s.view.entries.is_none() {
        s.view.entries = Some(height.saturating_sub(5).max(1));
    }
    let mut shown = 0u64;
    let mut next = Instant::now() + delay;
    let out = std::io::stdout();
    loop {
        let left = next.saturating_duration_since(Instant::now());
        let stopped = s.pump(left.min(Duration::from_millis(200)))? == Poll::Stopped;
        let done = stopped || s.command_done();
        if Instant::now() >= next || done {
            if done {
                // What the rings still hold belongs to the last screen.
                s.drain()?;
            }
            // Every event with samples, one screen each (the TUI switches with Tab).
            let views = s.snapshot_events(true);
            let mut o = out.lock();
            for v in &views {
                write!(o, "{}", top::render_stdio(v, &s.status, width))?;
                writeln!(o)?;
            }
            o.flush()?;
            shown += 1;
            next = Instant::now() + delay;
            if done || args.refreshes.is_some_and(|n| shown >= n) {
                return Ok(0);
            }
        }
    }
}
