//! `perfkit inject`: copy a perf.data stream, file or pipe mode either way, adding build ids
//! (`-b`) or jitted code (`--jit`), over `perfkit_data::inject`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use perfkit_data::inject::{self, InjectOptions};
use perfkit_data::{PerfData, PerfDataWriter, WriteOptions};

/// Arguments of `perfkit inject`.
#[derive(Args, Debug)]
pub struct InjectArgs {
    /// Input file name (`-`, the default, for standard input in pipe mode).
    #[arg(short, long, default_value = "-")]
    pub input: PathBuf,
    /// Output file name (`-`, the default, for standard output in pipe mode).
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
    /// Add build ids of the files mapped.
    #[arg(short = 'b', long)]
    pub build_ids: bool,
    /// Name jitted code: write an ELF file per function of each jitdump (`jit-PID.dump`)
    /// the recording mapped, and map those instead (record with -k 1).
    #[arg(short = 'j', long)]
    pub jit: bool,
    /// Be more verbose.
    #[arg(short, long)]
    pub verbose: bool,
    /// Don't complain about a file owned by another user.
    #[arg(short, long)]
    pub force: bool,
}

/// Run `perfkit inject`.
pub fn run(args: InjectArgs) -> anyhow::Result<u8> {
    let input =
        PerfData::open(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let events = inject::file_events(&input);
    let opts = WriteOptions {
        compress: None,
        chunk: 1 << 20,
        ..WriteOptions::default()
    };
    let mut out = if args.output.as_os_str() == "-" {
        PerfDataWriter::pipe(Box::new(std::io::stdout()), events, opts)
    } else {
        PerfDataWriter::create(&args.output, events, opts)
    }
    .with_context(|| format!("creating {}", args.output.display()))?;
    let n = inject::copy(
        &input,
        &mut out,
        InjectOptions {
            build_ids: args.build_ids,
            jit: args.jit,
        },
    )?;
    let cmdline: Vec<String> = std::env::args().collect();
    out.finish(&cmdline)
        .with_context(|| format!("writing {}", args.output.display()))?;
    if args.verbose {
        eprintln!("perfkit inject: {n} records copied");
    }
    Ok(0)
}
