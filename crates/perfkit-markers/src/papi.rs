//! PAPI's high-level API (`papi.h`): regions begin and end by name; results are written
//! at exit, as PAPI writes its report.

use crate::global::{global, name, warn};
use std::cell::Cell;
use std::ffi::{c_char, c_int};

const PAPI_OK: c_int = 0;
const PAPI_EINVAL: c_int = -1;
const PAPI_ENOEVNT: c_int = -7;
const PAPI_EMISC: c_int = -14;

thread_local! {
    /// Whether this thread has begun a region (for `PAPI_hl_stop`'s `PAPI_ENOEVNT`).
    static STARTED: Cell<bool> = const { Cell::new(false) };
}

fn call(
    what: &str,
    region: *const c_char,
    f: impl FnOnce(&perfkit_regions::Regions, &str) -> Result<(), perfkit_regions::Error>,
) -> c_int {
    // SAFETY: PAPI's API takes a NUL-terminated region name; null is rejected.
    let Some(region) = (unsafe { name(region) }) else {
        return PAPI_EINVAL;
    };
    let Some(g) = global() else { return PAPI_OK };
    match f(&g.regions, region) {
        Ok(()) => PAPI_OK,
        Err(e) => {
            warn(what, region, &e);
            PAPI_EMISC
        }
    }
}

/// `int PAPI_hl_region_begin(const char* region)`.
///
/// # Safety
/// `region` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_hl_region_begin(region: *const c_char) -> c_int {
    STARTED.set(true);
    call("PAPI_hl_region_begin", region, |r, n| r.start(n))
}

/// `int PAPI_hl_read(const char* region)`: add what the open region counted so far to its
/// totals and go on from here (no call completes).
///
/// # Safety
/// `region` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_hl_read(region: *const c_char) -> c_int {
    call("PAPI_hl_read", region, |r, n| r.checkpoint(n))
}

/// `int PAPI_hl_region_end(const char* region)`.
///
/// # Safety
/// `region` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PAPI_hl_region_end(region: *const c_char) -> c_int {
    call("PAPI_hl_region_end", region, |r, n| r.stop(n))
}

/// `int PAPI_hl_stop()`: PAPI stops the thread's event set; the counters here cost
/// nothing between regions, so this only reports `PAPI_ENOEVNT` when the thread never
/// began a region.
#[unsafe(no_mangle)]
pub extern "C" fn PAPI_hl_stop() -> c_int {
    if STARTED.get() { PAPI_OK } else { PAPI_ENOEVNT }
}
