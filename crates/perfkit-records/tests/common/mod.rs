//! Test support: an owned model of every record type, a reference encoder (model ->
//! bytes), a separately written reference decoder (bytes -> model), the conversion of the
//! library's parse result to the model, and proptest strategies.
#![allow(dead_code)]

use perfkit_records::*;
use perfkit_sys::*;
use proptest::collection::vec;
use proptest::prelude::*;

/// The attr fields that shape record layouts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cfg {
    pub sample_type: u64,
    pub read_format: u64,
    pub branch_sample_type: u64,
    pub regs_user: u64,
    pub regs_intr: u64,
    pub sample_id_all: bool,
}

impl Cfg {
    pub fn attr(&self) -> perf_event_attr {
        let mut a = perf_event_attr::new();
        a.sample_type = self.sample_type;
        a.read_format = self.read_format;
        a.branch_sample_type = self.branch_sample_type;
        a.sample_regs_user = self.regs_user;
        a.sample_regs_intr = self.regs_intr;
        a.set(attr_flags::SAMPLE_ID_ALL, self.sample_id_all);
        a
    }
    fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct MRead {
    pub time_enabled: Option<u64>,
    pub time_running: Option<u64>,
    /// (value, id, lost)
    pub values: Vec<(u64, Option<u64>, Option<u64>)>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct MBranch {
    pub hw_idx: Option<u64>,
    pub entries: Vec<(u64, u64, u64)>,
    pub counters: Option<Vec<u64>>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct MSample {
    pub identifier: Option<u64>,
    pub ip: Option<u64>,
    pub pid_tid: Option<(i32, i32)>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub id: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu_res: Option<(u32, u32)>,
    pub period: Option<u64>,
    pub read: Option<MRead>,
    pub callchain: Option<Vec<u64>>,
    pub raw: Option<Vec<u8>>,
    pub branch: Option<MBranch>,
    /// (abi, regs)
    pub regs_user: Option<(u64, Vec<u64>)>,
    /// (data, dyn_size)
    pub stack_user: Option<(Vec<u8>, Option<u64>)>,
    pub weight: Option<u64>,
    pub data_src: Option<u64>,
    pub transaction: Option<u64>,
    pub regs_intr: Option<(u64, Vec<u64>)>,
    pub phys_addr: Option<u64>,
    pub cgroup: Option<u64>,
    pub data_page_size: Option<u64>,
    pub code_page_size: Option<u64>,
    pub aux: Option<Vec<u8>>,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct MSampleId {
    pub pid_tid: Option<(i32, i32)>,
    pub time: Option<u64>,
    pub id: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
    pub identifier: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum MFile {
    Inode(u32, u32, u64, u64),
    BuildId(u8, [u8; 20]),
}

#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum MBody {
    Mmap {
        pid: i32,
        tid: i32,
        addr: u64,
        len: u64,
        pgoff: u64,
        filename: Vec<u8>,
        data: bool,
    },
    Lost {
        id: u64,
        lost: u64,
    },
    Comm {
        pid: i32,
        tid: i32,
        comm: Vec<u8>,
        exec: bool,
    },
    Exit([i32; 4], u64),
    Throttle(u64, u64, u64),
    Unthrottle(u64, u64, u64),
    Fork([i32; 4], u64),
    Read {
        pid: i32,
        tid: i32,
        read: MRead,
    },
    Sample(MSample),
    Mmap2 {
        pid: i32,
        tid: i32,
        addr: u64,
        len: u64,
        pgoff: u64,
        file: MFile,
        prot: u32,
        flags: u32,
        filename: Vec<u8>,
        data: bool,
    },
    Aux(u64, u64, u64),
    ItraceStart(i32, i32),
    LostSamples(u64),
    Switch {
        out: bool,
        preempt: bool,
    },
    SwitchCpuWide {
        out: bool,
        preempt: bool,
        pid: i32,
        tid: i32,
    },
    Namespaces {
        pid: i32,
        tid: i32,
        links: Vec<(u64, u64)>,
    },
    Ksymbol {
        addr: u64,
        len: u32,
        ty: u16,
        flags: u16,
        name: Vec<u8>,
    },
    BpfEvent {
        ty: u16,
        flags: u16,
        id: u32,
        tag: [u8; 8],
    },
    Cgroup {
        id: u64,
        path: Vec<u8>,
    },
    TextPoke {
        addr: u64,
        old: Vec<u8>,
        new: Vec<u8>,
    },
    AuxOutputHwId(u64),
    Unknown {
        type_: u32,
        data: Vec<u8>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct MRecord {
    pub misc: u16,
    pub body: MBody,
    /// The trailer (non-sample records with sample_id_all); default otherwise.
    pub sid: MSampleId,
}

impl MBody {
    pub fn type_(&self) -> u32 {
        match self {
            MBody::Mmap { .. } => PERF_RECORD_MMAP,
            MBody::Lost { .. } => PERF_RECORD_LOST,
            MBody::Comm { .. } => PERF_RECORD_COMM,
            MBody::Exit(..) => PERF_RECORD_EXIT,
            MBody::Throttle(..) => PERF_RECORD_THROTTLE,
            MBody::Unthrottle(..) => PERF_RECORD_UNTHROTTLE,
            MBody::Fork(..) => PERF_RECORD_FORK,
            MBody::Read { .. } => PERF_RECORD_READ,
            MBody::Sample(_) => PERF_RECORD_SAMPLE,
            MBody::Mmap2 { .. } => PERF_RECORD_MMAP2,
            MBody::Aux(..) => PERF_RECORD_AUX,
            MBody::ItraceStart(..) => PERF_RECORD_ITRACE_START,
            MBody::LostSamples(_) => PERF_RECORD_LOST_SAMPLES,
            MBody::Switch { .. } => PERF_RECORD_SWITCH,
            MBody::SwitchCpuWide { .. } => PERF_RECORD_SWITCH_CPU_WIDE,
            MBody::Namespaces { .. } => PERF_RECORD_NAMESPACES,
            MBody::Ksymbol { .. } => PERF_RECORD_KSYMBOL,
            MBody::BpfEvent { .. } => PERF_RECORD_BPF_EVENT,
            MBody::Cgroup { .. } => PERF_RECORD_CGROUP,
            MBody::TextPoke { .. } => PERF_RECORD_TEXT_POKE,
            MBody::AuxOutputHwId(_) => PERF_RECORD_AUX_OUTPUT_HW_ID,
            MBody::Unknown { type_, .. } => *type_,
        }
    }
}

// ---------------------------------------------------------------- reference encoder

pub struct Enc {
    pub e: Endian,
    pub out: Vec<u8>,
}

impl Enc {
    pub fn new(e: Endian) -> Self {
        Enc { e, out: Vec::new() }
    }
    pub fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.out.extend_from_slice(&self.e.u16_bytes(v));
    }
    pub fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&self.e.u32_bytes(v));
    }
    pub fn i32(&mut self, v: i32) {
        self.u32(v as u32);
    }
    pub fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&self.e.u64_bytes(v));
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }
    pub fn pad8(&mut self) {
        while self.out.len() % 8 != 0 {
            self.out.push(0);
        }
    }
    /// A NUL-terminated string padded to 8 bytes (relative to the record start).
    pub fn cstr(&mut self, s: &[u8]) {
        self.bytes(s);
        self.out.push(0);
        self.pad8();
    }
}

fn enc_read(w: &mut Enc, cfg: &Cfg, r: &MRead) {
    let rf = cfg.read_format;
    if rf & PERF_FORMAT_GROUP != 0 {
        w.u64(r.values.len() as u64);
        if let Some(v) = r.time_enabled {
            w.u64(v)
        }
        if let Some(v) = r.time_running {
            w.u64(v)
        }
        for (v, id, lost) in &r.values {
            w.u64(*v);
            if let Some(x) = id {
                w.u64(*x)
            }
            if let Some(x) = lost {
                w.u64(*x)
            }
        }
    } else {
        let (v, id, lost) = r.values[0];
        w.u64(v);
        if let Some(v) = r.time_enabled {
            w.u64(v)
        }
        if let Some(v) = r.time_running {
            w.u64(v)
        }
        if let Some(x) = id {
            w.u64(x)
        }
        if let Some(x) = lost {
            w.u64(x)
        }
    }
}

fn enc_regs(w: &mut Enc, r: &(u64, Vec<u64>)) {
    w.u64(r.0);
    for v in &r.1 {
        w.u64(*v);
    }
}

fn enc_sample(w: &mut Enc, cfg: &Cfg, s: &MSample) {
    let o = |w: &mut Enc, v: Option<u64>| {
        if let Some(v) = v {
            w.u64(v)
        }
    };
    o(w, s.identifier);
    o(w, s.ip);
    if let Some((p, t)) = s.pid_tid {
        w.i32(p);
        w.i32(t)
    }
    o(w, s.time);
    o(w, s.addr);
    o(w, s.id);
    o(w, s.stream_id);
    if let Some((c, r)) = s.cpu_res {
        w.u32(c);
        w.u32(r)
    }
    o(w, s.period);
    if let Some(r) = &s.read {
        enc_read(w, cfg, r)
    }
    if let Some(c) = &s.callchain {
        w.u64(c.len() as u64);
        for v in c {
            w.u64(*v)
        }
    }
    if let Some(raw) = &s.raw {
        w.u32(raw.len() as u32);
        w.bytes(raw);
        w.pad8();
    }
    if let Some(b) = &s.branch {
        w.u64(b.entries.len() as u64);
        if let Some(h) = b.hw_idx {
            w.u64(h)
        }
        for (f, t, fl) in &b.entries {
            w.u64(*f);
            w.u64(*t);
            w.u64(*fl)
        }
        if let Some(c) = &b.counters {
            for v in c {
                w.u64(*v)
            }
        }
    }
    if let Some(r) = &s.regs_user {
        enc_regs(w, r)
    }
    if let Some((data, dyn_size)) = &s.stack_user {
        w.u64(data.len() as u64);
        w.bytes(data);
        if let Some(d) = dyn_size {
            w.u64(*d)
        }
    }
    o(w, s.weight);
    o(w, s.data_src);
    o(w, s.transaction);
    if let Some(r) = &s.regs_intr {
        enc_regs(w, r)
    }
    o(w, s.phys_addr);
    o(w, s.cgroup);
    o(w, s.data_page_size);
    o(w, s.code_page_size);
    if let Some(a) = &s.aux {
        w.u64(a.len() as u64);
        w.bytes(a);
        w.pad8();
    }
}

/// Encode a whole record, header included.
pub fn encode(e: Endian, cfg: &Cfg, m: &MRecord) -> Vec<u8> {
    let mut w = Enc::new(e);
    w.u32(m.body.type_());
    w.u16(m.misc);
    w.u16(0); // size, patched below
    match &m.body {
        MBody::Mmap {
            pid,
            tid,
            addr,
            len,
            pgoff,
            filename,
            ..
        } => {
            w.i32(*pid);
            w.i32(*tid);
            w.u64(*addr);
            w.u64(*len);
            w.u64(*pgoff);
            w.cstr(filename);
        }
        MBody::Lost { id, lost } => {
            w.u64(*id);
            w.u64(*lost)
        }
        MBody::Comm { pid, tid, comm, .. } => {
            w.i32(*pid);
            w.i32(*tid);
            w.cstr(comm)
        }
        MBody::Exit(p, t) | MBody::Fork(p, t) => {
            for v in p {
                w.i32(*v)
            }
            w.u64(*t)
        }
        MBody::Throttle(a, b, c) | MBody::Unthrottle(a, b, c) | MBody::Aux(a, b, c) => {
            w.u64(*a);
            w.u64(*b);
            w.u64(*c)
        }
        MBody::Read { pid, tid, read } => {
            w.i32(*pid);
            w.i32(*tid);
            enc_read(&mut w, cfg, read)
        }
        MBody::Sample(s) => enc_sample(&mut w, cfg, s),
        MBody::Mmap2 {
            pid,
            tid,
            addr,
            len,
            pgoff,
            file,
            prot,
            flags,
            filename,
            ..
        } => {
            w.i32(*pid);
            w.i32(*tid);
            w.u64(*addr);
            w.u64(*len);
            w.u64(*pgoff);
            match file {
                MFile::Inode(maj, min, ino, gen_) => {
                    w.u32(*maj);
                    w.u32(*min);
                    w.u64(*ino);
                    w.u64(*gen_)
                }
                MFile::BuildId(size, id) => {
                    w.u8(*size);
                    w.u8(0);
                    w.u16(0);
                    w.bytes(id)
                }
            }
            w.u32(*prot);
            w.u32(*flags);
            w.cstr(filename);
        }
        MBody::ItraceStart(p, t) => {
            w.i32(*p);
            w.i32(*t)
        }
        MBody::LostSamples(l) => w.u64(*l),
        MBody::Switch { .. } => {}
        MBody::SwitchCpuWide { pid, tid, .. } => {
            w.i32(*pid);
            w.i32(*tid)
        }
        MBody::Namespaces { pid, tid, links } => {
            w.i32(*pid);
            w.i32(*tid);
            w.u64(links.len() as u64);
            for (d, i) in links {
                w.u64(*d);
                w.u64(*i)
            }
        }
        MBody::Ksymbol {
            addr,
            len,
            ty,
            flags,
            name,
        } => {
            w.u64(*addr);
            w.u32(*len);
            w.u16(*ty);
            w.u16(*flags);
            w.cstr(name)
        }
        MBody::BpfEvent { ty, flags, id, tag } => {
            w.u16(*ty);
            w.u16(*flags);
            w.u32(*id);
            w.bytes(tag)
        }
        MBody::Cgroup { id, path } => {
            w.u64(*id);
            w.cstr(path)
        }
        MBody::TextPoke { addr, old, new } => {
            w.u64(*addr);
            w.u16(old.len() as u16);
            w.u16(new.len() as u16);
            w.bytes(old);
            w.bytes(new);
            w.pad8();
        }
        MBody::AuxOutputHwId(h) => w.u64(*h),
        MBody::Unknown { data, .. } => w.bytes(data),
    }
    let known = (PERF_RECORD_MMAP..=PERF_RECORD_AUX_OUTPUT_HW_ID).contains(&m.body.type_());
    if known && m.body.type_() != PERF_RECORD_SAMPLE && cfg.sample_id_all {
        let s = &m.sid;
        if cfg.has(PERF_SAMPLE_TID) {
            let (p, t) = s.pid_tid.unwrap();
            w.i32(p);
            w.i32(t)
        }
        if cfg.has(PERF_SAMPLE_TIME) {
            w.u64(s.time.unwrap())
        }
        if cfg.has(PERF_SAMPLE_ID) {
            w.u64(s.id.unwrap())
        }
        if cfg.has(PERF_SAMPLE_STREAM_ID) {
            w.u64(s.stream_id.unwrap())
        }
        if cfg.has(PERF_SAMPLE_CPU) {
            w.u32(s.cpu.unwrap());
            w.u32(0)
        }
        if cfg.has(PERF_SAMPLE_IDENTIFIER) {
            w.u64(s.identifier.unwrap())
        }
    }
    let size = w.out.len() as u16;
    let sb = e.u16_bytes(size);
    w.out[6] = sb[0];
    w.out[7] = sb[1];
    w.out
}

// ---------------------------------------------------------------- reference decoder
//
// Written independently of the library: a plain cursor that assembles integers byte
// by byte and answers None when bytes run out.

struct Cur<'a> {
    b: &'a [u8],
    p: usize,
    big: bool,
}

