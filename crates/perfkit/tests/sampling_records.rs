//! Samples and side-band records from the real kernel, decoded with perfkit-records and
//! checked field by field: every sample_type bit this kernel supports, tracepoint RAW
//! data, COMM/FORK/EXIT/MMAP2 (build ids)/SWITCH/SWITCH_CPU_WIDE/NAMESPACES/CGROUP/
//! KSYMBOL/BPF_EVENT, THROTTLE/UNTHROTTLE.

use perfkit::sys;
use perfkit::{
    Attr, Event, PausedChild, RingBuffer, RingSize, Sampler, SideBand, Software, Target,
    open_per_cpu, page_size,
};
use perfkit_records::{CallchainContext, Endian, Mmap2FileId, Record, RecordParser};
use std::ffi::OsString;
use std::time::{Duration, Instant};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

macro_rules! require_root {
    () => {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
    };
}

fn gettid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::gettid() }
}

fn getpid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

fn ncpus() -> u32 {
    // SAFETY: sysconf takes no pointers.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) as u32 }
}

/// A fresh private anonymous mapping of `pages` pages, each written once (one page fault
/// each); returns its address range. Unmapped on drop.
struct Touched {
    addr: usize,
    len: usize,
}

impl Touched {
    fn new(pages: usize) -> Touched {
        let ps = page_size();
        // SAFETY: a new private anonymous mapping, written only inside its bounds.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                pages * ps,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            for i in 0..pages {
                std::ptr::write_volatile(p.cast::<u8>().add(i * ps), 1);
            }
            Touched {
                addr: p as usize,
                len: pages * ps,
            }
        }
    }
    fn contains(&self, a: u64) -> bool {
        (self.addr as u64..(self.addr + self.len) as u64).contains(&a)
    }
}

impl Drop for Touched {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping made in new().
        unsafe {
            libc::munmap(self.addr as *mut libc::c_void, self.len);
        }
    }
}

#[cfg(target_arch = "x86_64")]
const REG_SP: u32 = 7; // PERF_REG_X86_SP (arch/x86/include/uapi/asm/perf_regs.h)
#[cfg(target_arch = "x86_64")]
const REG_IP: u32 = 8; // PERF_REG_X86_IP
#[cfg(target_arch = "aarch64")]
const REG_SP: u32 = 31; // PERF_REG_ARM64_SP (arch/arm64/include/uapi/asm/perf_regs.h)
#[cfg(target_arch = "aarch64")]
const REG_IP: u32 = 32; // PERF_REG_ARM64_PC

