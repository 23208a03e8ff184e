//! `perfkit diff OLD NEW [NEW...]`: what changed between profiles (like `perf diff`), or a
//! differential flamegraph / diff-folded export.

use anyhow::{Result, bail};
use perfkit_report::diff::{self, Compute, Key};
use perfkit_report::load::LoadOptions;
use std::path::PathBuf;

use crate::report::{load_profile, write_out};

/// Flags of `perfkit diff`, named as perf names them.
#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "Compare profiles: the baseline's share of each symbol and how it changed",
    after_help = "Examples:\n  perfkit diff perf.data.old perf.data\n  perfkit diff -c ratio old.data new.data\n  perfkit diff -b -F -p old.data new.data\n  perfkit diff -d myprog --percentage relative old.data new.data\n  perfkit diff --format flamegraph --output diff.svg old.data new.data"
)]
pub struct DiffArgs {
    /// The baseline, then one or more newer profiles (default: perf.data.old perf.data).
    pub files: Vec<PathBuf>,
    /// What to compute: delta, delta-abs (default), ratio, wdiff:W1,W2.
    #[arg(short = 'c', long = "compute", default_value = "delta-abs")]
    pub compute: String,
    /// Match and show entries by these keys (default dso,sym; also comm, pid).
    #[arg(short = 's', long = "sort", value_delimiter = ',')]
    pub sort: Vec<String>,
    /// Show the period of each entry in each file.
    #[arg(short = 'p', long = "period")]
    pub period: bool,
    /// Show how each value is computed (perf's formula column).
    #[arg(short = 'F', long = "formula")]
    pub formula: bool,
    /// Only entries both the baseline and a new file have.
    #[arg(short = 'b', long = "baseline-only")]
    pub baseline_only: bool,
    /// Sort by file N's column first (0: the baseline's period; default 1).
    #[arg(short = 'o', long = "order", value_name = "N", default_value_t = 1)]
    pub order: usize,
    /// Only entries of these shared objects.
    #[arg(short = 'd', long = "dsos", value_delimiter = ',')]
    pub dsos: Vec<String>,
    /// Only entries of these commands.
    #[arg(short = 'C', long = "comms", value_delimiter = ',')]
    pub comms: Vec<String>,
    /// Only entries of these symbols.
    #[arg(short = 'S', long = "symbols", value_delimiter = ',')]
    pub symbols: Vec<String>,
    /// How percentages are taken with -d/-C/-S: relative (of what they keep) or absolute
    /// (of each file's whole period, perf diff's default).
    #[arg(long, default_value = "absolute")]
    pub percentage: String,
    /// Text output (the default; accepted for perf compatibility).
    #[arg(long)]
    pub stdio: bool,
    /// Export instead: flamegraph (differential SVG) or folded (inferno's diff-folded
    /// lines `stack before after`), of the baseline and the first new file.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Where to write (default: standard output).
    #[arg(long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// No progress bar.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// Run `perfkit diff`.
pub fn run(args: DiffArgs) -> Result<u8> {
    let compute = Compute::parse(&args.compute).map_err(|e| anyhow::anyhow!("-c: {e}"))?;
    if !matches!(args.percentage.as_str(), "relative" | "absolute") {
        bail!("--percentage {}: use relative or absolute", args.percentage);
    }
    let mut keys = Vec::new();
    for k in &args.sort {
        match Key::parse(k.trim()) {
            Some(key) => keys.push(key),
            None => bail!("--sort: unknown key `{k}` (keys: dso, sym, comm, pid)"),
        }
    }
    let files = match args.files.len() {
        0 => vec![PathBuf::from("perf.data.old"), PathBuf::from("perf.data")],
        1 => vec![PathBuf::from("perf.data"), args.files[0].clone()],
        _ => args.files.clone(),
    };
    let mut profiles = Vec::new();
    for f in &files {
        let (p, diag) = load_profile(f, &LoadOptions::default(), args.quiet)?;
        for w in &diag.warnings {
            eprintln!("perfkit: {}: {w}", f.display());
        }
        profiles.push(p);
    }
    if let Some(fmt) = &args.format {
        let (old, new) = (&profiles[0], &profiles[1]);
        return match fmt.as_str() {
            "flamegraph" | "svg" => {
                let title = format!(
                    "Differential flamegraph: {} -> {}",
                    files[0].display(),
                    files[1].display()
                );
                write_out(&args.output, |w| {
                    diff::differential_flamegraph(old, new, &title, w)
                })?;
                Ok(0)
            }
            "folded" => {
                let text = diff::differential_folded(old, new)?;
                write_out(&args.output, |w| w.write_all(&text))?;
                Ok(0)
            }
            f => bail!("--format {f}: use flamegraph or folded (or none for the text table)"),
        };
    }
    if args.order >= files.len() {
        bail!(
            "-o {}: there are {} files; give 0 (the baseline) to {}",
            args.order,
            files.len(),
            files.len() - 1
        );
    }
    let mut opts = diff::Options {
        compute,
        periods: args.period,
        formula: args.formula,
        baseline_only: args.baseline_only,
        order: args.order,
        relative: args.percentage == "relative",
        dsos: args.dsos.clone(),
        comms: args.comms.clone(),
        symbols: args.symbols.clone(),
        ..diff::Options::default()
    };
    if !keys.is_empty() {
        opts.keys = keys;
    }
    let refs: Vec<&perfkit_report::Profile> = profiles.iter().collect();
    let diffs = diff::diff(&refs, &opts);
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    write_out(&args.output, |w| {
        diff::write_stdio(w, &diffs, &names, &opts)
    })?;
    Ok(0)
}
