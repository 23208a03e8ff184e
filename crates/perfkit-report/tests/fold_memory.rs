//! A folded profile (what `report` loads) and a streamed load (what `script` reads) keep
//! memory flat as the file doubles: the heap the load leaves live grows with the distinct
//! stacks and threads, not the samples.
//! Measured with an allocation counter (bytes live at the end of a load, and the peak
//! during it) on generated files of N and 2N samples with the same processes, threads and
//! call paths; the unfolded profile of the same files is measured beside it, to show
//! that the counter sees per-sample memory where there is some.

use perfkit_report::fold::Aggregation;
use perfkit_report::load::{LoadOptions, load_reusing, open};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[allow(dead_code)] // the example's `main` and argument parsing are not used here
#[path = "../examples/gen-perf-data.rs"]
mod generator;

/// Counts the bytes allocated and not yet freed, and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the counters only add
// and subtract the sizes it was asked for.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is the system allocator's.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: as above.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One measurement at a time: the counters are the process's.
static SERIAL: Mutex<()> = Mutex::new(());

/// (bytes live with the profile held, peak during the load above the start, samples kept,
/// samples counted) of loading `file`.
fn measure(file: &Path, fold: bool) -> (usize, usize, usize, u64) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut opts = LoadOptions::default();
    // No kernel frames in these files: no kallsyms read beside the records, whose
    // buffers would come and go at times that differ from run to run.
    opts.kallsyms = Some(file.with_extension("no-kallsyms"));
    if fold {
        opts.aggregate = Some(Aggregation::new(false));
    }
    let start = LIVE.load(Ordering::Relaxed);
    PEAK.store(start, Ordering::Relaxed);
    // On this thread alone: the batches in flight between two threads come and go at
    // times that differ from run to run.
    let data = open(file).expect("open the generated file");
    let (profile, _, symbolizer) = load_reusing(&data, &opts, None).expect("load the file");
    drop((data, symbolizer));
    let live = LIVE.load(Ordering::Relaxed).saturating_sub(start);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(start);
    let counted = profile.samples.iter().map(|s| u64::from(s.count)).sum();
    let kept = profile.samples.len();
    drop(profile);
    (live, peak, kept, counted)
}

#[test]
fn a_folded_profile_stays_flat_as_the_file_doubles() {
    let dir = tempfile::tempdir().expect("temporary directory");
    const N: u64 = 60_000;
    let mut files = Vec::new();
    for n in [N, 2 * N] {
        let path = dir.path().join(format!("gen-{n}.data"));
        let mut a = generator::Args::new(n, path.clone());
        // Few processes, threads and paths: every (thread, stack) recurs in N samples.
        a.processes = 4;
        a.threads = 2;
        a.paths = 20;
        a.cpus = 4;
        if let Err(e) = generator::run(a) {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("the generator needs shared objects with symbols: {e}");
            }
            eprintln!("skipped: {e}");
            return;
        }
        files.push(path);
    }
    let folded: Vec<_> = files.iter().map(|f| measure(f, true)).collect();
    let unfolded: Vec<_> = files.iter().map(|f| measure(f, false)).collect();
    eprintln!("folded (live, peak, kept, counted): {folded:?}");
    eprintln!("unfolded (live, peak, kept, counted): {unfolded:?}");
    // Every sample is counted, each once.
    assert_eq!((folded[0].3, folded[1].3), (N, 2 * N));
    assert_eq!((unfolded[0].2, unfolded[1].2), (N as usize, 2 * N as usize));
    // The unfolded profile holds each sample: the counter sees it grow by at least a
    // sample's size for each sample added.
    let size = std::mem::size_of::<perfkit_report::Sample>();
    let grown = |m: &[(usize, usize, usize, u64)], f: fn(&(usize, usize, usize, u64)) -> usize| {
        f(&m[1]).saturating_sub(f(&m[0]))
    };
    assert!(
        grown(&unfolded, |m| m.0) >= size * N as usize,
        "unfolded: {unfolded:?}"
    );
    // Folded: about the same groups (their number only grows by the rarer pairs not met
    // in the first N samples), and the memory grows by less than a tenth of that.
    assert!(
        folded[1].2 * 4 <= folded[0].2 * 5,
        "groups of 2N samples against N: {folded:?}"
    );
    assert!(folded[0].2 * 20 <= N as usize, "{folded:?}");
    assert!(
        grown(&folded, |m| m.0) * 10 <= grown(&unfolded, |m| m.0),
        "live bytes: folded {folded:?}, unfolded {unfolded:?}"
    );
    assert!(
        grown(&folded, |m| m.1) * 10 <= size * N as usize,
        "peak bytes: folded {folded:?}, unfolded {unfolded:?}"
    );
    streamed_stays_flat(&files, N as usize);
}

