//! `perfkit record` flags, checked and turned into the engine's sampling options.

use anyhow::{Context, Result, bail};
use perfkit_engine::sampling::{
    CallGraph, Privilege, Sampling, SamplingOptions, max_sample_rate, parse_branch_filter,
    parse_clockid, parse_registers,
};
use std::ffi::OsString;
use std::path::PathBuf;

/// Flags of `perfkit record`, named as perf names them.
#[derive(clap::Args, Debug, Clone)]
#[command(
    about = "Sample a command, processes or CPUs into a perf.data file that perf also reads",
    after_help = "Examples:\n  perfkit record -g -- ./server\n  perfkit record -F 999 -a -- sleep 5\n  perfkit record --call-graph dwarf,16384 -o app.data -- ./app\n  perfkit record -e sched:sched_switch -p 1234"
)]
pub struct RecordArgs {
    /// Events to sample (perf's syntax; default cycles, or cpu-clock without a PMU).
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Tracepoint filter for the -e before it (`--filter 'prev_pid == 0'`), like perf.
    #[arg(long = "filter", value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Each -e with the --filter options that follow it (filled in by `main`).
    #[arg(skip)]
    pub event_filters: Vec<(String, Vec<String>)>,
    /// Samples per second (`max` = kernel.perf_event_max_sample_rate).
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<String>,
    /// Sample every N events instead of a frequency.
    #[arg(short = 'c', long = "count", value_name = "N", conflicts_with = "freq")]
    pub count: Option<u64>,
    /// Record call chains (frame pointers).
    #[arg(short = 'g')]
    pub g: bool,
    /// Call chains: fp, or dwarf[,STACK-BYTES] (copies the user stack for unwinding).
    #[arg(long = "call-graph", value_name = "MODE")]
    pub call_graph: Option<String>,
    /// Output file (`-` = standard output, pipe mode).
    #[arg(short = 'o', long = "output", default_value = "perf.data")]
    pub output: PathBuf,
    /// Ring buffer size per CPU in pages (a power of two) or with a unit (e.g. 512K, 4M).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES")]
    pub mmap_pages: Option<String>,
    /// Drain the rings with several threads: cpu (the default value), core, package, numa,
    /// or CPUS/AFFINITY:... masks. One perf.data is still written.
    #[arg(long = "threads", num_args = 0..=1, require_equals = true, default_missing_value = "cpu", value_name = "SPEC")]
    pub threads: Option<String>,
    /// Compress the data with zstd (perf reads it).
    #[arg(short = 'z', long = "compression-level", num_args = 0..=1, require_equals = true, default_missing_value = "1", value_name = "LEVEL")]
    pub compress: Option<i32>,
    /// Start a new file on SIGUSR2, or by size (e.g. 100M) or time (e.g. 30s).
    #[arg(long = "switch-output", num_args = 0..=1, require_equals = true, default_missing_value = "signal", value_name = "WHEN")]
    pub switch_output: Option<String>,
    /// perf's control channel: read `enable`, `disable`, `ping` and `stop` from a
    /// descriptor or FIFO and acknowledge each with `ack` (as `perf daemon` drives sessions).
    #[arg(long = "control", value_name = "fd:CTL[,ACK]|fifo:CTL[,ACK]")]
    pub control: Option<String>,
    /// Record timestamps (always on; accepted for perf compatibility).
    #[arg(short = 'T', long = "timestamp")]
    pub timestamp: bool,
    /// Record the sample period with a fixed period too (`-c`; frequency mode always does).
    #[arg(short = 'P', long = "period")]
    pub period: bool,
    /// Per-thread counts (`inherit_stat`).
    #[arg(short = 's', long = "stat")]
    pub stat: bool,
    /// Record the data address of each sample (and data mmaps).
    #[arg(short = 'd', long = "data")]
    pub data: bool,
    /// Record the physical data address of each sample.
    #[arg(long = "phys-data")]
    pub phys_data: bool,
    /// Record the page size of each sample's data address.
    #[arg(long = "data-page-size")]
    pub data_page_size: bool,
    /// Raw samples: tracepoint data, CPU and time in every sample.
    #[arg(short = 'R', long = "raw-samples")]
    pub raw_samples: bool,
    /// Don't put the sampled binaries into the build-id cache (~/.debug) at the end.
    #[arg(short = 'N', long = "no-buildid-cache")]
    pub no_buildid_cache: bool,
    /// Cache every mapped binary, not only the sampled ones (perfkit's build-id table, and
    /// so its cache, already names every mapped binary: accepted for perf).
    #[arg(long = "buildid-all")]
    pub buildid_all: bool,
    /// Don't write the build-id table of the binaries sampled.
    #[arg(short = 'B', long = "no-buildid")]
    pub no_buildid: bool,
    /// Don't ask the kernel for BPF program load/unload records (`bpf_event`).
    #[arg(long = "no-bpf-event")]
    pub no_bpf_event: bool,
    /// User registers in each sample (`ax,bx`; empty = all; `?` lists them).
    #[arg(long = "user-regs", num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "REGS")]
    pub user_regs: Option<String>,
    /// Registers at the interrupt in each sample (`di,r8`; empty = all; `?` lists them).
    #[arg(long = "intr-regs", num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "REGS")]
    pub intr_regs: Option<String>,
    /// Sample user space only.
    #[arg(long = "all-user", conflicts_with = "all_kernel")]
    pub all_user: bool,
    /// Sample the kernel only.
    #[arg(long = "all-kernel")]
    pub all_kernel: bool,
    /// Start sampling MSECS after the command starts (-1: start disabled).
    #[arg(
        short = 'D',
        long = "delay",
        value_name = "MSECS",
        allow_hyphen_values = true
    )]
    pub delay: Option<i64>,
    /// Timestamps from this clock: monotonic, monotonic_raw, realtime, boottime, tai or a number.
    #[arg(short = 'k', long = "clockid", value_name = "CLOCKID")]
    pub clockid: Option<String>,
    /// Record the tasks' namespaces.
    #[arg(long = "namespaces")]
    pub namespaces: bool,
    /// Record the cgroup of each sample.
    #[arg(long = "all-cgroups")]
    pub all_cgroups: bool,
    /// Stop when the file reaches this size (e.g. 10M).
    #[arg(long = "max-size", value_name = "SIZE")]
    pub max_size: Option<String>,
    /// Add a timestamp to the output file name.
    #[arg(long = "timestamp-filename")]
    pub timestamp_filename: bool,
    /// Write the ring out only once it holds this much (bytes or with a unit; accepted,
    /// checked against a quarter of the ring).
    #[arg(long = "mmap-flush", value_name = "SIZE")]
    pub mmap_flush: Option<String>,
    /// Sample taken branches (branch stacks).
    #[arg(short = 'b', long = "branch-any")]
    pub branch_any: bool,
    /// Sample branches of these kinds (any, any_call, any_ret, ind_call, call, cond, u, k, ...).
    #[arg(short = 'j', long = "branch-filter", value_name = "FILTERS")]
    pub branch_filter: Option<String>,
    /// Off-CPU time: how long the tasks slept and where (user call chains), as an
    /// `offcpu-time` event weighted in nanoseconds (from sched_switch, no BPF needed).
    #[arg(long = "off-cpu")]
    pub off_cpu: bool,
    /// Record the CPU of each sample.
    #[arg(long = "sample-cpu")]
    pub sample_cpu: bool,
    /// Don't follow the command's children.
    #[arg(short = 'i', long = "no-inherit")]
    pub no_inherit: bool,
    /// Sample existing processes (all their threads), comma separated.
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub pid: Option<String>,
    /// Sample existing threads, comma separated.
    #[arg(short = 't', long = "tid", value_name = "TID")]
    pub tid: Option<String>,
    /// System-wide: every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Only these CPUs (e.g. 0,2-3).
    #[arg(short = 'C', long = "cpu", value_name = "CPU-LIST")]
    pub cpu: Option<String>,
    /// Print each attr before opening it.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// No messages.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// The command to run and sample.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

