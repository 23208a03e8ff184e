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

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn an_io_error_is_the_source_and_not_repeated() {
        let e = Error::Io {
            path: "/nonexistent/kallsyms".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOENT),
        };
        let io = e
            .source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(e.to_string(), "cannot read /nonexistent/kallsyms");
        assert_eq!(
            with_causes(&e),
            format!("cannot read /nonexistent/kallsyms: {io}")
        );
    }
}

/// Reading a table failed: I/O (with the path) or parse. The I/O error is the
/// [`source`](std::error::Error::source), not repeated in the message.
#[derive(Debug)]
#[non_exhaustive]
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
            Error::Io { path, .. } => write!(f, "cannot read {}", path.display()),
            Error::Parse(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            // The parse error is the whole message (it has no cause of its own).
            Error::Parse(_) => None,
        }
    }
}

impl From<ParseError> for Error {
    fn from(e: ParseError) -> Self {
        Error::Parse(e)
    }
}

/// `e` and its causes, `: `-separated (for diagnostics kept as text).
pub(crate) fn with_causes(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
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
