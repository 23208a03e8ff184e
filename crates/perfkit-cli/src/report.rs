//! `perfkit report` and `perfkit script`: read a perf.data file (perfkit's or perf's),
//! build the symbolized profile once, and print it or export it.

use anyhow::{Context, Result, bail};
use perfkit_report::load::{Diagnostics, LoadOptions, load_with_progress, open};
use perfkit_report::report::{self, Filter, GraphMode, ReportOptions, SortKey};
use perfkit_report::script::{self, Field};
use perfkit_report::{Profile, export};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// The sample filters `report` and `script` share, named as perf names them.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SampleFilters {
    /// Only samples of these commands.
    #[arg(long, value_delimiter = ',')]
    pub comm: Vec<String>,
    /// Only samples of these process ids.
    #[arg(long, value_delimiter = ',')]
    pub pid: Vec<i32>,
    /// Only samples of these thread ids.
    #[arg(long, value_delimiter = ',')]
    pub tid: Vec<i32>,
    /// Only samples on these CPUs (e.g. 0,2-3).
    #[arg(short = 'C', long = "cpu")]
    pub cpu: Option<String>,
    /// Only samples in this time window, as perf takes it: START,STOP timestamps in
    /// seconds (either may be empty), or percent slices (10%/2, 0%-10%,30%-40%).
    #[arg(long)]
    pub time: Option<String>,
}

/// Flags of `perfkit report`, named as perf names them.
#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "Show a recorded profile: hottest symbols, call graphs, or an export",
    after_help = "Examples:\n  perfkit report --stdio\n  perfkit report --no-children --sort dso,sym -n\n  perfkit report --format flamegraph -o profile.svg\n  perfkit report --format firefox -o profile.json"
)]
pub struct ReportArgs {
    /// The profile to read (perf.data; `-` = standard input; default: standard input when
    /// it is a pipe, else perf.data).
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Read a file that belongs to another user (perf refuses it without -f).
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Count the file's records by type and the samples of each event (perf's text).
    #[arg(long)]
    pub stats: bool,
    /// Print the tasks (pid, tid, ppid, comm) as a tree of parents and children.
    #[arg(long, alias = "task")]
    pub tasks: bool,
    /// Print the tasks with the memory maps of each.
    #[arg(long, alias = "mmap")]
    pub mmaps: bool,
    /// Text output (the only interactive-free mode; accepted for perf compatibility).
    #[arg(long)]
    pub stdio: bool,
    /// Sort keys: comm, pid, tid, dso, sym, cpu, srcline, symoff, parent.
    #[arg(short = 's', long = "sort", value_delimiter = ',')]
    pub sort: Vec<String>,
    /// Output columns: overhead, sample, period and sort keys (they become the sort keys
    /// when --sort is not given; without overhead, rows are ordered by their keys).
    #[arg(short = 'F', long = "fields", value_delimiter = ',')]
    pub fields: Vec<String>,
    /// Show the period of each entry.
    #[arg(long = "show-total-period")]
    pub show_total_period: bool,
    /// Show the cumulative (children) column (default when callchains were recorded).
    #[arg(long, overrides_with = "no_children")]
    pub children: bool,
    /// Only the self overhead.
    #[arg(long = "no-children")]
    pub no_children: bool,
    /// Call graph: graph|flat|folded|fractal|none[,THRESHOLD[,caller|callee]].
    #[arg(short = 'g', long = "call-graph", value_name = "MODE")]
    pub call_graph: Option<String>,
    /// Hide entries below this percentage.
    #[arg(long = "percent-limit", default_value_t = 0.0)]
    pub percent_limit: f64,
    /// Show the number of samples.
    #[arg(short = 'n', long = "show-nr-samples")]
    pub show_samples: bool,
    /// Which samples: commands, pids, tids, CPUs, time.
    #[command(flatten)]
    pub only: SampleFilters,
    /// Only these shared objects.
    #[arg(short = 'd', long, value_delimiter = ',')]
    pub dso: Vec<String>,
    /// Only these symbols.
    #[arg(short = 'S', long = "symbols", value_delimiter = ',')]
    pub symbol: Vec<String>,
    /// Print the file's header (perf's lines) before the report.
    #[arg(long)]
    pub header: bool,
    /// With --header: the full header (accepted; topology details are not printed yet).
    #[arg(short = 'I', long = "show-info")]
    pub show_info: bool,
    /// Print only the file's header.
    #[arg(long = "header-only")]
    pub header_only: bool,
    /// Resolve source lines (DWARF; slower).
    #[arg(long)]
    pub srcline: bool,
    /// Show inlined functions (DWARF; slower).
    #[arg(long)]
    pub inline: bool,
    /// Export instead of a text report: folded, flamegraph, firefox, speedscope, pprof.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Where to write an export (default: standard output).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Kernel symbols from this file instead of /proc/kallsyms.
    #[arg(long)]
    pub kallsyms: Option<PathBuf>,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// Flags of `perfkit script`.
