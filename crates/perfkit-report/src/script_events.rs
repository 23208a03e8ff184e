//! What `script` prints beyond the profile: each sample's own fields (addr, data_src,
//! weight, registers, page sizes, misc) and the side-band records (`--show-task-events`,
//! `--show-mmap-events`, `--show-switch-events`, `--show-namespace-events`,
//! `--show-lost-events`) in perf's words, collected in the same pass that builds the
//! [`Profile`] and only when asked for (the default `script` keeps none of it).

use crate::Profile;
use crate::error::LoadError;
use crate::load::{Diagnostics, LoadOptions, Loader};
use perfkit_data::{Item, PerfData};
use perfkit_records::{Mmap2FileId, ParsedRecord, Record, Regs};
use perfkit_symbols::{Mapping, ProcessMaps, Symbolizer};
use perfkit_sys as sys;
use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write as _;

/// perf's `data_src` of samples without `PERF_SAMPLE_DATA_SRC` (`PERF_MEM_DATA_SRC_NONE`).
pub const NO_DATA_SRC: u64 = 0x0508_0021;

/// Which side-band records to keep, and whether to keep each sample's fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Want {
    /// Each sample's fields beyond the profile's ([`SampleDetail`]).
    pub details: bool,
    /// Resolve `addr` of page-fault samples to a symbol and object, as perf does.
    pub addr_symbols: bool,
    /// Read the instruction at each sample's ip from its file (`insn`, `insnlen`).
    pub insn: bool,
    /// Name the symbol and object of each branch's source and target (`brstacksym`,
    /// `brstack` with `dso`).
    pub branch_names: bool,
    /// Give each branch end as an offset in its object where perf does (`brstackoff`).
    pub branch_offsets: bool,
    /// The instructions of each branch-stack block (`brstackinsn`), with their lengths
    /// too when [`Want::branch_insn_len`] (`brstackinsnlen`).
    pub branch_insns: bool,
    /// See `branch_insns`.
    pub branch_insn_len: bool,
    /// COMM, FORK and EXIT records.
    pub task: bool,
    /// MMAP and MMAP2 records.
    pub mmap: bool,
    /// SWITCH and SWITCH_CPU_WIDE records.
    pub switch: bool,
    /// NAMESPACES records.
    pub namespaces: bool,
    /// LOST records.
    pub lost: bool,
    /// CGROUP records.
    pub cgroup: bool,
    /// KSYMBOL and BPF_EVENT records.
    pub bpf: bool,
    /// FINISHED_ROUND records; as in perf, every record then comes in file order, not
    /// sorted by time.
    pub rounds: bool,
}

impl Want {
    /// Nothing beyond the profile.
    pub fn none() -> Want {
        Want::default()
    }
    /// Whether anything is wanted at all.
    pub fn any(&self) -> bool {
        self.details || self.side()
    }
    /// Whether any side-band record is wanted.
    pub fn side(&self) -> bool {
        self.task
            || self.mmap
            || self.switch
            || self.namespaces
            || self.lost
            || self.cgroup
            || self.bpf
            || self.rounds
    }
}

/// A sample's register dump (`PERF_SAMPLE_REGS_INTR` or `_USER`): the ABI and the values
/// in mask order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegDump {
    /// `PERF_SAMPLE_REGS_ABI_*` (0: none were taken).
    pub abi: u64,
    /// The values, lowest mask bit first.
    pub values: Vec<u64>,
}

impl RegDump {
    fn of(r: &Regs<'_>) -> RegDump {
        RegDump {
            abi: r.abi,
            values: r.iter().map(|(_, v)| v).collect(),
        }
    }
}

/// A symbolized data address (`addr` of a page-fault sample).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddrSymbol {
    /// Symbol name, `[unknown]` when none covers the address.
    pub name: String,
    /// Offset in the symbol.
    pub offset: Option<u64>,
    /// The object, `[unknown]` when no mapping covers the address.
    pub dso: String,
}

/// One taken branch of a sample's branch stack.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Branch {
    /// Source address.
    pub from: u64,
    /// Target address.
    pub to: u64,
    /// `struct perf_branch_entry`'s flags word (see `perfkit_records::BranchEntry`).
    pub flags: u64,
    /// Symbol and object of source and target (with [`Want::branch_names`]; `[unknown]`
    /// where none covers the address).
    pub names: Option<(AddrSymbol, AddrSymbol)>,
    /// Source and target as perf's `brstackoff` prints them (with
    /// [`Want::branch_offsets`]).
    pub offsets: Option<(u64, u64)>,
}