const ALL_FIELDS: u64 = sys::PERF_SAMPLE_IP
    | sys::PERF_SAMPLE_TID
    | sys::PERF_SAMPLE_TIME
    | sys::PERF_SAMPLE_ADDR
    | sys::PERF_SAMPLE_ID
    | sys::PERF_SAMPLE_STREAM_ID
    | sys::PERF_SAMPLE_CPU
    | sys::PERF_SAMPLE_PERIOD
    | sys::PERF_SAMPLE_READ
    | sys::PERF_SAMPLE_IDENTIFIER
    | sys::PERF_SAMPLE_CALLCHAIN
    | sys::PERF_SAMPLE_RAW
    | sys::PERF_SAMPLE_REGS_USER
    | sys::PERF_SAMPLE_STACK_USER
    | sys::PERF_SAMPLE_REGS_INTR
    | sys::PERF_SAMPLE_CGROUP
    | sys::PERF_SAMPLE_PHYS_ADDR
    | sys::PERF_SAMPLE_DATA_PAGE_SIZE
    | sys::PERF_SAMPLE_CODE_PAGE_SIZE
    | sys::PERF_SAMPLE_DATA_SRC
    | sys::PERF_SAMPLE_TRANSACTION;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn page_fault_samples_with_every_field() {
    require_root!();
    // WEIGHT and WEIGHT_STRUCT exclude each other: one run with each.
    for weight in [sys::PERF_SAMPLE_WEIGHT, sys::PERF_SAMPLE_WEIGHT_STRUCT] {
        let regs = (1u64 << REG_IP) | (1u64 << REG_SP);
        let attr = Attr::new(Software::PageFaults)
            .sample_period(1)
            .sample_type(ALL_FIELDS | weight)
            .read_format(
                sys::PERF_FORMAT_ID
                    | sys::PERF_FORMAT_TOTAL_TIME_ENABLED
                    | sys::PERF_FORMAT_TOTAL_TIME_RUNNING,
            )
            .sample_regs_user(regs)
            .sample_regs_intr(regs)
            .sample_stack_user(1024)
            .sample_id_all(true);
        let mut s =
            Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(64)).expect("open");
        let id = s.counter().id().unwrap();
        s.enable().unwrap();
        let touched = Touched::new(32);
        s.disable().unwrap();
        let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
        let mut scratch = Vec::new();
        let mut in_range = 0;
        let mut pages_hit = std::collections::BTreeSet::new();
        let mut last_time = 0;
        let mut last_value = 0;
        s.ring()
            .drain(|raw| {
                let p = parser.parse_raw(&raw, &mut scratch).expect("parse");
                let Record::Sample(smp) = p.record else {
                    return;
                };
                let ip = smp.ip.unwrap();
                assert_eq!(smp.pid, Some(getpid()));
                assert_eq!(smp.tid, Some(gettid()));
                let t = smp.time.unwrap();
                assert!(t >= last_time);
                last_time = t;
                assert_eq!(smp.id, Some(id));
                assert_eq!(smp.stream_id, Some(id));
                assert_eq!(smp.identifier, Some(id));
                assert!(smp.cpu.unwrap() < ncpus());
                assert_eq!(smp.period, Some(1));
                let rv = smp.read.expect("read");
                let v = rv.iter().next().expect("one value");
                assert_eq!(v.id, Some(id));
                assert!(v.value > last_value, "the count grows sample by sample");
                last_value = v.value;
                assert!(rv.time_enabled.unwrap() >= rv.time_running.unwrap());
                let cc = smp.callchain.expect("callchain");
                assert!(cc.frames().any(|f| f.ip == ip), "ip is in the callchain");
                // Software events without a tracepoint still carry a (4-byte) RAW field.
                assert!(smp.raw.is_some());
                let addr = smp.addr.unwrap();
                if touched.contains(addr) {
                    in_range += 1;
                    pages_hit.insert(addr / page_size() as u64);
                    // A user fault: the user registers are the faulting context.
                    let ru = smp.regs_user.expect("regs_user");
                    assert_eq!(ru.abi, 2, "PERF_SAMPLE_REGS_ABI_64");
                    assert_eq!(ru.get(REG_IP), Some(ip));
                    let sp = ru.get(REG_SP).unwrap();
                    let ri = smp.regs_intr.expect("regs_intr");
                    assert_eq!(ri.get(REG_IP), Some(ip), "interrupted at the same ip");
                    let st = smp.stack_user.expect("stack_user");
                    assert_eq!(st.data.len(), 1024);
                    let dyn_size = st.dyn_size.unwrap();
                    assert!(dyn_size > 0 && dyn_size <= 1024, "{dyn_size}");
                    assert!(sp > 0);
                    assert_eq!(smp.code_page_size, Some(page_size() as u64));
                    assert!(smp.data_page_size.is_some());
                    assert!(smp.phys_addr.is_some());
                }
                assert!(smp.cgroup.is_some());
                assert!(smp.data_src.is_some());
                assert_eq!(smp.transaction, Some(0));
                if weight == sys::PERF_SAMPLE_WEIGHT {
                    assert_eq!(smp.weight, Some(0));
                } else {
                    assert!(smp.weight_struct.is_some());
                }
            })
            .unwrap();
        // Each touched page faults once, but the kernel counts a fault again when it
        // retries it (a per-VMA-lock fault that falls back to mmap_lock when another
        // thread of this test binary holds it): every page is seen, a few twice.
        assert_eq!(
            pages_hit.len(),
            32,
            "a sample for every touched page, with its address"
        );
        assert!(
            (32..=64).contains(&in_range),
            "one sample per touched page (a retried fault counts twice): {in_range}"
        );
    }
}