impl<'a> Cur<'a> {
    fn n(&mut self, len: usize) -> Option<u64> {
        if self.p + len > self.b.len() {
            return None;
        }
        let mut v = 0u64;
        for i in 0..len {
            let byte = u64::from(self.b[self.p + i]);
            if self.big {
                v = (v << 8) | byte
            } else {
                v |= byte << (8 * i)
            }
        }
        self.p += len;
        Some(v)
    }
    fn u64(&mut self) -> Option<u64> {
        self.n(8)
    }
    fn u32(&mut self) -> Option<u32> {
        self.n(4).map(|v| v as u32)
    }
    fn i32(&mut self) -> Option<i32> {
        self.n(4).map(|v| v as u32 as i32)
    }
    fn u16(&mut self) -> Option<u16> {
        self.n(2).map(|v| v as u16)
    }
    fn take(&mut self, len: usize) -> Option<Vec<u8>> {
        if self.p + len > self.b.len() {
            return None;
        }
        let v = self.b[self.p..self.p + len].to_vec();
        self.p += len;
        Some(v)
    }
    fn skip_to8(&mut self) {
        // Record start is at offset -8 relative to the body; 8-alignment is the same.
        while self.p % 8 != 0 && self.p < self.b.len() {
            self.p += 1
        }
    }
    fn cstr(&mut self) -> Option<Vec<u8>> {
        let rest = &self.b[self.p..];
        let nul = rest.iter().position(|&c| c == 0)?;
        self.p = self.b.len();
        Some(rest[..nul].to_vec())
    }
    fn opt(&mut self, on: bool) -> Option<Option<u64>> {
        if on {
            Some(Some(self.u64()?))
        } else {
            Some(None)
        }
    }
}

