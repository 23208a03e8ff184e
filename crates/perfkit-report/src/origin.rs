//! Where a recording was made: another kernel or machine than this one means this machine's
//! kernel symbols and tracepoint formats do not describe it.

use perfkit_data::PerfData;

/// Why the kernel that recorded `file` is not the running one, if it is not: its build id
/// (HEADER_BUILD_ID) differs from the running kernel's, or, without one, its release
/// (HEADER_OSRELEASE) does.
pub(crate) fn other_kernel(kernel_id: Option<&[u8]>, file: &PerfData) -> Option<String> {
    if let Some(want) = kernel_id {
        let running = perfkit_data::synth::kernel_build_id()?;
        return (!same_build_id(want, &running)).then(|| format!("build id {}", hex(want)));
    }
    let recorded = file.features.osrelease.as_deref()?;
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    (recorded.trim() != running.trim()).then(|| format!("release {}", recorded.trim()))
}

/// The build id of the kernel that recorded `file` (HEADER_BUILD_ID's `[kernel.kallsyms]`).
pub(crate) fn kernel_build_id(file: &PerfData) -> Option<&[u8]> {
    file.features
        .build_ids
        .iter()
        .find(|b| b.filename == "[kernel.kallsyms]")
        .map(|b| b.build_id.as_slice())
}

/// Build ids compared as perf does: the header pads them to 20 bytes with zeros.
pub(crate) fn same_build_id(a: &[u8], b: &[u8]) -> bool {
    let trim = |x: &[u8]| -> usize { x.iter().rposition(|&v| v != 0).map_or(0, |i| i + 1) };
    a[..trim(a)] == b[..trim(b)]
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// Why `file` was not recorded on this machine's running kernel, if the header says so:
/// another kernel (build id or release), or another host name.
pub(crate) fn elsewhere(file: &PerfData) -> Option<String> {
    if let Some(why) = other_kernel(kernel_build_id(file), file) {
        return Some(why);
    }
    let recorded = file.features.hostname.as_deref()?;
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    (recorded.trim() != here.trim()).then(|| format!("host {}", recorded.trim()))
}
