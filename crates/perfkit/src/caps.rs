//! The process's effective capabilities, as the kernel reports them in `/proc/self/status`.

/// `CAP_IPC_LOCK`: lock any amount of memory (perf rings are then charged no limit).
pub(crate) const CAP_IPC_LOCK: u32 = 14;

/// `CAP_SYS_NICE`: raise priorities, real-time policies included.
#[cfg(test)]
pub(crate) const CAP_SYS_NICE: u32 = 23;

/// Whether capability `cap` is in the effective set (`CapEff`); false when it cannot be read.
pub(crate) fn effective(cap: u32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("CapEff:"))?;
            u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << cap) != 0)
}