fn dec_read(c: &mut Cur, rf: u64) -> Option<MRead> {
    let te_on = rf & PERF_FORMAT_TOTAL_TIME_ENABLED != 0;
    let tr_on = rf & PERF_FORMAT_TOTAL_TIME_RUNNING != 0;
    let id_on = rf & PERF_FORMAT_ID != 0;
    let lost_on = rf & PERF_FORMAT_LOST != 0;
    if rf & PERF_FORMAT_GROUP != 0 {
        let nr = c.u64()?;
        let time_enabled = c.opt(te_on)?;
        let time_running = c.opt(tr_on)?;
        let mut values = Vec::new();
        for _ in 0..nr {
            let v = c.u64()?;
            let id = c.opt(id_on)?;
            let lost = c.opt(lost_on)?;
            values.push((v, id, lost));
        }
        Some(MRead {
            time_enabled,
            time_running,
            values,
        })
    } else {
        let v = c.u64()?;
        let time_enabled = c.opt(te_on)?;
        let time_running = c.opt(tr_on)?;
        let id = c.opt(id_on)?;
        let lost = c.opt(lost_on)?;
        Some(MRead {
            time_enabled,
            time_running,
            values: vec![(v, id, lost)],
        })
    }
}

fn dec_regs(c: &mut Cur, mask: u64) -> Option<(u64, Vec<u64>)> {
    let abi = c.u64()?;
    let mut regs = Vec::new();
    if abi != 0 {
        for _ in 0..mask.count_ones() {
            regs.push(c.u64()?)
        }
    }
    Some((abi, regs))
}

