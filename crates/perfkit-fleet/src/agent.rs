//! [`Agent`]: continuous whole-system profiling, one pprof profile per window.
//!
//! The agent opens one sampling event (cpu-clock at 19 Hz by default: a prime rate, so
//! sampling does not beat with periodic work) on every CPU with frame-pointer call chains,
//! through the engine's open path, and drains the rings with the engine's
//! [`Recorder`]. Each window is written by the recorder as a small perf.data file (with the
//! side-band records a file starts with, so the window stands alone), loaded into
//! `perfkit-report`'s profile model, exported with its pprof export, and labelled for the
//! fleet ([`crate::labels`]). The rings keep running between windows: a sample that
//! arrives while a window is being converted goes into the next one.
//!
//! Cost: the rings are drained when the kernel wakes the agent or once a second; the
//! conversion runs once per window, on its own thread. Kernel symbols are loaded once;
//! user-space frames are named through [`SymbolCache`] (files known by device, inode and
//! build id, names memoized across windows, symbol tables loaded when an address needs
//! them and dropped when idle or over a bound).

use crate::labels::{self, Labeller};
use crate::symcache::SymbolCache;
use perfkit_data::{PerfDataWriter, WriteOptions};
use perfkit_engine::sampling::{CallGraph, Sampling, SamplingOptions, sampling_attrs};
use perfkit_engine::{OpenOptions, Place, Poll, Recorder};
use perfkit_report::export::pprof;
use prost::Message;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How the agent samples.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    /// The sampling event (perf's syntax).
    pub event: String,
    /// Samples per second per CPU.
    pub frequency: u64,
    /// One profile per this much time.
    pub window: Duration,
    /// CPUs, as a list (`0-3,8`; None: every online CPU).
    pub cpus: Option<String>,
    /// How call chains are taken.
    pub call_graph: CallGraph,
    /// Name functions on this host; else leave user-space frames as addresses in
    /// mappings with build ids, for the profile store to symbolize.
    pub symbolize: bool,
    /// The `host` label.
    pub host: String,
    /// Where each window's perf.data is written while it is converted.
    pub scratch_dir: PathBuf,
    /// Data pages of each CPU's ring (a power of two).
    pub pages: usize,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            event: "cpu-clock".into(),
            frequency: 19,
            window: Duration::from_secs(10),
            cpus: None,
            call_graph: CallGraph::Fp,
            symbolize: true,
            host: crate::hostname(),
            scratch_dir: std::env::temp_dir(),
            pages: 64,
        }
    }
}

/// One window's profile.
#[derive(Clone, Debug)]
pub struct WindowProfile {
    /// When the window began.
    pub start: SystemTime,
    /// When it ended.
    pub end: SystemTime,
    /// The gzipped pprof `Profile`.
    pub gz: Vec<u8>,
    /// Samples in it.
    pub samples: u64,
    /// Samples the kernel lost in this window.
    pub lost: u64,
}

impl WindowProfile {
    /// Seconds since the epoch at the window's start and end (Pyroscope's from/until).
    pub fn unix_secs(&self) -> (u64, u64) {
        let s = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        (s(self.start), s(self.end).max(s(self.start) + 1))
    }
}

/// Why the agent stopped or could not go on.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentError {
    /// Opening, recording.
    Engine(perfkit_engine::Error),
    /// Writing or reading a window's file.
    Io(std::io::Error),
    /// Loading a window back.
    Load(perfkit_report::LoadError),
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentError::Engine(_) => f.write_str("recording failed"),
            AgentError::Io(_) => f.write_str("writing a window's file failed"),
            AgentError::Load(_) => f.write_str("reading a window back failed"),
        }
    }
}

impl std::error::Error for AgentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AgentError::Engine(e) => Some(e),
            AgentError::Io(e) => Some(e),
            AgentError::Load(e) => Some(e),
        }
    }
}

impl From<perfkit_engine::Error> for AgentError {
    fn from(e: perfkit_engine::Error) -> Self {
        AgentError::Engine(e)
    }
}
impl From<std::io::Error> for AgentError {
    fn from(e: std::io::Error) -> Self {
        AgentError::Io(e)
    }
}

/// Continuous profiling of the whole system.
pub struct Agent {
    rec: Recorder,
    opts: AgentOptions,
    lost_before: u64,
    /// Names this agent's scratch files: the process id and the agent's number in the
    /// process, so two agents of one process never share (or delete) each other's files.
    tag: String,
}

/// Agents made so far in this process.
static AGENTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A recorded window waiting to be converted.
struct Recorded {
    path: PathBuf,
    start: SystemTime,
    end: SystemTime,
    lost: u64,
}

