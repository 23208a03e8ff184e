//! [`TraceError`]: tracefs could not be found, mounted or read.

use crate::tracefs::FormatError;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a tracefs lookup failed. The cause (the `io::Error` with its errno, the format
/// file's parse error) is the [`source`](std::error::Error::source), not repeated in the
/// message.
#[derive(Debug)]
#[non_exhaustive]
pub enum TraceError {
    /// A tracefs file (`id`, `format`, `printk_formats`) could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The error, with its errno.
        source: io::Error,
    },
    /// An `id` file does not hold a number.
    BadId {
        /// The file.
        path: PathBuf,
        /// What it holds.
        text: String,
    },
    /// A `format` file does not parse.
    Format {
        /// The file.
        path: PathBuf,
        /// The line and what is wrong with it.
        source: FormatError,
    },
    /// tracefs is not mounted and `mount -t tracefs nodev TARGET` could not be run.
    MountCommand {
        /// Where it was to be mounted.
        target: PathBuf,
        /// Why `mount` did not run.
        source: io::Error,
    },
    /// tracefs is not mounted and `mount -t tracefs` failed (not root, no tracefs in this
    /// kernel).
    Mount {
        /// Where it was to be mounted.
        target: PathBuf,
        /// What `mount` printed on standard error.
        stderr: String,
    },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { path, .. } => write!(f, "cannot read {}", path.display()),
            TraceError::BadId { path, text } => {
                write!(f, "{}: bad tracepoint id `{text}`", path.display())
            }
            TraceError::Format { path, .. } => {
                write!(f, "{}: not a tracepoint format", path.display())
            }
            TraceError::MountCommand { target, .. } => write!(
                f,
                "tracefs is not mounted and `mount -t tracefs nodev {}` cannot run",
                target.display()
            ),
            TraceError::Mount { target, stderr } => write!(
                f,
                "tracefs is not mounted and mounting it on {} failed: {}",
                target.display(),
                stderr.trim()
            ),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Io { source, .. } | TraceError::MountCommand { source, .. } => Some(source),
            TraceError::Format { source, .. } => Some(source),
            TraceError::BadId { .. } | TraceError::Mount { .. } => None,
        }
    }
}