fn dec_sample(c: &mut Cur, cfg: &Cfg) -> Option<MSample> {
    let h = |b| cfg.has(b);
    let mut s = MSample {
        identifier: c.opt(h(PERF_SAMPLE_IDENTIFIER))?,
        ip: c.opt(h(PERF_SAMPLE_IP))?,
        ..Default::default()
    };
    if h(PERF_SAMPLE_TID) {
        s.pid_tid = Some((c.i32()?, c.i32()?))
    }
    s.time = c.opt(h(PERF_SAMPLE_TIME))?;
    s.addr = c.opt(h(PERF_SAMPLE_ADDR))?;
    s.id = c.opt(h(PERF_SAMPLE_ID))?;
    s.stream_id = c.opt(h(PERF_SAMPLE_STREAM_ID))?;
    if h(PERF_SAMPLE_CPU) {
        s.cpu_res = Some((c.u32()?, c.u32()?))
    }
    s.period = c.opt(h(PERF_SAMPLE_PERIOD))?;
    if h(PERF_SAMPLE_READ) {
        s.read = Some(dec_read(c, cfg.read_format)?)
    }
    if h(PERF_SAMPLE_CALLCHAIN) {
        let nr = c.u64()?;
        if nr > 10_000 {
            return None;
        }
        let mut v = Vec::new();
        for _ in 0..nr {
            v.push(c.u64()?)
        }
        s.callchain = Some(v);
    }
    if h(PERF_SAMPLE_RAW) {
        let size = c.u32()? as usize;
        s.raw = Some(c.take(size)?);
        c.skip_to8();
    }
    if h(PERF_SAMPLE_BRANCH_STACK) {
        let nr = c.u64()?;
        if nr > 10_000 {
            return None;
        }
        let hw_idx = c.opt(cfg.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX != 0)?;
        let mut entries = Vec::new();
        for _ in 0..nr {
            entries.push((c.u64()?, c.u64()?, c.u64()?))
        }
        let counters = if cfg.branch_sample_type & PERF_SAMPLE_BRANCH_COUNTERS != 0 {
            let mut v = Vec::new();
            for _ in 0..nr {
                v.push(c.u64()?)
            }
            Some(v)
        } else {
            None
        };
        s.branch = Some(MBranch {
            hw_idx,
            entries,
            counters,
        });
    }
    if h(PERF_SAMPLE_REGS_USER) {
        s.regs_user = Some(dec_regs(c, cfg.regs_user)?)
    }
    if h(PERF_SAMPLE_STACK_USER) {
        let size = c.u64()? as usize;
        let data = c.take(size)?;
        c.skip_to8();
        let d = if size != 0 { Some(c.u64()?) } else { None };
        s.stack_user = Some((data, d));
    }
    s.weight = c.opt(h(PERF_SAMPLE_WEIGHT) || h(PERF_SAMPLE_WEIGHT_STRUCT))?;
    s.data_src = c.opt(h(PERF_SAMPLE_DATA_SRC))?;
    s.transaction = c.opt(h(PERF_SAMPLE_TRANSACTION))?;
    if h(PERF_SAMPLE_REGS_INTR) {
        s.regs_intr = Some(dec_regs(c, cfg.regs_intr)?)
    }
    s.phys_addr = c.opt(h(PERF_SAMPLE_PHYS_ADDR))?;
    s.cgroup = c.opt(h(PERF_SAMPLE_CGROUP))?;
    s.data_page_size = c.opt(h(PERF_SAMPLE_DATA_PAGE_SIZE))?;
    s.code_page_size = c.opt(h(PERF_SAMPLE_CODE_PAGE_SIZE))?;
    if h(PERF_SAMPLE_AUX) {
        let size = c.u64()? as usize;
        s.aux = Some(c.take(size)?);
        c.skip_to8();
    }
    Some(s)
}

/// Decode a whole record (header included) with the reference decoder.
pub fn ref_decode(e: Endian, cfg: &Cfg, rec: &[u8]) -> Option<MRecord> {
    let big = e == Endian::Big;
    let mut hc = Cur { b: rec, p: 0, big };
    let type_ = hc.u32()?;
    let misc = hc.u16()?;
    let size = hc.u16()? as usize;
    if size < 8 || size > rec.len() {
        return None;
    }
    let body = &rec[8..size];
    let known = (PERF_RECORD_MMAP..=PERF_RECORD_AUX_OUTPUT_HW_ID).contains(&type_);
    if !known {
        return Some(MRecord {
            misc,
            body: MBody::Unknown {
                type_,
                data: body.to_vec(),
            },
            sid: MSampleId::default(),
        });
    }
    if type_ == PERF_RECORD_SAMPLE {
        let mut c = Cur { b: body, p: 0, big };
        let s = dec_sample(&mut c, cfg)?;
        return Some(MRecord {
            misc,
            body: MBody::Sample(s),
            sid: MSampleId::default(),
        });
    }
    let mut tlen = 0;
    if cfg.sample_id_all {
        for b in [
            PERF_SAMPLE_TID,
            PERF_SAMPLE_TIME,
            PERF_SAMPLE_ID,
            PERF_SAMPLE_STREAM_ID,
            PERF_SAMPLE_CPU,
            PERF_SAMPLE_IDENTIFIER,
        ] {
            if cfg.has(b) {
                tlen += 8
            }
        }
    }
    if body.len() < tlen {
        return None;
    }
    let (fields, trailer) = body.split_at(body.len() - tlen);
    let mut sid = MSampleId::default();
    if cfg.sample_id_all {
        let mut t = Cur {
            b: trailer,
            p: 0,
            big,
        };
        if cfg.has(PERF_SAMPLE_TID) {
            sid.pid_tid = Some((t.i32()?, t.i32()?))
        }
        sid.time = t.opt(cfg.has(PERF_SAMPLE_TIME))?;
        sid.id = t.opt(cfg.has(PERF_SAMPLE_ID))?;
        sid.stream_id = t.opt(cfg.has(PERF_SAMPLE_STREAM_ID))?;
        if cfg.has(PERF_SAMPLE_CPU) {
            sid.cpu = Some(t.u32()?);
            t.u32()?;
        }
        sid.identifier = t.opt(cfg.has(PERF_SAMPLE_IDENTIFIER))?;
    }
    let mut c = Cur {
        b: fields,
        p: 0,
        big,
    };
    let out = misc & PERF_RECORD_MISC_SWITCH_OUT != 0;
    let preempt = misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0;
    let data = misc & PERF_RECORD_MISC_MMAP_DATA != 0;
    let body = match type_ {
        PERF_RECORD_MMAP => MBody::Mmap {
            pid: c.i32()?,
            tid: c.i32()?,
            addr: c.u64()?,
            len: c.u64()?,
            pgoff: c.u64()?,
            filename: c.cstr()?,
            data,
        },
        PERF_RECORD_LOST => MBody::Lost {
            id: c.u64()?,
            lost: c.u64()?,
        },
        PERF_RECORD_COMM => MBody::Comm {
            pid: c.i32()?,
            tid: c.i32()?,
            comm: c.cstr()?,
            exec: misc & PERF_RECORD_MISC_COMM_EXEC != 0,
        },
        PERF_RECORD_EXIT => MBody::Exit([c.i32()?, c.i32()?, c.i32()?, c.i32()?], c.u64()?),
        PERF_RECORD_FORK => MBody::Fork([c.i32()?, c.i32()?, c.i32()?, c.i32()?], c.u64()?),
        PERF_RECORD_THROTTLE => MBody::Throttle(c.u64()?, c.u64()?, c.u64()?),
        PERF_RECORD_UNTHROTTLE => MBody::Unthrottle(c.u64()?, c.u64()?, c.u64()?),
        PERF_RECORD_READ => MBody::Read {
            pid: c.i32()?,
            tid: c.i32()?,
            read: dec_read(&mut c, cfg.read_format)?,
        },
        PERF_RECORD_MMAP2 => {
            let (pid, tid, addr, len, pgoff) = (c.i32()?, c.i32()?, c.u64()?, c.u64()?, c.u64()?);
            let file = if misc & PERF_RECORD_MISC_MMAP_BUILD_ID != 0 {
                let size = c.n(1)? as u8;
                if size > 20 {
                    return None;
                }
                c.take(3)?;
                let id: [u8; 20] = c.take(20)?.try_into().ok()?;
                MFile::BuildId(size, id)
            } else {
                MFile::Inode(c.u32()?, c.u32()?, c.u64()?, c.u64()?)
            };
            MBody::Mmap2 {
                pid,
                tid,
                addr,
                len,
                pgoff,
                file,
                prot: c.u32()?,
                flags: c.u32()?,
                filename: c.cstr()?,
                data,
            }
        }
        PERF_RECORD_AUX => MBody::Aux(c.u64()?, c.u64()?, c.u64()?),
        PERF_RECORD_ITRACE_START => MBody::ItraceStart(c.i32()?, c.i32()?),
        PERF_RECORD_LOST_SAMPLES => MBody::LostSamples(c.u64()?),
        PERF_RECORD_SWITCH => MBody::Switch { out, preempt },
        PERF_RECORD_SWITCH_CPU_WIDE => MBody::SwitchCpuWide {
            out,
            preempt,
            pid: c.i32()?,
            tid: c.i32()?,
        },
        PERF_RECORD_NAMESPACES => {
            let (pid, tid, nr) = (c.i32()?, c.i32()?, c.u64()?);
            if nr > 10_000 {
                return None;
            }
            let mut links = Vec::new();
            for _ in 0..nr {
                links.push((c.u64()?, c.u64()?))
            }
            MBody::Namespaces { pid, tid, links }
        }
        PERF_RECORD_KSYMBOL => MBody::Ksymbol {
            addr: c.u64()?,
            len: c.u32()?,
            ty: c.u16()?,
            flags: c.u16()?,
            name: c.cstr()?,
        },
        PERF_RECORD_BPF_EVENT => MBody::BpfEvent {
            ty: c.u16()?,
            flags: c.u16()?,
            id: c.u32()?,
            tag: c.take(8)?.try_into().ok()?,
        },
        PERF_RECORD_CGROUP => MBody::Cgroup {
            id: c.u64()?,
            path: c.cstr()?,
        },
        PERF_RECORD_TEXT_POKE => {
            let addr = c.u64()?;
            let (ol, nl) = (c.u16()? as usize, c.u16()? as usize);
            MBody::TextPoke {
                addr,
                old: c.take(ol)?,
                new: c.take(nl)?,
            }
        }
        PERF_RECORD_AUX_OUTPUT_HW_ID => MBody::AuxOutputHwId(c.u64()?),
        _ => unreachable!(),
    };
    Some(MRecord { misc, body, sid })
}