#[derive(clap::Args, Debug, Clone)]
#[command(about = "Print every sample of a recorded profile, one per line (like `perf script`)")]
pub struct ScriptArgs {
    /// The profile to read.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    pub input: PathBuf,
    /// Fields to print: comm,tid,pid,cpu,time,period,event,ip,sym,symoff,dso,srcline;
    /// `+field` / `-field` add to or take from the defaults.
    #[arg(
        short = 'F',
        long = "fields",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub fields: Vec<String>,
    /// Which samples: commands, pids, tids, CPUs, time.
    #[command(flatten)]
    pub only: SampleFilters,
    /// Timestamps in nanoseconds.
    #[arg(long)]
    pub ns: bool,
    /// Timestamps relative to the first sample.
    #[arg(long)]
    pub reltime: bool,
    /// Timestamps relative to the previous sample.
    #[arg(long)]
    pub deltatime: bool,
    /// Leave out the callchains.
    #[arg(short = 'G', long = "hide-call-graph")]
    pub hide_call_graph: bool,
    /// Print the file's header first (perf's lines).
    #[arg(long)]
    pub header: bool,
    /// Read a file that belongs to another user.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Dump every raw record instead (type, size, fields).
    #[arg(short = 'D', long = "dump-raw-trace")]
    pub dump: bool,
    /// One JSON object per sample (fields documented in the README).
    #[arg(long)]
    pub json: bool,
    /// Kernel symbols from this file instead of /proc/kallsyms.
    #[arg(long)]
    pub kallsyms: Option<PathBuf>,
    /// Show the functions inlined at each callchain address (DWARF; slower), innermost
    /// first, as `name (inlined)`.
    #[arg(long)]
    pub inline: bool,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

fn parse_graph(s: &str) -> Result<(GraphMode, Option<f64>, Option<bool>)> {
    let mut parts = s.split(',');
    let mode = match parts.next().unwrap_or("graph") {
        "graph" => GraphMode::Graph,
        "fractal" => GraphMode::Fractal,
        "flat" => GraphMode::Flat,
        "folded" => GraphMode::Folded,
        "none" => GraphMode::None,
        "caller" | "callee" => GraphMode::Graph,
        other => bail!(
            "-g {s}: unknown mode `{other}` (graph, flat, folded, fractal, caller, callee, none)"
        ),
    };
    let mut threshold = None;
    let mut order = match s.split(',').next() {
        Some("caller") => Some(true),
        Some("callee") => Some(false),
        _ => None,
    };
    for p in parts {
        match p {
            "caller" => order = Some(true),
            "callee" => order = Some(false),
            n => {
                threshold = Some(
                    n.parse::<f64>()
                        .with_context(|| format!("-g {s}: `{n}` is not a threshold"))?,
                )
            }
        }
    }
    Ok((mode, threshold, order))
}

fn write_out(
    path: &Option<PathBuf>,
    f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    match path {
        Some(p) => {
            let file = std::fs::File::create(p).with_context(|| format!("-o {}", p.display()))?;
            let mut w = std::io::BufWriter::new(file);
            f(&mut w).with_context(|| format!("writing {}", p.display()))?;
            w.flush()?;
        }
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            f(&mut w)?;
            w.flush()?;
        }
    }
    Ok(())
}