/// (bytes live after a streamed load, peak during it above the start, samples handed out,
/// samples kept) of streaming `file`, as `script` reads it.
fn measure_streamed(file: &Path) -> (usize, usize, usize, usize) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut opts = LoadOptions::default();
    opts.kallsyms = Some(file.with_extension("no-kallsyms"));
    // One thread: batches in flight come and go at times that differ from run to run.
    opts.threads = Some(1);
    let data = open(file).expect("open the generated file");
    let start = LIVE.load(Ordering::Relaxed);
    PEAK.store(start, Ordering::Relaxed);
    let mut given = 0;
    let (profile, _) = perfkit_report::load::stream(
        &data,
        &opts,
        &mut |_, samples| given += samples.len(),
        |_, _| {},
    )
    .expect("stream the file");
    let live = LIVE.load(Ordering::Relaxed).saturating_sub(start);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(start);
    let kept = profile.samples.len();
    drop((profile, data));
    (live, peak, given, kept)
}

/// The streamed load (what `script` reads) of the same files: every sample handed out
/// once, none kept, and memory that does not grow with them (`unfolded`: the whole
/// profile's measurements, for the per-sample size the counter sees there).
fn streamed_stays_flat(files: &[std::path::PathBuf], n: usize) {
    let streamed: Vec<_> = files.iter().map(|f| measure_streamed(f)).collect();
    eprintln!("streamed (live, peak, given, kept): {streamed:?}");
    assert_eq!((streamed[0].2, streamed[1].2), (n, 2 * n));
    assert_eq!((streamed[0].3, streamed[1].3), (0, 0));
    // Growth by less than a tenth of a sample's size per sample added (the few paths
    // not met in the first N samples).
    let size = std::mem::size_of::<perfkit_report::Sample>();
    let grown = |f: fn(&(usize, usize, usize, usize)) -> usize| {
        f(&streamed[1]).saturating_sub(f(&streamed[0]))
    };
    assert!(grown(|m| m.1) * 10 <= size * n, "peak bytes: {streamed:?}");
    assert!(grown(|m| m.0) * 10 <= size * n, "live bytes: {streamed:?}");
}

/// (peak bytes during the load above the start, samples handed out, details met) of
/// streaming `file` with each sample's own fields as `script -F addr,...` reads it: the
/// details wait by number ([`ByNumber`]) until their sample is written, and `python`
/// (a `script -s` session) gets each sample as it comes.
fn measure_details(file: &Path, python: Option<&Path>) -> (usize, usize, usize) {
    use perfkit_report::script_events::{self, ByNumber, Extras, StreamTo, Want};
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut opts = LoadOptions::default();
    opts.kallsyms = Some(file.with_extension("no-kallsyms"));
    let data = open(file).expect("open the generated file");
    let header = Extras::for_file(&data);
    let mut session = python
        .map(|py| perfkit_report::script_python::Session::start(py, &[]).expect("start python3"));
    let mut want = Want::none();
    want.details = true;
    let start = LIVE.load(Ordering::Relaxed);
    PEAK.store(start, Ordering::Relaxed);
    let details = std::cell::RefCell::new(ByNumber::default());
    let (mut given, mut met) = (0, 0);
    let mut sink = |p: &perfkit_report::Profile, samples: &[perfkit_report::Sample]| {
        let mut details = details.borrow_mut();
        for s in samples {
            let d = details.at(given);
            met += usize::from(d.is_some());
            if let Some(py) = &mut session {
                py.sample(p, &header, s, d);
            }
            given += 1;
        }
    };
    let (profile, _, _) = script_events::stream(
        &data,
        &opts,
        want,
        StreamTo {
            side: &mut |_| {},
            comm: &mut |_, _| {},
            detail: &mut |i, d| details.borrow_mut().push(i, d),
        },
        &mut sink,
    )
    .expect("stream the file");
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(start);
    if let Some(py) = session {
        assert!(py.finish(&profile).expect("python3 ran").success());
    }
    (peak, given, met)
}