// ---------------------------------------------------------------- library -> model

fn m_read(r: &ReadValues) -> MRead {
    MRead {
        time_enabled: r.time_enabled,
        time_running: r.time_running,
        values: r.iter().map(|v| (v.value, v.id, v.lost)).collect(),
    }
}

fn m_regs(r: &Regs) -> (u64, Vec<u64>) {
    (r.abi, r.iter().map(|(_, v)| v).collect())
}

/// The library's parse result as a model (also checks internal consistency).
pub fn to_model(p: &ParsedRecord, cfg: &Cfg) -> MRecord {
    let mut sid = MSampleId {
        pid_tid: p.sample_id.pid.zip(p.sample_id.tid),
        time: p.sample_id.time,
        id: p.sample_id.id,
        stream_id: p.sample_id.stream_id,
        cpu: p.sample_id.cpu,
        identifier: p.sample_id.identifier,
    };
    let body = match &p.record {
        Record::Mmap(m) => MBody::Mmap {
            pid: m.pid,
            tid: m.tid,
            addr: m.addr,
            len: m.len,
            pgoff: m.pgoff,
            filename: m.filename.to_vec(),
            data: m.data,
        },
        Record::Lost(l) => MBody::Lost {
            id: l.id,
            lost: l.lost,
        },
        Record::Comm(c) => MBody::Comm {
            pid: c.pid,
            tid: c.tid,
            comm: c.comm.to_vec(),
            exec: c.exec,
        },
        Record::Exit(t) => MBody::Exit([t.pid, t.ppid, t.tid, t.ptid], t.time),
        Record::Fork(t) => MBody::Fork([t.pid, t.ppid, t.tid, t.ptid], t.time),
        Record::Throttle(t) => MBody::Throttle(t.time, t.id, t.stream_id),
        Record::Unthrottle(t) => MBody::Unthrottle(t.time, t.id, t.stream_id),
        Record::Read(r) => MBody::Read {
            pid: r.pid,
            tid: r.tid,
            read: m_read(&r.values),
        },
        Record::Sample(s) => {
            // The sample_id of a sample mirrors its own fields.
            assert_eq!(p.sample_id.time, s.time);
            assert_eq!(p.sample_id.identifier, s.identifier);
            assert_eq!(p.sample_id.pid, s.pid);
            assert_eq!(s.event_id(), s.identifier.or(s.id));
            sid = MSampleId::default();
            if let Some(w) = s.weight_struct {
                assert_eq!(Some(WeightStruct::from_full(s.weight.unwrap())), Some(w));
                assert!(cfg.sample_type & PERF_SAMPLE_WEIGHT_STRUCT != 0);
            }
            if let Some(c) = &s.callchain {
                assert_eq!(c.iter().len(), c.len());
                let frames: Vec<_> = c.frames().collect();
                assert_eq!(
                    frames.len(),
                    c.iter().filter(|&v| v < PERF_CONTEXT_MAX).count()
                );
            }
            if let Some(r) = &s.regs_user {
                for (reg, v) in r.iter() {
                    assert_eq!(r.get(reg), Some(v))
                }
            }
            MBody::Sample(MSample {
                identifier: s.identifier,
                ip: s.ip,
                pid_tid: s.pid.zip(s.tid),
                time: s.time,
                addr: s.addr,
                id: s.id,
                stream_id: s.stream_id,
                cpu_res: s.cpu.zip(s.cpu_res),
                period: s.period,
                read: s.read.as_ref().map(m_read),
                callchain: s.callchain.map(|c| c.iter().collect()),
                raw: s.raw.map(<[u8]>::to_vec),
                branch: s.branch_stack.map(|b| MBranch {
                    hw_idx: b.hw_idx,
                    entries: b.entries().map(|e| (e.from, e.to, e.flags)).collect(),
                    counters: b.counters().map(|c| c.collect()),
                }),
                regs_user: s.regs_user.as_ref().map(m_regs),
                stack_user: s.stack_user.map(|st| (st.data.to_vec(), st.dyn_size)),
                weight: s.weight,
                data_src: s.data_src,
                transaction: s.transaction,
                regs_intr: s.regs_intr.as_ref().map(m_regs),
                phys_addr: s.phys_addr,
                cgroup: s.cgroup,
                data_page_size: s.data_page_size,
                code_page_size: s.code_page_size,
                aux: s.aux.map(<[u8]>::to_vec),
            })
        }
        Record::Mmap2(m) => MBody::Mmap2 {
            pid: m.pid,
            tid: m.tid,
            addr: m.addr,
            len: m.len,
            pgoff: m.pgoff,
            file: match m.file_id {
                Mmap2FileId::Inode {
                    maj,
                    min,
                    ino,
                    ino_generation,
                } => MFile::Inode(maj, min, ino, ino_generation),
                Mmap2FileId::BuildId(b) => {
                    assert_eq!(b.as_bytes().len(), b.size as usize);
                    MFile::BuildId(b.size, b.bytes)
                }
            },
            prot: m.prot,
            flags: m.flags,
            filename: m.filename.to_vec(),
            data: m.data,
        },
        Record::Aux(a) => MBody::Aux(a.aux_offset, a.aux_size, a.flags),
        Record::ItraceStart(i) => MBody::ItraceStart(i.pid, i.tid),
        Record::LostSamples(l) => MBody::LostSamples(l.lost),
        Record::Switch(s) => MBody::Switch {
            out: s.out,
            preempt: s.preempt,
        },
        Record::SwitchCpuWide(s) => MBody::SwitchCpuWide {
            out: s.out,
            preempt: s.preempt,
            pid: s.next_prev_pid,
            tid: s.next_prev_tid,
        },
        Record::Namespaces(n) => {
            let links: Vec<_> = n.iter().map(|l| (l.dev, l.ino)).collect();
            assert_eq!(links.len(), n.len());
            MBody::Namespaces {
                pid: n.pid,
                tid: n.tid,
                links,
            }
        }
        Record::Ksymbol(k) => MBody::Ksymbol {
            addr: k.addr,
            len: k.len,
            ty: k.ksym_type,
            flags: k.flags,
            name: k.name.to_vec(),
        },
        Record::BpfEvent(b) => MBody::BpfEvent {
            ty: b.type_,
            flags: b.flags,
            id: b.id,
            tag: b.tag,
        },
        Record::Cgroup(c) => MBody::Cgroup {
            id: c.id,
            path: c.path.to_vec(),
        },
        Record::TextPoke(t) => MBody::TextPoke {
            addr: t.addr,
            old: t.old_bytes.to_vec(),
            new: t.new_bytes.to_vec(),
        },
        Record::AuxOutputHwId(a) => MBody::AuxOutputHwId(a.hw_id),
        Record::Unknown { type_, misc, data } => {
            assert_eq!(*misc, p.misc);
            MBody::Unknown {
                type_: *type_,
                data: data.to_vec(),
            }
        }
    };
    MRecord {
        misc: p.misc,
        body,
        sid,
    }
}

