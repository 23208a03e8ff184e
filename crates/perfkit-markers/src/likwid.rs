//! LIKWID's marker API (`likwid.h`, used through `likwid-marker.h`'s `LIKWID_MARKER_*`
//! macros with `-DLIKWID_PERFMON`).

use crate::global::{flush, global, name, warn};
use std::ffi::{c_char, c_double, c_int};

/// `void likwid_markerInit(void)`: read the configuration; open the calling thread's
/// counters.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerInit() {
    if let Some(g) = global() {
        if let Err(e) = g.regions.thread_init() {
            warn("likwid_markerInit", "", &e);
        }
    }
}

/// `void likwid_markerThreadInit(void)`: open the calling thread's counters.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerThreadInit() {
    if let Some(g) = global() {
        if let Err(e) = g.regions.thread_init() {
            warn("likwid_markerThreadInit", "", &e);
        }
    }
}

/// `void likwid_markerNextGroup(void)`: the calling thread counts the next event set
/// (`PERFKIT_REGIONS_EVENTS` separates sets with `;`), as LIKWID switches groups.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerNextGroup() {
    if let Some(g) = global() {
        if let Err(e) = g.regions.next_set() {
            warn("likwid_markerNextGroup", "", &e);
        }
    }
}

/// `void likwid_markerClose(void)`: write the results.
#[unsafe(no_mangle)]
pub extern "C" fn likwid_markerClose() {
    flush();
}

fn call(
    what: &str,
    tag: *const c_char,
    f: impl FnOnce(&perfkit_regions::Regions, &str) -> Result<(), perfkit_regions::Error>,
) -> c_int {
    let Some(g) = global() else { return 0 };
    // SAFETY: LIKWID's API takes a NUL-terminated region tag; null is rejected.
    let Some(tag) = (unsafe { name(tag) }) else {
        return -libc::EINVAL;
    };
    match f(&g.regions, tag) {
        Ok(()) => 0,
        Err(e) => {
            warn(what, tag, &e);
            -libc::EFAULT
        }
    }
}

/// `int likwid_markerRegisterRegion(const char* regionTag)`.
///
/// # Safety
/// `regionTag` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn likwid_markerRegisterRegion(regionTag: *const c_char) -> c_int {
    call("likwid_markerRegisterRegion", regionTag, |r, t| {
        r.register(t)
    })
}

/// `int likwid_markerStartRegion(const char* regionTag)`.
///
/// # Safety
/// `regionTag` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn likwid_markerStartRegion(regionTag: *const c_char) -> c_int {
    call("likwid_markerStartRegion", regionTag, |r, t| r.start(t))
}

/// `int likwid_markerStopRegion(const char* regionTag)`.
///
/// # Safety
/// `regionTag` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn likwid_markerStopRegion(regionTag: *const c_char) -> c_int {
    call("likwid_markerStopRegion", regionTag, |r, t| r.stop(t))
}

/// `int likwid_markerResetRegion(const char* regionTag)`.
///
/// # Safety
/// `regionTag` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn likwid_markerResetRegion(regionTag: *const c_char) -> c_int {
    call("likwid_markerResetRegion", regionTag, |r, t| r.reset(t))
}

/// `void likwid_markerGetRegion(const char* regionTag, int* nr_events, double* events,
/// double* time, int* count)`: the calling thread's totals of `regionTag`. On entry
/// `*nr_events` is the length of `events`; on return, how many were written. `time` is in
/// seconds. An unknown region gives zero events, zero time, zero calls.
///
/// # Safety
/// `regionTag` is null or a NUL-terminated string; each pointer is null or valid for
/// writes (`events` for `*nr_events` doubles).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn likwid_markerGetRegion(
    regionTag: *const c_char,
    nr_events: *mut c_int,
    events: *mut c_double,
    time: *mut c_double,
    count: *mut c_int,
) {
    let got = global().and_then(|g| {
        // SAFETY: as promised by the caller.
        let tag = unsafe { name(regionTag) }?;
        g.regions.get(tag).ok().flatten()
    });
    let (vals, secs, calls): (Vec<f64>, f64, u64) = match &got {
        Some(r) => (
            r.counts.iter().map(|c| c.scaled().unwrap_or(0.0)).collect(),
            r.time_ns as f64 / 1e9,
            r.calls,
        ),
        None => (Vec::new(), 0.0, 0),
    };
    if !nr_events.is_null() {
        // SAFETY: nr_events is valid for reads and writes (caller's promise).
        let cap = usize::try_from(unsafe { *nr_events }).unwrap_or(0);
        let n = cap.min(vals.len());
        if !events.is_null() {
            for (i, v) in vals.iter().take(n).enumerate() {
                // SAFETY: i < *nr_events, the length of `events`.
                unsafe { *events.add(i) = *v };
            }
        }
        // SAFETY: as above.
        unsafe { *nr_events = n as c_int };
    }
    if !time.is_null() {
        // SAFETY: valid for a write (caller's promise).
        unsafe { *time = secs };
    }
    if !count.is_null() {
        // SAFETY: valid for a write (caller's promise).
        unsafe { *count = c_int::try_from(calls).unwrap_or(c_int::MAX) };
    }
}