/// One sample's fields that the profile does not keep.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampleDetail {
    /// Header misc (cpu mode and flags).
    pub misc: u16,
    /// `PERF_SAMPLE_ADDR`.
    pub addr: u64,
    /// `addr` resolved, for events whose addr is a data address perf names.
    pub addr_symbol: Option<AddrSymbol>,
    /// `PERF_SAMPLE_DATA_SRC`.
    pub data_src: u64,
    /// `PERF_SAMPLE_WEIGHT`, or the first word of `WEIGHT_STRUCT`.
    pub weight: u64,
    /// The instruction latency of `WEIGHT_STRUCT`.
    pub ins_lat: u16,
    /// `PERF_SAMPLE_PHYS_ADDR`.
    pub phys_addr: u64,
    /// `PERF_SAMPLE_DATA_PAGE_SIZE`.
    pub data_page_size: u64,
    /// `PERF_SAMPLE_CODE_PAGE_SIZE`.
    pub code_page_size: u64,
    /// `PERF_SAMPLE_REGS_INTR`.
    pub iregs: Option<RegDump>,
    /// `PERF_SAMPLE_REGS_USER`.
    pub uregs: Option<RegDump>,
    /// `PERF_SAMPLE_BRANCH_STACK`, newest first.
    pub branches: Vec<Branch>,
    /// The instruction at the ip, read from its file (empty when it cannot be: kernel
    /// code, anonymous memory, an undecodable byte sequence).
    pub insn: Vec<u8>,
    /// perf's `brstackinsn` text (lines, each ending in a newline, after one), when asked.
    pub branch_insns: String,
}

/// A side-band record as `script` prints it: the sample-like prefix fields and perf's
/// text for the record (`PERF_RECORD_COMM exec: sh:21299/21299`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideEvent {
    /// Printed before the sample with this index (records and samples interleave in time).
    pub before: usize,
    /// The event (attr) whose `sample_id` it carries.
    pub event: usize,
    /// The thread's name when the record was read.
    pub comm: String,
    /// `sample_id` pid and tid.
    pub pid: i32,
    /// See `pid`.
    pub tid: i32,
    /// `sample_id` time.
    pub time: u64,
    /// `sample_id` cpu.
    pub cpu: Option<u32>,
    /// Header misc.
    pub misc: u16,
    /// Header type.
    pub type_: u32,
    /// perf's text, from `PERF_RECORD_` to the end of the line (newline included).
    pub text: String,
}

/// What an event's samples carry (for perf's "do not have ... attribute set" checks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventFormat {
    /// `attr.type`.
    pub type_: u32,
    /// `attr.config`.
    pub config: u64,
    /// `attr.sample_type`.
    pub sample_type: u64,
    /// `attr.sample_regs_intr`.
    pub regs_intr: u64,
    /// `attr.sample_regs_user`.
    pub regs_user: u64,
    /// `attr.branch_sample_type`.
    pub branch_sample_type: u64,
}

impl EventFormat {
    /// Whether samples carry branch stacks (`PERF_SAMPLE_BRANCH_STACK`).
    pub fn has_branches(&self) -> bool {
        self.sample_type & sys::PERF_SAMPLE_BRANCH_STACK != 0
    }

    /// Whether this is a raw PMU event (perf's memory-sampling events are).
    pub fn is_raw(&self) -> bool {
        self.type_ == sys::PERF_TYPE_RAW
    }

    /// perf's `sample_addr_correlates_sym`: the event's addr is a data address of the
    /// task (page faults), shown with its symbol and object.
    pub fn addr_is_data(&self) -> bool {
        self.type_ == sys::PERF_TYPE_SOFTWARE
            && matches!(
                self.config,
                sys::PERF_COUNT_SW_PAGE_FAULTS
                    | sys::PERF_COUNT_SW_PAGE_FAULTS_MIN
                    | sys::PERF_COUNT_SW_PAGE_FAULTS_MAJ
            )
    }
}

/// Everything beyond the profile that `script` was asked for.
#[derive(Clone, Debug, Default)]
pub struct Extras {
    /// Per event (index as in [`Profile::events`]).
    pub events: Vec<EventFormat>,
    /// The recording machine's architecture (`uname -m`), for register names.
    pub arch: String,
    /// Per sample, parallel to [`Profile::samples`] (empty unless details were wanted).
    pub details: Vec<SampleDetail>,
    /// Side-band records in the order they are printed.
    pub side: Vec<SideEvent>,
    /// Each event's attr as perf's Python scripts get it (`param_dict['attr']`: the
    /// 128 bytes of perf 6.1's `struct perf_event_attr`).
    pub attrs: Vec<Vec<u8>>,
    /// Samples whose command differs from their thread's name at their time (perf's
    /// unordered mode names a thread as the records read so far named it), by index.
    pub comms: HashMap<usize, String>,
}

impl Extras {
    /// What `file`'s header says: its events' formats and attrs, and its architecture
    /// (no samples' details, no side-band records yet).
    pub fn for_file(file: &PerfData) -> Extras {
        Extras {
            events: formats(file),
            arch: file.features.arch.clone().unwrap_or_default(),
            attrs: file
                .attrs
                .iter()
                .map(|a| a.attr.as_bytes()[..128].to_vec())
                .collect(),
            ..Extras::default()
        }
    }
}