// ---------------------------------------------------------------- strategies

pub fn endian() -> impl Strategy<Value = Endian> {
    prop_oneof![Just(Endian::Little), Just(Endian::Big)]
}

pub fn cfg() -> impl Strategy<Value = Cfg> {
    (
        0u64..(1 << 25),
        0u64..32,
        prop_oneof![
            Just(0),
            Just(PERF_SAMPLE_BRANCH_HW_INDEX),
            Just(PERF_SAMPLE_BRANCH_COUNTERS),
            Just(PERF_SAMPLE_BRANCH_HW_INDEX | PERF_SAMPLE_BRANCH_COUNTERS)
        ],
        any::<u64>().prop_map(|v| v & 0x0000_0f0f_00ff_0f0f),
        any::<u64>().prop_map(|v| v & 0x00f0_0000_0000_f00f),
        any::<bool>(),
    )
        .prop_map(
            |(
                sample_type,
                read_format,
                branch_sample_type,
                regs_user,
                regs_intr,
                sample_id_all,
            )| Cfg {
                sample_type,
                read_format,
                branch_sample_type,
                regs_user,
                regs_intr,
                sample_id_all,
            },
        )
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    vec(1u8..=255, 0..40)
}

fn o64(on: bool) -> BoxedStrategy<Option<u64>> {
    if on {
        any::<u64>().prop_map(Some).boxed()
    } else {
        Just(None).boxed()
    }
}

fn read_strategy(cfg: &Cfg) -> BoxedStrategy<MRead> {
    let rf = cfg.read_format;
    let nmax = if rf & PERF_FORMAT_GROUP != 0 { 6 } else { 1 };
    let nmin = if rf & PERF_FORMAT_GROUP != 0 { 0 } else { 1 };
    (
        o64(rf & PERF_FORMAT_TOTAL_TIME_ENABLED != 0),
        o64(rf & PERF_FORMAT_TOTAL_TIME_RUNNING != 0),
        vec(
            (
                any::<u64>(),
                o64(rf & PERF_FORMAT_ID != 0),
                o64(rf & PERF_FORMAT_LOST != 0),
            ),
            nmin..=nmax,
        ),
    )
        .prop_map(|(time_enabled, time_running, values)| MRead {
            time_enabled,
            time_running,
            values,
        })
        .boxed()
}

fn regs_strategy(mask: u64) -> BoxedStrategy<(u64, Vec<u64>)> {
    prop_oneof![
        Just((0u64, Vec::new())),
        (1u64..=2, vec(any::<u64>(), mask.count_ones() as usize)),
    ]
    .boxed()
}

