//! Writes a big, realistic perf.data file for report benchmarks (issue 17: "Scale").
//!
//! ```text
//! cargo run --release -p perfkit-report --example gen-perf-data -- --samples 8000000 -o big.data
//! cargo run --release -p perfkit-report --example gen-perf-data -- --size 1G -o big.data
//! ```
//!
//! `--size` writes samples until the data section reaches that many bytes (`K`, `M`, `G`
//! suffixes, powers of 1000 as `ls -l --si` and the benchmarks print them), instead of a
//! sample count: the issue's "a report of a >= 900 MB file" needs no guess of the bytes a
//! sample takes on this machine's libraries.
//!
//! The file is what `perf record -a -g` of a busy machine looks like: many processes (some
//! started and exec'd while the recording runs), many threads each, every process mapping
//! real shared objects of this machine (so symbols resolve in both perfkit and perf), and
//! cpu-clock samples with frame-pointer callchains of 3 to 40 frames drawn from a few
//! thousand call paths per process, hot paths much more often than cold ones. Return
//! addresses are real instruction addresses inside real functions of those libraries.
//!
//! Everything is seeded (`--seed`): the same arguments give the same file on the same
//! machine. perf 6.1 reads it (`perf report -i FILE`).

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions, record};
use perfkit_sys as sys;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What to generate (the command line's options; tests include this file and call [`run`]).
pub struct Args {
    /// Samples in the file.
    pub samples: u64,
    /// Write samples until the data section holds this many bytes (then `samples` only
    /// estimates the count, for the process churn).
    pub size: Option<u64>,
    /// Where to write it.
    pub out: PathBuf,
    /// Processes running at once (each replaced by a new one 4 times over the recording).
    pub processes: u32,
    /// Threads of each process.
    pub threads: u32,
    /// CPUs the samples are spread over.
    pub cpus: u32,
    /// Distinct call paths of each process.
    pub paths: u32,
    /// Seed of the generator.
    pub seed: u64,
    /// Shared objects to map (default: this machine's usual ones).
    pub libs: Vec<PathBuf>,
    /// zstd level of COMPRESSED records, as `perf record -z` writes them (None: plain).
    pub compress: Option<i32>,
}

impl Args {
    /// The defaults, writing `out`.
    pub fn new(samples: u64, out: PathBuf) -> Args {
        Args {
            samples,
            size: None,
            out,
            processes: 24,
            threads: 8,
            cpus: 16,
            paths: 200,
            seed: 17,
            libs: Vec::new(),
            compress: None,
        }
    }
}

const USAGE: &str = "usage: gen-perf-data [--samples N | --size BYTES[K|M|G]] [-o FILE] [--processes N] \
[--threads N (per process)] [--cpus N] [--paths N (call paths per process)] [--seed N] \
[-z LEVEL (zstd, as perf record -z)] \
[--lib PATH]...";

fn parse_args() -> Result<Args, String> {
    let mut a = Args::new(1_000_000, PathBuf::from("perf.data"));
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || {
            it.next()
                .ok_or_else(|| format!("{k} needs a value\n{USAGE}"))
        };
        let num = |s: String| {
            s.replace('_', "")
                .parse::<u64>()
                .map_err(|e| format!("{k}: {s:?} is not a number ({e})"))
        };
        match k.as_str() {
            "--samples" | "-n" => a.samples = num(v()?)?,
            "--size" => {
                let s = v()?;
                let (digits, unit) = match s.to_ascii_uppercase().chars().last() {
                    Some('K') => (&s[..s.len() - 1], 1_000),
                    Some('M') => (&s[..s.len() - 1], 1_000_000),
                    Some('G') => (&s[..s.len() - 1], 1_000_000_000),
                    _ => (&s[..], 1),
                };
                let n = num(digits.to_string())?;
                if n == 0 {
                    return Err(format!("--size {s}: give a size above 0 (e.g. 900M, 1G)"));
                }
                a.size = Some(n.saturating_mul(unit));
                // About 145 bytes a sample with the default libraries and paths.
                a.samples = a.size.unwrap_or(0) / 145;
            }
            "-o" | "--output" => a.out = PathBuf::from(v()?),
            "--processes" => a.processes = num(v()?)?.max(1) as u32,
            "--threads" => a.threads = num(v()?)?.max(1) as u32,
            "--cpus" => a.cpus = num(v()?)?.max(1) as u32,
            "--paths" => a.paths = num(v()?)?.max(1) as u32,
            "--seed" => a.seed = num(v()?)?,
            "-z" | "--compression-level" => a.compress = Some(num(v()?)?.clamp(1, 22) as i32),
            "--lib" => a.libs.push(PathBuf::from(v()?)),
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ => return Err(format!("unknown argument {k:?}\n{USAGE}")),
        }
    }
    Ok(a)
}

