//! The process's regions, configured from the environment on first use.

use perfkit_regions::Regions;
use perfkit_regions::launch::{ENV_EVENTS, ENV_OUTPUT, append_report};
use std::ffi::{CStr, c_char};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

pub(crate) struct Global {
    pub regions: Regions,
    output: Option<PathBuf>,
    pid: u32,
    written: AtomicBool,
}

static STATE: OnceLock<Option<Global>> = OnceLock::new();

extern "C" fn at_exit() {
    flush();
}

/// The regions, or `None` when the environment names no events (or bad ones: said once
/// on standard error).
pub(crate) fn global() -> Option<&'static Global> {
    STATE
        .get_or_init(|| {
            let events = std::env::var(ENV_EVENTS).ok()?;
            let regions = match Regions::new(&events) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("perfkit-markers: {ENV_EVENTS}={events}: {}", chain(&e));
                    return None;
                }
            };
            // SAFETY: at_exit is an extern "C" fn with no arguments, valid for the
            // life of the process (this library is never unloaded once initialised:
            // see the RTLD_NODELETE note in the README).
            unsafe { libc::atexit(at_exit) };
            Some(Global {
                regions,
                output: std::env::var_os(ENV_OUTPUT).map(PathBuf::from),
                pid: std::process::id(),
                written: AtomicBool::new(false),
            })
        })
        .as_ref()
}

/// An error and its causes on one line.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Write this process's results to `PERFKIT_REGIONS_OUTPUT` (once; a forked child that
/// inherited the state writes nothing).
pub fn flush() {
    let Some(g) = STATE.get().and_then(Option::as_ref) else {
        return;
    };
    if g.pid != std::process::id() || g.written.swap(true, Ordering::SeqCst) {
        return;
    }
    let Some(out) = &g.output else { return };
    if let Err(e) = append_report(out, &g.regions.report()) {
        eprintln!("perfkit-markers: writing {}: {e}", out.display());
    }
}

/// A region name from C: `None` for a null pointer or a name that is not UTF-8.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string valid for this call.
pub(crate) unsafe fn name<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// Warnings printed so far (at most [`MAX_WARNINGS`] per process).
static WARNINGS: AtomicU32 = AtomicU32::new(0);
const MAX_WARNINGS: u32 = 10;

/// Report a failed marker call on standard error (LIKWID and PAPI print such warnings),
/// the first ten per process, so a loop of failing calls does not flood the terminal.
pub(crate) fn warn(call: &str, region: &str, e: &perfkit_regions::Error) {
    let n = WARNINGS.fetch_add(1, Ordering::Relaxed);
    if n < MAX_WARNINGS {
        eprintln!("perfkit-markers: {call}({region:?}): {}", chain(e));
    }
    if n + 1 == MAX_WARNINGS {
        eprintln!("perfkit-markers: further warnings of this process are not shown");
    }
}