fn tracefs() -> Option<std::path::PathBuf> {
    let base = std::path::Path::new("/sys/kernel/tracing");
    if !base.join("events").exists() {
        let src = c"nodev";
        let target = c"/sys/kernel/tracing";
        let fstype = c"tracefs";
        // SAFETY: valid C strings; mounting is idempotent enough (EBUSY if mounted).
        unsafe {
            libc::mount(
                src.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                0,
                std::ptr::null(),
            );
        }
    }
    base.join("events").exists().then(|| base.to_path_buf())
}

fn tracepoint_id(sys_name: &str, name: &str) -> Option<u64> {
    let p = tracefs()?
        .join("events")
        .join(sys_name)
        .join(name)
        .join("id");
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

#[test]
fn tracepoint_raw_data_starts_with_its_id() {
    require_root!();
    let Some(tp) = tracepoint_id("sched", "sched_switch") else {
        eprintln!("skipped: no tracefs");
        return;
    };
    let attr = Attr::new(Event::Tracepoint(tp))
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_RAW | sys::PERF_SAMPLE_TID);
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(8)).unwrap();
    s.enable().unwrap();
    for _ in 0..5 {
        std::thread::sleep(Duration::from_micros(100));
    }
    s.disable().unwrap();
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let mut n = 0;
    let comm = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
    let comm = comm.trim().as_bytes();
    s.ring()
        .drain(|raw| {
            let Record::Sample(smp) = parser.parse_raw(&raw, &mut scratch).unwrap().record else {
                return;
            };
            let raw = smp.raw.expect("raw");
            // struct trace_entry: unsigned short common_type first.
            assert_eq!(u64::from(u16::from_ne_bytes([raw[0], raw[1]])), tp);
            // sched_switch's prev_comm (at offset 8) is this thread's name.
            assert_eq!(&raw[8..8 + comm.len()], comm);
            n += 1;
        })
        .unwrap();
    assert!(n >= 5, "{n}");
}