/// xorshift64*: a small seeded generator (the file must be reproducible, not random).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// Skewed towards 0: hot paths and hot functions come up far more often.
    fn skewed(&mut self, n: u64) -> u64 {
        (0..4).map(|_| self.below(n)).min().unwrap_or(0)
    }
}

/// A shared object of this machine: its executable segment and the functions in it.
struct Lib {
    path: String,
    /// File offset and virtual address of the executable segment (page-aligned) and its
    /// length.
    pgoff: u64,
    vaddr: u64,
    len: u64,
    dev: u64,
    ino: u64,
    /// (address, size) of functions inside the segment.
    funcs: Vec<(u64, u64)>,
}

fn load_lib(path: &Path) -> Option<Lib> {
    let bytes = std::fs::read(path).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    // Position-independent objects only (ET_DYN: shared libraries, and libc.so.6 which
    // is also runnable): mapped at a base of our choosing.
    if !matches!(
        file.kind(),
        object::ObjectKind::Dynamic | object::ObjectKind::Executable
    ) || file.segments().map(|s| s.address()).min() != Some(0)
    {
        return None;
    }
    let seg = file
        .segments()
        .find(|s| matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & 1 != 0))?;
    let (off, _) = seg.file_range();
    let vaddr = seg.address() & !0xfff;
    let pgoff = off & !0xfff;
    let len = (seg.address() + seg.size() - vaddr).next_multiple_of(4096);
    let mut funcs: Vec<(u64, u64)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.size() >= 16)
        .map(|s| (s.address(), s.size()))
        .filter(|&(a, sz)| a >= vaddr && a + sz <= vaddr + len)
        .collect();
    funcs.sort_unstable();
    funcs.dedup_by_key(|f| f.0);
    if funcs.len() < 8 {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    Some(Lib {
        path: path.to_string_lossy().into_owned(),
        pgoff,
        vaddr,
        len,
        dev: meta.dev(),
        ino: meta.ino(),
        funcs,
    })
}

/// Shared objects with symbols, from `--lib` or this machine's usual ones.
fn libs(given: &[PathBuf]) -> Vec<Lib> {
    let defaults = [
        "libc.so.6",
        "libm.so.6",
        "libstdc++.so.6",
        "libz.so.1",
        "libzstd.so.1",
        "libcrypto.so.3",
        "libssl.so.3",
        "libpython3.11.so.1.0",
        "libsqlite3.so.0",
        "libxml2.so.2",
        "libglib-2.0.so.0",
        "libgcc_s.so.1",
        "liblzma.so.5",
        "libelf.so.1",
        "libdw.so.1",
        "libexpat.so.1",
        "libcurl.so.4",
    ];
    let paths: Vec<PathBuf> = if given.is_empty() {
        let dirs = [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/lib64",
        ];
        defaults
            .iter()
            .filter_map(|n| {
                dirs.iter()
                    .map(|d| Path::new(d).join(n))
                    .find(|p| p.exists())
            })
            .collect()
    } else {
        given.to_vec()
    };
    paths
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter_map(|p| load_lib(&p))
        .collect()
}

/// Fields every record carries with `sample_id_all` for this sample_type: pid/tid, time, cpu.
fn trailer(pid: u32, tid: u32, time: u64, cpu: u32) -> [u8; 24] {
    let mut t = [0u8; 24];
    t[0..4].copy_from_slice(&pid.to_ne_bytes());
    t[4..8].copy_from_slice(&tid.to_ne_bytes());
    t[8..16].copy_from_slice(&time.to_ne_bytes());
    t[16..20].copy_from_slice(&cpu.to_ne_bytes());
    t
}

fn comm_body(pid: u32, tid: u32, name: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&pid.to_ne_bytes());
    b.extend_from_slice(&tid.to_ne_bytes());
    b.extend_from_slice(name.as_bytes());
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

/// A process being recorded: its threads, where its libraries are, its call paths.
struct Proc {
    pid: u32,
    tids: Vec<u32>,
    /// Each call path, leaf first: return addresses (the leaf is the sampled ip).
    paths: Vec<Vec<u64>>,
}

struct Gen {
    w: PerfDataWriter,
    rng: Rng,
    time: u64,
    cpus: u32,
    next_pid: u32,
    rec: Vec<u8>,
}

