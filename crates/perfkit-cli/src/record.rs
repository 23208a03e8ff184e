//! `perfkit record`: sample a command, processes or CPUs into a perf.data file.
//!
//! One ring buffer per CPU (a per-task `inherit` event cannot be mmap'ed with cpu=-1), every
//! other event of that CPU redirected into it with `PERF_EVENT_IOC_SET_OUTPUT`; one thread
//! drains all rings with epoll and writes a FINISHED_ROUND after each pass, as perf does.

use crate::events::{self, EventSpec};
use crate::exit_error;
use crate::record_args::{RecordArgs, sampling_attr};
use crate::topology;
use anyhow::{Context, Result, anyhow, bail};
use perfkit::sys;
use perfkit::{
    Attr, Counter, ExitStatus, PausedChild, Poller, Ready, RingBuffer, RingSize, Target,
};
use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions, synth};
use perfkit_records::{Endian, MultiParser};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

struct Opened {
    rings: Vec<RingBuffer>,
    counters: Vec<Counter>,
    ids: Vec<Vec<u64>>,
}

/// Open every event for every (cpu, task): the first counter of each CPU owns the ring.
/// Members of a `{...}` group open into their leader on the same (cpu, task); tracepoint
/// filters are set; events whose PMU covers only some CPUs skip the others.
fn open_all(
    attrs: &[sys::perf_event_attr],
    specs: &[EventSpec],
    names: &[String],
    cpus: &[u32],
    tasks: &[i32],
    pages: usize,
) -> Result<Opened> {
    let mut rings = Vec::new();
    let mut counters: Vec<Counter> = Vec::new();
    let mut ids = vec![Vec::new(); attrs.len()];
    let fail = |e: perfkit::Error, name: &str| {
        let e = e.with_event(name);
        let hint = e
            .hint()
            .map(|h| format!("\n  hint: {h}"))
            .unwrap_or_default();
        anyhow!("{e}{hint}")
    };
    for &cpu in cpus {
        let mut owner: Option<usize> = None;
        // Index into `counters` of each event's counter per task on this CPU.
        let mut here: Vec<Vec<Option<usize>>> = vec![vec![None; tasks.len()]; attrs.len()];
        for (ei, a) in attrs.iter().enumerate() {
            let spec = &specs[ei];
            if spec.cpus.as_ref().is_some_and(|c| !c.contains(&cpu)) {
                continue;
            }
            let leader = if spec.grouped && !spec.leader {
                specs[..ei]
                    .iter()
                    .rposition(|s| s.group == spec.group && s.leader)
            } else {
                None
            };
            for (ti, &task) in tasks.iter().enumerate() {
                let target = if task == -1 {
                    Target::cpu(cpu)
                } else {
                    Target::pid_on_cpu(task, cpu)
                };
                let group_fd = match leader {
                    Some(l) => match here[l][ti] {
                        Some(ci) => Some(counters[ci].as_fd()),
                        None => continue,
                    },
                    None => None,
                };
                let mut attr = Attr::from_raw(*a);
                let mut res = Counter::open_raw(&attr, &target, group_fd, 0);
                // Like perf: PMUs that know nothing of guests refuse exclude_guest.
                if let Some(plain) = crate::events::without_guest_bits(&attr, &res) {
                    res = Counter::open_raw(&plain, &target, group_fd, 0);
                    attr = plain;
                }
                // `:P`: the highest precise_ip the PMU takes.
                if spec.precise_max {
                    for p in (0..=2u8).rev() {
                        if res.as_ref().is_err_and(|e| e.errno() == libc::EINVAL) {
                            attr = attr.precise_ip(p);
                            res = Counter::open_raw(&attr, &target, group_fd, 0);
                        }
                    }
                }
                let mut c = res.map_err(|e| fail(e, &names[ei]))?;
                if let Some(f) = &spec.filter {
                    c.set_filter(f).map_err(|e| fail(e, &names[ei]))?;
                }
                c.set_name(names[ei].clone());
                ids[ei].push(c.id()?);
                match owner {
                    None => {
                        let ring = RingBuffer::map(&c, RingSize::Pages(pages))
                            .map_err(|e| anyhow!("{e}"))?;
                        rings.push(ring);
                        owner = Some(counters.len());
                    }
                    Some(o) => c
                        .set_output(Some(&counters[o]))
                        .map_err(|e| anyhow!("{e}"))?,
                }
                here[ei][ti] = Some(counters.len());
                counters.push(c);
            }
        }
    }
    Ok(Opened {
        rings,
        counters,
        ids,
    })
}

