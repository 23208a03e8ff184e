//! User-space probes as `perf probe -x BINARY FUNC` defines them: a function of an ELF
//! file resolved to its file offset, and tracefs' `uprobe_events` file read and written in
//! perf's naming (`probe_<binary>:<func>`, `<func>__return` for a return probe, `_1`, `_2`
//! for duplicates).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// Why a probe could not be resolved, added or removed.
#[derive(Debug)]
pub enum ProbeError {
    /// The binary could not be read or parsed.
    Binary {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// No function of that name in the binary's symbol tables.
    NotFound(String),
    /// tracefs' uprobe_events could not be read or written.
    Tracefs {
        /// What was being done.
        what: String,
        /// The cause.
        source: io::Error,
    },
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeError::Binary { path, reason } => {
                write!(f, "cannot read {}: {reason}", path.display())
            }
            ProbeError::NotFound(func) => write!(f, "Probe point '{func}' not found."),
            ProbeError::Tracefs { what, .. } => f.write_str(what),
        }
    }
}

impl std::error::Error for ProbeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProbeError::Tracefs { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The functions (defined text symbols) of ELF file `path` with their file offsets,
/// sorted by name, from `.symtab` and `.dynsym`.
pub fn functions(path: &Path) -> Result<Vec<(String, u64)>, ProbeError> {
    let bad = |reason: String| ProbeError::Binary {
        path: path.into(),
        reason,
    };
    let data = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let file = object::File::parse(&*data).map_err(|e| bad(e.to_string()))?;
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .map(|s| (s.address(), s.size(), s.file_range().0))
        .collect();
    let mut out: Vec<(String, u64)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.address() != 0)
        .filter_map(|s| {
            let name = s.name().ok()?.split('@').next()?.to_owned();
            let addr = s.address();
            let (vaddr, _, off) = segments
                .iter()
                .find(|(a, size, _)| addr >= *a && addr < a + size)?;
            Some((name, addr - vaddr + off))
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// The file offset of function `func` in ELF file `path`.
pub fn function_offset(path: &Path, func: &str) -> Result<u64, ProbeError> {
    functions(path)?
        .into_iter()
        .find(|(n, _)| n == func)
        .map(|(_, off)| off)
        .ok_or_else(|| ProbeError::NotFound(func.to_owned()))
}

/// perf's event group for probes in `binary`: `probe_` and the file name up to its first
/// dot, other characters than letters, digits and `_` made `_` (`libc.so.6`: `probe_libc`).
pub fn group_for(binary: &Path) -> String {
    let base = binary
        .file_name()
        .map(|b| b.to_string_lossy())
        .unwrap_or_default();
    let stem = base.split('.').next().unwrap_or("");
    let clean: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("probe_{clean}")
}

/// One uprobe definition in `uprobe_events`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UprobeDef {
    /// Event group (`probe_libc`).
    pub group: String,
    /// Event name (`inet_pton`, `inet_pton__return`).
    pub event: String,
    /// The binary probed.
    pub path: PathBuf,
    /// File offset of the probe.
    pub offset: u64,
    /// A return probe (`r:`), else an entry probe (`p:`).
    pub is_return: bool,
    /// Fetch arguments, `NAME=FETCH[:TYPE]` (`a=%di:s32`, `arg1=$retval`).
    pub args: Vec<String>,
}

impl UprobeDef {
    /// The line `uprobe_events` takes: `p:GROUP/EVENT PATH:0xOFFSET [ARG...]`.
    pub fn definition(&self) -> String {
        let mut line = format!(
            "{}:{}/{} {}:{:#018x}",
            if self.is_return { 'r' } else { 'p' },
            self.group,
            self.event,
            self.path.display(),
            self.offset
        );
        for a in &self.args {
            line.push(' ');
            line.push_str(a);
        }
        line
    }

    /// The names of its arguments (`a`, `arg1`), as `perf probe -l` shows them.
    pub fn arg_names(&self) -> impl Iterator<Item = &str> {
        self.args
            .iter()
            .map(|a| a.split_once('=').map_or(a.as_str(), |x| x.0))
    }

    /// Parse one line of `uprobe_events`.
    pub fn parse(line: &str) -> Option<UprobeDef> {
        let (head, target) = line.trim().split_once(' ')?;
        let (kind, name) = head.split_once(':')?;
        let (group, event) = name.split_once('/')?;
        let mut words = target.split_whitespace();
        let (path, off) = words.next()?.rsplit_once(':')?;
        let off = off.split('(').next()?;
        Some(UprobeDef {
            group: group.to_owned(),
            event: event.to_owned(),
            path: path.into(),
            offset: u64::from_str_radix(off.trim_start_matches("0x"), 16).ok()?,
            is_return: kind.starts_with('r'),
            args: words.map(str::to_owned).collect(),
        })
    }
}

/// tracefs' `uprobe_events` file.
#[derive(Clone, Debug)]
pub struct UprobeEvents {
    path: PathBuf,
}

impl UprobeEvents {
    /// The file under tracefs mount `tracefs`.
    pub fn new(tracefs: &Path) -> UprobeEvents {
        UprobeEvents {
            path: tracefs.join("uprobe_events"),
        }
    }

    /// tracefs' `kprobe_events` under mount `tracefs` (kernel probes: add them with
    /// [`add_line`](Self::add_line); [`list`](Self::list) reads user probes only).
    pub fn kprobes(tracefs: &Path) -> UprobeEvents {
        UprobeEvents {
            path: tracefs.join("kprobe_events"),
        }
    }

    /// Append one definition line as it is.
    pub fn add_line(&self, line: &str) -> Result<(), ProbeError> {
        self.append(line)
    }

    /// The probes defined now.
    pub fn list(&self) -> Result<Vec<UprobeDef>, ProbeError> {
        let text = std::fs::read_to_string(&self.path).map_err(|source| ProbeError::Tracefs {
            what: format!("reading {}", self.path.display()),
            source,
        })?;
        Ok(text.lines().filter_map(UprobeDef::parse).collect())
    }

    fn append(&self, line: &str) -> Result<(), ProbeError> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|source| ProbeError::Tracefs {
                what: format!("opening {}", self.path.display()),
                source,
            })?;
        f.write_all(format!("{line}\n").as_bytes())
            .map_err(|source| ProbeError::Tracefs {
                what: format!("writing '{line}' to {}", self.path.display()),
                source,
            })
    }