#[test]
fn task_comm_mmap2_buildid_switch_namespaces_of_a_child() {
    require_root!();
    let child = PausedChild::spawn(
        "/bin/sh".as_ref(),
        &[
            OsString::from("-c"),
            OsString::from("/bin/sleep 0.01; exit 3"),
        ],
    )
    .unwrap();
    let pid = child.pid();
    let attr = (SideBand::TASK
        | SideBand::COMM
        | SideBand::COMM_EXEC
        | SideBand::MMAP
        | SideBand::MMAP2
        | SideBand::BUILD_ID
        | SideBand::CONTEXT_SWITCH
        | SideBand::NAMESPACES)
        .apply(
            Attr::new(Software::Dummy)
                .sample_type(sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME)
                .inherit(true)
                .enable_on_exec(true),
        );
    let mut samplers = open_per_cpu(&attr, pid, RingSize::Pages(16)).unwrap();
    let mut d = {
        let rings: Vec<&RingBuffer> = samplers.iter().map(Sampler::ring_ref).collect();
        perfkit::Drainer::new(&rings).unwrap()
    };
    child.start().unwrap();
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let mut comms = Vec::new();
    let mut forks = Vec::new();
    let mut exits = Vec::new();
    let mut mmaps = Vec::new();
    let (mut sw_in, mut sw_out, mut ns) = (0, 0, 0);
    let mut rings: Vec<&mut RingBuffer> = samplers.iter_mut().map(Sampler::ring).collect();
    d.run(&mut rings, Some(Duration::from_secs(10)), |_, raw| {
        let p = parser.parse_raw(&raw, &mut scratch).unwrap();
        let sid_pid = p.sample_id.pid;
        match p.record {
            Record::Comm(c) => {
                assert_eq!(sid_pid, Some(c.pid), "sample_id_all trailer");
                comms.push((c.pid, String::from_utf8_lossy(c.comm).into_owned(), c.exec));
            }
            Record::Fork(t) => forks.push(t),
            Record::Exit(t) => exits.push(t),
            Record::Mmap2(m) => {
                let build_id = match m.file_id {
                    Mmap2FileId::BuildId(b) => Some(b.as_bytes().to_vec()),
                    Mmap2FileId::Inode { .. } => None,
                };
                mmaps.push((
                    m.pid,
                    String::from_utf8_lossy(m.filename).into_owned(),
                    build_id,
                    p.misc & sys::PERF_RECORD_MISC_MMAP_BUILD_ID != 0,
                ));
            }
            Record::Switch(s) => {
                if s.out {
                    sw_out += 1;
                } else {
                    sw_in += 1;
                }
            }
            Record::Namespaces(n) => {
                assert!(n.len() >= 7, "{} namespace links", n.len());
                assert!(n.iter().all(|l| l.ino != 0));
                ns += 1;
            }
            _ => {}
        }
    })
    .unwrap();
    let status = perfkit::wait(pid).unwrap();
    assert_eq!(status.shell_code(), 3);
    // exec of the shell happened before enable_on_exec fired; the sleep's exec is seen.
    assert!(
        comms.iter().any(|(_, c, exec)| c == "sleep" && *exec),
        "{comms:?}"
    );
    let sleep_pid = comms
        .iter()
        .find(|(_, c, _)| c == "sleep")
        .map(|x| x.0)
        .unwrap();
    assert!(
        forks.iter().any(|f| f.pid == sleep_pid && f.ppid == pid),
        "the shell forked the sleep: {forks:?}"
    );
    assert!(exits.iter().any(|e| e.pid == sleep_pid), "{exits:?}");
    assert!(exits.iter().any(|e| e.pid == pid), "{exits:?}");
    // MMAP2 with build ids: the sleep binary and libc, 20-byte GNU build ids.
    let sleep_map = mmaps
        .iter()
        .find(|(p, f, _, _)| *p == sleep_pid && f.ends_with("/sleep"))
        .unwrap_or_else(|| panic!("{mmaps:?}"));
    assert!(sleep_map.3, "misc has PERF_RECORD_MISC_MMAP_BUILD_ID");
    assert_eq!(sleep_map.2.as_ref().map(Vec::len), Some(20));
    assert!(
        mmaps
            .iter()
            .any(|(_, f, b, _)| f.contains("libc") && b.is_some())
    );
    assert!(sw_in >= 1 && sw_out >= 1, "in {sw_in} out {sw_out}");
    assert!(ns >= 1, "NAMESPACES at fork");
}

