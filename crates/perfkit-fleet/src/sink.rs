//! A directory of profiles, rotated and bounded: one file per window, named by the
//! window's start (`PREFIX-<unix ms>-<unix ms>.pb.gz`, so names sort by time); after each
//! write the oldest files go until the directory holds at most `max_files` files and
//! `max_bytes` bytes. Files are written under a temporary name and renamed, so a reader
//! never sees half a profile.

use crate::WindowProfile;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// A bounded directory of profile files.
#[derive(Clone, Debug)]
pub struct DirSink {
    dir: PathBuf,
    prefix: String,
    max_bytes: u64,
    max_files: usize,
}

impl DirSink {
    /// Profiles go to `dir` (created if missing) as `PREFIX-...pb.gz`.
    pub fn new(
        dir: &Path,
        prefix: &str,
        max_bytes: u64,
        max_files: usize,
    ) -> std::io::Result<DirSink> {
        std::fs::create_dir_all(dir)?;
        Ok(DirSink {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            max_bytes,
            max_files: max_files.max(1),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Write one profile; returns its path and how many old files were removed.
    pub fn write(&self, p: &WindowProfile) -> std::io::Result<(PathBuf, usize)> {
        let ms =
            |t: std::time::SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        let name = format!(
            "{}-{:015}-{:015}.pb.gz",
            self.prefix,
            ms(p.start),
            ms(p.end)
        );
        let path = self.dir.join(&name);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, &p.gz)?;
        std::fs::rename(&tmp, &path)?;
        let removed = self.rotate()?;
        Ok((path, removed))
    }

    /// The profile files, oldest first, with their sizes.
    pub fn files(&self) -> std::io::Result<Vec<(PathBuf, u64)>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.dir)?.flatten() {
            let name = e.file_name();
            let Some(n) = name.to_str() else { continue };
            if n.starts_with(&format!("{}-", self.prefix)) && n.ends_with(".pb.gz") {
                out.push((e.path(), e.metadata().map_or(0, |m| m.len())));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Remove the oldest files beyond the bounds (the newest file always stays).
    fn rotate(&self) -> std::io::Result<usize> {
        let files = self.files()?;
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        let mut count = files.len();
        let mut removed = 0;
        for (path, size) in files {
            if count <= 1 || (count <= self.max_files && total <= self.max_bytes) {
                break;
            }
            std::fs::remove_file(&path)?;
            total -= size;
            count -= 1;
            removed += 1;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn window(i: u64, size: usize) -> WindowProfile {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i * 10);
        WindowProfile {
            start,
            end: start + Duration::from_secs(10),
            gz: vec![7; size],
            samples: 1,
            lost: 0,
        }
    }

    #[test]
    fn rotates_by_count_and_size() {
        let d = tempfile::tempdir().unwrap();
        let sink = DirSink::new(d.path(), "cpu", 1000, 3).unwrap();
        for i in 0..5 {
            sink.write(&window(i, 100)).unwrap();
        }
        let files = sink.files().unwrap();
        assert_eq!(files.len(), 3, "{files:?}");
        // The newest three stay.
        assert!(files[0].0.to_str().unwrap().contains("1700000020000"));
        let sink = DirSink::new(d.path(), "cpu", 450, 100).unwrap();
        for i in 5..10 {
            sink.write(&window(i, 200)).unwrap();
        }
        let files = sink.files().unwrap();
        assert_eq!(files.len(), 2, "450 bytes hold two files of 200");
        assert!(files[1].0.to_str().unwrap().contains("1700000090000"));
    }
}