    /// Define `def`.
    pub fn add(&self, def: &UprobeDef) -> Result<(), ProbeError> {
        self.append(&def.definition())
    }

    /// Remove `group/event`.
    pub fn remove(&self, group: &str, event: &str) -> Result<(), ProbeError> {
        self.append(&format!("-:{group}/{event}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_round_trip_in_tracefs_syntax() {
        let d = UprobeDef {
            group: "probe_libc".into(),
            event: "inet_pton__return".into(),
            path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
            offset: 0x128870,
            is_return: true,
            args: vec!["arg1=$retval".into()],
        };
        let line = d.definition();
        assert_eq!(
            line,
            "r:probe_libc/inet_pton__return /usr/lib/x86_64-linux-gnu/libc.so.6:0x0000000000128870 \
             arg1=$retval"
        );
        assert_eq!(UprobeDef::parse(&line), Some(d.clone()));
        assert_eq!(d.arg_names().collect::<Vec<_>>(), ["arg1"]);
    }

    #[test]
    fn groups_are_named_as_perf_names_them() {
        assert_eq!(group_for(Path::new("/lib/libc.so.6")), "probe_libc");
        assert_eq!(group_for(Path::new("/tmp/test-file")), "probe_test_file");
    }

    #[test]
    fn a_function_of_this_test_binary_has_its_file_offset() {
        let exe = std::env::current_exe().unwrap();
        let funcs = functions(&exe).unwrap();
        assert!(!funcs.is_empty());
        let (name, off) = &funcs[0];
        assert_eq!(function_offset(&exe, name).unwrap(), *off);
        assert!(matches!(
            function_offset(&exe, "no such function at all"),
            Err(ProbeError::NotFound(_))
        ));
    }
}
