//! Reading a perf.data file into a [`Profile`] (the one place the CLI touches the file).

use anyhow::{Result, bail};
use perfkit_report::Profile;
use std::path::{Path, PathBuf};

/// How to build the profile.
#[derive(Clone, Debug, Default)]
#[allow(
    dead_code,
    reason = "read by the perf.data loader, which lands with perfkit-data"
)]
pub struct LoadOptions {
    /// Resolve source lines.
    pub srcline: bool,
    /// Resolve inlined functions.
    pub inline: bool,
    /// Kernel symbols from this file.
    pub kallsyms: Option<PathBuf>,
    /// Show a progress bar on standard error for large files.
    pub progress: bool,
}

/// What the reader had to say besides the profile.
#[derive(Debug, Default)]
pub struct Diagnostics {
    /// Things skipped or unusual (unknown records, features).
    pub warnings: Vec<String>,
    /// The nominal sampling interval (for the Firefox export).
    pub interval_ns: u64,
    /// Set when the file was cut short: the report shows what was read, then this error.
    pub error: Option<anyhow::Error>,
}

impl Diagnostics {
    /// Exit status after output: an error for a truncated or corrupt file.
    pub fn exit_code(&self) -> Result<u8> {
        match &self.error {
            Some(e) => Err(anyhow::anyhow!("{e:#}")),
            None => Ok(0),
        }
    }
}

/// Read `path` and build the symbolized profile.
pub fn load_profile(path: &Path, _opts: &LoadOptions) -> Result<(Profile, Diagnostics)> {
    bail!(
        "{}: reading perf.data files needs the perfkit-data reader, which is not built into \
         this version yet",
        path.display()
    )
}

/// `script -D`: dump every raw record.
pub fn dump_raw(path: &Path) -> Result<u8> {
    bail!(
        "{}: reading perf.data files needs the perfkit-data reader, which is not built into \
         this version yet",
        path.display()
    )
}