/// `script` with per-sample fields (`-F addr,iregs,...`) and `script -s FILE.py` stream:
/// every sample handed out once with its details, and the peak memory flat as the file
/// doubles, where keeping the details (`PERFKIT_SCRIPT_KEEP=1`'s load) grows by at least
/// a detail per sample.
#[test]
fn streamed_details_and_python_stay_flat_as_the_file_doubles() {
    use perfkit_report::script_events::{SampleDetail, Want, load};
    let dir = tempfile::tempdir().expect("temporary directory");
    const N: u64 = 40_000;
    let mut files = Vec::new();
    for n in [N, 2 * N] {
        let path = dir.path().join(format!("gen-{n}.data"));
        let mut a = generator::Args::new(n, path.clone());
        a.processes = 4;
        a.threads = 2;
        a.paths = 20;
        a.cpus = 4;
        if let Err(e) = generator::run(a) {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("the generator needs shared objects with symbols: {e}");
            }
            eprintln!("skipped: {e}");
            return;
        }
        files.push(path);
    }
    let n = N as usize;
    // The kept load: a detail per sample.
    let mut kept = Vec::new();
    for f in &files {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut opts = LoadOptions::default();
        opts.kallsyms = Some(f.with_extension("no-kallsyms"));
        let mut want = Want::none();
        want.details = true;
        let data = open(f).expect("open the generated file");
        let start = LIVE.load(Ordering::Relaxed);
        let (p, _, extras) = load(&data, &opts, want).expect("load the file");
        assert_eq!(extras.details.len(), p.samples.len());
        kept.push(LIVE.load(Ordering::Relaxed).saturating_sub(start));
    }
    let per_sample =
        std::mem::size_of::<SampleDetail>() + std::mem::size_of::<perfkit_report::Sample>();
    assert!(
        kept[1].saturating_sub(kept[0]) >= per_sample * n,
        "kept: {kept:?}"
    );
    let streamed: Vec<_> = files.iter().map(|f| measure_details(f, None)).collect();
    eprintln!("details streamed (peak, given, met): {streamed:?}; kept live {kept:?}");
    assert_eq!((streamed[0].1, streamed[1].1), (n, 2 * n));
    assert_eq!((streamed[0].2, streamed[1].2), (n, 2 * n));
    assert!(
        streamed[1].0.saturating_sub(streamed[0].0) * 10 <= per_sample * n,
        "peak bytes: {streamed:?}"
    );
    if !perfkit_report::script_python::available() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("python3 is not installed (script -s needs it)");
        }
        return eprintln!("skipped the Python part: no python3");
    }
    let py = dir.path().join("count.py");
    std::fs::write(
        &py,
        "n = 0\ndef process_event(d):\n    global n\n    n += 1\n",
    )
    .expect("write the script");
    let fed: Vec<_> = files
        .iter()
        .map(|f| measure_details(f, Some(&py)))
        .collect();
    eprintln!("python streamed (peak, given, met): {fed:?}");
    assert_eq!((fed[0].1, fed[1].1), (n, 2 * n));
    assert!(
        fed[1].0.saturating_sub(fed[0].0) * 10 <= per_sample * n,
        "peak bytes with python: {fed:?}"
    );
}
