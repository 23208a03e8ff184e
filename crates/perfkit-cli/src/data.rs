//! `perfkit data convert --to-json FILE`: a perf.data file in perf's JSON layout
//! (`perfkit_report::export::perf_json`), as `perf data convert --to-json` writes it.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use perfkit_report::export::perf_json::{self, JsonHeaders};
use perfkit_report::load::{LoadOptions, load, open};

/// Arguments of `perfkit data`.
#[derive(Args, Debug)]
pub struct DataArgs {
    #[command(subcommand)]
    cmd: DataCmd,
}

#[derive(Subcommand, Debug)]
enum DataCmd {
    /// Convert a perf.data file to another format (JSON: `--to-json FILE`).
    Convert(ConvertArgs),
}

/// Arguments of `perfkit data convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Input file name.
    #[arg(short, long, default_value = "perf.data")]
    pub input: PathBuf,
    /// Write perf's JSON form of the samples to this file.
    #[arg(long, value_name = "FILE")]
    pub to_json: Option<PathBuf>,
    /// Overwrite an existing output file.
    #[arg(short, long)]
    pub force: bool,
    /// Be more verbose.
    #[arg(short, long)]
    pub verbose: bool,
}

/// Run `perfkit data`.
pub fn run(args: DataArgs) -> anyhow::Result<u8> {
    match args.cmd {
        DataCmd::Convert(c) => convert(c),
    }
}

fn convert(args: ConvertArgs) -> anyhow::Result<u8> {
    let Some(out_path) = &args.to_json else {
        bail!("give an output format: --to-json FILE (--to-ctf is not supported)");
    };
    if out_path.exists() && !args.force {
        // perf 6.1's words and status (-1).
        return Err(crate::exit_error(
            255,
            anyhow::anyhow!(
                "Output file exists. Use --force to overwrite it. ({})",
                out_path.display()
            ),
        ));
    }
    let file = open(&args.input)?;
    let (profile, _) = load(&file, &LoadOptions::default())
        .with_context(|| format!("reading {}", args.input.display()))?;
    let f = &file.features;
    let headers = JsonHeaders {
        captured_on: std::fs::metadata(&args.input)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| utc(d.as_secs())),
        data: (!file.pipe).then(|| {
            let d = file.data_section();
            (d.start, d.end - d.start)
        }),
        hostname: f.hostname.clone(),
        os_release: f.osrelease.clone(),
        arch: f.arch.clone(),
        cpu_desc: f.cpudesc.clone(),
        cpuid: f.cpuid.clone(),
        nrcpus: f.nrcpus,
        perf_version: f.version.clone(),
        cmdline: f.cmdline.clone(),
    };
    let out = std::fs::File::create(out_path)
        .with_context(|| format!("creating {}", out_path.display()))?;
    let mut out = std::io::BufWriter::new(out);
    let n = perf_json::write(&profile, &headers, &mut out)
        .and_then(|n| out.flush().map(|()| n))
        .with_context(|| format!("writing {}", out_path.display()))?;
    let size = std::fs::metadata(out_path).map_or(0, |m| m.len());
    eprintln!(
        "[ perfkit data convert: Converted '{}' into JSON data '{}' ]",
        args.input.display(),
        out_path.display()
    );
    eprintln!(
        "[ perfkit data convert: Converted and wrote {:.3} MB ({n} samples) ]",
        size as f64 / (1024.0 * 1024.0)
    );
    Ok(0)
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = perfkit_report::header::civil_date(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc(1_709_251_199), "2024-02-29T23:59:59Z");
    }
}
