//! `perf report --header` / `--header-only`: a file's header and feature sections, line
//! for line as perf 6.1 prints them (`perf_header__fprintf`).
//!
//! File mode: `# captured on` (the file's modification time, as `ctime` writes it, in
//! UTC), the header version, data offset and size, the feature offset, then each feature
//! in bit order (`# hostname : vm`, `# event : name = ...`, `# compressed : Zstd, level =
//! 1, ratio = 2`, ...; the topology features say `use -I to display`), the features the
//! file lacks, and the closing `# ========`. Pipe mode has no header sections: perf prints
//! zeros for them, closes the block, then prints the features as their records arrive.

use perfkit_data::{PerfData, feature as ft};
use std::fmt::Write;
use std::time::SystemTime;

/// perf's feature names by bit (`HEADER_*` without the prefix), 1 to 31 (perf 6.1's last).
const NAMES: [&str; 32] = [
    "RESERVED",
    "TRACING_DATA",
    "BUILD_ID",
    "HOSTNAME",
    "OSRELEASE",
    "VERSION",
    "ARCH",
    "NRCPUS",
    "CPUDESC",
    "CPUID",
    "TOTAL_MEM",
    "CMDLINE",
    "EVENT_DESC",
    "CPU_TOPOLOGY",
    "NUMA_TOPOLOGY",
    "BRANCH_STACK",
    "PMU_MAPPINGS",
    "GROUP_DESC",
    "AUXTRACE",
    "STAT",
    "CACHE",
    "SAMPLE_TIME",
    "MEM_TOPOLOGY",
    "CLOCKID",
    "DIR_FORMAT",
    "BPF_PROG_INFO",
    "BPF_BTF",
    "COMPRESSED",
    "CPU_PMU_CAPS",
    "CLOCK_DATA",
    "HYBRID_TOPOLOGY",
    "PMU_CAPS",
];