/// Side-band and per-sample state kept while the records go by.
struct Collector {
    want: Want,
    extras: Extras,
    /// Thread names as perf's machine knows them at each record (tid -> name).
    comms: HashMap<i32, String>,
    /// Every mapping (data too), for page-fault addresses.
    maps: HashMap<i32, ProcessMaps>,
    kernel_maps: ProcessMaps,
    /// Kernel code KSYMBOL records registered (BPF programs).
    ksymbols: perfkit_symbols::Ksymbols,
    symbolizer: Option<Symbolizer>,
    /// Objects perf would have read symbols of by now (`brstackoff`).
    loaded: std::collections::HashSet<String>,
}

impl Collector {
    /// A collector of what `want` asks for in `file`, naming addresses as `loader` does.
    fn new(file: &PerfData, loader: &Loader, want: Want) -> Self {
        Collector {
            want,
            extras: Extras::for_file(file),
            comms: HashMap::default(),
            maps: HashMap::default(),
            kernel_maps: ProcessMaps::new(),
            ksymbols: perfkit_symbols::Ksymbols::new(),
            loaded: Default::default(),
            // The sample addresses are named with the kernel symbols and files the samples'
            // code is (`--kallsyms`, `--symfs`, the build-id cache's kallsyms).
            symbolizer: (want.addr_symbols || want.branch_names || want.branch_insns)
                .then(|| Symbolizer::new(loader.symbol_options())),
        }
    }
}

/// `%#x` as C prints it: `0` for zero, `0x1f` otherwise.
fn alt_hex(v: u64) -> String {
    if v == 0 {
        "0".to_string()
    } else {
        format!("{v:#x}")
    }
}

/// perf's names of namespaces by index.
const NS_NAMES: [&str; 7] = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup"];

impl Collector {
    fn comm_of(&self, tid: i32) -> String {
        if tid == -1 {
            return ":-1".to_string();
        }
        match self.comms.get(&tid) {
            Some(c) => c.clone(),
            None if tid == 0 => "swapper".to_string(),
            None => format!(":{tid}"),
        }
    }

