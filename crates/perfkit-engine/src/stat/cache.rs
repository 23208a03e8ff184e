//! `--per-cache`: which cache of a level each CPU uses, from sysfs
//! (`/sys/devices/system/cpu/cpuN/cache/indexK/{level,type,id}`).

use std::path::Path;

const CPU_DIR: &str = "/sys/devices/system/cpu";

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The caches of `cpu`: (level, id) of each data or unified cache.
fn caches(cpu: u32) -> Vec<(u8, i32)> {
    let dir = Path::new(CPU_DIR).join(format!("cpu{cpu}/cache"));
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        if !e.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        if read(&p.join("type")).as_deref() == Some("Instruction") {
            continue;
        }
        let level = read(&p.join("level")).and_then(|s| s.parse().ok());
        let id = read(&p.join("id")).and_then(|s| s.parse().ok());
        if let (Some(l), Some(i)) = (level, id) {
            out.push((l, i));
        }
    }
    out
}

/// The highest cache level of `cpu` (perf's default for `--per-cache`), 0 if none.
pub fn highest_level(cpu: u32) -> u8 {
    caches(cpu).iter().map(|c| c.0).max().unwrap_or(0)
}

/// The id of `cpu`'s cache at `level` (-1 where sysfs does not say).
pub fn cache_id(cpu: u32, level: u8) -> i32 {
    caches(cpu)
        .iter()
        .find(|c| c.0 == level)
        .map_or(-1, |c| c.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu0_has_a_cache_level_when_sysfs_says() {
        let lvl = highest_level(0);
        if Path::new("/sys/devices/system/cpu/cpu0/cache/index0/level").exists() {
            assert!(lvl >= 1, "cpu0 has caches in sysfs");
            assert!(cache_id(0, lvl) >= 0);
        }
        assert_eq!(cache_id(0, 99), -1);
    }
}
