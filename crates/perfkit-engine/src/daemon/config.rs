//! The daemon's part of a perf config file: `[daemon] base = DIR` and one
//! `[session-NAME] run = RECORD-ARGS` section per session, in the file's order.
//!
//! perf's config syntax (git's): `[section]` headers, `key = value` lines, `#` and `;`
//! comments, section and key names case-insensitive, values optionally in double quotes.

use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// What the daemon reads from its config file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DaemonConfig {
    /// `daemon.base`.
    pub base: Option<PathBuf>,
    /// `(NAME, run)` per `[session-NAME]`, in the file's order.
    pub sessions: Vec<(String, String)>,
}

impl DaemonConfig {
    /// Parse a config file's text.
    pub fn parse(text: &str) -> Result<DaemonConfig> {
        let mut cfg = DaemonConfig::default();
        let mut section = String::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let Some(name) = rest.strip_suffix(']') else {
                    return Err(Error::Usage(format!(
                        "config line {}: `{line}` opens a section without closing it with ]",
                        n + 1
                    )));
                };
                section = name.trim().to_ascii_lowercase();
                continue;
            }
            let (key, value) = match line.split_once('=') {
                Some((k, v)) => (k.trim().to_ascii_lowercase(), unquote(v.trim())),
                None => (line.to_ascii_lowercase(), String::new()),
            };
            if section == "daemon" && key == "base" {
                cfg.base = Some(PathBuf::from(value));
            } else if let Some(name) = section.strip_prefix("session-")
                && key == "run"
            {
                match cfg.sessions.iter_mut().find(|(s, _)| s == name) {
                    Some(s) => s.1 = value,
                    None => cfg.sessions.push((name.to_string(), value)),
                }
            }
        }
        Ok(cfg)
    }

    /// Read and parse `path`.
    pub fn load(path: &Path) -> Result<DaemonConfig> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading the config {}", path.display()), e))?;
        DaemonConfig::parse(&text)
    }
}

/// A value without its double quotes and without a comment after it.
fn unquote(v: &str) -> String {
    if let Some(inner) = v.strip_prefix('"')
        && let Some(end) = inner.find('"')
    {
        return inner[..end].to_string();
    }
    // A comment starts at ` #` or ` ;`.
    let cut = [" #", " ;", "\t#", "\t;"]
        .iter()
        .filter_map(|c| v.find(c))
        .min()
        .unwrap_or(v.len());
    v[..cut].trim().to_string()
}

/// The config file: `explicit` (made absolute), else perf's `/etc/perfconfig` when it
/// can be read, else `$HOME/.perfconfig`.
pub fn find_config(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return std::fs::canonicalize(p)
            .map_err(|e| Error::io(format!("config not found: {}", p.display()), e));
    }
    let etc = Path::new("/etc/perfconfig");
    if std::fs::File::open(etc).is_ok() {
        return Ok(etc.to_path_buf());
    }
    if let Some(home) = std::env::var_os("HOME") {
        let p = Path::new(&home).join(".perfconfig");
        if p.exists() {
            return Ok(p);
        }
    }
    Err(Error::Usage(
        "config not found: give --config FILE (or write /etc/perfconfig or ~/.perfconfig)".into(),
    ))
}

/// Check that `base` is an existing directory, in perf's words.
pub fn check_base(base: Option<&Path>) -> Result<PathBuf> {
    let Some(base) = base else {
        return Err(Error::Usage(
            "base not defined: set `base` in the config's [daemon] section or give --base DIR"
                .into(),
        ));
    };
    match std::fs::metadata(base) {
        Ok(m) if m.is_dir() => Ok(base.to_path_buf()),
        Ok(_) => Err(Error::Usage(format!(
            "base '{}' is not directory",
            base.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Usage(format!(
            "base '{}' does not exists",
            base.display()
        ))),
        Err(e) => Err(Error::io(
            format!("can't access base '{}'", base.display()),
            e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::DaemonConfig;
    use std::path::PathBuf;

    #[test]
    fn reads_base_and_sessions_in_order() {
        let cfg = DaemonConfig::parse(
            "# perf config\n[daemon]\nbase=/tmp/b\n\n[session-size]\nrun = -e cpu-clock -m 1 sleep 10\n\
             [Session-Time]\n  run = \"-e task-clock sleep 1\"\n[report]\nsort = dso\n",
        )
        .unwrap();
        assert_eq!(cfg.base, Some(PathBuf::from("/tmp/b")));
        assert_eq!(
            cfg.sessions,
            vec![
                ("size".to_string(), "-e cpu-clock -m 1 sleep 10".to_string()),
                ("time".to_string(), "-e task-clock sleep 1".to_string()),
            ]
        );
    }

    #[test]
    fn an_unclosed_section_is_an_error() {
        assert!(DaemonConfig::parse("[daemon\nbase=/x\n").is_err());
    }

    #[test]
    fn comments_after_a_value_are_dropped() {
        let cfg = DaemonConfig::parse("[session-a]\nrun = -a sleep 1 # all CPUs\n").unwrap();
        assert_eq!(cfg.sessions[0].1, "-a sleep 1");
    }
}