    /// Follow the record's effect on thread names and maps, then keep what was asked for.
    fn record(&mut self, attr: usize, rec: &ParsedRecord<'_>, samples_before: usize) {
        let sid = &rec.sample_id;
        let (spid, stid) = (sid.pid.unwrap_or(-1), sid.tid.unwrap_or(-1));
        let side = |me: &mut Collector, type_: u32, comm_tid: i32, text: String| {
            let comm = me.comm_of(comm_tid);
            me.extras.side.push(SideEvent {
                before: samples_before,
                event: attr,
                comm,
                pid: spid,
                tid: stid,
                time: sid.time.unwrap_or(0),
                cpu: sid.cpu,
                misc: rec.misc,
                type_,
                text,
            });
        };
        match &rec.record {
            Record::Comm(c) => {
                let name = String::from_utf8_lossy(c.comm).into_owned();
                if c.exec {
                    self.maps.remove(&c.pid);
                }
                self.comms.insert(c.tid, name.clone());
                if self.want.task {
                    let exec = if c.exec { " exec" } else { "" };
                    let text = format!("PERF_RECORD_COMM{exec}: {name}:{}/{}\n", c.pid, c.tid);
                    side(self, sys::PERF_RECORD_COMM, c.tid, text);
                }
            }
            Record::Fork(t) | Record::Exit(t) => {
                let fork = matches!(rec.record, Record::Fork(_));
                if fork {
                    // As perf: the new thread replaces any old one of that tid and takes
                    // its parent's name (the idle task's is `swapper`), or none.
                    let parent = match self.comms.get(&t.ptid) {
                        Some(c) => Some(c.clone()),
                        None if t.ptid == 0 => Some("swapper".to_string()),
                        None => None,
                    };
                    match parent {
                        Some(p) => self.comms.insert(t.tid, p),
                        None => self.comms.remove(&t.tid),
                    };
                    if t.pid != t.ppid
                        && let Some(m) = self.maps.get(&t.ppid).cloned()
                    {
                        self.maps.insert(t.pid, m);
                    }
                }
                if self.want.task {
                    let (name, type_) = if fork {
                        ("FORK", sys::PERF_RECORD_FORK)
                    } else {
                        ("EXIT", sys::PERF_RECORD_EXIT)
                    };
                    let text = format!(
                        "PERF_RECORD_{name}({}:{}):({}:{})\n",
                        t.pid, t.tid, t.ppid, t.ptid
                    );
                    side(self, type_, t.tid, text);
                }
            }
            Record::Mmap(m) => {
                self.map(m.pid, m.addr, m.len, m.pgoff, m.filename);
                if self.want.mmap {
                    let text = format!(
                        "PERF_RECORD_MMAP {}/{}: [{}({}) @ {}]: {} {}\n",
                        m.pid,
                        m.tid,
                        alt_hex(m.addr),
                        alt_hex(m.len),
                        alt_hex(m.pgoff),
                        if m.data { 'r' } else { 'x' },
                        String::from_utf8_lossy(m.filename)
                    );
                    side(self, sys::PERF_RECORD_MMAP, m.tid, text);
                }
            }
            Record::Mmap2(m) => {
                self.map(m.pid, m.addr, m.len, m.pgoff, m.filename);
                if self.want.mmap {
                    let id = match &m.file_id {
                        Mmap2FileId::BuildId(b) => {
                            let mut s = String::from("<");
                            for x in b.as_bytes() {
                                let _ = write!(s, "{x:02x}");
                            }
                            s.push('>');
                            s
                        }
                        Mmap2FileId::Inode {
                            maj,
                            min,
                            ino,
                            ino_generation,
                        } => format!("{maj:02x}:{min:02x} {ino} {ino_generation}"),
                    };
                    let text = format!(
                        "PERF_RECORD_MMAP2 {}/{}: [{}({}) @ {} {id}]: {}{}{}{} {}\n",
                        m.pid,
                        m.tid,
                        alt_hex(m.addr),
                        alt_hex(m.len),
                        alt_hex(m.pgoff),
                        if m.prot & 1 != 0 { 'r' } else { '-' },
                        if m.prot & 2 != 0 { 'w' } else { '-' },
                        if m.prot & 4 != 0 { 'x' } else { '-' },
                        if m.flags & 1 != 0 { 's' } else { 'p' },
                        String::from_utf8_lossy(m.filename)
                    );
                    side(self, sys::PERF_RECORD_MMAP2, m.tid, text);
                }
            }
            Record::Switch(s) if self.want.switch => {
                let text = format!("PERF_RECORD_SWITCH {}\n", in_out(s.out, s.preempt));
                side(self, sys::PERF_RECORD_SWITCH, stid, text);
            }
            Record::SwitchCpuWide(s) if self.want.switch => {
                let text = format!(
                    "PERF_RECORD_SWITCH_CPU_WIDE {}  {} pid/tid: {:>5}/{:<5}\n",
                    in_out(s.out, s.preempt),
                    if s.out { "next" } else { "prev" },
                    s.next_prev_pid,
                    s.next_prev_tid
                );
                side(self, sys::PERF_RECORD_SWITCH_CPU_WIDE, stid, text);
            }
            Record::Namespaces(n) if self.want.namespaces => {
                let nr = n.len();
                let mut text = format!(
                    "PERF_RECORD_NAMESPACES {}/{} - nr_namespaces: {nr}\n\t\t[",
                    n.pid, n.tid
                );
                for (i, l) in n.iter().enumerate() {
                    if i != 0 && i % 4 == 0 {
                        text.push_str("\n\t\t ");
                    }
                    let name = NS_NAMES.get(i).copied().unwrap_or("");
                    let _ = write!(text, "{i}/{name}: {}/{}", l.dev, alt_hex(l.ino));
                    text.push_str(if i + 1 != nr { ", " } else { "]\n" });
                }
                side(self, sys::PERF_RECORD_NAMESPACES, n.tid, text);
            }
            Record::Cgroup(c) if self.want.cgroup => {
                let text = format!(
                    "PERF_RECORD_CGROUP cgroup: {} {}\n",
                    c.id,
                    String::from_utf8_lossy(c.path)
                );
                side(self, sys::PERF_RECORD_CGROUP, stid, text);
            }
            Record::Ksymbol(k) if self.symbolizer.is_some() && !self.want.bpf => {
                self.ksymbol(k);
            }
            Record::Ksymbol(k) if self.want.bpf => {
                self.ksymbol(k);
                let text = format!(
                    "PERF_RECORD_KSYMBOL addr {:x} len {} type {} flags 0x{:x} name {}\n",
                    k.addr,
                    k.len,
                    k.ksym_type,
                    k.flags,
                    String::from_utf8_lossy(k.name)
                );
                side(self, sys::PERF_RECORD_KSYMBOL, stid, text);
            }
            Record::BpfEvent(b) if self.want.bpf => {
                let text = format!(
                    "PERF_RECORD_BPF_EVENT type {}, flags {}, id {}\n",
                    b.type_, b.flags, b.id
                );
                side(self, sys::PERF_RECORD_BPF_EVENT, stid, text);
            }
            Record::Lost(l) if self.want.lost => {
                let text = format!("PERF_RECORD_LOST lost {}\n", l.lost);
                side(self, sys::PERF_RECORD_LOST, stid, text);
            }
            _ => {}
        }
    }

    /// Keep a KSYMBOL record's map (a BPF program's) for sample addresses in it.
    fn ksymbol(&mut self, k: &perfkit_records::Ksymbol<'_>) {
        if k.flags & sys::PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER != 0 {
            self.ksymbols.unregister(k.addr);
        } else {
            self.ksymbols
                .register(k.addr, u64::from(k.len), &String::from_utf8_lossy(k.name));
        }
    }