#[test]
fn cpu_wide_switch_cgroup_ksymbol_bpf_records() {
    require_root!();
    let attr = (SideBand::CONTEXT_SWITCH
        | SideBand::CGROUP
        | SideBand::KSYMBOL
        | SideBand::BPF_EVENT)
        .apply(
            Attr::new(Software::Dummy)
                .sample_type(sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME | sys::PERF_SAMPLE_CPU)
                .disabled(false),
        );
    let mut samplers = open_per_cpu(&attr, -1, RingSize::Pages(64)).unwrap();
    // A cgroup mkdir (CGROUP record) ...
    let cg_name = format!("perfkit-test-{}", getpid());
    let cg_root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .find(|p| std::path::Path::new(p).join("cgroup.procs").exists());
    let made_cgroup = cg_root.is_some_and(|r| {
        let path = std::path::Path::new(r).join(&cg_name);
        let ok = std::fs::create_dir(&path).is_ok();
        if ok {
            let _ = std::fs::remove_dir(&path);
        }
        ok
    });
    // ... a BPF program load (KSYMBOL + BPF_EVENT) ...
    let prog = load_trivial_bpf();
    // ... and switches.
    for _ in 0..5 {
        std::thread::sleep(Duration::from_micros(100));
    }
    for s in &samplers {
        s.disable().unwrap();
    }
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let mut cgroups = Vec::new();
    let mut ksyms = Vec::new();
    let mut bpf = Vec::new();
    let mut wide = 0;
    let me = gettid();
    for (cpu, s) in samplers.iter_mut().enumerate() {
        s.ring()
            .drain(|raw| {
                let p = parser.parse_raw(&raw, &mut scratch).unwrap();
                assert_eq!(p.sample_id.cpu, Some(cpu as u32));
                match p.record {
                    Record::SwitchCpuWide(w) if w.out && p.sample_id.tid == Some(me) => {
                        wide += 1;
                        assert_ne!(w.next_prev_tid, me);
                    }
                    Record::Cgroup(c) => {
                        cgroups.push((c.id, String::from_utf8_lossy(c.path).into_owned()))
                    }
                    Record::Ksymbol(k) => ksyms.push((
                        k.ksym_type,
                        k.addr,
                        k.len,
                        String::from_utf8_lossy(k.name).into_owned(),
                    )),
                    Record::BpfEvent(b) => bpf.push((b.type_, b.id, b.tag)),
                    _ => {}
                }
            })
            .unwrap();
    }
    assert!(wide >= 5, "SWITCH_CPU_WIDE out of this thread: {wide}");
    if made_cgroup {
        let c = cgroups
            .iter()
            .find(|(_, p)| p.ends_with(&cg_name))
            .unwrap_or_else(|| panic!("{cgroups:?}"));
        assert!(c.0 != 0);
    } else {
        eprintln!("no writable cgroup hierarchy: CGROUP record not checked");
    }
    match prog {
        Some((_fd, prog_id)) => {
            let load = bpf
                .iter()
                .find(|b| b.1 == prog_id)
                .unwrap_or_else(|| panic!("{bpf:?}"));
            assert_eq!(load.0, sys::PERF_BPF_EVENT_PROG_LOAD);
            let jit = std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable")
                .is_ok_and(|s| s.trim() != "0");
            if jit {
                let k = ksyms
                    .iter()
                    .find(|k| k.3.ends_with("_perfkit_t"))
                    .unwrap_or_else(|| panic!("{ksyms:?}"));
                assert_eq!(k.0, sys::PERF_RECORD_KSYMBOL_TYPE_BPF);
                assert!(k.3.starts_with("bpf_prog_"));
                assert!(k.1 >= 0xffff_0000_0000_0000 && k.2 > 0);
                // The tag in BPF_EVENT is the hex in the symbol name.
                let hex: String = load.2.iter().map(|b| format!("{b:02x}")).collect();
                assert!(k.3.contains(&hex), "{} vs {hex}", k.3);
            } else {
                eprintln!("BPF JIT off: no KSYMBOL expected");
            }
        }
        None => eprintln!("BPF program load failed: KSYMBOL/BPF_EVENT not checked"),
    }
}