impl RecordArgs {
    /// The call-graph mode asked for.
    pub fn call_graph(&self) -> Result<CallGraph> {
        let Some(cg) = &self.call_graph else {
            return Ok(if self.g {
                CallGraph::Fp
            } else {
                CallGraph::None
            });
        };
        cg.parse().map_err(anyhow::Error::msg)
    }

    /// The sampling frequency or period: `Err` text names the flag.
    pub fn sampling(&self) -> Result<Sampling> {
        if let Some(c) = self.count {
            if c == 0 {
                bail!("-c 0: the period must be at least 1");
            }
            return Ok(Sampling::Period(c));
        }
        let max = max_sample_rate();
        match self.freq.as_deref() {
            None => Ok(Sampling::Freq(4000.min(max.unwrap_or(4000)))),
            Some("max") => Ok(Sampling::Freq(max.unwrap_or(4000))),
            Some(s) => {
                let hz: u64 = s
                    .parse()
                    .with_context(|| format!("-F {s}: a frequency in Hz, or `max`"))?;
                if hz == 0 {
                    bail!("-F 0: the frequency must be at least 1 Hz");
                }
                if let Some(m) = max
                    && hz > m
                {
                    bail!(
                        "-F {hz}: above kernel.perf_event_max_sample_rate ({m}); use -F max, or \
                         raise it with `sysctl kernel.perf_event_max_sample_rate={hz}`"
                    );
                }
                Ok(Sampling::Freq(hz))
            }
        }
    }