    /// Keep a mapping for page-fault addresses (perf's maps hold data mappings too).
    fn map(&mut self, pid: i32, addr: u64, len: u64, pgoff: u64, name: &[u8]) {
        if !self.want.addr_symbols
            && !self.want.insn
            && !self.want.branch_names
            && !self.want.branch_offsets
            && !self.want.branch_insns
        {
            return;
        }
        let mapping = Mapping {
            start: addr,
            end: addr.saturating_add(len),
            pgoff,
            path: String::from_utf8_lossy(name).into_owned(),
            build_id: None,
        };
        if pid == -1 || mapping.is_kernel() {
            self.kernel_maps.insert(mapping);
        } else {
            self.maps.entry(pid).or_default().insert(mapping);
        }
    }

    /// A sample's details, once per profile sample it became.
    fn sample(&mut self, attr: usize, rec: &ParsedRecord<'_>, n: usize) {
        let Record::Sample(s) = &rec.record else {
            return;
        };
        let ws = s.weight_struct;
        let mut d = SampleDetail {
            misc: rec.misc,
            addr: s.addr.unwrap_or(0),
            addr_symbol: None,
            // perf's value for samples without one (PERF_MEM_DATA_SRC_NONE).
            data_src: s.data_src.unwrap_or(NO_DATA_SRC),
            weight: s.weight.or(ws.map(|w| u64::from(w.var1_dw))).unwrap_or(0),
            ins_lat: ws.map_or(0, |w| w.var2_w),
            phys_addr: s.phys_addr.unwrap_or(0),
            data_page_size: s.data_page_size.unwrap_or(0),
            code_page_size: s.code_page_size.unwrap_or(0),
            iregs: s.regs_intr.as_ref().map(RegDump::of),
            uregs: s.regs_user.as_ref().map(RegDump::of),
            branches: s
                .branch_stack
                .as_ref()
                .map(|b| {
                    b.entries()
                        .map(|e| Branch {
                            from: e.from,
                            to: e.to,
                            flags: e.flags,
                            names: None,
                            offsets: None,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            insn: Vec::new(),
            branch_insns: String::new(),
        };
        let fmt = self.extras.events.get(attr).copied().unwrap_or_default();
        if self.want.addr_symbols && fmt.addr_is_data() && s.addr.is_some() {
            d.addr_symbol = Some(self.addr_symbol(s.pid.unwrap_or(-1), d.addr, true));
        }
        if self.want.branch_offsets {
            let pid = s.pid.unwrap_or(-1);
            // perf reads the symbols of the object the sample's ip is in (a file it can
            // open) before printing; from then on it gives that object's addresses as
            // they are, and others' as offsets in their file.
            if let Some(ip) = s.ip
                && let Some(m) = self.maps.get(&pid).and_then(|m| m.find(ip))
                && std::path::Path::new(&m.path).is_file()
            {
                self.loaded.insert(m.path.clone());
            }
            for b in &mut d.branches {
                b.offsets = Some((
                    self.branch_offset(pid, b.from),
                    self.branch_offset(pid, b.to),
                ));
            }
        }
        if self.want.branch_names {
            let pid = s.pid.unwrap_or(-1);
            for b in &mut d.branches {
                b.names = Some((
                    self.addr_symbol(pid, b.from, false),
                    self.addr_symbol(pid, b.to, false),
                ));
            }
        }
        if self.want.insn
            && let Some(ip) = s.ip
        {
            d.insn = self.instruction(s.pid.unwrap_or(-1), ip);
        }
        if self.want.branch_insns
            && let Some(ip) = s.ip
        {
            let mut code = BlockCode {
                maps: self.maps.get(&s.pid.unwrap_or(-1)),
                symbolizer: self.symbolizer.as_mut(),
                x86: matches!(self.extras.arch.as_str(), "x86_64" | "" | "i386" | "i686"),
            };
            crate::script_brstackinsn::push_brstackinsn(
                &mut d.branch_insns,
                &mut code,
                ip,
                &d.branches,
                self.want.branch_insn_len,
            );
        }
        for _ in 1..n {
            self.extras.details.push(d.clone());
        }
        if n > 0 {
            self.extras.details.push(d);
        }
    }

    /// The instruction at `ip` as perf's `arch_fetch_insn` finds it: up to 16 bytes read
    /// from the mapped file, cut to the length of the one instruction they start with.
    fn instruction(&mut self, pid: i32, ip: u64) -> Vec<u8> {
        use std::io::{Read, Seek, SeekFrom};
        let Some(m) = self.maps.get(&pid).and_then(|maps| maps.find(ip)) else {
            return Vec::new();
        };
        if !m.path.starts_with('/') || m.is_kernel() {
            return Vec::new();
        }
        let mut bytes = [0u8; 16];
        let n = std::fs::File::open(&m.path).and_then(|mut f| {
            f.seek(SeekFrom::Start(ip - m.start + m.pgoff))?;
            let mut n = 0;
            while n < bytes.len() {
                match f.read(&mut bytes[n..])? {
                    0 => break,
                    k => n += k,
                }
            }
            Ok(n)
        });
        let Ok(n) = n else {
            return Vec::new();
        };
        let bits = if self.extras.arch == "i386" || self.extras.arch == "i686" {
            32
        } else {
            64
        };
        let mut dec = iced_x86::Decoder::new(bits, &bytes[..n], iced_x86::DecoderOptions::NONE);
        let insn = dec.decode();
        if insn.is_invalid() || insn.len() > n {
            return Vec::new();
        }
        bytes[..insn.len()].to_vec()
    }

    /// perf's `brstackoff` address: the offset in the mapped file (`map_ip`) when the
    /// object's symbols were not read yet, the address itself otherwise and when nothing
    /// (or the kernel) is mapped there.
    fn branch_offset(&self, pid: i32, addr: u64) -> u64 {
        if perfkit_symbols::is_kernel_address(addr) {
            return addr;
        }
        match self.maps.get(&pid).and_then(|m| m.find(addr)) {
            Some(m) if !self.loaded.contains(&m.path) => addr - m.start + m.pgoff,
            _ => addr,
        }
    }

    /// `addr` named as perf names it; a `data` address (a page fault's) may also name a
    /// data object.
    fn addr_symbol(&mut self, pid: i32, addr: u64, data: bool) -> AddrSymbol {
        let empty = ProcessMaps::new();
        let maps = self.maps.get(&pid).unwrap_or(&empty);
        let Some(sym) = self.symbolizer.as_mut() else {
            return AddrSymbol::default();
        };
        if perfkit_symbols::is_kernel_address(addr) {
            // In the recording's kernel maps, as the sample's ip (perf's thread__resolve).
            let place = perfkit_symbols::kernel_place(&self.kernel_maps, &self.ksymbols, addr);
            let f = sym.symbolize_kernel_in(addr, &place);
            return AddrSymbol {
                name: f
                    .symbol
                    .as_ref()
                    .map_or_else(|| "[unknown]".to_string(), |s| s.name.to_string()),
                offset: f.symbol.as_ref().map(|s| s.offset),
                dso: f.dso.to_string(),
            };
        }
        let unknown = || "[unknown]".to_string();
        match maps.find(addr) {
            None => AddrSymbol {
                name: unknown(),
                offset: None,
                dso: unknown(),
            },
            // Stack, heap and anonymous memory: perf names the mapping, no symbol.
            Some(m) if m.is_anonymous() || m.path.starts_with('[') => AddrSymbol {
                name: unknown(),
                offset: None,
                dso: m.path.clone(),
            },
            Some(m) => {
                let f = if data {
                    sym.symbolize_data_in_mapping(m, addr)
                } else {
                    sym.symbolize_in_mapping(m, addr)
                };
                AddrSymbol {
                    name: f
                        .symbol
                        .as_ref()
                        .map_or_else(unknown, |s| s.name.to_string()),
                    offset: f.symbol.as_ref().map(|s| s.offset),
                    dso: m.path.clone(),
                }
            }
        }
    }
}

/// A thread's code as `brstackinsn` reads and names it: the mapped files (perf reads no
/// kernel code here: it has no kcore or vmlinux to read).
struct BlockCode<'a> {
    maps: Option<&'a ProcessMaps>,
    symbolizer: Option<&'a mut Symbolizer>,
    x86: bool,
}

impl crate::script_brstackinsn::Code for BlockCode<'_> {
    fn is_kernel(&self, addr: u64) -> bool {
        perfkit_symbols::is_kernel_address(addr)
    }

    fn read(&mut self, addr: u64, len: u64) -> Option<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        if self.is_kernel(addr) {
            return None;
        }
        let m = self.maps?.find(addr)?;
        if !m.path.starts_with('/') {
            return None;
        }
        let mut f = std::fs::File::open(&m.path).ok()?;
        let size = f.metadata().ok()?.len();
        let offset = addr - m.start + m.pgoff;
        if offset > size {
            return None;
        }
        f.seek(SeekFrom::Start(offset)).ok()?;
        let mut buf = Vec::new();
        f.take(len).read_to_end(&mut buf).ok()?;
        Some(buf)
    }

    fn symbol(&mut self, addr: u64, kernel: bool) -> Option<(String, u64, u64)> {
        let in_kernel = self.is_kernel(addr);
        let sym = self.symbolizer.as_deref_mut()?;
        let frame = if kernel {
            if !in_kernel {
                return None;
            }
            sym.symbolize_kernel(addr)
        } else {
            let m = self.maps?.find(addr)?;
            if m.is_anonymous() || m.path.starts_with('[') {
                return None;
            }
            sym.symbolize_in_mapping(m, addr)
        };
        let s = frame.symbol?;
        let start = addr - s.offset;
        Some((s.name.to_string(), start, start + s.size.max(1)))
    }

    fn x86(&self) -> bool {
        self.x86
    }
}

/// perf's words for a switch's direction.
fn in_out(out: bool, preempt: bool) -> &'static str {
    match (out, preempt) {
        (false, _) => "IN         ",
        (true, false) => "OUT        ",
        (true, true) => "OUT preempt",
    }
}