/// `PERF_RECORD_MMAP` records (pid -1) for the loaded kernel modules, as perf synthesizes
/// them: address and size from `/proc/modules`, the file from `modules.dep` (else
/// `[name]`). Hidden addresses (all zero: not root, kptr_restrict) give none.
fn module_mmaps(
    modules: &str,
    modules_dep: &str,
    release: &str,
    attr: &sys::perf_event_attr,
    id: u64,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for line in modules.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(name), Some(size), Some(addr)) = (f.first(), f.get(1), f.get(5)) else {
            continue;
        };
        let (Ok(size), Ok(addr)) = (
            size.parse::<u64>(),
            u64::from_str_radix(addr.trim_start_matches("0x"), 16),
        ) else {
            continue;
        };
        if addr == 0 {
            continue;
        }
        let file = modules_dep
            .lines()
            .filter_map(|l| l.split(':').next())
            .find(|p| {
                let base = p.rsplit('/').next().unwrap_or(p);
                let stem = base.split(".ko").next().unwrap_or(base);
                stem.replace('-', "_") == name.replace('-', "_")
            })
            .map(|p| format!("/lib/modules/{release}/{p}"))
            .unwrap_or_else(|| format!("[{name}]"));
        let mut b = Vec::new();
        b.extend_from_slice(&u32::MAX.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        for v in [addr, size, 0] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(file.as_bytes());
        b.push(0);
        out.push(perfkit_data::record(
            sys::PERF_RECORD_MMAP,
            sys::PERF_RECORD_MISC_KERNEL,
            &b,
            &synth::sample_id_trailer(attr, -1, -1, id),
        ));
    }
    out
}

/// When `--switch-output` starts a new file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Switch {
    /// On SIGUSR2.
    Signal,
    /// When the data reaches this many bytes.
    Size(u64),
    /// After this long.
    Time(Duration),
}

fn parse_switch(s: &str) -> Result<Switch> {
    if s == "signal" {
        return Ok(Switch::Signal);
    }
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| anyhow!("--switch-output={s}: use signal, a size (100M) or a time (30s)"))?;
    Ok(match unit {
        "B" | "b" => Switch::Size(n),
        "K" | "k" => Switch::Size(n << 10),
        "M" => Switch::Size(n << 20),
        "G" | "g" => Switch::Size(n << 30),
        "s" => Switch::Time(Duration::from_secs(n)),
        "m" => Switch::Time(Duration::from_secs(n * 60)),
        "h" => Switch::Time(Duration::from_secs(n * 3600)),
        "d" => Switch::Time(Duration::from_secs(n * 86400)),
        _ => bail!("--switch-output={s}: unknown unit `{unit}` (B, K, M, G; s, m, h, d)"),
    })
}

/// Where the next file is written while the current one is finished.
fn pending_path(output: &Path) -> PathBuf {
    let mut p = output.as_os_str().to_owned();
    p.push(".next");
    PathBuf::from(p)
}

/// `perf.data.YYYYMMDDhhmmssmmm` (UTC), as perf names switched files.
fn rotated_name(output: &Path) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let mut name = output.as_os_str().to_owned();
    name.push(format!(
        ".{y:04}{m:02}{d:02}{:02}{:02}{:02}{:03}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        now.subsec_millis()
    ));
    PathBuf::from(name)
}

fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Run `perfkit record`.
pub fn run(args: RecordArgs) -> Result<u8> {
    let switch = args
        .switch_output
        .as_deref()
        .map(parse_switch)
        .transpose()?;
    if switch.is_some() && args.output.as_os_str() == "-" {
        bail!("--switch-output writes files: it cannot be used with -o -");
    }
    // Signals first: Ctrl-C at any point ends the recording cleanly (and goes to the
    // command once it runs), never killing perfkit mid-file.
    let mut poller = Poller::new().context("epoll")?;
    let stopper = poller.stopper();
    let child_pid = Arc::new(AtomicI32::new(0));
    let status = Arc::new(std::sync::Mutex::new(None::<ExitStatus>));
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGUSR2,
    ])?;
    let sig_handle = signals.handle();
    let early_signal = Arc::new(AtomicI32::new(0));
    let switch_now = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let (stopper, child_pid, early, switch_now) = (
            stopper.clone(),
            child_pid.clone(),
            early_signal.clone(),
            switch_now.clone(),
        );
        std::thread::spawn(move || {
            for sig in signals.forever() {
                if sig == signal_hook::consts::SIGUSR2 {
                    switch_now.store(true, Ordering::SeqCst);
                    continue;
                }
                early
                    .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
                    .ok();
                let pid = child_pid.load(Ordering::SeqCst);
                if pid > 0 {
                    let _ = perfkit::kill(pid, sig);
                } else {
                    stopper.stop();
                }
            }
        });
    }
    let call_graph = args.call_graph()?;
    let sampling = args.sampling()?;
    let pages = args.ring_pages()?;
    let mut specs: Vec<EventSpec> = if args.events.is_empty() {
        let cycles = events::parse(&["cycles".to_string()])?;
        let probe = Attr::from_raw(cycles[0].attr)
            .exclude_kernel(true)
            .sample_period(1_000_000);
        if Counter::open(&probe, &Target::this_thread()).is_ok() {
            cycles
        } else {
            if !args.quiet {
                eprintln!(
                    "perfkit: no hardware counters on this machine (cycles is not supported): \
                     sampling cpu-clock instead"
                );
            }
            events::parse(&["cpu-clock".to_string()])?
        }
    } else {
        events::parse_with_filters(&args.event_filters)?
    };
    let several = specs.len() > 1;
    let system_wide = args.all_cpus || args.cpu.is_some();
    let cpus = match &args.cpu {
        Some(list) => topology::parse_cpu_list(list).context("-C")?,
        None => topology::online_cpus(),
    };
    let mut attached: Vec<i32> = Vec::new();
    for (flag, list) in [("-p", &args.pid), ("-t", &args.tid)] {
        if let Some(list) = list {
            for p in list.split(',').filter(|s| !s.is_empty()) {
                let id: i32 = p
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| anyhow!("{flag} {list}: `{p}` is not a process id"))?;
                if flag == "-p" {
                    attached.extend(
                        perfkit::threads_of(id)
                            .map_err(|_| anyhow!("{flag} {id}: no such process"))?,
                    );
                } else {
                    if !std::path::Path::new(&format!("/proc/{id}")).exists() {
                        bail!("-t {id}: no such thread");
                    }
                    attached.push(id);
                }
            }
        }
    }
    if args.command.is_empty() && attached.is_empty() && !system_wide {
        bail!(
            "nothing to record: give a command (`perfkit record -- COMMAND`), -p PID, -t TID, -a or -C CPUS"
        );
    }
    let child = match args.command.split_first() {
        Some((prog, rest)) => {
            Some(PausedChild::spawn(prog, rest).map_err(|e| exit_error(e.exit_code() as u8, e))?)
        }
        None => None,
    };
    let tasks: Vec<i32> = if system_wide {
        vec![-1]
    } else if let Some(c) = &child {
        vec![c.pid()]
    } else {
        attached.clone()
    };
    let inherit = !args.no_inherit && !system_wide;
    let attrs: Vec<sys::perf_event_attr> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut a = sampling_attr(
                s,
                sampling,
                call_graph,
                several,
                args.sample_cpu || system_wide,
                inherit,
                i == 0,
            );
            if child.is_some() && !system_wide {
                a.set(sys::attr_flags::ENABLE_ON_EXEC, true);
            }
            a
        })
        .collect();
    if args.verbose > 0 {
        for a in &attrs {
            eprintln!("{}", events::describe_attr(a));
        }
    }
    let names: Vec<String> = specs
        .iter_mut()
        .map(|s| std::mem::take(&mut s.name))
        .collect();
    let mut opened = open_all(&attrs, &specs, &names, &cpus, &tasks, pages)?;
    let file_events: Vec<FileEvent> = attrs
        .iter()
        .zip(&names)
        .zip(&opened.ids)
        .map(|((a, n), ids)| FileEvent {
            attr: *a,
            name: n.clone(),
            ids: ids.clone(),
        })
        .collect();
    let parser = MultiParser::new(
        Endian::NATIVE,
        attrs
            .iter()
            .zip(&opened.ids)
            .map(|(a, ids)| (ids.as_slice(), a)),
    )
    .map_err(|e| anyhow!("{e}"))?;
    let wopts = WriteOptions {
        compress: args.compress,
        chunk: pages * 4096,
    };
    let to_pipe = args.output.as_os_str() == "-";
    let first_id = opened.ids[0].first().copied().unwrap_or(0);
    let pids: Vec<i32> = if system_wide {
        all_pids()
    } else {
        let mut p: Vec<i32> = args
            .pid
            .iter()
            .flat_map(|l| l.split(','))
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        if let Some(t) = &args.tid {
            p.extend(t.split(',').filter_map(|s| s.trim().parse::<i32>().ok()));
        }
        p
    };
    // A file starts with what perf synthesizes: the kernel map, existing tasks, and
    // FINISHED_INIT. `extra` adds the launched command once it runs (a switched file).
    let start_file_at = |path: &Path, extra: &[i32]| -> Result<PerfDataWriter> {
        let mut w = if to_pipe {
            PerfDataWriter::pipe(Box::new(std::io::stdout()), file_events.clone(), wopts)
        } else {
            PerfDataWriter::create(path, file_events.clone(), wopts)
        }
        .with_context(|| format!("cannot create {}", path.display()))?;
        if let Some(k) = synth::kernel_mmap(&attrs[0], first_id) {
            w.write_record(&[&k])?;
        }
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let release = release.trim();
        let modules = std::fs::read_to_string("/proc/modules").unwrap_or_default();
        let dep = std::fs::read_to_string(format!("/lib/modules/{release}/modules.dep"))
            .unwrap_or_default();
        for m in module_mmaps(&modules, &dep, release, &attrs[0], first_id) {
            w.write_record(&[&m])?;
        }
        let all: Vec<i32> = pids.iter().chain(extra).copied().collect();
        for r in synth::tasks(&attrs[0], first_id, &all) {
            w.write_record(&[&r])?;
        }
        w.write_record(&[&synth::finished_init()])?;
        Ok(w)
    };
    let mut w = start_file_at(&args.output, &[])?;
    for (i, r) in opened.rings.iter().enumerate() {
        poller.add(r.as_fd(), i as u64).context("epoll")?;
    }

    if child.is_none() || system_wide {
        for c in &opened.counters {
            c.enable().map_err(|e| anyhow!("{e}"))?;
        }
    }
    if let Some(c) = child.filter(|_| {
        // Interrupted before the command started: it never runs (dropping it ends it).
        let sig = early_signal.load(Ordering::SeqCst);
        if sig != 0
            && let Ok(mut s) = status.lock()
        {
            *s = Some(ExitStatus::Signaled(sig));
        }
        sig == 0
    }) {
        let pid = c.start().map_err(|e| exit_error(e.exit_code() as u8, e))?;
        child_pid.store(pid, Ordering::SeqCst);
        let (stopper, status) = (stopper.clone(), status.clone());
        std::thread::spawn(move || {
            if let Ok(st) = perfkit::wait(pid)
                && let Ok(mut s) = status.lock()
            {
                *s = Some(st);
            }
            stopper.stop();
        });
    }

    let (mut samples, mut lost, mut throttled, mut wakeups) = (0u64, 0u64, 0u64, 0u64);
    let mut scratch = Vec::new();
    let mut drain = |rings: &mut [RingBuffer], w: &mut PerfDataWriter| -> Result<u64> {
        let mut n = 0;
        for r in rings.iter_mut() {
            let mut err = None;
            r.drain(|rec| {
                if err.is_some() {
                    return;
                }
                let size = rec.data.len() + 8;
                let mut hdr = [0u8; 8];
                hdr[..4].copy_from_slice(&rec.type_.to_ne_bytes());
                hdr[4..6].copy_from_slice(&rec.misc.to_ne_bytes());
                hdr[6..].copy_from_slice(&(size as u16).to_ne_bytes());
                let res = match rec.data {
                    perfkit_records::RawData::Single(a) => w.write_record(&[&hdr, a]),
                    perfkit_records::RawData::Split(a, b) => w.write_record(&[&hdr, a, b]),
                };
                if let Err(e) = res {
                    err = Some(anyhow::Error::from(e).context("writing the profile"));
                    return;
                }
                n += 1;
                match rec.type_ {
                    sys::PERF_RECORD_SAMPLE => {
                        samples += 1;
                        let body = rec.data.contiguous(&mut scratch);
                        if let Ok((_, p)) = parser.parse(rec.type_, rec.misc, body)
                            && let Some(t) = p.time()
                        {
                            w.saw_time(t);
                        }
                    }
                    sys::PERF_RECORD_LOST => {
                        lost += rec.data.u64_at(8, Endian::NATIVE).unwrap_or(0);
                    }
                    sys::PERF_RECORD_THROTTLE => throttled += 1,
                    _ => {}
                }
            })
            .map_err(|e| anyhow!("reading the ring buffer: {e}"))?;
            if let Some(e) = err {
                return Err(e);
            }
        }
        if n > 0 {
            w.finish_round()
                .context("writing the profile (it holds the data up to the last complete round)")?;
        }
        Ok(n)
    };
    let cmdline: Vec<String> = std::env::args().collect();
    let mut file_started = std::time::Instant::now();
    loop {
        match poller.wait(Some(Duration::from_millis(100))) {
            Ok(Ready::Stopped) => break,
            Ok(Ready::Events(evs)) => {
                wakeups += 1;
                // A ring whose task exited hangs up, and epoll repeats that forever: stop
                // watching it (what it holds is drained below), as perf does.
                for (token, ev) in evs {
                    if ev.hangup
                        && let Some(r) = opened.rings.get(token as usize)
                    {
                        let _ = poller.remove(r.as_fd());
                    }
                }
            }
            Ok(Ready::Timeout) => {}
            Err(e) => return Err(anyhow!("epoll_wait: {e}")),
        }
        drain(&mut opened.rings, &mut w)?;
        let due = match switch {
            Some(Switch::Signal) => switch_now.swap(false, Ordering::SeqCst),
            Some(Switch::Size(n)) => w.data_size() >= n,
            Some(Switch::Time(d)) => file_started.elapsed() >= d,
            None => false,
        };
        if due {
            // Finish this file under a timestamped name, then start the next one.
            let child = child_pid.load(Ordering::SeqCst);
            let extra: Vec<i32> = (child > 0).then_some(child).into_iter().collect();
            let full =
                std::mem::replace(&mut w, start_file_at(&pending_path(&args.output), &extra)?);
            full.finish(&cmdline)
                .with_context(|| format!("writing {}", args.output.display()))?;
            let name = rotated_name(&args.output);
            std::fs::rename(&args.output, &name)
                .with_context(|| format!("renaming {}", args.output.display()))?;
            std::fs::rename(pending_path(&args.output), &args.output)
                .with_context(|| format!("renaming the next file to {}", args.output.display()))?;
            file_started = std::time::Instant::now();
            if !args.quiet {
                eprintln!(
                    "[ perfkit record: dump data: woken up {wakeups} times ]\n[ perfkit record: dump {} ]",
                    name.display()
                );
            }
        }
    }
    for c in &opened.counters {
        let _ = c.disable();
    }
    drain(&mut opened.rings, &mut w)?;
    sig_handle.close();
    let bytes = w
        .finish(&cmdline)
        .with_context(|| format!("writing {}", args.output.display()))?;
    if switch.is_some() {
        let name = rotated_name(&args.output);
        std::fs::rename(&args.output, &name)
            .with_context(|| format!("renaming {}", args.output.display()))?;
        if !args.quiet {
            eprintln!("[ perfkit record: dump {} ]", name.display());
        }
    }
    if !args.quiet {
        eprintln!(
            "[ perfkit record: woken up {wakeups} times to write data ]\n\
             [ perfkit record: wrote {samples} samples to {} ({:.3} MB); {lost} lost, {throttled} throttled ]",
            args.output.display(),
            bytes as f64 / 1e6
        );
        if lost > 0 {
            eprintln!(
                "perfkit: {lost} samples were lost: use a bigger ring (-m) or a lower frequency (-F)"
            );
        }
    }
    let st = status.lock().ok().and_then(|s| *s);
    Ok(st.map_or(0, |s| s.shell_code().clamp(0, 255) as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_maps_from_proc_modules() {
        let modules = "nvme 57344 2 - Live 0xffffffffc0123000\n\
                       kvm_amd 200704 0 - Live 0xffffffffc0200000\n\
                       hidden 4096 0 - Live 0x0000000000000000\n";
        let dep = "kernel/drivers/nvme/host/nvme.ko.xz: kernel/drivers/nvme/host/nvme-core.ko.xz\n\
                   kernel/arch/x86/kvm/kvm-amd.ko.xz: kernel/arch/x86/kvm/kvm.ko.xz\n";
        let mut attr = sys::perf_event_attr::new();
        attr.set(sys::attr_flags::SAMPLE_ID_ALL, true);
        attr.sample_type = sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME;
        let recs = module_mmaps(modules, dep, "6.1.0", &attr, 7);
        assert_eq!(recs.len(), 2, "hidden addresses give no record");
        let parser = perfkit_records::RecordParser::new(&attr, perfkit_records::Endian::NATIVE);
        let mut seen = Vec::new();
        for r in &recs {
            let (type_, misc) = (
                u32::from_ne_bytes(r[..4].try_into().unwrap()),
                u16::from_ne_bytes(r[4..6].try_into().unwrap()),
            );
            let p = parser.parse(type_, misc, &r[8..]).unwrap();
            let perfkit_records::Record::Mmap(m) = p.record else {
                panic!()
            };
            assert_eq!(m.pid, -1);
            seen.push((
                m.addr,
                m.len,
                String::from_utf8_lossy(m.filename).into_owned(),
            ));
        }
        assert_eq!(
            seen[0],
            (
                0xffffffffc0123000,
                57344,
                "/lib/modules/6.1.0/kernel/drivers/nvme/host/nvme.ko.xz".into()
            )
        );
        assert_eq!(
            seen[1].2,
            "/lib/modules/6.1.0/kernel/arch/x86/kvm/kvm-amd.ko.xz"
        );
    }
}