fn callchain_entry() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => any::<u64>().prop_map(|v| v % PERF_CONTEXT_MAX),
        1 => prop_oneof![Just(PERF_CONTEXT_KERNEL), Just(PERF_CONTEXT_USER), Just(PERF_CONTEXT_HV), Just(PERF_CONTEXT_GUEST), Just(PERF_CONTEXT_GUEST_KERNEL), Just(PERF_CONTEXT_GUEST_USER), Just(u64::MAX)],
    ]
}

fn opt<T: core::fmt::Debug + Clone + 'static>(
    on: bool,
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    if on {
        s.prop_map(Some).boxed()
    } else {
        Just(None).boxed()
    }
}

pub fn sample_strategy(cfg: Cfg) -> BoxedStrategy<MSample> {
    let h = |b| cfg.sample_type & b != 0;
    let head = (
        o64(h(PERF_SAMPLE_IDENTIFIER)),
        o64(h(PERF_SAMPLE_IP)),
        opt(h(PERF_SAMPLE_TID), (any::<i32>(), any::<i32>())),
        o64(h(PERF_SAMPLE_TIME)),
        o64(h(PERF_SAMPLE_ADDR)),
        o64(h(PERF_SAMPLE_ID)),
        o64(h(PERF_SAMPLE_STREAM_ID)),
        opt(h(PERF_SAMPLE_CPU), (any::<u32>(), any::<u32>())),
        o64(h(PERF_SAMPLE_PERIOD)),
        opt(h(PERF_SAMPLE_READ), read_strategy(&cfg)),
        opt(h(PERF_SAMPLE_CALLCHAIN), vec(callchain_entry(), 0..12)),
        // RAW: size counts the padding, so (4 + size) % 8 == 0.
        opt(
            h(PERF_SAMPLE_RAW),
            (0usize..6).prop_flat_map(|k| vec(any::<u8>(), 4 + 8 * k)),
        ),
    );
    let bst = cfg.branch_sample_type;
    let branch = (0usize..4).prop_flat_map(move |n| {
        (
            o64(bst & PERF_SAMPLE_BRANCH_HW_INDEX != 0),
            vec((any::<u64>(), any::<u64>(), any::<u64>()), n),
            opt(bst & PERF_SAMPLE_BRANCH_COUNTERS != 0, vec(any::<u64>(), n)),
        )
            .prop_map(|(hw_idx, entries, counters)| MBranch {
                hw_idx,
                entries,
                counters,
            })
    });
    let stack = prop_oneof![
        Just((Vec::new(), None)),
        (
            (1usize..5).prop_flat_map(|k| vec(any::<u8>(), 8 * k)),
            any::<u64>()
        )
            .prop_map(|(d, s)| (d, Some(s))),
    ];
    let tail = (
        opt(h(PERF_SAMPLE_BRANCH_STACK), branch),
        opt(h(PERF_SAMPLE_REGS_USER), regs_strategy(cfg.regs_user)),
        opt(h(PERF_SAMPLE_STACK_USER), stack),
        o64(h(PERF_SAMPLE_WEIGHT) || h(PERF_SAMPLE_WEIGHT_STRUCT)),
        o64(h(PERF_SAMPLE_DATA_SRC)),
        o64(h(PERF_SAMPLE_TRANSACTION)),
        opt(h(PERF_SAMPLE_REGS_INTR), regs_strategy(cfg.regs_intr)),
        o64(h(PERF_SAMPLE_PHYS_ADDR)),
        o64(h(PERF_SAMPLE_CGROUP)),
        o64(h(PERF_SAMPLE_DATA_PAGE_SIZE)),
        o64(h(PERF_SAMPLE_CODE_PAGE_SIZE)),
        // AUX: the size field counts the data; padding follows.
        opt(h(PERF_SAMPLE_AUX), vec(any::<u8>(), 0..30)),
    );
    (head, tail)
        .prop_map(
            |(
                (
                    identifier,
                    ip,
                    pid_tid,
                    time,
                    addr,
                    id,
                    stream_id,
                    cpu_res,
                    period,
                    read,
                    callchain,
                    raw,
                ),
                (
                    branch,
                    regs_user,
                    stack_user,
                    weight,
                    data_src,
                    transaction,
                    regs_intr,
                    phys_addr,
                    cgroup,
                    data_page_size,
                    code_page_size,
                    aux,
                ),
            )| MSample {
                identifier,
                ip,
                pid_tid,
                time,
                addr,
                id,
                stream_id,
                cpu_res,
                period,
                read,
                callchain,
                raw,
                branch,
                regs_user,
                stack_user,
                weight,
                data_src,
                transaction,
                regs_intr,
                phys_addr,
                cgroup,
                data_page_size,
                code_page_size,
                aux,
            },
        )
        .boxed()
}

pub fn sid_strategy(cfg: Cfg) -> BoxedStrategy<MSampleId> {
    if !cfg.sample_id_all {
        return Just(MSampleId::default()).boxed();
    }
    let h = |b| cfg.sample_type & b != 0;
    (
        opt(h(PERF_SAMPLE_TID), (any::<i32>(), any::<i32>())),
        o64(h(PERF_SAMPLE_TIME)),
        o64(h(PERF_SAMPLE_ID)),
        o64(h(PERF_SAMPLE_STREAM_ID)),
        opt(h(PERF_SAMPLE_CPU), any::<u32>()),
        o64(h(PERF_SAMPLE_IDENTIFIER)),
    )
        .prop_map(
            |(pid_tid, time, id, stream_id, cpu, identifier)| MSampleId {
                pid_tid,
                time,
                id,
                stream_id,
                cpu,
                identifier,
            },
        )
        .boxed()
}

