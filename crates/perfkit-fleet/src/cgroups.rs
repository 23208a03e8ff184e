//! Which cgroups the exporter counts: names given with `-G` (relative to the cgroup file
//! system's root, as `perf stat -G` takes them) and every cgroup under given directories,
//! looked up again at each refresh so that cgroups which appear are counted and cgroups
//! which vanish are dropped, without a restart.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The cgroups to count.
#[derive(Clone, Debug, Default)]
pub struct CgroupSelection {
    /// Cgroups by name (`system.slice/foo.service`), relative to the root.
    pub names: Vec<String>,
    /// Directories whose every cgroup (the directory itself and all below it) is counted;
    /// relative to the root unless absolute.
    pub trees: Vec<String>,
}

impl CgroupSelection {
    /// Whether nothing is selected.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.trees.is_empty()
    }

    /// The cgroups that exist now, by label (the path below `root`, starting with `/`),
    /// at most `max` of them (sorted by name); the second value counts those left out.
    pub fn scan(&self, root: &Path, max: usize) -> (BTreeMap<String, PathBuf>, usize) {
        let mut found = BTreeMap::new();
        for n in &self.names {
            let dir = root.join(n.trim_start_matches('/'));
            if dir.is_dir() {
                found.insert(label_of(root, &dir), dir);
            }
        }
        for t in &self.trees {
            let top = if Path::new(t).is_absolute() {
                PathBuf::from(t)
            } else {
                root.join(t)
            };
            walk(root, &top, &mut found, 0);
        }
        let total = found.len();
        if total > max {
            let keep: BTreeMap<String, PathBuf> = found.into_iter().take(max).collect();
            return (keep, total - max);
        }
        (found, 0)
    }
}

/// Every cgroup directory at and below `dir` (a cgroup is a directory with a
/// `cgroup.procs` file; cgroup v1 trees have the same layout).
fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>, depth: usize) {
    if depth > 32 || !dir.join("cgroup.procs").exists() {
        return;
    }
    out.insert(label_of(root, dir), dir.to_path_buf());
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(root, &e.path(), out, depth + 1);
        }
    }
}

/// `/sys/fs/cgroup/a/b` → `/a/b` (the root itself is `/`).
fn label_of(root: &Path, dir: &Path) -> String {
    match dir.strip_prefix(root) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => dir.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_names_and_trees_and_bounds_them() {
        let root = tempfile::tempdir().unwrap();
        for d in ["a", "a/x", "a/y", "b", "c"] {
            std::fs::create_dir_all(root.path().join(d)).unwrap();
            std::fs::write(root.path().join(d).join("cgroup.procs"), "").unwrap();
        }
        // Not a cgroup: no cgroup.procs.
        std::fs::create_dir_all(root.path().join("a/plain")).unwrap();
        let sel = CgroupSelection {
            names: vec!["b".into(), "missing".into()],
            trees: vec!["a".into()],
        };
        let (found, left) = sel.scan(root.path(), 10);
        let names: Vec<&str> = found.keys().map(String::as_str).collect();
        assert_eq!(names, ["/a", "/a/x", "/a/y", "/b"]);
        assert_eq!(left, 0);
        let (found, left) = sel.scan(root.path(), 2);
        assert_eq!(found.len(), 2);
        assert_eq!(left, 2);
        std::fs::remove_dir_all(root.path().join("a/y")).unwrap();
        let (found, _) = sel.scan(root.path(), 10);
        assert!(!found.contains_key("/a/y"), "a vanished cgroup is dropped");
    }
}