impl Gen {
    fn emit(
        &mut self,
        type_: u32,
        misc: u16,
        body: &[u8],
        pid: u32,
        tid: u32,
    ) -> std::io::Result<()> {
        let cpu = tid % self.cpus;
        let r = record(type_, misc, body, &trailer(pid, tid, self.time, cpu));
        self.w.write_record(&[&r])
    }

    /// Start a process: fork from init, exec `name`, map every library at its own base,
    /// start its threads.
    fn spawn(
        &mut self,
        libs: &[Lib],
        threads: u32,
        paths: u32,
        name: &str,
    ) -> std::io::Result<Proc> {
        let pid = self.next_pid;
        self.next_pid += 1 + threads;
        let mut fork = Vec::new();
        for v in [pid, 1, pid, 1] {
            fork.extend_from_slice(&v.to_ne_bytes());
        }
        fork.extend_from_slice(&self.time.to_ne_bytes());
        self.emit(sys::PERF_RECORD_FORK, 0, &fork, pid, pid)?;
        self.emit(
            sys::PERF_RECORD_COMM,
            sys::PERF_RECORD_MISC_COMM_EXEC,
            &comm_body(pid, pid, name),
            pid,
            pid,
        )?;
        // Each process maps the libraries at its own (ASLR-like) bases.
        let mut bases = Vec::with_capacity(libs.len());
        let mut at = 0x7f00_0000_0000u64 + (self.rng.below(0x1000) << 24);
        for l in libs {
            let base = at;
            at += (l.vaddr + l.len).next_multiple_of(1 << 21) + (1 << 21);
            let mut b = Vec::new();
            for v in [pid, pid] {
                b.extend_from_slice(&v.to_ne_bytes());
            }
            for v in [base + l.vaddr, l.len, l.pgoff] {
                b.extend_from_slice(&v.to_ne_bytes());
            }
            b.extend_from_slice(&((l.dev >> 8) as u32 & 0xfff).to_ne_bytes());
            b.extend_from_slice(&(l.dev as u32 & 0xff).to_ne_bytes());
            b.extend_from_slice(&l.ino.to_ne_bytes());
            b.extend_from_slice(&0u64.to_ne_bytes());
            b.extend_from_slice(&5u32.to_ne_bytes()); // PROT_READ | PROT_EXEC
            b.extend_from_slice(&2u32.to_ne_bytes()); // MAP_PRIVATE
            b.extend_from_slice(l.path.as_bytes());
            b.push(0);
            b.resize(b.len().next_multiple_of(8), 0);
            self.emit(
                sys::PERF_RECORD_MMAP2,
                sys::PERF_RECORD_MISC_USER,
                &b,
                pid,
                pid,
            )?;
            bases.push(base);
        }
        let mut tids = vec![pid];
        for i in 1..threads {
            let tid = pid + i;
            let mut fork = Vec::new();
            for v in [pid, pid, tid, pid] {
                fork.extend_from_slice(&v.to_ne_bytes());
            }
            fork.extend_from_slice(&self.time.to_ne_bytes());
            self.emit(sys::PERF_RECORD_FORK, 0, &fork, pid, tid)?;
            if i % 2 == 0 {
                let n = format!("{name}-w{i}");
                self.emit(sys::PERF_RECORD_COMM, 0, &comm_body(pid, tid, &n), pid, tid)?;
            }
            tids.push(tid);
        }
        // Call paths: a shared trunk per process (main, a dispatcher) and branches.
        let ret_addr = |rng: &mut Rng, leaf: bool| {
            let li = rng.skewed(libs.len() as u64) as usize;
            let l = &libs[li];
            let (a, sz) = l.funcs[rng.skewed(l.funcs.len() as u64) as usize];
            let off = if leaf {
                rng.below(sz)
            } else {
                1 + rng.below(sz - 1)
            };
            bases[li] + a + off
        };
        let trunk: Vec<u64> = (0..4).map(|_| ret_addr(&mut self.rng, false)).collect();
        let mut all = Vec::with_capacity(paths as usize);
        for _ in 0..paths {
            let depth = 3 + self.rng.skewed(38) as usize;
            let mut p: Vec<u64> = (0..depth.saturating_sub(trunk.len()).max(1))
                .enumerate()
                .map(|(i, _)| ret_addr(&mut self.rng, i == 0))
                .collect();
            p.extend(trunk.iter().take(depth.saturating_sub(p.len())));
            all.push(p);
        }
        Ok(Proc {
            pid,
            tids,
            paths: all,
        })
    }

