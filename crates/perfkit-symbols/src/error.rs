//! Typed errors of the text parsers (kallsyms, perf maps, /proc/PID/maps).

use std::fmt;
use std::path::PathBuf;

/// A line of a text table that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What was being parsed (`/proc/kallsyms`, `/tmp/perf-123.map`, ...).
    pub source: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.source, self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Reading a table failed: I/O (with the path) or parse.
#[derive(Debug)]
pub enum Error {
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error (errno kept).
        source: std::io::Error,
    },
    /// The file was read but a line is malformed.
    Parse(ParseError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "reading {}: {source}", path.display()),
            Error::Parse(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Parse(e) => Some(e),
        }
    }
}

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Self {
        Error::Parse(e)
    }
}

/// [`parse_hex`] on bytes (optional `0x`, at most 16 hex digits).
pub(crate) fn parse_hex_bytes(b: &[u8]) -> Option<u64> {
    let b = b
        .strip_prefix(b"0x")
        .or_else(|| b.strip_prefix(b"0X"))
        .unwrap_or(b);
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in b {
        v = (v << 4) | u64::from((c as char).to_digit(16)?);
    }
    Some(v)
}

pub(crate) fn parse_hex(s: &str) -> Option<u64> {
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if s.is_empty() {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}
