//! `perfkit report` and `perfkit script`: read a perf.data file (perfkit's or perf's),
//! build the symbolized profile once, and print it or export it.

use anyhow::{Context, Result, bail};
use perfkit_report::load::{Diagnostics, LoadOptions, load_with_progress, open};
use perfkit_report::report::{self, Filter, GraphMode, GroupView, ReportOptions, SortKey};
use perfkit_report::script::{self, Field};
use perfkit_report::{Profile, export};
use perfkit_report::{script_events, script_fields, script_python};
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
    /// Unnamed code in files without symbols: `address` (perf's one row per address) or
    /// `function` (the addresses of one function, as the file's `.eh_frame` bounds it, as
    /// one row named `lib.so+0xSTART`). Default: `address` in the text report, `function`
    /// in --format exports.
    #[arg(long = "unnamed", value_parser = ["address", "function"])]
    pub unnamed: Option<String>,
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
    /// Show the events of a group side by side (the default for recorded groups; a file
    /// without groups shows all its events as one).
    #[arg(long, overrides_with = "no_group")]
    pub group: bool,
    /// Show every event of a group in a section of its own.
    #[arg(long = "no-group")]
    pub no_group: bool,
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
    /// With --header/--header-only: the topology sections in full (CPUs, NUMA nodes,
    /// caches, memory blocks), as perf's -I.
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
    /// With --format flamegraph: boxes drawn per stack at most (deeper stacks keep their
    /// roots and leaf, the frames between become one `… N frames` box); 0: no bound.
    #[arg(long, value_name = "N", default_value_t = export::flamegraph::DEFAULT_MAX_DEPTH)]
    pub max_depth: usize,
    /// Kernel symbols from this file instead of /proc/kallsyms.
    #[arg(long)]
    pub kallsyms: Option<PathBuf>,
    /// Kernel symbols from this vmlinux ELF file (used when its build id is the recorded
    /// kernel's, as perf).
    #[arg(short = 'k', long = "vmlinux", value_name = "FILE")]
    pub vmlinux: Option<PathBuf>,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// One level per sort key, each entry the total of those under it (not with -F).
    #[arg(long)]
    pub hierarchy: bool,
    /// Percentages of filtered entries (--comm --pid --tid --dso --symbols): `absolute`
    /// (perf's default: of every sample) or `relative` (of the samples kept).
    #[arg(long, value_name = "relative|absolute", default_value = "absolute")]
    pub percentage: String,
    /// Per-thread counter values (from `record -s`) after the report.
    #[arg(short = 'T', long = "threads")]
    pub threads: bool,
    /// Use at most this many callchain entries, leaf first (perf's default 127).
    #[arg(long = "max-stack", default_value_t = 127)]
    pub max_stack: usize,
    /// Callers first in call graphs (perf's inverted call graph); with --format flamegraph,
    /// an icicle graph (roots at the top, stacks growing down).
    #[arg(short = 'G', long = "inverted")]
    pub inverted: bool,
    /// A sample whose chain passes a function matching this regex counts for that
    /// function (as perf: its callees are dropped in callee order, its callers in caller
    /// order).
    #[arg(long = "ignore-callees", value_name = "REGEX")]
    pub ignore_callees: Option<String>,
    /// Sort by the first caller matching this regex too (adds the `parent` key; perf's
    /// default pattern `^sys_|^do_page_fault`).
    #[arg(short = 'p', long = "parent", value_name = "REGEX")]
    pub parent: Option<String>,
    /// Only entries with a parent (with --parent / --sort parent).
    #[arg(short = 'x', long = "exclude-other")]
    pub exclude_other: bool,
    /// Show the kernel (sys) and user (usr) shares of each entry's overhead.
    #[arg(long = "show-cpu-utilization", alias = "showcpuutilization")]
    pub cpu_util: bool,
    /// More detail: shared objects by their path (perf's `-v`).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Symbol names as the symbol tables spell them (C++ and Rust names mangled).
    #[arg(long = "no-demangle", overrides_with = "demangle")]
    pub no_demangle: bool,
    /// Demangle C++ and Rust names (the default).
    #[arg(long)]
    pub demangle: bool,
    /// Look the recorded binaries and their debug files up under this directory.
    #[arg(long, value_name = "DIR")]
    pub symfs: Option<PathBuf>,
    /// `--sort srcline`: source files with their directories (perf prints the file name).
    #[arg(long = "full-source-path")]
    pub full_source_path: bool,
    /// perf's objdump for annotation (accepted; the report does not disassemble).
    #[arg(long, value_name = "PATH")]
    pub objdump: Option<PathBuf>,
    /// Only entries whose symbol name contains this string.
    #[arg(long = "symbol-filter", value_name = "STR")]
    pub symbol_filter: Option<String>,
    /// Annotate this symbol instead of the report (as `perfkit annotate -s SYMBOL`).
    #[arg(long, value_name = "SYMBOL")]
    pub annotate: Option<String>,
    /// With pprof input: only samples with this label (KEY=VALUE, e.g. comm=nginx,
    /// cgroup=/system.slice/nginx.service, host=web-3); repeat to require several.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub label: Vec<perfkit_report::pprof_in::LabelFilter>,
    /// More pprof profiles (files or directories) to merge with -i's (a fleet's or an
    /// agent's output: `perfkit report -i profiles/ other.pb.gz`).
    #[arg(value_name = "PPROF")]
    pub more: Vec<PathBuf>,
}