/// Load `r0 = 0; exit` as a socket filter named "perfkit_t"; returns the fd and the
/// program id.
fn load_trivial_bpf() -> Option<(std::os::fd::OwnedFd, u32)> {
    use std::os::fd::FromRawFd;
    let insns: [u64; 2] = [
        u64::from_ne_bytes([0xb7, 0, 0, 0, 0, 0, 0, 0]), // mov64 r0, 0
        u64::from_ne_bytes([0x95, 0, 0, 0, 0, 0, 0, 0]), // exit
    ];
    let license = c"GPL";
    let mut attr = [0u8; 128];
    attr[0..4].copy_from_slice(&1u32.to_ne_bytes()); // BPF_PROG_TYPE_SOCKET_FILTER
    attr[4..8].copy_from_slice(&2u32.to_ne_bytes());
    attr[8..16].copy_from_slice(&(insns.as_ptr() as u64).to_ne_bytes());
    attr[16..24].copy_from_slice(&(license.as_ptr() as u64).to_ne_bytes());
    attr[48..57].copy_from_slice(b"perfkit_t");
    // SAFETY: BPF_PROG_LOAD (5) with a zero-padded bpf_attr whose pointers reference live
    // locals for the duration of the call.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, 5, attr.as_ptr(), attr.len()) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the kernel returned a new fd.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
    // BPF_OBJ_GET_INFO_BY_FD (15): struct bpf_prog_info's id is at offset 4.
    let mut info = [0u8; 256];
    let mut a = [0u8; 16];
    a[0..4].copy_from_slice(&(std::os::fd::AsRawFd::as_raw_fd(&fd) as u32).to_ne_bytes());
    a[4..8].copy_from_slice(&(info.len() as u32).to_ne_bytes());
    a[8..16].copy_from_slice(&(info.as_mut_ptr() as u64).to_ne_bytes());
    // SAFETY: info is a writable 256-byte buffer the attr points to.
    let r = unsafe { libc::syscall(libc::SYS_bpf, 15, a.as_ptr(), a.len()) };
    if r < 0 {
        return None;
    }
    let id = u32::from_ne_bytes([info[4], info[5], info[6], info[7]]);
    Some((fd, id))
}

#[test]
fn throttle_and_unthrottle_records() {
    require_root!();
    let Some(tp) = tracepoint_id("sched", "sched_stat_runtime") else {
        eprintln!("skipped: no tracefs or no sched_stat_runtime");
        return;
    };
    let attr = Attr::new(Event::Tracepoint(tp))
        .sample_period(1000)
        .sample_type(sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME | sys::PERF_SAMPLE_ID)
        .sample_id_all(true);
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(256)).unwrap();
    let id = s.counter().id().unwrap();
    s.enable().unwrap();
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < Duration::from_millis(300) {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
    s.disable().unwrap();
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let (mut thr, mut unthr, mut samples) = (0u32, 0u32, 0u32);
    let mut last = 0;
    s.ring()
        .drain(|raw| {
            let p = parser.parse_raw(&raw, &mut scratch).unwrap();
            match p.record {
                Record::Throttle(t) => {
                    assert_eq!(t.id, id);
                    assert!(t.time >= last);
                    last = t.time;
                    thr += 1;
                }
                Record::Unthrottle(t) => {
                    assert_eq!(t.id, id);
                    assert!(t.time >= last);
                    last = t.time;
                    unthr += 1;
                }
                Record::Sample(_) => samples += 1,
                _ => {}
            }
        })
        .unwrap();
    eprintln!("{samples} samples, {thr} THROTTLE, {unthr} UNTHROTTLE");
    assert!(thr >= 1, "throttled at period 1000 ns of runtime");
    assert!(unthr >= 1);
    assert!(thr.abs_diff(unthr) <= 1, "they alternate");
}

#[test]
fn kernel_frames_in_callchains_carry_the_kernel_context() {
    require_root!();
    let attr = Attr::new(Software::ContextSwitches)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_CALLCHAIN | sys::PERF_SAMPLE_IP);
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(8)).unwrap();
    s.enable().unwrap();
    std::thread::sleep(Duration::from_micros(100));
    s.disable().unwrap();
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let mut n = 0;
    s.ring()
        .drain(|raw| {
            let Record::Sample(smp) = parser.parse_raw(&raw, &mut scratch).unwrap().record else {
                return;
            };
            let frames: Vec<_> = smp.callchain.unwrap().frames().collect();
            // Kernel frames first (high addresses), then user frames (low).
            let k = frames
                .iter()
                .take_while(|f| f.context == Some(CallchainContext::Kernel))
                .count();
            assert!(k >= 1);
            assert!(frames[..k].iter().all(|f| f.ip >= 1 << 63));
            assert!(
                frames[k..]
                    .iter()
                    .all(|f| f.context == Some(CallchainContext::User) && f.ip < 1 << 63)
            );
            n += 1;
        })
        .unwrap();
    assert!(n >= 1);
}