    /// The engine's sampling options of these flags (the CPU is sampled system-wide).
    pub fn sampling_options(&self, system_wide: bool) -> Result<SamplingOptions> {
        let regs = |flag: &str, v: &Option<String>| -> Result<u64> {
            match v {
                None => Ok(0),
                Some(v) => parse_registers(v).map_err(|r| {
                    anyhow::anyhow!(
                        "unknown register \"{r}\", check the man page or run \"perfkit record {flag}=?\""
                    )
                }),
            }
        };
        let clockid = match &self.clockid {
            None => None,
            Some(k) => Some(
                parse_clockid(k).with_context(|| format!("unknown clockid {k}, check man page"))?,
            ),
        };
        let mut branch = match &self.branch_filter {
            None => 0,
            Some(j) => parse_branch_filter(j)
                .map_err(|b| anyhow::anyhow!("unknown branch filter {b}, check man page"))?,
        };
        if self.branch_any {
            branch |= perfkit::sys::PERF_SAMPLE_BRANCH_ANY;
        }
        Ok(SamplingOptions {
            sampling: self.sampling()?,
            call_graph: self.call_graph()?,
            sample_cpu: self.sample_cpu || system_wide,
            data_addr: self.data,
            phys_addr: self.phys_data,
            data_page_size: self.data_page_size,
            raw: self.raw_samples,
            inherit_stat: self.stat,
            user_regs: regs("--user-regs", &self.user_regs)?,
            intr_regs: regs("--intr-regs", &self.intr_regs)?,
            privilege: if self.all_user {
                Some(Privilege::User)
            } else if self.all_kernel {
                Some(Privilege::Kernel)
            } else {
                None
            },
            clockid,
            namespaces: self.namespaces,
            cgroups: self.all_cgroups,
            branch_sample_type: branch,
            tracking_event: self.delay.is_some_and(|d| d != 0),
            period: self.period,
            no_bpf_event: self.no_bpf_event,
        })
    }

    /// `--max-size` in bytes.
    pub fn max_size(&self) -> Result<Option<u64>> {
        self.max_size
            .as_deref()
            .map(|m| parse_size(m).with_context(|| format!("--max-size {m}")))
            .transpose()
    }

    /// `--mmap-flush`: bytes, at most a quarter of the ring of `pages` pages (as perf
    /// caps it).
    pub fn mmap_flush(&self, pages: usize) -> Result<u64> {
        let Some(m) = &self.mmap_flush else {
            return Ok(1);
        };
        let n = parse_size(m).with_context(|| format!("--mmap-flush {m}"))?;
        if n == 0 {
            bail!("--mmap-flush {m}: must be at least 1 byte");
        }
        Ok(n.min(pages as u64 * 4096 / 4))
    }

    /// Ring buffer data pages per CPU (a power of two) for a recording of `cpus` rings.
    pub fn ring_pages(&self, cpus: usize) -> Result<usize> {
        let page = 4096u64;
        let Some(m) = &self.mmap_pages else {
            // perf's default (perf_event_mlock_kb less a page, a power of two: 512 KiB),
            // or up to 4 MiB per CPU for root, which the kernel charges no limit.
            return Ok(perfkit::recorder_data_pages(cpus));
        };
        let pages = if m.chars().all(|c| c.is_ascii_digit()) {
            m.parse::<u64>().context("-m")?
        } else {
            parse_size(m)
                .with_context(|| format!("-m {m}"))?
                .div_ceil(page)
        };
        if pages == 0 || !pages.is_power_of_two() {
            bail!("-m {m}: the ring needs a power of two pages (e.g. 64, 128, 512K, 4M)");
        }
        Ok(pages as usize)
    }
}

/// Parse `512K`, `4M`, `1G`, `8192` into bytes.
pub fn parse_size(s: &str) -> Result<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 'K' | 'k')) => (&s[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&s[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&s[..i], 1 << 30),
        Some((i, 'B' | 'b')) => (&s[..i], 1),
        _ => (s, 1),
    };
    let n: u64 = num
        .parse()
        .with_context(|| format!("`{s}` is not a size (bytes, or with K, M, G)"))?;
    n.checked_mul(mult).context("size too large")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        r: RecordArgs,
    }

    fn args(a: &[&str]) -> RecordArgs {
        T::parse_from(std::iter::once("t").chain(a.iter().copied())).r
    }

    #[test]
    fn flags() {
        assert_eq!(args(&["-g", "true"]).call_graph().unwrap(), CallGraph::Fp);
        assert_eq!(
            args(&["--call-graph", "dwarf,16384", "true"])
                .call_graph()
                .unwrap(),
            CallGraph::Dwarf(16384)
        );
        assert_eq!(
            args(&["--call-graph", "dwarf", "true"])
                .call_graph()
                .unwrap(),
            CallGraph::Dwarf(8192)
        );
        assert!(
            args(&["--call-graph", "dwarf,0", "true"])
                .call_graph()
                .is_err()
        );
        assert_eq!(
            args(&["-c", "1000", "true"]).sampling().unwrap(),
            Sampling::Period(1000)
        );
        assert!(args(&["-F", "0", "true"]).sampling().is_err());
        assert_eq!(args(&["-m", "16", "true"]).ring_pages(2).unwrap(), 16);
        assert_eq!(args(&["-m", "4M", "true"]).ring_pages(2).unwrap(), 1024);
        assert!(args(&["-m", "3", "true"]).ring_pages(2).is_err());
        assert_eq!(args(&["-z", "true"]).compress, Some(1));
        assert_eq!(
            args(&["--switch-output", "true"]).switch_output.as_deref(),
            Some("signal")
        );
        assert_eq!(parse_size("512K").unwrap(), 512 * 1024);
    }
}