    fn sample(&mut self, p: &Proc) -> std::io::Result<()> {
        let tid = p.tids[self.rng.skewed(p.tids.len() as u64) as usize];
        let path = &p.paths[self.rng.skewed(p.paths.len() as u64) as usize];
        let cpu = tid % self.cpus;
        let b = &mut self.rec;
        b.clear();
        b.extend_from_slice(&path[0].to_ne_bytes());
        b.extend_from_slice(&p.pid.to_ne_bytes());
        b.extend_from_slice(&tid.to_ne_bytes());
        b.extend_from_slice(&self.time.to_ne_bytes());
        b.extend_from_slice(&cpu.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&250_000u64.to_ne_bytes());
        b.extend_from_slice(&(path.len() as u64 + 1).to_ne_bytes());
        b.extend_from_slice(&sys::PERF_CONTEXT_USER.to_ne_bytes());
        for a in path {
            b.extend_from_slice(&a.to_ne_bytes());
        }
        let r = record(sys::PERF_RECORD_SAMPLE, sys::PERF_RECORD_MISC_USER, b, &[]);
        self.w.saw_time(self.time);
        self.w.write_record(&[&r])
    }
}

/// Write the file `a` describes; the samples written.
pub fn run(a: Args) -> Result<u64, String> {
    let libs = libs(&a.libs);
    if libs.is_empty() {
        return Err("no shared object with symbols found: name some with --lib PATH".into());
    }
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_period: 4000,
        sample_type: sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME
            | sys::PERF_SAMPLE_CPU
            | sys::PERF_SAMPLE_PERIOD
            | sys::PERF_SAMPLE_CALLCHAIN,
        ..Default::default()
    };
    attr.set(sys::attr_flags::FREQ, true);
    for f in [
        sys::attr_flags::SAMPLE_ID_ALL,
        sys::attr_flags::MMAP,
        sys::attr_flags::COMM,
        sys::attr_flags::TASK,
        sys::attr_flags::MMAP2,
        sys::attr_flags::COMM_EXEC,
    ] {
        attr.set(f, true);
    }
    let events = vec![FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: Vec::new(),
    }];
    let w = PerfDataWriter::create(
        &a.out,
        events,
        WriteOptions {
            chunk: 1 << 20,
            compress: a.compress,
            ..WriteOptions::default()
        },
    )
    .map_err(|e| format!("cannot create {}: {e}", a.out.display()))?;
    let mut g = Gen {
        w,
        rng: Rng(a.seed.max(1) ^ 0x9e37_79b9_7f4a_7c15),
        time: 1_000_000_000,
        cpus: a.cpus,
        next_pid: 1000,
        rec: Vec::new(),
    };
    let io = |e: std::io::Error| format!("writing {}: {e}", a.out.display());
    let names = [
        "postgres", "java", "python3", "nginx", "node", "clang", "rustc", "redis",
    ];
    let mut procs = Vec::new();
    for i in 0..a.processes {
        let name = names[i as usize % names.len()];
        procs.push(g.spawn(&libs, a.threads, a.paths, name).map_err(io)?);
    }
    // Processes come and go: every `churn` samples one is replaced by a new one (its
    // side-band in the middle of the samples, as in a real system-wide recording).
    let churn = (a.samples / u64::from(a.processes * 4)).max(1);
    let mut n = 0u64;
    while match a.size {
        Some(size) => g.w.data_size() < size,
        None => n < a.samples,
    } {
        if n > 0 && n % churn == 0 {
            let slot = g.rng.below(procs.len() as u64) as usize;
            let name = names[g.rng.below(names.len() as u64) as usize];
            procs[slot] = g.spawn(&libs, a.threads, a.paths, name).map_err(io)?;
        }
        // One sample per CPU per tick: 4 kHz across `cpus` CPUs.
        if n % u64::from(a.cpus) == 0 {
            g.time += 250_000;
        }
        let p = g.rng.skewed(procs.len() as u64) as usize;
        g.sample(&procs[p]).map_err(io)?;
        if n % 20_000 == 19_999 {
            g.w.finish_round().map_err(io)?;
        }
        n += 1;
    }
    g.w.finish_round().map_err(io)?;
    let cmdline: Vec<String> = std::env::args().collect();
    g.w.finish(&cmdline).map_err(io)?;
    Ok(n)
}

fn main() {
    match parse_args().and_then(run) {
        Ok(n) => println!("gen-perf-data: {n} samples"),
        Err(e) => {
            eprintln!("gen-perf-data: {e}");
            std::process::exit(2);
        }
    }
}