/// Record bodies of every type: `kind` in 0..=22 picks the type (21 = unknown kernel
/// type, 22 = perf tool type).
pub fn body_strategy(cfg: Cfg, kind: u32) -> BoxedStrategy<(u16, MBody)> {
    let misc = any::<u16>().prop_map(|m| m & !PERF_RECORD_MISC_MMAP_BUILD_ID);
    match kind {
        0 => (misc, any::<(i32, i32, u64, u64, u64)>(), name())
            .prop_map(|(m, (pid, tid, addr, len, pgoff), filename)| {
                (
                    m,
                    MBody::Mmap {
                        pid,
                        tid,
                        addr,
                        len,
                        pgoff,
                        filename,
                        data: m & PERF_RECORD_MISC_MMAP_DATA != 0,
                    },
                )
            })
            .boxed(),
        1 => (misc, any::<(u64, u64)>())
            .prop_map(|(m, (id, lost))| (m, MBody::Lost { id, lost }))
            .boxed(),
        2 => (misc, any::<(i32, i32)>(), name())
            .prop_map(|(m, (pid, tid), comm)| {
                (
                    m,
                    MBody::Comm {
                        pid,
                        tid,
                        comm,
                        exec: m & PERF_RECORD_MISC_COMM_EXEC != 0,
                    },
                )
            })
            .boxed(),
        3 => (misc, any::<[i32; 4]>(), any::<u64>())
            .prop_map(|(m, p, t)| (m, MBody::Exit(p, t)))
            .boxed(),
        4 => (misc, any::<(u64, u64, u64)>())
            .prop_map(|(m, (a, b, c))| (m, MBody::Throttle(a, b, c)))
            .boxed(),
        5 => (misc, any::<(u64, u64, u64)>())
            .prop_map(|(m, (a, b, c))| (m, MBody::Unthrottle(a, b, c)))
            .boxed(),
        6 => (misc, any::<[i32; 4]>(), any::<u64>())
            .prop_map(|(m, p, t)| (m, MBody::Fork(p, t)))
            .boxed(),
        7 => (misc, any::<(i32, i32)>(), read_strategy(&cfg))
            .prop_map(|(m, (pid, tid), read)| (m, MBody::Read { pid, tid, read }))
            .boxed(),
        8 => (misc, sample_strategy(cfg))
            .prop_map(|(m, s)| (m, MBody::Sample(s)))
            .boxed(),
        9 => (
            any::<u16>(),
            any::<(i32, i32, u64, u64, u64)>(),
            prop_oneof![
                any::<(u32, u32, u64, u64)>().prop_map(|(a, b, c, d)| MFile::Inode(a, b, c, d)),
                (0u8..=20, any::<[u8; 20]>()).prop_map(|(s, b)| MFile::BuildId(s, b))
            ],
            // prot holds PROT_* bits (read, write, exec, sem; grows down/up), as the
            // kernel writes it: an MMAP2 whose prot starts like a path is a pre-3.16 record
            // without prot and flags.
            (
                (0u32..16, 0u32..4).prop_map(|(p, g)| p | (g << 24)),
                any::<u32>(),
            ),
            name(),
        )
            .prop_map(
                |(m, (pid, tid, addr, len, pgoff), file, (prot, flags), filename)| {
                    let m = match file {
                        MFile::BuildId(..) => m | PERF_RECORD_MISC_MMAP_BUILD_ID,
                        MFile::Inode(..) => m & !PERF_RECORD_MISC_MMAP_BUILD_ID,
                    };
                    (
                        m,
                        MBody::Mmap2 {
                            pid,
                            tid,
                            addr,
                            len,
                            pgoff,
                            file,
                            prot,
                            flags,
                            filename,
                            data: m & PERF_RECORD_MISC_MMAP_DATA != 0,
                        },
                    )
                },
            )
            .boxed(),
        10 => (misc, any::<(u64, u64, u64)>())
            .prop_map(|(m, (a, b, c))| (m, MBody::Aux(a, b, c)))
            .boxed(),
        11 => (misc, any::<(i32, i32)>())
            .prop_map(|(m, (a, b))| (m, MBody::ItraceStart(a, b)))
            .boxed(),
        12 => (misc, any::<u64>())
            .prop_map(|(m, l)| (m, MBody::LostSamples(l)))
            .boxed(),
        13 => any::<u16>()
            .prop_map(|m| {
                (
                    m,
                    MBody::Switch {
                        out: m & PERF_RECORD_MISC_SWITCH_OUT != 0,
                        preempt: m & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0,
                    },
                )
            })
            .boxed(),
        14 => (any::<u16>(), any::<(i32, i32)>())
            .prop_map(|(m, (pid, tid))| {
                (
                    m,
                    MBody::SwitchCpuWide {
                        out: m & PERF_RECORD_MISC_SWITCH_OUT != 0,
                        preempt: m & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0,
                        pid,
                        tid,
                    },
                )
            })
            .boxed(),
        15 => (misc, any::<(i32, i32)>(), vec(any::<(u64, u64)>(), 0..8))
            .prop_map(|(m, (pid, tid), links)| (m, MBody::Namespaces { pid, tid, links }))
            .boxed(),
        16 => (misc, any::<(u64, u32, u16, u16)>(), name())
            .prop_map(|(m, (addr, len, ty, flags), name)| {
                (
                    m,
                    MBody::Ksymbol {
                        addr,
                        len,
                        ty,
                        flags,
                        name,
                    },
                )
            })
            .boxed(),
        17 => (misc, any::<(u16, u16, u32, [u8; 8])>())
            .prop_map(|(m, (ty, flags, id, tag))| (m, MBody::BpfEvent { ty, flags, id, tag }))
            .boxed(),
        18 => (misc, any::<u64>(), name())
            .prop_map(|(m, id, path)| (m, MBody::Cgroup { id, path }))
            .boxed(),
        19 => (
            misc,
            any::<u64>(),
            vec(any::<u8>(), 0..20),
            vec(any::<u8>(), 0..20),
        )
            .prop_map(|(m, addr, old, new)| (m, MBody::TextPoke { addr, old, new }))
            .boxed(),
        20 => (misc, any::<u64>())
            .prop_map(|(m, h)| (m, MBody::AuxOutputHwId(h)))
            .boxed(),
        21 => (
            misc,
            22u32..64,
            (0usize..6).prop_flat_map(|k| vec(any::<u8>(), 8 * k)),
        )
            .prop_map(|(m, type_, data)| (m, MBody::Unknown { type_, data }))
            .boxed(),
        _ => (
            misc,
            64u32..200,
            (0usize..6).prop_flat_map(|k| vec(any::<u8>(), 8 * k)),
        )
            .prop_map(|(m, type_, data)| (m, MBody::Unknown { type_, data }))
            .boxed(),
    }
}

/// A random attr config and a random record of type `kind` for it.
pub fn record_of_kind(kind: u32) -> impl Strategy<Value = (Endian, Cfg, MRecord)> {
    (endian(), cfg()).prop_flat_map(move |(e, cfg)| {
        (body_strategy(cfg, kind), sid_strategy(cfg)).prop_map(move |((misc, body), sid)| {
            let is_known_nonsample = !matches!(body, MBody::Sample(_) | MBody::Unknown { .. });
            let sid = if is_known_nonsample {
                sid
            } else {
                MSampleId::default()
            };
            (e, cfg, MRecord { misc, body, sid })
        })
    })
}

/// Records of any type.
pub fn any_record() -> impl Strategy<Value = (Endian, Cfg, MRecord)> {
    (0u32..=22).prop_flat_map(record_of_kind)
}

/// Body of an encoded record.
pub fn body(bytes: &[u8]) -> &[u8] {
    &bytes[8..]
}