/// Flags of `perfkit script`.
#[derive(clap::Args, Debug, Clone)]
#[command(about = "Print every sample of a recorded profile, one per line (like `perf script`)")]
pub struct ScriptArgs {
    /// The profile to read.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    pub input: PathBuf,
    /// Unnamed code in files without symbols: `address` (perf's, the default) or
    /// `function` (named after the function's start, `lib.so+0xSTART`, where the file's
    /// `.eh_frame` bounds it).
    #[arg(long = "unnamed", value_parser = ["address", "function"])]
    pub unnamed: Option<String>,
    /// Fields to print (perf's names: comm,tid,pid,time,cpu,event,trace,ip,sym,dso,addr,
    /// symoff,srcline,period,iregs,uregs,data_src,weight,phys_addr,misc,tod,
    /// data_page_size,code_page_size,ins_lat,flags, ...); `+field` / `-field` add to or
    /// take from the defaults; `sw:` etc. before the list names the event type.
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
    /// `srcline`: source files with their directories (perf prints the file name).
    #[arg(long = "full-source-path")]
    pub full_source_path: bool,
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
    /// perf's latency layout: the command in 8 columns, the CPU as a bare number.
    #[arg(short = 'L', long = "Latency")]
    pub latency: bool,
    /// Only samples whose symbol is one of these.
    #[arg(short = 'S', long = "symbols", value_delimiter = ',')]
    pub symbols: Vec<String>,
    /// Print at most this many callchain entries per sample.
    #[arg(long = "max-stack")]
    pub max_stack: Option<usize>,
    /// Also print COMM, FORK and EXIT records.
    #[arg(long = "show-task-events")]
    pub show_task_events: bool,
    /// Also print MMAP and MMAP2 records.
    #[arg(long = "show-mmap-events")]
    pub show_mmap_events: bool,
    /// Also print context switch records.
    #[arg(long = "show-switch-events")]
    pub show_switch_events: bool,
    /// Also print NAMESPACES records.
    #[arg(long = "show-namespace-events")]
    pub show_namespace_events: bool,
    /// Also print LOST records.
    #[arg(long = "show-lost-events")]
    pub show_lost_events: bool,
    /// Also print FINISHED_ROUND records (every record then comes in file order, as in
    /// perf).
    #[arg(long = "show-round-events")]
    pub show_round_events: bool,
    /// Also print CGROUP records.
    #[arg(long = "show-cgroup-events")]
    pub show_cgroup_events: bool,
    /// Also print KSYMBOL and BPF_EVENT records.
    #[arg(long = "show-bpf-events")]
    pub show_bpf_events: bool,
    /// Run a Python script on the samples (perf's scripting interface: `process_event`,
    /// tracepoint handlers, `trace_begin`/`trace_end`, db-export tables), by `python3`.
    #[arg(short = 's', long = "script", value_name = "[python:]FILE.py")]
    pub script: Option<String>,
    /// Arguments for the script (`-s`), after `--`.
    #[arg(last = true, value_name = "SCRIPT-ARGS")]
    pub script_args: Vec<String>,
    /// Write each event's samples to INPUT.EVENT.dump instead of standard output.
    #[arg(long = "per-event-dump")]
    pub per_event_dump: bool,
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
    /// Kernel symbols from this vmlinux ELF file (used when its build id is the recorded
    /// kernel's, as perf).
    #[arg(short = 'k', long = "vmlinux", value_name = "FILE")]
    pub vmlinux: Option<PathBuf>,
    /// Show the functions inlined at each callchain address (DWARF; slower), innermost
    /// first, as `name (inlined)`.
    #[arg(long)]
    pub inline: bool,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// Whether the report will show callers first, decided before the file is read (so
/// assuming it has callchains) as below: perf's unwinder then walks DWARF chains root
/// first, which some inline frame names depend on.
fn unwind_caller_first(args: &ReportArgs, input: &Path) -> Result<bool> {
    let order = match &args.call_graph {
        Some(g) => parse_graph(g)?.2,
        None => None,
    };
    let order = if args.inverted { Some(true) } else { order };
    let children = !args.no_children;
    let order = order.or((args.hierarchy && children).then_some(true));
    let pipe = std::fs::File::open(input)
        .and_then(|mut f| {
            let mut h = [0u8; 16];
            std::io::Read::read_exact(&mut f, &mut h)?;
            Ok(u64::from_le_bytes(h[8..16].try_into().unwrap_or_default()) == 16)
        })
        .unwrap_or(true);
    let order = if pipe && !args.children && !args.no_children {
        order.or(Some(true))
    } else {
        order
    };
    Ok(order.unwrap_or(children && (args.children || !pipe) && !args.hierarchy))
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

pub(crate) fn write_out(
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
pub(crate) fn load_profile(
    path: &Path,
    opts: &LoadOptions,
    quiet: bool,
) -> Result<(Profile, Diagnostics)> {
    require_input(path)?;
    let file = open(path)?;
    load_file(&file, path, opts, quiet, None)
}

/// [`load_profile`] of a file already open.
fn load_file(
    file: &perfkit_data::PerfData,
    path: &Path,
    opts: &LoadOptions,
    quiet: bool,
    sink: Option<&mut perfkit_report::build::SampleSink<'_>>,
) -> Result<(Profile, Diagnostics)> {
    let mut show = None;
    let mut shown = 0;
    // (Streamed samples go to standard output as they come: no progress on a terminal.)
    let quiet = quiet || (sink.is_some() && std::io::stdout().is_terminal());
    let progress = |done: usize, total: usize| {
        let show = *show
            .get_or_insert_with(|| !quiet && std::io::stderr().is_terminal() && total > 16 << 20);
        if show && done * 100 / total >= shown + 5 {
            shown = done * 100 / total;
            eprint!("\rreading {}: {shown:3}%", path.display());
            let _ = std::io::stderr().flush();
        }
    };
    let loaded = match sink {
        Some(sink) => perfkit_report::load::stream(file, opts, sink, progress),
        None => load_with_progress(file, opts, progress),
    };
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
pub(crate) fn report_input(input: &Option<PathBuf>) -> PathBuf {
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
    // -G/--inverted is perf's caller-first call graph in the text report and an icicle graph
    // in the flamegraph; the other exports have no such picture.
    if let Some(fmt) = args
        .format
        .as_deref()
        .filter(|f| args.inverted && *f != "flamegraph" && *f != "svg")
    {
        bail!(
            "--inverted with --format {fmt}: only --format flamegraph draws inverted (an icicle \
             graph); leave --inverted out, or export a flamegraph"
        );
    }
    if (1..3).contains(&args.max_depth) {
        bail!(
            "--max-depth {}: a stack needs 3 boxes at least (the comm, `… N frames`, the leaf); \
             0 draws every frame",
            args.max_depth
        );
    }
    let input = report_input(&args.input);
    let pprof = pprof_inputs(&input, &args)?;
    if pprof.is_none() {
        check_owner(&input, args.force)?;
    }
    if let Some(symbol) = &args.annotate {
        let mut a = crate::annotate::AnnotateArgs::for_symbol(input, symbol.clone());
        a.only = args.only.clone();
        a.dso = args.dso.clone();
        return crate::annotate::run(a);
    }
    if args.stats || args.tasks || args.mmaps || args.header_only {
        require_input(&input)?;
        let file = open_rewindable(&input)?;
        let mut text = String::new();
        if args.header || args.header_only {
            text.push_str(&header_text(
                &file,
                &input,
                args.header_only,
                args.show_info,
            ));
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
    if args.hierarchy && !args.fields.is_empty() {
        bail!("--hierarchy and --fields options cannot be used together");
    }
    let relative = match args.percentage.as_str() {
        "relative" => true,
        "absolute" => false,
        other => bail!("--percentage {other}: use relative or absolute"),
    };
    if keys.is_empty() && args.fields.is_empty() {
        keys = vec!["comm".into(), "dso".into(), "sym".into()];
    }
    // perf shows the IPC column with symbol sizes.
    if keys.iter().any(|k| k.trim() == "symbol_size")
        && !keys.iter().any(|k| k.trim() == "ipc_null")
    {
        keys.push("ipc_null".into());
    }
    if args.parent.is_some() && !keys.iter().any(|k| k.trim() == "parent") {
        keys.push("parent".into());
    }
    for re in [&args.parent, &args.ignore_callees].into_iter().flatten() {
        report::pattern(re).with_context(|| format!("`{re}` is not a regular expression"))?;
    }
    for k in &keys {
        match k.trim() {
            // Output columns named as sort keys: perf shows them and sorts by them first,
            // which is the report's order anyway.
            "overhead" | "overhead_children" => {}
            "sample" => show_samples = true,
            "period" => show_period = true,
            b if SortKey::BRANCH_KEYS.contains(&b) => bail!(
                "Invalid --sort key: `{b}': it sorts branch stacks, and this file has none \
                 (record them with -b or -j where the PMU has a branch stack)"
            ),
            k => sort.push(SortKey::parse(k).with_context(|| {
                format!("--sort: unknown key `{k}` (keys: {})", SortKey::NAMES)
            })?),
        }
    }
    let cpus = match &args.only.cpu {
        Some(list) => cpu_list(list).context("--cpu")?,
        None => Vec::new(),
    };
    let mut load = LoadOptions::default();
    load.srcline =
        args.srcline || sort.contains(&SortKey::Srcline) || sort.contains(&SortKey::Srcfile);
    load.no_demangle = args.no_demangle;
    // perf's -v demangles C++ names with their parameters (libiberty's DMGL_PARAMS).
    load.demangle_params = args.verbose > 0;
    load.symfs = args.symfs.clone();
    load.inline = args.inline;
    load.kallsyms = args.kallsyms.clone();
    load.caller_order = unwind_caller_first(&args, &input)?;
    // A report adds samples up: fold like ones as they are read, so memory follows the
    // distinct stacks, not the file (the timeline exports need each sample's time; the
    // folded stacks, the flamegraph and pprof only sums, and pprof the last sample's time,
    // which the folded profile keeps). `--time` drops the samples outside its
    // ranges as they are read (percent ranges take the first and last sample times from
    // the header, or a first pass, as perf takes them), so it folds too.
    // `PERFKIT_REPORT_KEEP=1` keeps every sample and filters them afterwards (the
    // reference path the tests check the folded one against).
    let keep = keep_every_report_sample();
    let sums_only = args
        .format
        .as_deref()
        .is_none_or(|f| matches!(f, "folded" | "flamegraph" | "svg" | "pprof"));
    if sums_only && !keep {
        let by_cpu = sort.contains(&SortKey::Cpu) || !cpus.is_empty();
        load.aggregate = Some(perfkit_report::fold::Aggregation::new(by_cpu));
    }
    // Tracepoint samples keep their RAW data only where the report shows it (the trace
    // key, perf's default for a file of tracepoints only, which the loader decides from
    // the file's events); they fold like other samples, those of the trace key by the
    // text of their row. (The exports have no place for them.)
    let default_keys = args.sort.is_empty() && args.fields.is_empty() && args.parent.is_none();
    load.no_raw =
        !keep && (args.format.is_some() || !sort.contains(&SortKey::Trace) && !default_keys);
    load.raw_only_in_tracepoint_files = !keep && !sort.contains(&SortKey::Trace) && default_keys;
    let time_spec = args
        .only
        .time
        .as_deref()
        .filter(|_| pprof.is_none() && !keep);
    let needs_span = time_spec.is_some_and(|t| t.contains('%'));
    load.vmlinux = vmlinux_arg(args.vmlinux.as_ref())?;
    let mut threads = None;
    let mut time_read = None;
    let (profile, diag) = if let Some(paths) = &pprof {
        let p = perfkit_report::pprof_in::load(paths, &args.label)?;
        (p, Diagnostics::default())
    } else if args.header || args.threads || needs_span {
        // The header first, from the same bytes the report reads (a stream is read once).
        require_input(&input)?;
        let file = open_rewindable(&input)?;
        if let Some(spec) = time_spec {
            let time = file_time_ranges(spec, &file, false)?;
            load.time = time.clone();
            time_read = Some(time);
        }
        if args.header {
            print!("{}", header_text(&file, &input, true, args.show_info));
        }
        if args.threads {
            threads = Some(
                perfkit_report::thread_values::ThreadValues::of(&file)
                    .with_context(|| format!("{}", input.display()))?,
            );
        }
        load_file(&file, &input, &load, args.quiet, None)?
    } else {
        if let Some(spec) = time_spec {
            let time = perfkit_report::timespec::parse(spec, None, false).context("--time")?;
            load.time = time.clone();
            time_read = Some(time);
        }
        load_profile(&input, &load, args.quiet)?
    };
    let mut profile = profile;
    let by_function = match args.unnamed.as_deref() {
        Some(u) => u == "function",
        // One box per address shreds a flame graph: the exports group by function.
        None => args.format.is_some(),
    };
    if by_function {
        perfkit_report::unnamed_functions::group_by_function(&mut profile);
    }
    let time = match time_read {
        Some(t) => t,
        None => time_ranges(args.only.time.as_deref(), &profile, false)?,
    };
    if args.format.is_some() && !time.is_empty() {
        // (The exports show the samples of the --time ranges, as the report does.)
        let keeps = |s: &perfkit_report::Sample| perfkit_report::timespec::keeps(&time, s.time);
        profile.samples.retain(keeps);
    }
    for d in &diag.warnings {
        eprintln!("perfkit: {d}");
    }
    if let Some(fmt) = &args.format {
        let title = export::flamegraph::default_title(&profile);
        match fmt.as_str() {
            "folded" => write_out(&args.output, |w| export::folded::write(&profile, w))?,
            "flamegraph" | "svg" => {
                let mut opts = export::flamegraph::Options::default();
                opts.inverted = args.inverted;
                opts.max_depth = args.max_depth;
                write_out(&args.output, |w| {
                    export::flamegraph::write_with(&profile, &opts, w)
                })?
            }
            "firefox" => write_out(&args.output, |w| {
                export::firefox::write(&profile, "perfkit", diag.interval_ns, w)
            })?,
            "speedscope" => write_out(&args.output, |w| {
                export::speedscope::write_with_interval(&profile, &title, diag.interval_ns, w)
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
    let pipe_format = pprof.is_none()
        && std::fs::File::open(&input)
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
    if !cpus.is_empty() && !pipe_format {
        if let Err(e) = open_rewindable(&input).and_then(|f| every_event_has_cpus(&f)) {
            // perf prints its first lines, then refuses (and exits 0; perfkit fails).
            print!(
                "# To display the perf.data header info, please use --header/--header-only options.\n#\n"
            );
            return Err(e);
        }
    }
    let filter = Filter {
        comms: args.only.comm.clone(),
        pids: args.only.pid.clone(),
        tids: args.only.tid.clone(),
        dsos: args.dso.clone(),
        symbols: args.symbol.clone(),
        cpus,
        time,
        ..Filter::default()
    };
    // (--hierarchy keeps every level, with the notes all the same.)
    let (elided, notes) = perfkit_report::elide::elide(&sort, &filter);
    let sort = if args.hierarchy { sort } else { elided };
    // perf's default order (callers first with the children column) is decided before
    // --hierarchy turns that column off.
    let order = if args.inverted { Some(true) } else { order };
    let order = order.or((args.hierarchy && children).then_some(true));
    let mut opts = ReportOptions {
        sort,
        children: children && (args.children || !pipe_format) && !args.hierarchy,
        relative,
        hierarchy: args.hierarchy,
        notes,
        max_stack: args.max_stack,
        ignore_callees: args.ignore_callees.clone(),
        cpu_util: args.cpu_util,
        symbol_filter: args.symbol_filter.clone(),
        exclude_other: args.exclude_other,
        long_dso: args.verbose > 0,
        full_source_path: args.full_source_path,
        sym_origin: (args.verbose > 0).then(|| {
            (
                perfkit_symbols::buildid_cache::default_dir(),
                args.symfs.clone(),
            )
        }),
        group: if args.no_group {
            GroupView::Off
        } else if args.group {
            GroupView::Forced
        } else {
            GroupView::Recorded
        },
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
        filter,
        time_slices: args.only.time.clone(),
        ..ReportOptions::default()
    };
    if let Some(re) = &args.parent {
        opts.parent_pattern = vec![re.clone()];
    }
    // As perf: a file of tracepoints only is sorted by their text unless told otherwise
    // (not a pipe: perf decides before the stream's tracing data arrives).
    if args.sort.is_empty()
        && args.parent.is_none()
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
    let mut text = report::render(&profile, &sections, &opts);
    if let Some(t) = threads {
        text.push_str(&t.render());
    }
    write_out(&None, |w| w.write_all(text.as_bytes()))?;
    exit_code(&input, diag)
}

/// The pprof files or directories to merge when the input is pprof (a directory, a
/// gzipped or `.pb`/`.pprof` file, or extra files given), else None (perf.data).
fn pprof_inputs(input: &Path, args: &ReportArgs) -> Result<Option<Vec<PathBuf>>> {
    let given_input = args.input.is_some() || !args.more.is_empty();
    let first = (args.input.is_some() || args.more.is_empty()).then(|| input.to_path_buf());
    let mut all: Vec<PathBuf> = first.into_iter().chain(args.more.iter().cloned()).collect();
    if !given_input || !all.iter().any(|p| perfkit_report::pprof_in::is_pprof(p)) {
        if !args.label.is_empty() {
            bail!("--label filters pprof profiles: give pprof files or a directory of them");
        }
        return Ok(None);
    }
    for p in &all {
        require_input(p)?;
        if !perfkit_report::pprof_in::is_pprof(p) {
            bail!(
                "{}: not a pprof profile; pprof profiles (and directories of them) merge with \
                 each other, a perf.data file is reported alone",
                p.display()
            );
        }
    }
    if args.stats || args.tasks || args.mmaps || args.header || args.header_only {
        bail!("--stats, --tasks, --mmaps and --header read perf.data files, not pprof profiles");
    }
    all.dedup();
    Ok(Some(all))
}

/// perf's header lines for `file` read from `path`.
fn header_text(
    file: &perfkit_data::PerfData,
    path: &Path,
    pipe_features: bool,
    show_info: bool,
) -> String {
    let meta = if path.as_os_str() == "-" {
        std::fs::metadata("/dev/stdin")
    } else {
        std::fs::metadata(path)
    };
    perfkit_report::header::render_info(
        file,
        meta.and_then(|m| m.modified()).ok(),
        &attr_fields,
        pipe_features,
        show_info,
    )
}

/// The `--time` ranges of `spec` in `profile` (none: every sample); with `reltime` (script's
/// `--reltime`) they count from the first sample, as perf's.
pub(crate) fn time_ranges(
    spec: Option<&str>,
    profile: &Profile,
    reltime: bool,
) -> Result<Vec<(u64, u64)>> {
    let Some(spec) = spec else {
        return Ok(Vec::new());
    };
    let times = profile.samples.iter().map(|s| s.time).filter(|&t| t != 0);
    let span = times.clone().min().zip(times.max());
    perfkit_report::timespec::parse(spec, span, reltime).context("--time")
}

/// The `--time` ranges of `spec` in `file`, whose samples are not read yet: percent ranges
/// (and, with `reltime`, every range) count from the first and last sample times of the
/// header, else of a pass over the samples ([`perfkit_data::PerfData::sample_span`]).
pub(crate) fn file_time_ranges(
    spec: &str,
    file: &perfkit_data::PerfData,
    reltime: bool,
) -> Result<Vec<(u64, u64)>> {
    let span = if spec.contains('%') || reltime {
        file.sample_span()
            .context("--time: reading the sample times")?
    } else {
        None
    };
    perfkit_report::timespec::parse(spec, span, reltime).context("--time")
}

/// `PERFKIT_REPORT_KEEP=1`: `report` keeps every sample (no folding as they are read, the
/// `--time` filter applied afterwards): the reference path the folded one is checked
/// against.
fn keep_every_report_sample() -> bool {
    std::env::var_os("PERFKIT_REPORT_KEEP").is_some_and(|v| v == "1")
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
    let asked: Vec<Field> = spec
        .explicit
        .iter()
        .flatten()
        .chain(&spec.add)
        .copied()
        .collect();
    let mut load = LoadOptions::default();
    load.srcline = asked.contains(&Field::Srcline) || asked.contains(&Field::Other("srccode"));
    load.inline = args.inline;
    load.kallsyms = args.kallsyms.clone();
    load.vmlinux = vmlinux_arg(args.vmlinux.as_ref())?;
    // `--time` ranges in percent of the recording, or counted from its first sample
    // (`--reltime`), need the first and last sample times before the samples are read.
    let time_needs_span = args
        .only
        .time
        .as_deref()
        .is_some_and(|t| t.contains('%') || args.reltime);
    let file = if args.header {
        let file = open_rewindable(&args.input)?;
        print!("{}", header_text(&file, &args.input, true, false));
        file
    } else if time_needs_span {
        require_input(&args.input)?;
        open_rewindable(&args.input)?
    } else {
        require_input(&args.input)?;
        open(&args.input)?
    };
    if args.only.cpu.is_some() {
        every_event_has_cpus(&file)?;
    }
    let formats = script_events::formats(&file);
    let names: Vec<&str> = file.attrs.iter().map(|a| a.name.as_str()).collect();
    let clock = file.features.clock_data;
    let per_event = script_fields::resolve(&spec, &formats, &names, clock.is_some())
        .map_err(|m| anyhow::anyhow!("{m}"))?;
    let mut want = script_events::Want::none();
    want.details = per_event.iter().flatten().any(|f| f.needs_details());
    want.branch_names = per_event.iter().any(|f| {
        f.contains(&Field::Other("brstacksym"))
            || ((f.contains(&Field::Other("brstack")) || f.contains(&Field::Other("brstackoff")))
                && f.contains(&Field::Dso))
    });
    want.branch_offsets = per_event
        .iter()
        .any(|f| f.contains(&Field::Other("brstackoff")));
    want.addr_symbols = formats.iter().zip(&per_event).any(|(e, f)| {
        e.addr_is_data()
            && f.contains(&Field::Addr)
            && (f.contains(&Field::Sym) || f.contains(&Field::Dso))
    });
    // Python scripts get each sample's addr, weight and data_src as perf gives them.
    want.details |= args.script.is_some();
    want.insn = per_event
        .iter()
        .flatten()
        .any(|f| matches!(f, Field::Insn | Field::Insnlen));
    let has = |name| per_event.iter().flatten().any(|f| *f == Field::Other(name));
    want.branch_insn_len = has("brstackinsnlen");
    want.branch_insns = has("brstackinsn") || want.branch_insn_len;
    want.task = args.show_task_events;
    want.mmap = args.show_mmap_events;
    want.switch = args.show_switch_events;
    want.namespaces = args.show_namespace_events;
    want.lost = args.show_lost_events;
    want.cgroup = args.show_cgroup_events;
    want.bpf = args.show_bpf_events;
    want.rounds = args.show_round_events;
    let look = ScriptLook {
        args: &args,
        spec: &spec,
        formats: &formats,
        per_event: &per_event,
        clock,
    };
    // Side-band records, per-sample details and Python scripts stream too (in file
    // order with `--show-round-events`).
    let whole = keep_every_sample();
    let by_function = args.unnamed.as_deref() == Some("function");
    // (The streamed path names unnamed code after its functions as frames are made.)
    load.unnamed_functions = by_function && !whole;
    // (Standard input is read once: its columns are known only from agreeing attrs.)
    let rereadable = args.input.as_os_str() != "-";
    if !whole
        && let Some((has_cpu, has_time)) =
            perfkit_report::sample_columns::sample_columns(&file, rereadable)
    {
        let side = want.any().then_some(want);
        return stream_script(&args, &file, &load, &look, (has_cpu, has_time), side);
    }
    let (profile, diag, extras) = if want.any() {
        script_events::load(&file, &load, want)
            .with_context(|| format!("{}", args.input.display()))?
    } else {
        let (p, d) = load_file(&file, &args.input, &load, args.quiet, None)?;
        (p, d, script_events::Extras::default())
    };
    let mut profile = profile;
    if by_function {
        perfkit_report::unnamed_functions::group_by_function(&mut profile);
    }
    for d in &diag.warnings {
        eprintln!("perfkit: {d}");
    }
    let has_cpu = profile.samples.iter().any(|s| s.cpu.is_some());
    let has_time = profile.samples.iter().any(|s| s.time != 0);
    let fields = look.fields(has_cpu, has_time);
    if fields.contains(&Field::Cpu) && !has_cpu && !profile.samples.is_empty() {
        bail!(no_cpu_field(&profile));
    }
    if args.only.cpu.is_some() && !has_cpu {
        bail!("File does not contain CPU events. Remove -C option to proceed.");
    }
    let time = time_ranges(args.only.time.as_deref(), &profile, args.reltime)?;
    let filter = look.filter(time)?;
    let mut sw = look
        .writer(&profile, &fields, has_cpu, has_time)
        .with_extras(&extras);
    let keep_side = |e: &script_events::SideEvent| {
        filter.cpus.is_empty() || e.cpu.is_none_or(|c| filter.cpus.contains(&c))
    };
    if let Some((spec, path)) = python_script(&args)? {
        let mut samples = profile
            .samples
            .iter()
            .enumerate()
            .filter(|(_, s)| filter.keep(&profile, s));
        let status = script_python::run(&profile, &extras, &mut samples, path, &args.script_args)
            .with_context(|| format!("-s {spec}"))?;
        if !status.success() {
            bail!("-s {spec}: the script failed ({status})");
        }
        return exit_code(&args.input, diag);
    }
    if args.per_event_dump {
        let written =
            script::per_event_dump(&profile, &mut sw, &args.input, |s| filter.keep(&profile, s))
                .with_context(|| format!("--per-event-dump next to {}", args.input.display()))?;
        let mut text = String::new();
        for e in extras.side.iter().filter(|e| keep_side(e)) {
            sw.side_event(&profile, e, &mut text);
        }
        print!("{text}");
        print_dump_sizes(&written);
        return exit_code(&args.input, diag);
    }
    write_out(&None, |w| {
        let mut text = String::with_capacity(1 << 16);
        let mut side = extras.side.iter().peekable();
        for (i, s) in profile.samples.iter().enumerate() {
            while let Some(e) = side.next_if(|e| e.before <= i) {
                if keep_side(e) {
                    sw.side_event(&profile, e, &mut text);
                }
            }
            if !filter.keep(&profile, s) {
                continue;
            }
            if args.json {
                text.push_str(&script::sample_json(&profile, s).to_string());
                text.push('\n');
            } else {
                sw.sample_at(&profile, i, s, &mut text);
            }
            if text.len() > 1 << 15 {
                w.write_all(text.as_bytes())?;
                text.clear();
            }
        }
        for e in side.filter(|e| keep_side(e)) {
            sw.side_event(&profile, e, &mut text);
        }
        w.write_all(text.as_bytes())
    })?;
    exit_code(&args.input, diag)
}

/// `-s FILE.py` (or `python:FILE`): the flag and the script's path, checked; refuses
/// arguments after `--` without it.
fn python_script(args: &ScriptArgs) -> Result<Option<(&str, &Path)>> {
    let Some(spec) = &args.script else {
        if !args.script_args.is_empty() {
            bail!("arguments after `--` are for a script: name it with -s FILE.py");
        }
        return Ok(None);
    };
    let path = spec.strip_prefix("python:").unwrap_or(spec);
    if !path.ends_with(".py") && !spec.starts_with("python:") {
        bail!("-s {spec}: only Python scripts are supported (perl is not yet)");
    }
    if !script_python::available() {
        bail!("-s {spec}: python3 is not installed (perfkit runs scripts with it)");
    }
    Ok(Some((spec, Path::new(path))))
}

/// `PERFKIT_SCRIPT_KEEP=1`: `script` keeps every sample before writing any, even where it
/// could stream them (the reference path the streamed output is checked against).
fn keep_every_sample() -> bool {
    std::env::var_os("PERFKIT_SCRIPT_KEEP").is_some_and(|v| v == "1")
}

/// perf's refusal of `-F cpu` for samples without `PERF_SAMPLE_CPU`.
fn no_cpu_field(p: &Profile) -> String {
    let ev = p.events.first().map_or("", |e| e.name.as_str());
    format!("Samples for '{ev}' event do not have CPU attribute set. Cannot print 'cpu' field.")
}

/// What shapes script's text besides the samples: the flags and the file's events.
struct ScriptLook<'a> {
    args: &'a ScriptArgs,
    spec: &'a script::FieldSpec,
    formats: &'a [script_events::EventFormat],
    per_event: &'a [Vec<Field>],
    clock: Option<(u32, u32, u64, u64)>,
}

impl ScriptLook<'_> {
    /// The fields for samples with (or without) a CPU and a time.
    fn fields(&self, has_cpu: bool, has_time: bool) -> Vec<Field> {
        match &self.spec.explicit {
            Some(f) => f.clone(),
            None => self
                .spec
                .apply(without_time(Field::defaults(has_cpu), has_time)),
        }
    }

    /// Which samples to show; `time`: the `--time` ranges.
    fn filter(&self, time: Vec<(u64, u64)>) -> Result<Filter> {
        let only = &self.args.only;
        Ok(Filter {
            comms: only.comm.clone(),
            pids: only.pid.clone(),
            tids: only.tid.clone(),
            symbols: self.args.symbols.clone(),
            cpus: match &only.cpu {
                Some(list) => cpu_list(list).context("--cpu")?,
                None => Vec::new(),
            },
            time,
            ..Filter::default()
        })
    }

    /// The writer of `fields` for samples of `p`'s events.
    fn writer<'e>(
        &self,
        p: &Profile,
        fields: &[Field],
        has_cpu: bool,
        has_time: bool,
    ) -> script::ScriptWriter<'e> {
        let args = self.args;
        let time_fmt = script::TimeFormat {
            ns: args.ns,
            latency: args.latency,
            base: if args.deltatime {
                script::TimeBase::Previous
            } else if args.reltime {
                script::TimeBase::First
            } else {
                script::TimeBase::Absolute
            },
        };
        let mut sw = script::ScriptWriter::new(p, fields)
            .with_time_format(time_fmt)
            .with_callchains(!args.hide_call_graph)
            .with_full_source_path(args.full_source_path);
        let defaults = self.spec.explicit.is_none();
        if defaults {
            sw = sw.with_trace_fields(
                self.spec
                    .apply(without_time(Field::tracepoint_defaults(has_cpu), has_time)),
            );
        }
        if let Some(n) = args.max_stack {
            sw = sw.with_max_stack(n);
        }
        if let Some((_, _, wall, perf)) = self.clock {
            sw = sw.with_clock(wall, perf);
        }
        for (i, (e, f)) in self.formats.iter().zip(self.per_event).enumerate() {
            // perf's own defaults per event type where they differ from the common ones.
            if f.iter().any(|f| f.needs_details()) || (defaults && e.is_raw()) {
                sw = sw.with_event_fields(i, f.clone());
            }
        }
        sw
    }
}

/// A recording without timestamps (perf record --per-thread) prints no time column, as
/// perf's defaults leave it out when the samples have no PERF_SAMPLE_TIME.
fn without_time(fields: Vec<Field>, has_time: bool) -> Vec<Field> {
    fields
        .into_iter()
        .filter(|f| has_time || *f != Field::Time)
        .collect()
}

/// `script` without side-band records, per-sample details or Python: each sample is
/// written as it is built (to standard output, or with `--per-event-dump` to its event's
/// file) and then forgotten, so memory grows with the distinct stacks and threads, not
/// with the file.
fn stream_script(
    args: &ScriptArgs,
    file: &perfkit_data::PerfData,
    load: &LoadOptions,
    look: &ScriptLook<'_>,
    (has_cpu, has_time): (bool, bool),
    side: Option<script_events::Want>,
) -> Result<u8> {
    if args.only.cpu.is_some() && !has_cpu {
        bail!("File does not contain CPU events. Remove -C option to proceed.");
    }
    let python = python_script(args)?;
    let fields = look.fields(has_cpu, has_time);
    let time = match args.only.time.as_deref() {
        Some(spec) => file_time_ranges(spec, file, args.reltime)?,
        None => Vec::new(),
    };
    let filter = look.filter(time)?;
    // The events' formats and attrs, for the samples' own fields (details).
    let header = script_events::Extras::for_file(file);
    if let Some((spec, path)) = python {
        let cols = (has_cpu, has_time);
        return stream_python(args, file, load, &fields, &filter, cols, side, (spec, path));
    }
    if args.per_event_dump {
        let cols = (has_cpu, has_time);
        return stream_event_dump(args, file, load, look, &fields, &filter, cols, side);
    }
    // Text goes out in chunks written by another thread: the write system calls (a
    // third of the time on a pipe) overlap the building and formatting of the next.
    // Chunks of 512 KiB: each hand-over wakes the writer (a futex wake and a context
    // switch, which cost more than the write itself into /dev/null or a file when the
    // chunks were 64 KiB: 25,000 context switches for 500,000 samples, against 1,500);
    // 2 waiting at most bound the text to 2 MiB.
    const CHUNK: usize = 1 << 19;
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<String>(2);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<String>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> std::io::Result<()> {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            for mut text in full_rx {
                out.write_all(text.as_bytes())?;
                text.clear();
                let _ = empty_tx.send(text);
            }
            out.flush()
        });
        let mut text = String::with_capacity(CHUNK + (1 << 16));
        let mut sw = None;
        let (mut index, mut refused, mut failed) = (0usize, None, false);
        // Side-band records read but not printed yet: each goes before the sample its
        // `before` numbers, as the kept path prints them.
        let queue =
            std::cell::RefCell::new(std::collections::VecDeque::<script_events::SideEvent>::new());
        // In file order (`--show-round-events`): each sample's command as perf names it.
        let comms = std::cell::RefCell::new(script_events::SampleComms::default());
        // The samples' own fields (`-F addr`, `iregs`, ...), by sample number.
        let details = std::cell::RefCell::new(script_events::ByNumber::default());
        let keep_side = |e: &script_events::SideEvent| {
            filter.cpus.is_empty() || e.cpu.is_none_or(|c| filter.cpus.contains(&c))
        };
        let mut sink = |p: &Profile, samples: &[perfkit_report::Sample]| {
            if refused.is_some() || failed {
                return;
            }
            let sw = match &mut sw {
                Some(sw) => sw,
                None if fields.contains(&Field::Cpu) && !has_cpu => {
                    refused = Some(no_cpu_field(p));
                    return;
                }
                None => sw.insert(
                    look.writer(p, &fields, has_cpu, has_time)
                        .with_extras(&header),
                ),
            };
            let mut details = details.borrow_mut();
            for s in samples {
                index += 1;
                loop {
                    let e = {
                        let mut q = queue.borrow_mut();
                        match q.front() {
                            Some(e) if e.before < index => q.pop_front(),
                            _ => None,
                        }
                    };
                    let Some(e) = e else { break };
                    if keep_side(&e) {
                        sw.side_event(p, &e, &mut text);
                    }
                }
                let comm = comms.borrow_mut().at(index - 1).cloned();
                let detail = details.at(index - 1);
                if !filter.keep(p, s) {
                    continue;
                }
                if args.json {
                    text.push_str(&script::sample_json(p, s).to_string());
                    text.push('\n');
                } else {
                    sw.comm_for_next(comm);
                    sw.sample_with(p, s, detail, &mut text);
                }
                if text.len() >= CHUNK {
                    let next = empty_rx
                        .try_recv()
                        .unwrap_or_else(|_| String::with_capacity(CHUNK + (1 << 16)));
                    // The writer is gone only after a write failed.
                    if full_tx.send(std::mem::replace(&mut text, next)).is_err() {
                        failed = true;
                        return;
                    }
                }
            }
        };
        let loaded = match side {
            Some(want) => script_events::stream(
                file,
                load,
                want,
                script_events::StreamTo {
                    side: &mut |e| queue.borrow_mut().push_back(e),
                    comm: &mut |i, c| comms.borrow_mut().push(i, c),
                    detail: &mut |i, d| details.borrow_mut().push(i, d),
                },
                &mut sink,
            )
            .map(|(p, d, _)| (p, d))
            .with_context(|| format!("{}", args.input.display())),
            None => load_file(file, &args.input, load, args.quiet, Some(&mut sink)),
        };
        if !failed && refused.is_none() {
            // The side-band records after the last sample.
            let rest = queue.take();
            if let Ok((p, _)) = &loaded
                && !rest.is_empty()
            {
                let sw = sw.get_or_insert_with(|| {
                    look.writer(p, &fields, has_cpu, has_time)
                        .with_extras(&header)
                });
                for e in rest.iter().filter(|e| keep_side(e)) {
                    sw.side_event(p, e, &mut text);
                }
            }
            let _ = full_tx.send(text);
        }
        drop(full_tx);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let (_, diag) = loaded?;
        if let Some(why) = refused {
            bail!(why);
        }
        for d in &diag.warnings {
            eprintln!("perfkit: {d}");
        }
        written?;
        exit_code(&args.input, diag)
    })
}

/// [`stream_script`] with `--per-event-dump`: each sample goes to its event's file as it
/// is built. Side-band records (`side`) go to standard output after the samples, as the
/// kept path prints them (the writer's times, `--deltatime` and `--reltime`, then count
/// from the samples as there): they wait, the samples do not.
#[allow(clippy::too_many_arguments)]
fn stream_event_dump(
    args: &ScriptArgs,
    file: &perfkit_data::PerfData,
    load: &LoadOptions,
    look: &ScriptLook<'_>,
    fields: &[Field],
    filter: &Filter,
    (has_cpu, has_time): (bool, bool),
    side: Option<script_events::Want>,
) -> Result<u8> {
    let names = file.attrs.iter().map(|a| a.name.as_str());
    let mut dump = script::EventDump::create(&args.input, names)
        .with_context(|| format!("--per-event-dump next to {}", args.input.display()))?;
    let header = script_events::Extras::for_file(file);
    let mut sw = None;
    let (mut index, mut refused, mut failed) = (0usize, None, None);
    let comms = std::cell::RefCell::new(script_events::SampleComms::default());
    let details = std::cell::RefCell::new(script_events::ByNumber::default());
    let mut sink = |p: &Profile, samples: &[perfkit_report::Sample]| {
        if refused.is_some() || failed.is_some() {
            return;
        }
        let sw = match &mut sw {
            Some(sw) => sw,
            None if fields.contains(&Field::Cpu) && !has_cpu => {
                refused = Some(no_cpu_field(p));
                return;
            }
            None => sw.insert(
                look.writer(p, fields, has_cpu, has_time)
                    .with_extras(&header),
            ),
        };
        let mut details = details.borrow_mut();
        for s in samples {
            index += 1;
            let comm = comms.borrow_mut().at(index - 1).cloned();
            let detail = details.at(index - 1);
            if !filter.keep(p, s) {
                continue;
            }
            sw.comm_for_next(comm);
            if let Err(e) = dump.write_with(p, sw, s, detail) {
                failed = Some(e);
                return;
            }
        }
    };
    let mut side_events = Vec::new();
    let (profile, diag) = match side {
        Some(want) => script_events::stream(
            file,
            load,
            want,
            script_events::StreamTo {
                side: &mut |e| side_events.push(e),
                comm: &mut |i, c| comms.borrow_mut().push(i, c),
                detail: &mut |i, d| details.borrow_mut().push(i, d),
            },
            &mut sink,
        )
        .map(|(p, d, _)| (p, d))
        .with_context(|| format!("{}", args.input.display()))?,
        None => load_file(file, &args.input, load, args.quiet, Some(&mut sink))?,
    };
    if let Some(why) = refused {
        bail!(why);
    }
    if failed.is_none() && !side_events.is_empty() {
        let sw = sw.get_or_insert_with(|| {
            look.writer(&profile, fields, has_cpu, has_time)
                .with_extras(&header)
        });
        let mut text = String::new();
        for e in &side_events {
            if filter.cpus.is_empty() || e.cpu.is_none_or(|c| filter.cpus.contains(&c)) {
                sw.side_event(&profile, e, &mut text);
            }
        }
        write_out(&None, |w| w.write_all(text.as_bytes()))?;
    }
    let written = match failed {
        Some(e) => Err(e),
        None => dump.finish(),
    }
    .with_context(|| format!("--per-event-dump next to {}", args.input.display()))?;
    for d in &diag.warnings {
        eprintln!("perfkit: {d}");
    }
    print_dump_sizes(&written);
    exit_code(&args.input, diag)
}

/// [`stream_script`] with `-s FILE.py`: each sample goes to the script as it is built,
/// with its own fields (perf's `param_dict`), in the order the kept path feeds them.
#[allow(clippy::too_many_arguments)]
fn stream_python(
    args: &ScriptArgs,
    file: &perfkit_data::PerfData,
    load: &LoadOptions,
    fields: &[Field],
    filter: &Filter,
    (has_cpu, _): (bool, bool),
    want: Option<script_events::Want>,
    (spec, path): (&str, &Path),
) -> Result<u8> {
    let header = script_events::Extras::for_file(file);
    let mut session = script_python::Session::start(path, &args.script_args)
        .with_context(|| format!("-s {spec}"))?;
    let mut refused = None;
    let details = std::cell::RefCell::new(script_events::ByNumber::default());
    let mut index = 0usize;
    let mut sink = |p: &Profile, samples: &[perfkit_report::Sample]| {
        if refused.is_some() {
            return;
        }
        if fields.contains(&Field::Cpu) && !has_cpu && !samples.is_empty() {
            refused = Some(no_cpu_field(p));
            return;
        }
        let mut details = details.borrow_mut();
        for s in samples {
            index += 1;
            let detail = details.at(index - 1);
            if filter.keep(p, s) {
                session.sample(p, &header, s, detail);
            }
        }
    };
    let want = want.unwrap_or_else(script_events::Want::none);
    let loaded = script_events::stream(
        file,
        load,
        want,
        script_events::StreamTo {
            side: &mut |_| {},
            comm: &mut |_, _| {},
            detail: &mut |i, d| details.borrow_mut().push(i, d),
        },
        &mut sink,
    )
    .with_context(|| format!("{}", args.input.display()));
    let status = match &loaded {
        Ok((p, _, _)) => session.finish(p),
        Err(_) => session.finish(&Profile::default()),
    }
    .with_context(|| format!("-s {spec}"));
    let (_, diag, _) = loaded?;
    if let Some(why) = refused {
        bail!(why);
    }
    for d in &diag.warnings {
        eprintln!("perfkit: {d}");
    }
    let status = status?;
    if !status.success() {
        bail!("-s {spec}: the script failed ({status})");
    }
    exit_code(&args.input, diag)
}

/// `--per-event-dump`'s closing lines, as perf 6.1 prints them: its size is the file's
/// `fstat` before its stdio buffer (one block, `st_blksize`) is flushed, so the bytes of
/// whole blocks only.
fn print_dump_sizes(written: &[(PathBuf, u64, u64)]) {
    use std::os::unix::fs::MetadataExt;
    for (path, bytes, n) in written {
        let block = std::fs::metadata(path).map_or(4096, |m| m.blksize().max(1));
        println!(
            "[ perfkit script: Wrote {:.3} MB {} ({n} samples) ]",
            (bytes / block * block) as f64 / 1024.0 / 1024.0,
            path.display()
        );
    }
}

/// A `--cpu` filter list (`0,2-3`): any CPU numbers, the file may come from a bigger machine.
/// `-C` needs every event's samples to carry their CPU: perf 6.1 refuses a file with an
/// event whose samples do not (`perf_session__cpu_bitmap`), rather than filter some
/// events' samples and keep every sample of the others.
fn every_event_has_cpus(file: &perfkit_data::PerfData) -> Result<()> {
    if file
        .attrs
        .iter()
        .any(|a| a.attr.sample_type & perfkit::sys::PERF_SAMPLE_CPU == 0)
    {
        bail!("File does not contain CPU events. Remove -C option to proceed.");
    }
    Ok(())
}

pub(crate) fn cpu_list(list: &str) -> Result<Vec<u32>> {
    let any: Vec<u32> = (0..=u32::from(u16::MAX)).collect();
    Ok(perfkit::cpus::parse_list(list, &any)?)
}

/// `-k/--vmlinux FILE`: refused as perf refuses it when the file is not there.
fn vmlinux_arg(path: Option<&PathBuf>) -> Result<Option<PathBuf>> {
    match path {
        Some(p) if !p.is_file() => bail!(
            "Invalid file: {} (-k/--vmlinux wants the kernel's vmlinux ELF file)",
            p.display()
        ),
        p => Ok(p.cloned()),
    }
}