/// What each event of `file` samples.
pub fn formats(file: &PerfData) -> Vec<EventFormat> {
    file.attrs
        .iter()
        .map(|a| EventFormat {
            type_: a.attr.type_,
            config: a.attr.config,
            sample_type: a.attr.sample_type,
            regs_intr: a.attr.sample_regs_intr,
            regs_user: a.attr.sample_regs_user,
            branch_sample_type: a.attr.branch_sample_type,
        })
        .collect()
}

/// [`crate::load::load`], also collecting what `want` asks for.
pub fn load(
    file: &PerfData,
    opts: &LoadOptions,
    want: Want,
) -> Result<(Profile, Diagnostics, Extras), LoadError> {
    file.parser().map_err(LoadError::Read)?;
    let mut loader = Loader::for_file(file, opts);
    let mut c = Collector::new(file, &loader, want);
    if want.rounds {
        let result = in_file_order(file, &mut loader, &mut c);
        let (profile, mut diag) = loader.finish();
        diag.error = result.err();
        return Ok((profile, diag, c.extras));
    }
    let result = file.for_each(
        |item| {
            if let Item::Event { attr, record } = &item {
                let before = loader.samples_len();
                c.record(*attr, record, before);
                loader.record(*attr, record);
                if want.details {
                    let n = loader.samples_len() - before;
                    c.sample(*attr, record, n);
                }
            } else {
                loader.item(item);
            }
        },
        |_| {},
    );
    let (profile, mut diag) = loader.finish();
    diag.error = result.err();
    Ok((profile, diag, c.extras))
}

