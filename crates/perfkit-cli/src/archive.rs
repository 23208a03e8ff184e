//! `perfkit archive [FILE]`: pack the build-id cache entries of the files a perf.data file
//! names into `FILE.tar.bz2`, to unpack into `~/.debug` where the report is made (as
//! `perf archive`). Files not in the cache yet are added first when their build id still
//! matches the recording's.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use perfkit_symbols::buildid_cache::{BuildIdCache, build_id_of_file};

/// Arguments of `perfkit archive`.
#[derive(Args, Debug)]
pub struct ArchiveArgs {
    /// The perf.data file.
    #[arg(default_value = "perf.data")]
    pub input: PathBuf,
}

/// Run `perfkit archive`.
pub fn run(args: ArchiveArgs) -> anyhow::Result<u8> {
    let data = perfkit_data::PerfData::open(&args.input)
        .with_context(|| format!("reading {}", args.input.display()))?;
    let cache = BuildIdCache::default_location();
    let mut paths = Vec::new();
    // As perf's archive script: the objects `buildid-list --with-hits` names, and the
    // kernel's cached kallsyms among them.
    let hits = crate::buildid::objects_hit(&args.input)?;
    for e in &data.features.build_ids {
        if !hits.contains(&e.filename) {
            continue;
        }
        if e.filename == "[kernel.kallsyms]" {
            let hex = perfkit_symbols::build_id_hex(&e.build_id);
            let link = PathBuf::from(format!(".build-id/{}/{}", &hex[..2], &hex[2..]));
            let dir = PathBuf::from(format!("[kernel.kallsyms]/{hex}"));
            if cache.dir().join(&link).exists() && cache.dir().join(&dir).is_dir() {
                paths.extend([link, dir]);
            }
            continue;
        }
        if !e.filename.starts_with('/') {
            continue;
        }
        if cache.entry_paths(&e.build_id).is_none() {
            let path = std::path::Path::new(&e.filename);
            let same = build_id_of_file(path).is_some_and(|id| {
                perfkit_symbols::build_id_hex(&id) == perfkit_symbols::build_id_hex(&e.build_id)
            });
            if same {
                cache.add_as(path, &e.build_id)?;
            }
        }
        if let Some(p) = cache.entry_paths(&e.build_id) {
            paths.extend(p);
        }
    }
    if paths.is_empty() {
        bail!("no build-ids found in {}", args.input.display());
    }
    let mut out = args.input.clone().into_os_string();
    out.push(".tar.bz2");
    let out = PathBuf::from(out);
    let status = std::process::Command::new("tar")
        .arg("cjf")
        .arg(&out)
        .arg("-C")
        .arg(cache.dir())
        .args(&paths)
        .status()
        .context("running tar")?;
    if !status.success() {
        bail!("tar failed ({status}) writing {}", out.display());
    }
    println!("Now please run:\n");
    println!("$ tar xvf {} -C ~/.debug\n", out.display());
    println!("wherever you need to run 'perf report' on.");
    Ok(0)
}
