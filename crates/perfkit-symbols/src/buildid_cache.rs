//! perf's build-id cache (`~/.debug`, or `$PERF_BUILDID_DIR`, or `perf --buildid-dir DIR`),
//! in perf's layout so that perf finds perfkit's entries and perfkit finds perf's:
//!
//! ```text
//! DIR/<real path of the file>/<build id hex>/elf          a hard link to the file, else a copy
//! DIR/.build-id/<first 2 hex>/<other hex> -> ../../<real path>/<build id hex>
//! ```

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::elf::build_id_hex;

static DIR_OVERRIDE: OnceLock<PathBuf> = OnceLock::new();

/// Use `dir` as this process's build-id cache (perf's top-level `--buildid-dir`); the first
/// call wins.
pub fn set_default_dir(dir: PathBuf) {
    let _ = DIR_OVERRIDE.set(dir);
}

/// The build-id cache directory: [`set_default_dir`]'s, else `$PERF_BUILDID_DIR`, else
/// `$HOME/.debug`, as perf chooses.
pub fn default_dir() -> PathBuf {
    if let Some(d) = DIR_OVERRIDE.get() {
        return d.clone();
    }
    if let Some(d) = std::env::var_os("PERF_BUILDID_DIR").filter(|d| !d.is_empty()) {
        return d.into();
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
    Path::new(&home).join(".debug")
}

/// A cache directory in perf's layout.
#[derive(Clone, Debug)]
pub struct BuildIdCache {
    dir: PathBuf,
}

/// One cached file: its build id (hex) and the path it was cached from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheEntry {
    /// Build id in hex, as perf prints it.
    pub build_id: String,
    /// The file's path when it was added (absolute, symbolic links resolved).
    pub path: PathBuf,
}

/// What [`BuildIdCache::fill`] did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct FillReport {
    /// Files added.
    pub added: usize,
    /// Files that were already cached.
    pub cached: usize,
    /// Files that could not be added.
    pub errors: Vec<CacheError>,
}

/// Why a file could not be added to or removed from the cache.
#[derive(Debug)]
pub enum CacheError {
    /// The file has no build-id note (or is not ELF, or could not be read).
    NoBuildId(PathBuf),
    /// A file-system operation failed.
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: io::Error,
    },
}

impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheError::NoBuildId(p) => write!(f, "couldn't read a build-id in {}", p.display()),
            CacheError::Io { what, .. } => f.write_str(what),
        }
    }
}

impl std::error::Error for CacheError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CacheError::Io { source, .. } => Some(source),
            CacheError::NoBuildId(_) => None,
        }
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> CacheError {
    let what = what.into();
    move |source| CacheError::Io { what, source }
}

/// The build id of ELF file `path` (its `NT_GNU_BUILD_ID` note).
///
/// Only the headers and the note are read (`object::ReadCache` reads the ranges the parser
/// asks for): shared objects can be hundreds of MB, and a system-wide recording asks for
/// every mapped file.
pub fn build_id_of_file(path: &Path) -> Option<Vec<u8>> {
    use object::Object;
    let cache = object::ReadCache::new(std::fs::File::open(path).ok()?);
    let file = object::File::parse(&cache).ok()?;
    file.build_id().ok().flatten().map(<[u8]>::to_vec)
}

impl BuildIdCache {
    /// The cache at `dir` (created on the first add).
    pub fn new(dir: impl Into<PathBuf>) -> BuildIdCache {
        BuildIdCache { dir: dir.into() }
    }