/// Where [`stream`] hands what it reads, beside the samples.
pub struct StreamTo<'a> {
    /// Each side-band record as it is read.
    pub side: &'a mut dyn FnMut(SideEvent),
    /// With `want.rounds`: the number of the first sample a record makes and its command.
    pub comm: &'a mut dyn FnMut(usize, String),
    /// With `want.details`: a sample record's own fields, with the number of the first
    /// sample it makes, before the record is built ([`Extras::details`]; see
    /// [`ByNumber`]: a record of several samples gives them all the same).
    pub detail: &'a mut dyn FnMut(usize, SampleDetail),
}

/// [`load`], the samples going to `sink` as they are built ([`crate::load::stream`], one
/// reading thread) and each side-band record to `to.side` as it is read, its
/// [`SideEvent::before`] counting the samples before it in the file, so that a writer
/// prints it before the sample of that number, as [`load`]'s caller does. With
/// `want.details` each sample record's own fields go to `to.detail` before the record is
/// built (those of one batch of samples at most wait there). With
/// `want.rounds` the records come in file order (perf's unordered mode) and `to.comm`
/// gets, before each sample record is built, the number of the first sample it makes and
/// the command perf names its thread with at that point ([`Extras::comms`]; see
/// [`SampleComms`]). Memory then follows the side-band records and details not printed
/// yet, not the samples. What comes back is the profile without samples and the extras
/// without side-band records or details.
pub fn stream(
    file: &PerfData,
    opts: &LoadOptions,
    want: Want,
    to: StreamTo<'_>,
    sink: &mut crate::build::SampleSink<'_>,
) -> Result<(Profile, Diagnostics, Extras), LoadError> {
    let StreamTo { side, comm, detail } = to;
    let parser = file.parser().map_err(LoadError::Read)?;
    let mut loader = Loader::for_file(file, opts);
    loader.stream_samples();
    let mut c = Collector::new(file, &loader, want);
    let given = std::cell::Cell::new(0usize);
    let mut counted = |p: &Profile, samples: &[crate::Sample]| {
        given.set(given.get() + samples.len());
        sink(p, samples);
    };
    let result = if want.rounds {
        file.walk_decompressed(|_, type_, misc, body| {
            if type_ == sys::PERF_RECORD_FINISHED_ROUND {
                side(round_end(given.get() + loader.samples_len(), misc));
                return Ok(());
            }
            if type_ >= sys::PERF_RECORD_USER_TYPE_START {
                loader.user_record(type_);
                return Ok(());
            }
            // A record that does not decode is skipped, as the sorted reader skips it.
            if let Ok((attr, record)) = perfkit_data::parse_any(&parser, type_, misc, body) {
                let before = given.get() + loader.samples_len();
                c.record(attr, &record, before);
                for e in c.extras.side.drain(..) {
                    side(e);
                }
                if let Record::Sample(s) = &record.record {
                    comm(before, c.comm_of(s.tid.unwrap_or(-1)));
                }
                if want.details {
                    c.sample(attr, &record, 1);
                    if let Some(d) = c.extras.details.pop() {
                        detail(before, d);
                    }
                }
                loader.record_to(attr, &record, &mut counted);
            }
            Ok(())
        })
    } else {
        file.for_each(
            |item| match item {
                Item::Event { attr, record } => {
                    let before = given.get() + loader.samples_len();
                    c.record(attr, &record, before);
                    for e in c.extras.side.drain(..) {
                        side(e);
                    }
                    if want.details {
                        c.sample(attr, &record, 1);
                        if let Some(d) = c.extras.details.pop() {
                            detail(before, d);
                        }
                    }
                    loader.record_to(attr, &record, &mut counted);
                }
                other => loader.item_to(other, &mut counted),
            },
            |_| {},
        )
    };
    loader.flush_to(&mut counted);
    let (profile, mut diag) = loader.finish();
    diag.error = result.err();
    Ok((profile, diag, c.extras))
}

