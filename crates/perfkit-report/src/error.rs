//! [`LoadError`]: a recording could not be read into a profile (or dumped).

use perfkit_data::ReadError;
use std::fmt;
use std::path::PathBuf;

/// Why [`load`](crate::load::load) or [`dump_raw`](crate::dump::dump_raw) gave up. The
/// cause is the [`source`](std::error::Error::source) (a [`ReadError`] with the offset in
/// the file, or the `io::Error` of writing), never repeated in the message.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be opened, or its header is not that of a perf.data file.
    Open {
        /// The path given.
        path: PathBuf,
        /// What went wrong.
        source: ReadError,
    },
    /// The records cannot be read at all (for example: several events and samples
    /// without an id to tell them apart).
    Read(ReadError),
    /// Writing the output failed.
    Write(std::io::Error),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Open { path, .. } => write!(f, "cannot read {}", path.display()),
            LoadError::Read(_) => f.write_str("cannot read the records"),
            LoadError::Write(_) => f.write_str("cannot write the output"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Open { source, .. } => Some(source),
            LoadError::Read(e) => Some(e),
            LoadError::Write(e) => Some(e),
        }
    }
}
