//! [`ReadError`]: what went wrong, and where in the file.

use std::fmt;
use std::io;

/// A perf.data file could not be read (further).
///
/// Every variant that comes from another error keeps it as its
/// [`source`](std::error::Error::source) (the `io::Error` of `open(2)` or `read(2)` with its
/// errno, the record parser's error, ...); the message says what was being done and where,
/// never the source's own text (print the chain, e.g. anyhow's `{:#}`, to see both).
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    /// A system call on the input failed (`open`, `fstat`, `pread`, `read`).
    Io {
        /// Byte offset it was reading at (0 for opening).
        offset: u64,
        /// What was being done: `opening the file`, `reading the file header`, ...
        what: String,
        /// The error, with its errno.
        source: io::Error,
    },
    /// The input ends before something it announces: the file was cut short.
    Truncated {
        /// Where the thing that does not fit starts.
        offset: u64,
        /// What it is: `the file header`, `record of type 9`, ...
        what: String,
        /// Bytes it needs.
        needed: u64,
        /// Bytes there are from `offset` on.
        available: u64,
    },
    /// The input does not start with perf.data's magic (`PERFILE2` in either byte order).
    NotPerfData {
        /// The first bytes of the input (at most 8).
        magic: Vec<u8>,
    },
    /// A version-1 file (magic `PERFFILE`) whose header size is neither of version 1's
    /// (72 or 104 bytes in either byte order).
    Version1,
    /// A value in the file is impossible (a size below its minimum, an attr size past
    /// every published one, ...): the file is corrupt.
    Invalid {
        /// Where the value is.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A kernel record does not decode with its event's attr.
    Record {
        /// Offset of the record (in the decompressed stream for compressed data).
        offset: u64,
        /// The record parser's error.
        source: perfkit_records::ParseError,
    },
    /// The events cannot be told apart: several attrs, and samples without the
    /// `PERF_SAMPLE_ID`/`PERF_SAMPLE_IDENTIFIER` that says whose they are.
    Ids(perfkit_records::MultiParserError),
    /// `COMPRESSED`/`COMPRESSED2` data that zstd cannot decompress.
    Decompress {
        /// Offset of the compressed record.
        offset: u64,
        /// zstd's error.
        source: io::Error,
    },
    /// The file lists no events (no attrs).
    NoEvents,
    /// A pipe-mode stream ([`PerfData::from_reader`](crate::PerfData::from_reader)) was
    /// walked a second time: its records were read once and are gone.
    StreamConsumed,
}

impl ReadError {
    /// The byte offset in the file (or decompressed stream) the error is about, when it
    /// is about one place.
    pub fn offset(&self) -> Option<u64> {
        match self {
            ReadError::Io { offset, .. }
            | ReadError::Truncated { offset, .. }
            | ReadError::Invalid { offset, .. }
            | ReadError::Record { offset, .. }
            | ReadError::Decompress { offset, .. } => Some(*offset),
            ReadError::NotPerfData { .. } | ReadError::Version1 => Some(0),
            ReadError::Ids(_) | ReadError::NoEvents | ReadError::StreamConsumed => None,
        }
    }

    pub(crate) fn io(offset: u64, what: impl Into<String>, source: io::Error) -> ReadError {
        ReadError::Io {
            offset,
            what: what.into(),
            source,
        }
    }

    pub(crate) fn truncated(
        offset: u64,
        what: impl Into<String>,
        needed: u64,
        available: u64,
    ) -> ReadError {
        ReadError::Truncated {
            offset,
            what: what.into(),
            needed,
            available,
        }
    }

    pub(crate) fn invalid(offset: u64, message: impl Into<String>) -> ReadError {
        ReadError::Invalid {
            offset,
            message: message.into(),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io { offset, what, .. } => write!(f, "at byte {offset}: {what}"),
            ReadError::Truncated {
                offset,
                what,
                needed,
                available,
            } => write!(
                f,
                "at byte {offset}: {what} ({needed} bytes) runs past the end of the data \
                 ({available} bytes left): the file was cut short"
            ),
            ReadError::NotPerfData { magic } => write!(
                f,
                "not a perf.data file (magic {:?})",
                String::from_utf8_lossy(magic)
            ),
            ReadError::Version1 => {
                f.write_str("a version-1 perf.data file (PERFFILE) with a header of unknown size")
            }
            ReadError::Invalid { offset, message } => write!(f, "at byte {offset}: {message}"),
            ReadError::Record { offset, .. } => {
                write!(f, "at byte {offset}: the record does not decode")
            }
            ReadError::Ids(_) => f.write_str("the events cannot be told apart"),
            ReadError::Decompress { offset, .. } => {
                write!(f, "at byte {offset}: the zstd data does not decompress")
            }
            ReadError::NoEvents => f.write_str("the file describes no events"),
            ReadError::StreamConsumed => f.write_str("a pipe-mode stream can be read only once"),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io { source, .. } | ReadError::Decompress { source, .. } => Some(source),
            ReadError::Record { source, .. } => Some(source),
            ReadError::Ids(e) => Some(e),
            _ => None,
        }
    }
}
