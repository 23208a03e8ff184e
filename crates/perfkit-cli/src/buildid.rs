//! `perfkit buildid-list` (the build ids a perf.data file names) and `perfkit buildid-cache`
//! (perf's `~/.debug` cache: add, remove, list), over `perfkit_data` and
//! `perfkit_symbols::buildid_cache`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use perfkit_symbols::buildid_cache::BuildIdCache;

/// Arguments of `perfkit buildid-list`.
#[derive(Args, Debug)]
pub struct BuildIdListArgs {
    /// Input file name (`-` for a pipe).
    #[arg(short, long, default_value = "perf.data")]
    pub input: PathBuf,
    /// Print the running kernel's build id only.
    #[arg(short, long)]
    pub kernel: bool,
    /// The running kernel's map: build id, start and end of its text, `[kernel.kallsyms]`
    /// (perf's `--kernel-maps`).
    #[arg(short = 'm', long = "kernel-maps")]
    pub kernel_maps: bool,
    /// Only the objects samples fell in (perf's `--with-hits`).
    #[arg(short = 'H', long = "with-hits")]
    pub with_hits: bool,
    /// Don't complain about a file owned by another user.
    #[arg(short, long)]
    pub force: bool,
}

/// Arguments of `perfkit buildid-cache`.
#[derive(Args, Debug)]
pub struct BuildIdCacheArgs {
    /// Add these ELF files to the cache.
    #[arg(short, long, value_name = "FILE", value_delimiter = ',')]
    pub add: Vec<PathBuf>,
    /// Remove these files from the cache.
    #[arg(short, long, value_name = "FILE", value_delimiter = ',')]
    pub remove: Vec<PathBuf>,
    /// List the cache's entries: build id and path.
    #[arg(short, long)]
    pub list: bool,
    /// Say what is done for each file.
    #[arg(short, long)]
    pub verbose: bool,
}

/// Run `perfkit buildid-list`.
pub fn run_list(args: BuildIdListArgs) -> anyhow::Result<u8> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.kernel {
        let id = perfkit_data::synth::kernel_build_id()
            .context("the running kernel's build id (/sys/kernel/notes) is not readable")?;
        writeln!(out, "{}", perfkit_symbols::build_id_hex(&id))?;
        out.flush()?;
        return Ok(0);
    }
    if args.kernel_maps {
        // perf lists the modules' maps too; this kernel has none to compare with.
        let id = perfkit_data::synth::kernel_build_id()
            .context("the running kernel's build id (/sys/kernel/notes) is not readable")?;
        let (start, end) = perfkit_data::synth::kernel_text().unwrap_or((0, 0));
        writeln!(
            out,
            "{} {start:x} {end:x} [kernel.kallsyms]",
            perfkit_symbols::build_id_hex(&id)
        )?;
        out.flush()?;
        return Ok(0);
    }
    let data = perfkit_data::PerfData::open(&args.input)
        .with_context(|| format!("reading {}", args.input.display()))?;
    // -H: the objects the samples' addresses (and call chains) fell in, the kernel when
    // any address is the kernel's.
    let hits = if args.with_hits {
        Some(objects_hit(&args.input)?)
    } else {
        None
    };
    let mut shown = std::collections::HashSet::new();
    for e in &data.features.build_ids {
        if let Some(h) = &hits {
            // perf lists each object once here (the table may name one per process).
            if !h.contains(&e.filename) || !shown.insert((&e.build_id, &e.filename)) {
                continue;
            }
        }
        writeln!(
            out,
            "{} {}",
            perfkit_symbols::build_id_hex(&e.build_id),
            e.filename
        )?;
    }
    out.flush()?;
    Ok(0)
}

/// The objects a recording's samples (and their call chains) fell in, by the names of its
/// build-id table: `[kernel.kallsyms]` when any address is the kernel's. perf's
/// `--with-hits`, which `perf archive` packs.
pub fn objects_hit(input: &std::path::Path) -> anyhow::Result<std::collections::HashSet<String>> {
    let file = perfkit_report::load::open(input)?;
    let (profile, _) = perfkit_report::load::load(&file, &Default::default())
        .with_context(|| format!("reading {}", input.display()))?;
    let mut hit: std::collections::HashSet<String> =
        profile.images.iter().map(|i| i.path.clone()).collect();
    if profile
        .frames
        .iter()
        .any(|f| f.addr >= 0xffff_8000_0000_0000)
    {
        hit.insert("[kernel.kallsyms]".into());
    }
    Ok(hit)
}

/// Run `perfkit buildid-cache`.
pub fn run_cache(args: BuildIdCacheArgs) -> anyhow::Result<u8> {
    let cache = BuildIdCache::default_location();
    let mut status = 0;
    for f in &args.add {
        match cache.add(f) {
            Ok(hex) if args.verbose => println!("Adding {hex} {}: Ok", f.display()),
            Ok(_) => {}
            Err(e) => {
                eprintln!("perfkit buildid-cache: couldn't add {}: {e:#}", f.display());
                status = 1;
            }
        }
    }
    for f in &args.remove {
        match cache.remove(f) {
            Ok(hex) if args.verbose => println!("Removing {hex} {}: Ok", f.display()),
            Ok(_) => {}
            Err(e) => {
                eprintln!(
                    "perfkit buildid-cache: couldn't remove {}: {e:#}",
                    f.display()
                );
                status = 1;
            }
        }
    }
    if args.list {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        // As perf 6.1's `build_id_cache__valid_id`: only entries whose file still exists
        // with that build id (the kernel's: the running kernel's), the kernel named
        // `[kernel.kallsyms]`.
        let hex = |id: Vec<u8>| id.iter().map(|b| format!("{b:02x}")).collect::<String>();
        for e in cache.list() {
            let kernel = e.path.as_os_str() == "/[kernel.kallsyms]";
            let now = if kernel {
                perfkit_data::synth::kernel_build_id()
            } else {
                perfkit_symbols::buildid_cache::build_id_of_file(&e.path)
            };
            if now.map(hex).as_deref() != Some(e.build_id.as_str()) {
                continue;
            }
            if kernel {
                writeln!(out, "{} [kernel.kallsyms]", e.build_id)?;
            } else {
                writeln!(out, "{} {}", e.build_id, e.path.display())?;
            }
        }
        out.flush()?;
    }
    Ok(status)
}
