//! Running a program whose regions are measured by the marker library (`perfkit stat
//! --regions`): the configuration travels in the environment, the results come back as
//! one JSON line per process in a file.

use crate::report::RegionsReport;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The event list the marker library counts (perf's `-e` syntax).
pub const ENV_EVENTS: &str = "PERFKIT_REGIONS_EVENTS";
/// The file the marker library appends each process's [`RegionsReport`] to, as a JSON line.
pub const ENV_OUTPUT: &str = "PERFKIT_REGIONS_OUTPUT";

/// Append `report` to `path` as one JSON line (one `write(2)` with `O_APPEND`, so
/// processes of one run do not interleave).
pub fn append_report(path: &Path, report: &RegionsReport) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(report).map_err(std::io::Error::other)?;
    line.push(b'\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(&line)
}

/// Read and merge every process's report from `path`.
pub fn read_reports(path: &Path) -> std::io::Result<RegionsReport> {
    let text = std::fs::read_to_string(path)?;
    let mut all = RegionsReport::default();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let r: RegionsReport = serde_json::from_str(line).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}:{}: {e}", path.display(), n + 1),
            )
        })?;
        all.merge(r);
    }
    Ok(all)
}

/// Why a run under [`run`] failed.
#[derive(Debug)]
pub enum LaunchError {
    /// The marker library is not there.
    NoLibrary(PathBuf),
    /// The command did not start.
    Spawn(String, std::io::Error),
    /// The results file could not be read.
    Results(std::io::Error),
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::NoLibrary(p) => write!(
                f,
                "the marker library {} is missing: build it with `cargo build -p \
                 perfkit-markers` (or set PERFKIT_MARKERS_LIB)",
                p.display()
            ),
            LaunchError::Spawn(c, _) => write!(f, "cannot run {c}"),
            LaunchError::Results(_) => write!(f, "cannot read the region results"),
        }
    }
}

impl std::error::Error for LaunchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LaunchError::NoLibrary(_) => None,
            LaunchError::Spawn(_, e) | LaunchError::Results(e) => Some(e),
        }
    }
}

/// Run `argv` with the marker library `lib` preloaded (harmless when the program links it
/// already: the same file is loaded once) and `events` in its environment; wait for it
/// and return its exit status and every process's regions. A program that never calls
/// the marker API gives an empty report.
pub fn run(
    lib: &Path,
    events: &str,
    argv: &[OsString],
) -> Result<(ExitStatus, RegionsReport), LaunchError> {
    if !lib.is_file() {
        return Err(LaunchError::NoLibrary(lib.to_path_buf()));
    }
    let out = std::env::temp_dir().join(format!(
        "perfkit-regions-{}-{}.jsonl",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    let mut preload = OsString::from(lib);
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let name = argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .env("LD_PRELOAD", preload)
        .env(ENV_EVENTS, events)
        .env(ENV_OUTPUT, &out)
        .status()
        .map_err(|e| LaunchError::Spawn(name, e))?;
    let report = match read_reports(&out) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => RegionsReport {
            events: Vec::new(),
            ..Default::default()
        },
        Err(e) => return Err(LaunchError::Results(e)),
    };
    let _ = std::fs::remove_file(&out);
    Ok((status, report))
}
