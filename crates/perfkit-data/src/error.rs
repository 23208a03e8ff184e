//! [`ReadError`]: what went wrong, and where in the file.

use std::fmt;

/// A perf.data file could not be read (further).
#[derive(Debug)]
pub struct ReadError {
    /// Byte offset in the file (or in the decompressed stream, see `message`).
    pub offset: u64,
    /// What was wrong.
    pub message: String,
}

impl ReadError {
    pub(crate) fn at(offset: u64, message: impl Into<String>) -> ReadError {
        ReadError {
            offset,
            message: message.into(),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for ReadError {}