/// The date (year, month 1-12, day 1-31) of `days` since 1970-01-01 (Howard Hinnant's
/// civil-from-days algorithm), for the dates perf prints and names files with.
pub fn civil_date(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `ctime(3)` of `t` in UTC, without the newline: `Wed Nov 25 09:27:14 2026`.
pub fn ctime(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = civil_date(days);
    const WDAY: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        WDAY[days.rem_euclid(7) as usize],
        MON[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

/// The `# event :` line of one attr: `name = N, , id = { 1, 2 }, type = 1, size = 128, ...`
/// (the attr fields as perf's `perf_event_attr__fprintf` lists them).
pub fn event_line(name: &str, ids: &[u64], attr_fields: &[(String, String)]) -> String {
    let mut s = format!("# event : name = {name}, ");
    if !ids.is_empty() {
        s.push_str(", id = {");
        for (i, id) in ids.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let _ = write!(s, " {id}");
        }
        s.push_str(" }");
    }
    for (k, v) in attr_fields {
        let _ = write!(s, ", {k} = {v}");
    }
    s
}

/// `secs.usecs` of a timestamp in nanoseconds (perf's `timestamp__scnprintf_usec`).
fn usec(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

/// The header text. `captured` is the file's modification time; `attr_fields` gives the
/// `(name, value)` pairs of an attr as perf prints them (perfkit-events knows them).
/// `pipe_features`: print a pipe-mode stream's features (perf does for a report and
/// `--header-only`, not with `--stats` or `--tasks`).
pub fn render(
    file: &PerfData,
    captured: Option<SystemTime>,
    attr_fields: &dyn Fn(&perfkit_sys::perf_event_attr) -> Vec<(String, String)>,
    pipe_features: bool,
) -> String {
    render_info(file, captured, attr_fields, pipe_features, false)
}

/// [`render`], with the topology sections in full when `show_info` (perf's `-I`).
pub fn render_info(
    file: &PerfData,
    captured: Option<SystemTime>,
    attr_fields: &dyn Fn(&perfkit_sys::perf_event_attr) -> Vec<(String, String)>,
    pipe_features: bool,
    show_info: bool,
) -> String {
    let mut s = String::from("# ========\n");
    let _ = writeln!(
        s,
        "# captured on    : {}",
        captured.map_or_else(|| ctime(SystemTime::now()), ctime)
    );
    let (off, size, feat) = if file.pipe {
        (0, 0, 0)
    } else {
        let d = file.data_section();
        (d.start, d.end - d.start, d.end)
    };
    let _ = writeln!(s, "# header version : 1");
    let _ = writeln!(s, "# data offset    : {off}");
    let _ = writeln!(s, "# data size      : {size}");
    let _ = writeln!(s, "# feat offset    : {feat}");
    if file.pipe {
        s.push_str("# ========\n#\n");
        if !pipe_features {
            return s;
        }
    }
    let f = &file.features;
    let bits = present_bits(file);
    let has = |bit: usize| bits.contains(&bit);
    let mut line = |bit: usize, text: Option<String>| {
        if has(bit)
            && let Some(t) = text
        {
            s.push_str(&t);
            s.push('\n');
        }
    };
    line(
        ft::HOSTNAME,
        f.hostname.as_ref().map(|v| format!("# hostname : {v}")),
    );
    line(
        ft::OSRELEASE,
        f.osrelease.as_ref().map(|v| format!("# os release : {v}")),
    );
    line(
        ft::VERSION,
        f.version.as_ref().map(|v| format!("# perf version : {v}")),
    );
    line(ft::ARCH, f.arch.as_ref().map(|v| format!("# arch : {v}")));
    line(
        ft::NRCPUS,
        f.nrcpus
            .map(|(on, av)| format!("# nrcpus online : {on}\n# nrcpus avail : {av}")),
    );
    line(
        ft::CPUDESC,
        f.cpudesc.as_ref().map(|v| format!("# cpudesc : {v}")),
    );
    line(
        ft::CPUID,
        f.cpuid.as_ref().map(|v| format!("# cpuid : {v}")),
    );
    line(
        ft::TOTAL_MEM,
        f.total_mem_kb.map(|v| format!("# total memory : {v} kB")),
    );
    if !f.cmdline.is_empty() {
        let mut c = String::from("# cmdline : ");
        for a in &f.cmdline {
            c.push_str(a);
            c.push(' ');
        }
        line(ft::CMDLINE, Some(c));
    }
    if has(ft::EVENT_DESC) || file.pipe {
        let events: Vec<String> = file
            .attrs
            .iter()
            .map(|a| event_line(&a.name, &a.ids, &attr_fields(&a.attr)))
            .collect();
        if !events.is_empty() {
            line(ft::EVENT_DESC, Some(events.join("\n")));
        }
    }
    let info = |name: &str, full: Option<String>| {
        if show_info {
            full
        } else {
            Some(format!("# {name} info available, use -I to display"))
        }
    };
    use crate::header_info as hi;
    line(
        ft::CPU_TOPOLOGY,
        info(
            "CPU_TOPOLOGY",
            f.cpu_topology.as_ref().map(hi::cpu_topology),
        ),
    );
    line(
        ft::NUMA_TOPOLOGY,
        info("NUMA_TOPOLOGY", Some(hi::numa(&f.numa))),
    );
    line(
        ft::BRANCH_STACK,
        Some("# contains samples with branch stack".into()),
    );
    if !f.pmu_mappings.is_empty() {
        let m: Vec<String> = f
            .pmu_mappings
            .iter()
            .map(|(t, n)| format!("{n} = {t}"))
            .collect();
        line(
            ft::PMU_MAPPINGS,
            Some(format!("# pmu mappings: {}", m.join(", "))),
        );
    }
    line(
        ft::AUXTRACE,
        Some("# contains AUX area data (e.g. instruction trace)".into()),
    );
    line(ft::STAT, Some("# contains stat data".into()));
    line(ft::CACHE, info("CACHE", Some(hi::caches(&f.caches))));
    if let Some((first, last)) = f.sample_time {
        line(
            ft::SAMPLE_TIME,
            Some(format!(
                "# time of first sample : {}\n# time of last sample : {}\n# sample duration : {:10.3} ms",
                usec(first),
                usec(last),
                last.saturating_sub(first) as f64 / 1e6
            )),
        );
    }
    line(
        ft::MEM_TOPOLOGY,
        info(
            "MEM_TOPOLOGY",
            f.mem_topology.as_ref().map(hi::mem_topology),
        ),
    );
    if let Some(res) = f.clockid {
        line(
            ft::CLOCKID,
            Some(format!("# clockid frequency: {} MHz", res * 1000)),
        );
    }
    let btfs = f
        .raw
        .iter()
        .find(|(b, _)| *b == ft::BPF_BTF)
        .and_then(|(_, raw)| perfkit_data::bpf_btf::parse(raw, file.endian))
        .unwrap_or_default();
    if let Some((_, raw)) = f.raw.iter().find(|(b, _)| *b == ft::BPF_PROG_INFO)
        && let Some(progs) = perfkit_data::bpf_prog_info::parse(raw, file.endian)
    {
        let text: Vec<String> = progs
            .iter()
            .filter_map(|p| bpf_prog_lines(p, &btfs))
            .collect();
        if !text.is_empty() {
            line(ft::BPF_PROG_INFO, Some(text.join("\n")));
        }
    }
    if !btfs.is_empty() {
        let text: Vec<String> = btfs
            .iter()
            .map(|b| format!("# btf info of id {}", b.id))
            .collect();
        line(ft::BPF_BTF, Some(text.join("\n")));
    }
    if let Some(c) = &f.compressed {
        let kind = if c.kind == 1 { "Zstd" } else { "Unknown" };
        line(
            ft::COMPRESSED,
            Some(format!(
                "# compressed : {kind}, level = {}, ratio = {}",
                c.level, c.ratio
            )),
        );
    }
    if !file.pipe {
        s.push_str("# missing features: ");
        for (bit, name) in NAMES.iter().enumerate().skip(1) {
            if !file.feature_bits.contains(&bit) {
                s.push_str(name);
                s.push(' ');
            }
        }
        s.push('\n');
        s.push_str("# ========\n#\n");
    }
    s
}

/// perf's lines for one program of `HEADER_BPF_PROG_INFO`
/// (`bpf_event__print_bpf_prog_info`): one line for a program of one function, else a line
/// per function; nothing when the counts of its arrays disagree. A function is named from
/// the program's BTF where `btfs` (the file's `HEADER_BPF_BTF`) holds it.
fn bpf_prog_lines(
    p: &perfkit_data::bpf_prog_info::BpfProgInfo,
    btfs: &[perfkit_data::bpf_btf::BpfBtf],
) -> Option<String> {
    let btf = (p.btf_id != 0)
        .then(|| btfs.iter().find(|b| b.id == p.btf_id))
        .flatten()
        .map(|b| b.data.as_slice());
    match p.functions.as_slice() {
        [] => None,
        [(addr, len, _)] => Some(format!(
            "# bpf_prog_info {}: {} addr {addr:#x} size {len}",
            p.id,
            p.function_name_with(0, btf)
        )),
        fs => {
            let mut s = format!("# bpf_prog_info {}:", p.id);
            for (i, (addr, len, _)) in fs.iter().enumerate() {
                let _ = write!(
                    s,
                    "\n# \tsub_prog {i}: {} addr {addr:#x} size {len}",
                    p.function_name_with(i, btf)
                );
            }
            Some(s)
        }
    }
}

/// The feature bits a file has: its header's bitmap, or in pipe mode the features its
/// records carried.
fn present_bits(file: &PerfData) -> Vec<usize> {
    if !file.pipe {
        return file.feature_bits.clone();
    }
    let f = &file.features;
    let mut bits: Vec<usize> = f.raw.iter().map(|(b, _)| *b).collect();
    bits.extend(f.unparsed.iter().map(|(b, _)| *b));
    let parsed = [
        (ft::HOSTNAME, f.hostname.is_some()),
        (ft::OSRELEASE, f.osrelease.is_some()),
        (ft::VERSION, f.version.is_some()),
        (ft::ARCH, f.arch.is_some()),
        (ft::NRCPUS, f.nrcpus.is_some()),
        (ft::CPUDESC, f.cpudesc.is_some()),
        (ft::CPUID, f.cpuid.is_some()),
        (ft::TOTAL_MEM, f.total_mem_kb.is_some()),
        (ft::CMDLINE, !f.cmdline.is_empty()),
        (ft::EVENT_DESC, !f.event_desc.is_empty()),
        (ft::CPU_TOPOLOGY, f.cpu_topology.is_some()),
        (ft::CACHE, !f.caches.is_empty()),
        (ft::MEM_TOPOLOGY, f.mem_topology.is_some()),
        (ft::NUMA_TOPOLOGY, !f.numa.is_empty()),
        (ft::PMU_MAPPINGS, !f.pmu_mappings.is_empty()),
        (ft::SAMPLE_TIME, f.sample_time.is_some()),
        (ft::CLOCKID, f.clockid.is_some()),
        (ft::COMPRESSED, f.compressed.is_some()),
    ];
    bits.extend(parsed.iter().filter(|(_, on)| *on).map(|(b, _)| *b));
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_matches_the_c_library_form() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_598_834);
        assert_eq!(ctime(t), "Wed Nov 25 09:27:14 2026");
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(86_400 * 4);
        assert_eq!(ctime(t), "Mon Jan  5 00:00:00 1970");
    }
}