impl Agent {
    /// Open the sampling event on every CPU and start sampling.
    pub fn new(opts: AgentOptions) -> Result<Agent, AgentError> {
        let mut specs = perfkit_engine::parse(std::slice::from_ref(&opts.event))?;
        sampling_attrs(
            &mut specs,
            &SamplingOptions {
                sampling: Sampling::Freq(opts.frequency),
                call_graph: opts.call_graph,
                sample_cpu: true,
                ..SamplingOptions::default()
            },
        );
        let cpus = perfkit_engine::cpus(opts.cpus.as_deref())?;
        let places: Vec<Place> = cpus.iter().map(|&c| Place::cpu(c)).collect();
        let opened = perfkit_engine::open(
            &specs,
            &places,
            &OpenOptions {
                cycles_fallback: true,
                ..OpenOptions::default()
            },
        )
        .require_all()?;
        let rec = Recorder::new(opened, opts.pages)?;
        rec.enable()?;
        std::fs::create_dir_all(&opts.scratch_dir)?;
        let n = AGENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Agent {
            rec,
            opts,
            lost_before: 0,
            tag: format!("{}-{n}", std::process::id()),
        })
    }

    /// A handle that ends the current window early (from a signal thread); the agent then
    /// converts and delivers that last window and [`run`](Self::run) returns.
    pub fn stopper(&self) -> perfkit::Stopper {
        self.rec.stopper()
    }

    /// Record windows until stopped (or `deliver` returns `Ok(false)`), handing each
    /// window's profile to `deliver`. Windows are converted on a second thread while the
    /// next one records, so the rings are drained on time whatever a conversion costs.
    pub fn run(
        &mut self,
        deliver: impl FnMut(WindowProfile) -> Result<bool, AgentError> + Send,
    ) -> Result<(), AgentError> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Recorded>(2);
        let stopper = self.rec.stopper();
        let host = self.opts.host.clone();
        let symbolize = self.opts.symbolize;
        let symfs = self
            .opts
            .scratch_dir
            .join(format!("perfkit-agent-{}-symfs", self.tag));
        let mut symbols = Symbols {
            kernel: None,
            load: crate::symcache::kernel_only(&symfs)?,
            user: SymbolCache::default(),
        };
        let result = std::thread::scope(|scope| {
            let converter = scope.spawn(move || {
                let mut deliver = deliver;
                let mut labeller = Labeller::new(&host);
                for r in rx {
                    let converted = convert(&r, &mut labeller, &mut symbols, symbolize);
                    let _ = std::fs::remove_file(&r.path);
                    let keep_going = converted.and_then(&mut deliver);
                    match keep_going {
                        Ok(true) => {}
                        Ok(false) => {
                            stopper.stop();
                            return Ok(());
                        }
                        Err(e) => {
                            stopper.stop();
                            return Err(e);
                        }
                    }
                }
                Ok(())
            });
            let recorded = self.record_windows(&tx);
            drop(tx);
            let converted = converter.join().unwrap_or_else(|_| {
                Err(AgentError::Io(std::io::Error::other(
                    "the converter thread panicked",
                )))
            });
            recorded.and(converted)
        });
        let _ = std::fs::remove_dir_all(&symfs);
        result
    }

    /// Record windows into scratch files and send them to the converter.
    fn record_windows(
        &mut self,
        tx: &std::sync::mpsc::SyncSender<Recorded>,
    ) -> Result<(), AgentError> {
        // Windows are contiguous: each starts where the last ended, and the samples that
        // came in between (while the last was handed over) are in the rings for this one.
        let (mut start, mut t0) = (SystemTime::now(), Instant::now());
        let kernel = self.rec.kernel_maps();
        for n in 0u64.. {
            // Two converting and one recording at most: three names in turn.
            let path =
                self.opts
                    .scratch_dir
                    .join(format!("perfkit-agent-{}-{}.data", self.tag, n % 4));
            let mut w =
                PerfDataWriter::create(&path, self.rec.file_events(), WriteOptions::default())?;
            let pids = perfkit_engine::sideband::all_pids();
            match &kernel {
                Some(k) => self.rec.write_preamble_with(&mut w, k, &pids)?,
                None => self.rec.write_preamble(&mut w, &pids)?,
            }
            let stopped = loop {
                let left = self.opts.window.saturating_sub(t0.elapsed());
                if left.is_zero() {
                    break false;
                }
                if self.rec.poll(&mut w, left.min(Duration::from_secs(1)))? == Poll::Stopped {
                    break true;
                }
            };
            self.rec.drain(&mut w)?;
            let (end, t_end) = (SystemTime::now(), Instant::now());
            w.finish(&[])?;
            let lost = self.rec.stats().lost;
            let r = Recorded {
                path,
                start,
                end,
                lost: lost - self.lost_before,
            };
            self.lost_before = lost;
            if tx.send(r).is_err() || stopped {
                break;
            }
            (start, t0) = (end, t_end);
        }
        Ok(())
    }
}

/// What is kept from window to window for naming frames: the loader's symbolizer (kernel
/// symbols only, loaded once) and the user-space [`SymbolCache`].
struct Symbols {
    kernel: Option<perfkit_symbols::Symbolizer>,
    load: perfkit_report::LoadOptions,
    user: SymbolCache,
}

/// One recorded window into a labelled, gzipped pprof profile.
fn convert(
    r: &Recorded,
    labeller: &mut Labeller,
    symbols: &mut Symbols,
    symbolize: bool,
) -> Result<WindowProfile, AgentError> {
    let file = perfkit_report::load::open(&r.path).map_err(AgentError::Load)?;
    let (mut profile, _diag, symbolizer) =
        perfkit_report::load::load_reusing(&file, &symbols.load, symbols.kernel.take())
            .map_err(AgentError::Load)?;
    symbols.kernel = Some(symbolizer);
    if symbolize {
        symbols.user.name_frames(&mut profile);
    } else {
        symbols.user.next_window();
    }
    let mut msg = pprof::build(&profile);
    labeller.label(&mut msg, &profile);
    if !symbolize {
        labels::unsymbolize(&mut msg, &profile, &mut symbols.user);
    }
    msg.time_nanos = r
        .start
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    msg.duration_nanos = r
        .end
        .duration_since(r.start)
        .map_or(0, |d| d.as_nanos() as i64);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&msg.encode_to_vec())?;
    Ok(WindowProfile {
        start: r.start,
        end: r.end,
        gz: gz.finish()?,
        samples: profile.samples.len() as u64,
        lost: r.lost,
    })
}