    /// The cache at [`default_dir`].
    pub fn default_location() -> BuildIdCache {
        BuildIdCache::new(default_dir())
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn link_of(&self, hex: &str) -> PathBuf {
        self.dir.join(".build-id").join(&hex[..2]).join(&hex[2..])
    }

    fn entry_dir(&self, real: &Path, hex: &str) -> PathBuf {
        self.dir
            .join(real.strip_prefix("/").unwrap_or(real))
            .join(hex)
    }

    /// Add ELF file `path` under its build id (a hard link, else a copy); its hex build id.
    /// Adding a file that is already there is not an error.
    pub fn add(&self, path: &Path) -> Result<String, CacheError> {
        let id = build_id_of_file(path).ok_or_else(|| CacheError::NoBuildId(path.into()))?;
        self.add_as(path, &id)
    }

    /// Add `path` under build id `id` (for a file whose id is known, such as a perf.data
    /// file's `BUILD_ID` entry or the kernel's).
    pub fn add_as(&self, path: &Path, id: &[u8]) -> Result<String, CacheError> {
        let hex = build_id_hex(id);
        if hex.len() < 3 {
            return Err(CacheError::NoBuildId(path.into()));
        }
        let real = std::fs::canonicalize(path)
            .map_err(io_err(format!("couldn't add {}", path.display())))?;
        let entry = self.entry_dir(&real, &hex);
        std::fs::create_dir_all(&entry).map_err(io_err(format!("creating {}", entry.display())))?;
        let elf = entry.join("elf");
        if !elf.exists() && std::fs::hard_link(&real, &elf).is_err() {
            std::fs::copy(&real, &elf).map_err(io_err(format!(
                "copying {} to {}",
                real.display(),
                elf.display()
            )))?;
        }
        let link = self.link_of(&hex);
        let parent = link.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)
            .map_err(io_err(format!("creating {}", parent.display())))?;
        let target = Path::new("../..")
            .join(real.strip_prefix("/").unwrap_or(&real))
            .join(&hex);
        if std::fs::read_link(&link).ok().as_deref() != Some(target.as_path()) {
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&target, &link)
                .map_err(io_err(format!("linking {}", link.display())))?;
        }
        Ok(hex)
    }

    /// Fill the cache from a recording's build-id table (`(file name, build id)` pairs), as
    /// `perf record` does at its end: each distinct file once, whatever number of mappings
    /// named it; a file already cached under that build id costs one `stat`; a local file
    /// whose build id is not the recorded one is left out (it changed since). The kernel
    /// (`[kernel.kallsyms]`) is cached as a copy of `/proc/kallsyms` when `kernel_id` (the
    /// running kernel's build id) is the recorded one, in perf's layout
    /// (`[kernel.kallsyms]/<id>/kallsyms`).
    pub fn fill<'a>(
        &self,
        table: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        kernel_id: Option<&[u8]>,
    ) -> FillReport {
        let mut report = FillReport::default();
        let mut seen = std::collections::HashSet::new();
        for (name, id) in table {
            if !seen.insert((name, id)) {
                continue;
            }
            let hex = build_id_hex(id);
            if hex.len() < 3 {
                continue;
            }
            if self.link_of(&hex).exists() {
                report.cached += 1;
                continue;
            }
            let added = if name == "[kernel.kallsyms]" {
                if kernel_id != Some(id) {
                    continue;
                }
                std::fs::read("/proc/kallsyms")
                    .map_err(io_err("reading /proc/kallsyms"))
                    .and_then(|bytes| self.add_named(name, "kallsyms", &bytes, &hex))
            } else if name.starts_with('/') {
                if build_id_of_file(Path::new(name)).as_deref() != Some(id) {
                    continue;
                }
                self.add_as(Path::new(name), id).map(drop)
            } else {
                continue;
            };
            match added {
                Ok(()) => report.added += 1,
                Err(e) => report.errors.push(e),
            }
        }
        report
    }

    /// Cache `bytes` as `NAME/<hex>/FILE` (a file that is not on disk, such as
    /// `[kernel.kallsyms]`), with its `.build-id` link.
    fn add_named(&self, name: &str, file: &str, bytes: &[u8], hex: &str) -> Result<(), CacheError> {
        let entry = self.dir.join(name).join(hex);
        std::fs::create_dir_all(&entry).map_err(io_err(format!("creating {}", entry.display())))?;
        let path = entry.join(file);
        std::fs::write(&path, bytes).map_err(io_err(format!("writing {}", path.display())))?;
        let link = self.link_of(hex);
        let parent = link.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)
            .map_err(io_err(format!("creating {}", parent.display())))?;
        let target = Path::new("../..").join(name).join(hex);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link)
            .map_err(io_err(format!("linking {}", link.display())))
    }

    /// Remove `path`'s entry (the one under its current build id); its hex build id.
    pub fn remove(&self, path: &Path) -> Result<String, CacheError> {
        let id = build_id_of_file(path).ok_or_else(|| CacheError::NoBuildId(path.into()))?;
        let hex = build_id_hex(&id);
        let real = std::fs::canonicalize(path)
            .map_err(io_err(format!("couldn't remove {}", path.display())))?;
        let link = self.link_of(&hex);
        std::fs::remove_file(&link).map_err(io_err(format!(
            "{} ({hex}) is not in the cache at {}",
            path.display(),
            self.dir.display()
        )))?;
        let entry = self.entry_dir(&real, &hex);
        std::fs::remove_dir_all(&entry).map_err(io_err(format!("removing {}", entry.display())))?;
        Ok(hex)
    }

    /// The cached file for build id `id`, if there is one.
    pub fn find(&self, id: &[u8]) -> Option<PathBuf> {
        let p = self.link_of(&build_id_hex(id)).join("elf");
        p.exists().then_some(p)
    }

    /// The paths, relative to the cache directory, that hold build id `id`'s entry: its
    /// `.build-id/ab/cdef...` link and the directory the link points to (what `perf
    /// archive` packs). None when the cache has no entry for it.
    pub fn entry_paths(&self, id: &[u8]) -> Option<[PathBuf; 2]> {
        let hex = build_id_hex(id);
        if hex.len() < 3 {
            return None;
        }
        let link = Path::new(".build-id").join(&hex[..2]).join(&hex[2..]);
        let target = std::fs::read_link(self.dir.join(&link)).ok()?;
        // ../../<path>/<hex>, relative to .build-id/ab/.
        let dir: PathBuf = target.components().skip(2).collect();
        self.dir
            .join(&dir)
            .join("elf")
            .exists()
            .then_some([link, dir])
    }

    /// Every entry, as `perf buildid-cache -l` lists them (sorted by build id).
    pub fn list(&self) -> Vec<CacheEntry> {
        let mut out = Vec::new();
        let Ok(dirs) = std::fs::read_dir(self.dir.join(".build-id")) else {
            return out;
        };
        for d in dirs.flatten() {
            let prefix = d.file_name().to_string_lossy().into_owned();
            let Ok(links) = std::fs::read_dir(d.path()) else {
                continue;
            };
            for l in links.flatten() {
                let rest = l.file_name().to_string_lossy().into_owned();
                let Ok(target) = std::fs::read_link(l.path()) else {
                    continue;
                };
                // ../../<path>/<hex>: the path is the target less its first two and last parts.
                let parts: Vec<_> = target.components().collect();
                if parts.len() < 4 {
                    continue;
                }
                let mut path = PathBuf::from("/");
                for c in &parts[2..parts.len() - 1] {
                    path.push(c);
                }
                out.push(CacheEntry {
                    build_id: format!("{prefix}{rest}"),
                    path,
                });
            }
        }
        out.sort_by(|a, b| a.build_id.cmp(&b.build_id));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_adds_each_distinct_file_once_and_skips_changed_ones() {
        let exe = std::env::current_exe().unwrap();
        let Some(id) = build_id_of_file(&exe) else {
            eprintln!("skipped: this test binary has no build id");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = BuildIdCache::new(dir.path());
        let name = exe.to_str().unwrap();
        let wrong = vec![0xab; 20];
        // Three mappings of one file, and a file whose build id changed since.
        let table = [
            (name, id.as_slice()),
            (name, id.as_slice()),
            (name, id.as_slice()),
            ("/bin/sh", wrong.as_slice()),
            ("[vdso]", wrong.as_slice()),
        ];
        let r = cache.fill(table, None);
        assert_eq!((r.added, r.cached, r.errors.len()), (1, 0, 0));
        assert!(cache.find(&id).is_some());
        assert!(cache.find(&wrong).is_none());
        let r = cache.fill(table, None);
        assert_eq!((r.added, r.cached), (0, 1), "already cached: one stat");
    }

    #[test]
    fn add_find_list_remove_round_trip() {
        let exe = std::env::current_exe().unwrap();
        let Some(id) = build_id_of_file(&exe) else {
            eprintln!("skipped: this test binary has no build id");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = BuildIdCache::new(dir.path());
        let hex = cache.add(&exe).unwrap();
        assert_eq!(hex, build_id_hex(&id));
        assert_eq!(cache.add(&exe).unwrap(), hex, "adding twice is fine");
        let found = cache.find(&id).unwrap();
        assert_eq!(std::fs::read(&found).unwrap(), std::fs::read(&exe).unwrap());
        let real = std::fs::canonicalize(&exe).unwrap();
        assert_eq!(
            cache.list(),
            vec![CacheEntry {
                build_id: hex.clone(),
                path: real
            }]
        );
        assert_eq!(cache.remove(&exe).unwrap(), hex);
        assert!(cache.find(&id).is_none());
        assert!(cache.list().is_empty());
    }

    #[test]
    fn a_file_without_build_id_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("text");
        std::fs::write(&f, "not elf").unwrap();
        let err = BuildIdCache::new(dir.path()).add(&f).unwrap_err();
        assert!(matches!(err, CacheError::NoBuildId(_)), "{err}");
    }
}
