//! Why tracepoint names cannot be looked up: tracefs not mounted, or mounted but not readable
//! by this user (the default mode of a tracefs mount is 700, root's). The two need different
//! fixes, so the parser says which.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why tracefs (`events/<subsys>/<event>/id`, the `PERF_TYPE_TRACEPOINT` configs) cannot be
/// read. See [`crate::Env::tracefs_status`].
#[derive(Debug)]
#[non_exhaustive]
pub enum TracefsError {
    /// tracefs is not mounted: no `events` directory under any of `tried` (empty for an
    /// [`Env`](crate::Env) made without a tracefs path).
    NotMounted {
        /// The directories looked at.
        tried: Vec<PathBuf>,
    },
    /// tracefs is mounted at `path`, but reading its `events` directory failed (`EACCES`
    /// for a user other than root when it is mounted with mode 700).
    NotReadable {
        /// The mount point.
        path: PathBuf,
        /// The error reading `path/events`.
        source: io::Error,
    },
}

impl TracefsError {
    /// Classify the error of reading `tracefs/events`: `ENOENT`/`ENOTDIR` mean nothing is
    /// mounted there; anything else (`EACCES`) that it is there but cannot be read.
    pub fn from_read_error(tracefs: &Path, source: io::Error) -> TracefsError {
        match source.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => TracefsError::NotMounted {
                tried: vec![tracefs.to_path_buf()],
            },
            _ => TracefsError::NotReadable {
                path: tracefs.to_path_buf(),
                source,
            },
        }
    }

    /// What to do about it, in one sentence (perf: "Hint: Try 'sudo mount -o remount,mode=755
    /// /sys/kernel/tracing/'").
    pub fn advice(&self) -> String {
        match self {
            TracefsError::NotMounted { .. } => {
                "Mount it with `mount -t tracefs nodev /sys/kernel/tracing`.".to_string()
            }
            TracefsError::NotReadable { path, .. } => format!(
                "Run as root, or let other users read it: `mount -o remount,mode=755 {}` (as root).",
                path.display()
            ),
        }
    }
}

impl fmt::Display for TracefsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TracefsError::NotMounted { tried } if tried.is_empty() => {
                write!(f, "tracefs is not mounted")
            }
            TracefsError::NotMounted { tried } => {
                write!(f, "tracefs is not mounted (looked at ")?;
                for (i, p) in tried.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{}", p.display())?;
                }
                write!(f, ")")
            }
            // The io error is the source, not repeated here.
            TracefsError::NotReadable { path, .. } => write!(
                f,
                "tracefs is mounted at {} but not readable by this user",
                path.display()
            ),
        }
    }
}

impl std::error::Error for TracefsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TracefsError::NotReadable { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The mount points of tracefs in `/proc/self/mounts` (readable by every user, even when
/// the mount itself is not).
pub(crate) fn tracefs_mounts() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mounts") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (_dev, point, fstype) = (f.next()?, f.next()?, f.next()?);
            // Spaces and other odd bytes are octal escapes (`\040`); tracefs mount points
            // with those are not looked for.
            (fstype == "tracefs" && !point.contains('\\')).then(|| PathBuf::from(point))
        })
        .collect()
}