/// A missing input says what to do, as perf does, instead of an ENOENT chain.
fn require_input(path: &Path) -> Result<()> {
    if !path.exists() && path.as_os_str() != "-" {
        bail!(
            "{}: no such file (record one first: `perfkit record -- COMMAND`, or name \
             another with -i)",
            path.display()
        );
    }
    Ok(())
}

/// Open `path` and build its profile, with a progress bar on a terminal for large files
/// (unless `quiet`).
fn load_profile(path: &Path, opts: &LoadOptions, quiet: bool) -> Result<(Profile, Diagnostics)> {
    require_input(path)?;
    let file = open(path)?;
    load_file(&file, path, opts, quiet)
}

/// [`load_profile`] of a file already open.
fn load_file(
    file: &perfkit_data::PerfData,
    path: &Path,
    opts: &LoadOptions,
    quiet: bool,
) -> Result<(Profile, Diagnostics)> {
    let mut show = None;
    let mut shown = 0;
    let loaded = load_with_progress(file, opts, |done, total| {
        let show = *show
            .get_or_insert_with(|| !quiet && std::io::stderr().is_terminal() && total > 16 << 20);
        if show && done * 100 / total >= shown + 5 {
            shown = done * 100 / total;
            eprint!("\rreading {}: {shown:3}%", path.display());
            let _ = std::io::stderr().flush();
        }
    });
    if show == Some(true) {
        eprintln!("\rreading {}: 100%", path.display());
    }
    loaded.with_context(|| format!("{}", path.display()))
}

/// Exit status after output: an error for a truncated or corrupt file.
fn exit_code(path: &Path, diag: Diagnostics) -> Result<u8> {
    match diag.error {
        Some(e) => Err(anyhow::Error::new(e).context(format!(
            "{}: the report shows what was read before this error",
            path.display()
        ))),
        None => Ok(0),
    }
}

/// The `(name, value)` pairs of an attr as perf's `perf_event_attr__fprintf` gives them.
fn attr_fields(attr: &perfkit::sys::perf_event_attr) -> Vec<(String, String)> {
    perfkit_events::attr_lines(attr)
        .iter()
        .map(|l| {
            let name = l.get(2..34).unwrap_or(l).trim_end().to_string();
            let value = l.get(35..).unwrap_or("").to_string();
            (name, value)
        })
        .collect()
}

/// The input of report: `-i`, else standard input when it is a pipe (as perf), else
/// perf.data.
fn report_input(input: &Option<PathBuf>) -> PathBuf {
    match input {
        Some(p) => p.clone(),
        None => {
            use std::os::unix::fs::FileTypeExt;
            let stdin_is_pipe = std::fs::metadata("/dev/stdin")
                .map(|m| m.file_type().is_fifo())
                .unwrap_or(false);
            PathBuf::from(if stdin_is_pipe { "-" } else { "perf.data" })
        }
    }
}

/// perf's ownership check: a file that is neither ours nor root's is refused without -f.
fn check_owner(path: &Path, force: bool) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if force || path.as_os_str() == "-" {
        return Ok(());
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let me = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0);
    if meta.uid() != me && meta.uid() != 0 {
        bail!(
            "File {} not owned by current user or root (use -f to override)",
            path.display()
        );
    }
    Ok(())
}

/// A file opened for the header, stats or tasks: a stream is read into memory first (these
/// walk it more than once).
fn open_rewindable(path: &Path) -> Result<perfkit_data::PerfData> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
            .context("reading standard input")?;
        return perfkit_data::PerfData::from_bytes(bytes).context("standard input");
    }
    Ok(open(path)?)
}

