//! `perfkit annotate`: each sampled function's instructions with the share of samples on
//! each, source lines between them (like `perf annotate --stdio`), or JSON.

use anyhow::{Context, Result, bail};
use perfkit_report::annotate::{self, PercentType, StdioOptions, Syntax};
use perfkit_report::load::LoadOptions;
use perfkit_report::report::Filter;
use perfkit_symbols::{Options, Symbolizer};
use std::path::PathBuf;

use crate::report::{SampleFilters, cpu_list, load_profile, report_input, time_ranges, write_out};

/// Flags of `perfkit annotate`, named as perf names them.
#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "Show the instructions and source lines of sampled functions with the share of samples on each",
    after_help = "Examples:\n  perfkit annotate --stdio\n  perfkit annotate -s hot --stdio\n  perfkit annotate --dso app --no-source --asm-raw\n  perfkit annotate -s hot --format json"
)]
pub struct AnnotateArgs {
    /// Only this symbol (also the first positional argument, as perf takes it).
    #[arg(short = 's', long = "symbol")]
    pub symbol: Option<String>,
    /// The symbol, positionally (`perfkit annotate hot`).
    #[arg(conflicts_with = "symbol")]
    pub symbol_pos: Option<String>,
    /// The profile to read (default perf.data).
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Only functions of these shared objects (path or file name).
    #[arg(short = 'd', long = "dso", value_delimiter = ',')]
    pub dso: Vec<String>,
    /// Text output (the default; accepted for perf compatibility).
    #[arg(long)]
    pub stdio: bool,
    /// Interleave source lines from DWARF (the default).
    #[arg(long, overrides_with = "no_source")]
    pub source: bool,
    /// No source lines.
    #[arg(long = "no-source")]
    pub no_source: bool,
    /// Print a summary of source lines by their share first.
    #[arg(short = 'l', long = "print-line")]
    pub print_line: bool,
    /// What percentages are relative to: local-period (default), global-period,
    /// local-hits, global-hits.
    #[arg(long = "percent-type", default_value = "local-period")]
    pub percent_type: String,
    /// Show each instruction's encoding.
    #[arg(long = "asm-raw")]
    pub asm_raw: bool,
    /// Disassembler style: att (default) or intel.
    #[arg(short = 'M', long = "disassembler-style", default_value = "att")]
    pub style: String,
    /// Output format: stdio (default) or json.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Where to write (default: standard output).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// The running kernel's image (ELF with symbols) for kernel functions; without it they
    /// are read from /proc/kcore (root only).
    #[arg(short = 'k', long = "vmlinux")]
    pub vmlinux: Option<PathBuf>,
    /// The kernel memory image to read kernel functions from (default /proc/kcore).
    #[arg(long = "kcore", hide = true)]
    pub kcore: Option<PathBuf>,
    /// Which samples: commands, pids, tids, CPUs, time.
    #[command(flatten)]
    pub only: SampleFilters,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

impl AnnotateArgs {
    /// The defaults, for `input` and one symbol: `report --annotate SYMBOL`.
    pub fn for_symbol(input: PathBuf, symbol: String) -> AnnotateArgs {
        AnnotateArgs {
            symbol: Some(symbol),
            symbol_pos: None,
            input: Some(input),
            dso: Vec::new(),
            stdio: true,
            source: true,
            no_source: false,
            print_line: false,
            percent_type: "local-period".into(),
            asm_raw: false,
            style: "att".into(),
            format: None,
            output: None,
            vmlinux: None,
            kcore: None,
            only: SampleFilters::default(),
            quiet: true,
        }
    }
}

/// Run `perfkit annotate`.
pub fn run(args: AnnotateArgs) -> Result<u8> {
    let percent_type = PercentType::parse(&args.percent_type).with_context(|| {
        format!(
            "--percent-type {}: use local-period, global-period, local-hits or global-hits",
            args.percent_type
        )
    })?;
    let syntax = match args.style.as_str() {
        "att" => Syntax::Att,
        "intel" => Syntax::Intel,
        s => bail!("-M {s}: use att or intel"),
    };
    let json = match args.format.as_deref() {
        None | Some("stdio") => false,
        Some("json") => true,
        Some(f) => bail!("--format {f}: use stdio or json"),
    };
    let input = report_input(&args.input);
    let (profile, diag) = load_profile(&input, &LoadOptions::default(), args.quiet)?;
    for d in &diag.warnings {
        eprintln!("perfkit: {d}");
    }
    let cpus = match &args.only.cpu {
        Some(list) => cpu_list(list).context("--cpu")?,
        None => Vec::new(),
    };
    let filter = Filter {
        comms: args.only.comm.clone(),
        pids: args.only.pid.clone(),
        tids: args.only.tid.clone(),
        cpus,
        time: time_ranges(args.only.time.as_deref(), &profile, false)?,
        ..Filter::default()
    };
    let opts = annotate::Options {
        symbol: args.symbol.clone().or(args.symbol_pos.clone()),
        dsos: args.dso.clone(),
        source: !args.no_source,
        percent_type,
        syntax,
        filter,
        vmlinux: args.vmlinux.clone(),
        kcore: args.kcore.clone(),
        // A pipe's BPF sections are empty (perf writes them before any program is read).
        bpf: perfkit_data::PerfData::open(&input)
            .map(|f| perfkit_report::bpf_code::BpfCode::from_file(&f))
            .unwrap_or_default(),
    };
    let mut sym = Symbolizer::new(Options {
        buildid_dir: Some(perfkit_symbols::buildid_cache::default_dir()),
        ..Options::default()
    });
    let (anns, skipped) = annotate::annotate(&profile, &mut sym, &opts);
    for s in &skipped {
        eprintln!(
            "perfkit: cannot annotate {} ({}): {}",
            s.symbol, s.dso, s.reason
        );
    }
    if anns.is_empty() {
        match &opts.symbol {
            Some(s) => bail!(
                "{}: no samples in a symbol named '{s}' that can be annotated (see `perfkit \
                 report --stdio` for the sampled symbols)",
                input.display()
            ),
            None => bail!("{}: no samples that can be annotated", input.display()),
        }
    }
    write_out(&args.output, |w| {
        if json {
            serde_json::to_writer_pretty(&mut *w, &anns).map_err(std::io::Error::other)?;
            w.write_all(b"\n")
        } else {
            annotate::write_stdio(
                w,
                &anns,
                StdioOptions {
                    asm_raw: args.asm_raw,
                    print_line: args.print_line,
                },
            )
        }
    })?;
    Ok(0)
}