/// What [`stream`] gives for samples by the number of the first sample of their record
/// (commands, details), handed to a writer as the samples come: sample `i` takes the last
/// value given for a number at or below `i` (a record that made no sample is passed
/// over). Memory: the values of samples not written yet.
#[derive(Debug)]
pub struct ByNumber<T> {
    queue: std::collections::VecDeque<(usize, T)>,
    current: Option<T>,
}

impl<T> Default for ByNumber<T> {
    fn default() -> Self {
        ByNumber {
            queue: Default::default(),
            current: None,
        }
    }
}

impl<T> ByNumber<T> {
    /// Samples from number `first` on take `value` (until a later number's value).
    pub fn push(&mut self, first: usize, value: T) {
        self.queue.push_back((first, value));
    }

    /// The value of sample number `i` (numbers asked for in order); None when none was
    /// given.
    pub fn at(&mut self, i: usize) -> Option<&T> {
        while self.queue.front().is_some_and(|(first, _)| *first <= i) {
            self.current = self.queue.pop_front().map(|(_, c)| c);
        }
        self.current.as_ref()
    }
}

/// The commands [`stream`] gives for samples in file order (`--show-round-events`).
pub type SampleComms = ByNumber<String>;

/// perf's line for the end of a round (`--show-round-events`), before sample `before`.
fn round_end(before: usize, misc: u16) -> SideEvent {
    SideEvent {
        before,
        event: 0,
        comm: String::new(),
        pid: -1,
        tid: -1,
        time: 0,
        cpu: None,
        misc,
        type_: sys::PERF_RECORD_FINISHED_ROUND,
        text: "PERF_RECORD_FINISHED_ROUND\n".into(),
    }
}

/// Feed every record in file order (perf's unordered mode, `--show-round-events`).
fn in_file_order(
    file: &PerfData,
    loader: &mut Loader,
    c: &mut Collector,
) -> Result<(), perfkit_data::ReadError> {
    let parser = file.parser()?;
    let details = c.want.details;
    file.walk_decompressed(|_, type_, misc, body| {
        if type_ == sys::PERF_RECORD_FINISHED_ROUND {
            c.extras.side.push(round_end(loader.samples_len(), misc));
            return Ok(());
        }
        if type_ >= sys::PERF_RECORD_USER_TYPE_START {
            loader.user_record(type_);
            return Ok(());
        }
        // A record that does not decode is skipped, as the sorted reader skips it.
        if let Ok((attr, record)) = perfkit_data::parse_any(&parser, type_, misc, body) {
            let before = loader.samples_len();
            c.record(attr, &record, before);
            loader.record(attr, &record);
            if let Record::Sample(s) = &record.record {
                let tid = s.tid.unwrap_or(-1);
                let now = c.comm_of(tid);
                for i in before..loader.samples_len() {
                    c.extras.comms.insert(i, now.clone());
                }
            }
            if details {
                let n = loader.samples_len() - before;
                c.sample(attr, &record, n);
            }
        }
        Ok(())
    })
}

/// perf's register names for `arch` (`perf_reg_name`), by register number.
pub fn reg_name(arch: &str, reg: u32) -> &'static str {
    const X86: [&str; 24] = [
        "AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP", "IP", "FLAGS", "CS", "SS", "DS", "ES",
        "FS", "GS", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15",
    ];
    const XMM: [&str; 16] = [
        "XMM0", "XMM1", "XMM2", "XMM3", "XMM4", "XMM5", "XMM6", "XMM7", "XMM8", "XMM9", "XMM10",
        "XMM11", "XMM12", "XMM13", "XMM14", "XMM15",
    ];
    const ARM64: [&str; 33] = [
        "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
        "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
        "x27", "x28", "x29", "lr", "sp", "pc",
    ];
    let r = reg as usize;
    match arch {
        "x86_64" | "x86" | "i386" | "i686" => X86
            .get(r)
            .or_else(|| {
                r.checked_sub(32)
                    .and_then(|i| XMM.get(i / 2).filter(|_| i % 2 == 0))
            })
            .copied()
            .unwrap_or("unknown"),
        "aarch64" | "arm64" => ARM64.get(r).copied().unwrap_or("unknown"),
        _ => "unknown",
    }
}
