//! TEMPORARY stub (replaced by the kernel branch's module on merge).

use std::collections::BTreeMap;

/// Error.
#[derive(Debug)]
pub struct CpuListError(pub String);
impl std::fmt::Display for CpuListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for CpuListError {}

/// Online.
pub fn online() -> std::io::Result<Vec<u32>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_list(&s, &(0..4096).collect::<Vec<_>>()).map_err(std::io::Error::other)
}
/// Possible.
pub fn possible() -> std::io::Result<Vec<u32>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
    parse_list(&s, &(0..4096).collect::<Vec<_>>()).map_err(std::io::Error::other)
}
/// Parse.
pub fn parse_list(s: &str, allowed: &[u32]) -> Result<Vec<u32>, CpuListError> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let a: u32 = a
            .trim()
            .parse()
            .map_err(|_| CpuListError(format!("bad `{part}`")))?;
        let b: u32 = b
            .trim()
            .parse()
            .map_err(|_| CpuListError(format!("bad `{part}`")))?;
        if b < a || !allowed.contains(&b) {
            return Err(CpuListError(format!("bad `{part}`")));
        }
        out.extend(a..=b);
    }
    if out.is_empty() {
        return Err(CpuListError("empty".into()));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}
/// Format.
pub fn format_list(cpus: &[u32]) -> String {
    cpus.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}
/// Place.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct CpuPlace {
    /// s
    pub socket: i32,
    /// d
    pub die: i32,
    /// c
    pub core: i32,
    /// n
    pub node: i32,
}
/// Places.
pub fn places(cpus: &[u32]) -> BTreeMap<u32, CpuPlace> {
    cpus.iter().map(|&c| (c, CpuPlace::default())).collect()
}