/// Run `perfkit report`.
pub fn run_report(args: ReportArgs) -> Result<u8> {
    let input = report_input(&args.input);
    check_owner(&input, args.force)?;
    if args.stats || args.tasks || args.mmaps || args.header_only {
        require_input(&input)?;
        let file = open_rewindable(&input)?;
        let mut text = String::new();
        if args.header || args.header_only {
            text.push_str(&header_text(&file, &input, args.header_only));
        }
        if args.header_only {
        } else if args.stats {
            let stats = perfkit_report::stats::Stats::of(&file)
                .with_context(|| format!("{}", input.display()))?;
            text.push_str(&stats.render());
        } else {
            let tasks = perfkit_report::tasks::Tasks::of(&file)
                .with_context(|| format!("{}", input.display()))?;
            text.push_str(&tasks.render(args.mmaps));
        }
        write_out(&None, |w| w.write_all(text.as_bytes()))?;
        return Ok(0);
    }
    let mut sort = Vec::new();
    let (mut overhead, mut show_samples, mut show_period) =
        (true, args.show_samples, args.show_total_period);
    let mut keys: Vec<String> = args.sort.clone();
    if !args.fields.is_empty() {
        overhead = false;
        let mut field_keys = Vec::new();
        for f in &args.fields {
            match f.trim() {
                "overhead" | "overhead_children" => overhead = true,
                "sample" => show_samples = true,
                "period" => show_period = true,
                k => field_keys.push(k.to_string()),
            }
        }
        if keys.is_empty() {
            keys = field_keys;
        }
    }
    if keys.is_empty() && args.fields.is_empty() {
        keys = vec!["comm".into(), "dso".into(), "sym".into()];
    }
    for k in &keys {
        sort.push(
            SortKey::parse(k.trim())
                .with_context(|| format!("--sort: unknown key `{k}` (keys: {})", SortKey::NAMES))?,
        );
    }
    let cpus = match &args.only.cpu {
        Some(list) => cpu_list(list).context("--cpu")?,
        None => Vec::new(),
    };
    let mut load = LoadOptions::default();
    load.srcline = args.srcline || sort.contains(&SortKey::Srcline);
    load.inline = args.inline;
    load.kallsyms = args.kallsyms.clone();
    let (profile, diag) = if args.header {
        // The header first, from the same bytes the report reads (a stream is read once).
        let file = open_rewindable(&input)?;
        print!("{}", header_text(&file, &input, true));
        load_file(&file, &input, &load, args.quiet)?
    } else {
        load_profile(&input, &load, args.quiet)?
    };
    let time = time_ranges(args.only.time.as_deref(), &profile)?;
    for d in &diag.warnings {
        eprintln!("perfkit: {d}");
    }
    if let Some(fmt) = &args.format {
        let title = format!(
            "perfkit: {}",
            profile
                .events
                .first()
                .map_or("samples", |e| e.name.as_str())
        );
        match fmt.as_str() {
            "folded" => write_out(&args.output, |w| export::folded::write(&profile, w))?,
            "flamegraph" | "svg" => write_out(&args.output, |w| {
                export::flamegraph::write(&profile, &title, w)
            })?,
            "firefox" => write_out(&args.output, |w| {
                export::firefox::write(&profile, "perfkit", diag.interval_ns, w)
            })?,
            "speedscope" => write_out(&args.output, |w| {
                export::speedscope::write(&profile, &title, w)
            })?,
            "pprof" => write_out(&args.output, |w| export::pprof::write(&profile, w))?,
            other => bail!(
                "--format {other}: unknown format (folded, flamegraph, firefox, speedscope, pprof)"
            ),
        }
        if let Some(o) = &args.output {
            eprintln!("perfkit: wrote {}", o.display());
        }
        return exit_code(&input, diag);
    }
    let has_chains = profile.events.iter().any(|e| e.callchain)
        || profile.stacks.iter().any(|s| s.parent.is_some());
    // As perf: the children column needs callchains, whatever --children says.
    let children = !args.no_children && has_chains;
    let (graph, threshold, order) = match &args.call_graph {
        Some(g) => parse_graph(g)?,
        None => (GraphMode::Graph, None, None),
    };
    // perf checks the attrs of a file before reading it; a pipe's come with its data, too
    // late to refuse, so there it just prints no graphs.
    let pipe_format = std::fs::File::open(&input)
        .and_then(|mut f| {
            let mut h = [0u8; 16];
            std::io::Read::read_exact(&mut f, &mut h)?;
            Ok(u64::from_le_bytes(h[8..16].try_into().unwrap_or_default()) == 16)
        })
        .unwrap_or(true);
    if args.call_graph.is_some() && graph != GraphMode::None && !has_chains && !pipe_format {
        // perf prints its first lines, then refuses.
        print!(
            "# To display the perf.data header info, please use --header/--header-only options.\n#\n"
        );
        bail!(
            "-g: {} has no callchains (record with -g or --call-graph), or use -g none",
            input.display()
        );
    }
    let opts = ReportOptions {
        sort,
        children: children && (args.children || !pipe_format),
        graph: if has_chains { graph } else { GraphMode::None },
        graph_threshold: threshold.unwrap_or(0.5),
        // perf sets up a pipe's report before its attrs arrive: no children column unless
        // asked for, callchains still in the caller order it chose for children mode.
        caller_order: if pipe_format && !args.children && !args.no_children && has_chains {
            order.or(Some(true))
        } else {
            order
        },
        percent_limit: args.percent_limit,
        show_samples,
        overhead,
        show_period,
        filter: Filter {
            comms: args.only.comm.clone(),
            pids: args.only.pid.clone(),
            tids: args.only.tid.clone(),
            dsos: args.dso.clone(),
            symbols: args.symbol.clone(),
            cpus,
            time,
        },
        ..ReportOptions::default()
    };
    let mut opts = opts;
    // As perf: a file of tracepoints only is sorted by their text unless told otherwise
    // (not a pipe: perf decides before the stream's tracing data arrives).
    if args.sort.is_empty()
        && !pipe_format
        && args.fields.is_empty()
        && !profile.events.is_empty()
        && profile.events.iter().all(|e| e.trace.is_some())
    {
        opts.sort = vec![SortKey::Trace];
    }
    let sections = report::build(&profile, &opts);
    if !args.quiet {
        for n in report::notes(&profile) {
            eprintln!("perfkit: {n}");
        }
    }
    let text = report::render(&profile, &sections, &opts);
    write_out(&None, |w| w.write_all(text.as_bytes()))?;
    exit_code(&input, diag)
}

/// perf's header lines for `file` read from `path`.
fn header_text(file: &perfkit_data::PerfData, path: &Path, pipe_features: bool) -> String {
    let meta = if path.as_os_str() == "-" {
        std::fs::metadata("/dev/stdin")
    } else {
        std::fs::metadata(path)
    };
    perfkit_report::header::render(
        file,
        meta.and_then(|m| m.modified()).ok(),
        &attr_fields,
        pipe_features,
    )
}

/// The `--time` ranges of `spec` in `profile` (none: every sample).
fn time_ranges(spec: Option<&str>, profile: &Profile) -> Result<Vec<(u64, u64)>> {
    let Some(spec) = spec else {
        return Ok(Vec::new());
    };
    let first = profile.samples.iter().map(|s| s.time).min().unwrap_or(0);
    let last = profile.samples.iter().map(|s| s.time).max().unwrap_or(0);
    perfkit_report::timespec::parse(spec, first, last).context("--time")
}

/// Run `perfkit script`.
pub fn run_script(args: ScriptArgs) -> Result<u8> {
    if args.dump {
        let file = open(&args.input)?;
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        perfkit_report::dump::dump_raw(&file, perfkit_engine::describe_attr, &mut out)
            .and_then(|()| out.flush().map_err(perfkit_report::LoadError::Write))
            .with_context(|| format!("{}", args.input.display()))?;
        return Ok(0);
    }
    check_owner(&args.input, args.force)?;
    let spec = script::FieldSpec::parse(&args.fields)
        .map_err(|f| anyhow::anyhow!("-F: unknown field `{f}` (fields: {})", Field::NAMES))?;
    let mut fields = spec.explicit.clone().unwrap_or_default();
    let mut load = LoadOptions::default();
    load.srcline = fields.contains(&Field::Srcline) || spec.add.contains(&Field::Srcline);
    load.inline = args.inline;
    load.kallsyms = args.kallsyms.clone();
    let (profile, diag) = if args.header {
        let file = open_rewindable(&args.input)?;
        print!("{}", header_text(&file, &args.input, true));
        load_file(&file, &args.input, &load, args.quiet)?
    } else {
        load_profile(&args.input, &load, args.quiet)?
    };
    for d in &diag.warnings {
        eprintln!("perfkit: {d}");
    }
    let defaults = spec.explicit.is_none();
    let has_cpu = profile.samples.iter().any(|s| s.cpu.is_some());
    // A recording without timestamps (perf record --per-thread) prints no time column, as
    // perf's defaults leave it out when the samples have no PERF_SAMPLE_TIME.
    let has_time = profile.samples.iter().any(|s| s.time != 0);
    let no_time = |f: Vec<Field>| -> Vec<Field> {
        f.into_iter()
            .filter(|f| has_time || *f != Field::Time)
            .collect()
    };
    if defaults {
        fields = spec.apply(no_time(Field::defaults(has_cpu)));
    }
    if fields.contains(&Field::Cpu) && !has_cpu && !profile.samples.is_empty() {
        let ev = profile.events.first().map_or("", |e| e.name.as_str());
        bail!("Samples for '{ev}' event do not have CPU attribute set. Cannot print 'cpu' field.");
    }
    if args.only.cpu.is_some() && !has_cpu {
        bail!("File does not contain CPU events. Remove -C option to proceed.");
    }
    let filter = Filter {
        comms: args.only.comm.clone(),
        pids: args.only.pid.clone(),
        tids: args.only.tid.clone(),
        cpus: match &args.only.cpu {
            Some(list) => cpu_list(list).context("--cpu")?,
            None => Vec::new(),
        },
        time: time_ranges(args.only.time.as_deref(), &profile)?,
        ..Filter::default()
    };
    let time_fmt = script::TimeFormat {
        ns: args.ns,
        base: if args.deltatime {
            script::TimeBase::Previous
        } else if args.reltime {
            script::TimeBase::First
        } else {
            script::TimeBase::Absolute
        },
    };
    write_out(&None, |w| {
        let mut text = String::with_capacity(1 << 16);
        let mut sw = script::ScriptWriter::new(&profile, &fields)
            .with_time_format(time_fmt)
            .with_callchains(!args.hide_call_graph);
        if defaults {
            sw = sw.with_trace_fields(spec.apply(no_time(Field::tracepoint_defaults(has_cpu))));
        }
        for s in profile.samples.iter().filter(|s| filter.keep(&profile, s)) {
            if args.json {
                text.push_str(&script::sample_json(&profile, s).to_string());
                text.push('\n');
            } else {
                sw.sample(s, &mut text);
            }
            if text.len() > 1 << 15 {
                w.write_all(text.as_bytes())?;
                text.clear();
            }
        }
        w.write_all(text.as_bytes())
    })?;
    exit_code(&args.input, diag)
}

/// A `--cpu` filter list (`0,2-3`): any CPU numbers, the file may come from a bigger machine.
fn cpu_list(list: &str) -> Result<Vec<u32>> {
    let any: Vec<u32> = (0..=u32::from(u16::MAX)).collect();
    Ok(perfkit::cpus::parse_list(list, &any)?)
}
