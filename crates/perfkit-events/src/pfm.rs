//! PMU-specific symbolic events through libpfm4, loaded at run time (`dlopen` of
//! `libpfm.so.4` with `libloading`): no build-time dependency, and machines without the
//! library simply have no libpfm4 events.
//!
//! libpfm4 reads `LIBPFM_FORCE_PMU` (e.g. `skl`) in `pfm_initialize()` to pretend the
//! machine has that PMU; we call `pfm_initialize()` once per loaded library, so the variable
//! must be set before the first lookup.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};

use perfkit_sys::perf_event_attr;

/// `PFM_OS_PERF_EVENT_EXT`: encode for perf_events with period/freq/precise attributes.
const PFM_OS_PERF_EVENT_EXT: c_int = 2;
/// `PFM_PLM0` (kernel) | `PFM_PLM3` (user): the default privilege levels.
const PFM_PLM0: c_int = 0x1;
const PFM_PLM3: c_int = 0x8;
const PFM_SUCCESS: c_int = 0;

/// `pfm_perf_encode_arg_t` (ABI 0: 40 bytes on LP64).
#[repr(C)]
struct EncodeArg {
    attr: *mut perf_event_attr,
    fstr: *mut *mut c_char,
    size: usize,
    idx: c_int,
    cpu: c_int,
    flags: c_int,
    pad0: c_int,
}

type InitFn = unsafe extern "C" fn() -> c_int;
type EncodeFn = unsafe extern "C" fn(*const c_char, c_int, c_int, *mut c_void) -> c_int;
type StrerrorFn = unsafe extern "C" fn(c_int) -> *const c_char;
type GetPmuInfoFn = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;
type GetEventInfoFn = unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int;
type GetEventNextFn = unsafe extern "C" fn(c_int) -> c_int;

/// A loaded, initialized libpfm4.
pub struct Pfm {
    // Keep the library mapped as long as the function pointers below live.
    _lib: libloading::Library,
    encode: EncodeFn,
    strerror: StrerrorFn,
    pmu_info: GetPmuInfoFn,
    event_info: GetEventInfoFn,
    event_next: GetEventNextFn,
}

impl std::fmt::Debug for Pfm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pfm(libpfm.so.4)")
    }
}

/// An encoding libpfm4 gave for an event string.
#[derive(Clone, Copy, Debug)]
pub struct PfmEncoding {
    /// The attr libpfm4 filled (type, config, config1, exclude_*, period...).
    pub attr: perf_event_attr,
}

/// A PMU as libpfm4 describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PfmPmu {
    /// libpfm4's short name (`core`, `skl`, `amd64_fam19h_zen4`).
    pub name: String,
    /// Its description (`Intel Core`).
    pub desc: String,
    /// Generic counters.
    pub generic: u32,
    /// Fixed counters.
    pub fixed: u32,
}

/// One libpfm4 event for `perfkit list`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PfmEvent {
    /// `pmu::event`
    pub name: String,
    /// libpfm4's description.
    pub desc: String,
}

fn sym<T: Copy>(lib: &libloading::Library, name: &[u8]) -> Result<T, String> {
    // SAFETY: the caller picks T to be the C signature of `name` as declared in libpfm4's
    // <perfmon/pfmlib.h>; the library outlives the copied pointer (kept in Pfm).
    unsafe { lib.get::<T>(name).map(|s| *s).map_err(|e| e.to_string()) }
}

impl Pfm {
    /// Load `libpfm.so.4` (or `path`) and call `pfm_initialize()`.
    pub fn load(path: Option<&std::path::Path>) -> Result<Pfm, String> {
        let name = path.map_or_else(
            || std::ffi::OsString::from("libpfm.so.4"),
            |p| p.as_os_str().to_owned(),
        );
        // SAFETY: loading libpfm4 runs its (trivial) ELF constructors; it has no
        // initialization side effects beyond its own state.
        let lib = unsafe { libloading::Library::new(&name) }.map_err(|e| e.to_string())?;
        let init: InitFn = sym(&lib, b"pfm_initialize\0")?;
        let encode: EncodeFn = sym(&lib, b"pfm_get_os_event_encoding\0")?;
        let strerror: StrerrorFn = sym(&lib, b"pfm_strerror\0")?;
        let pmu_info: GetPmuInfoFn = sym(&lib, b"pfm_get_pmu_info\0")?;
        let event_info: GetEventInfoFn = sym(&lib, b"pfm_get_event_info\0")?;
        let event_next: GetEventNextFn = sym(&lib, b"pfm_get_event_next\0")?;
        // SAFETY: pfm_initialize takes no arguments and may be called more than once.
        let r = unsafe { init() };
        if r != PFM_SUCCESS {
            return Err(format!("pfm_initialize failed ({r})"));
        }
        Ok(Pfm {
            _lib: lib,
            encode,
            strerror,
            pmu_info,
            event_info,
            event_next,
        })
    }

    fn error(&self, code: c_int) -> String {
        // SAFETY: pfm_strerror returns a pointer to a static NUL-terminated string (or NULL).
        let p = unsafe { (self.strerror)(code) };
        if p.is_null() {
            return format!("libpfm4 error {code}");
        }
        // SAFETY: non-null, static, NUL-terminated (see above).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// Encode `event` (libpfm4 syntax: `[pmu::]event[:umask][:mod=val]...`) with
    /// `pfm_get_os_event_encoding(.., PFM_PLM0|PFM_PLM3, PFM_OS_PERF_EVENT_EXT, ..)`.
    pub fn encode(&self, event: &str) -> Result<PfmEncoding, String> {
        let c = CString::new(event).map_err(|_| "event name contains a NUL byte".to_string())?;
        let mut attr = perf_event_attr::new();
        let mut arg = EncodeArg {
            attr: &mut attr,
            fstr: std::ptr::null_mut(),
            size: std::mem::size_of::<EncodeArg>(),
            idx: 0,
            cpu: -1,
            flags: 0,
            pad0: 0,
        };
        // SAFETY: c is a valid C string; arg is a valid pfm_perf_encode_arg_t whose attr
        // points to a writable perf_event_attr of attr.size (136) bytes; libpfm copies at
        // most min(its own sizeof, attr.size) bytes into it; fstr is NULL (not requested).
        let r = unsafe {
            (self.encode)(
                c.as_ptr(),
                PFM_PLM0 | PFM_PLM3,
                PFM_OS_PERF_EVENT_EXT,
                (&mut arg as *mut EncodeArg).cast(),
            )
        };
        if r != PFM_SUCCESS {
            return Err(self.error(r));
        }
        attr.size = perfkit_sys::PERF_ATTR_SIZE_VER8;
        Ok(PfmEncoding { attr })
    }

    /// Every PMU libpfm4 considers present (detected, or forced with `LIBPFM_FORCE_PMU`)
    /// with its counters, leaving out its `perf` and `perf_raw` pseudo-PMUs.
    pub fn pmus(&self) -> Vec<PfmPmu> {
        let mut out = Vec::new();
        for pmu in 0..1024 {
            let mut info = [0u64; 16];
            // SAFETY: info is a zeroed, writable buffer larger than pfm_pmu_info_t; size 0
            // selects the smallest (ABI 0) layout.
            let r = unsafe { (self.pmu_info)(pmu, info.as_mut_ptr().cast()) };
            if r != PFM_SUCCESS {
                continue;
            }
            // After name, desc, size: pmu, type, nevents, first_event, max_encoding,
            // num_cntrs, num_fixed_cntrs, flags (bit 0 = is_present).
            let w = |i: usize| -> u32 { (info[3 + i / 2] >> (32 * (i % 2))) as u32 };
            if w(7) & 1 == 0 {
                continue;
            }
            // SAFETY: name and desc are static C strings owned by libpfm4 (or NULL).
            let (name, desc) = unsafe {
                (
                    cstr(info[0] as *const c_char),
                    cstr(info[1] as *const c_char),
                )
            };
            if name == "perf" || name == "perf_raw" {
                continue;
            }
            out.push(PfmPmu {
                name,
                desc,
                generic: w(5),
                fixed: w(6),
            });
        }
        out
    }

    /// The events of every PMU libpfm4 considers present (detected or forced).
    pub fn events(&self) -> Vec<PfmEvent> {
        let mut out = Vec::new();
        // pfm_pmu_info_t: name, desc (pointers), size, pmu, type, nevents, first_event,
        // max_encoding, num_cntrs, num_fixed_cntrs, flags (bit 0 = is_present).
        // Passing size 0 asks for the ABI-0 layout; the buffer is larger than it.
        for pmu in 0..1024 {
            let mut info = [0u64; 16];
            // SAFETY: info is a zeroed, writable buffer larger than pfm_pmu_info_t; size 0
            // selects the smallest (ABI 0) layout.
            let r = unsafe { (self.pmu_info)(pmu, info.as_mut_ptr().cast()) };
            if r != PFM_SUCCESS {
                continue;
            }
            let words32 = |i: usize| -> u32 {
                let w = info[3 + i / 2];
                if i % 2 == 0 {
                    w as u32
                } else {
                    (w >> 32) as u32
                }
            };
            // After the 24 bytes of name/desc/size: pmu, type, nevents, first_event,
            // max_encoding, num_cntrs, num_fixed_cntrs, flags.
            let first_event = words32(3) as c_int;
            let flags = words32(7);
            if flags & 1 == 0 {
                continue;
            }
            // SAFETY: name is a static C string owned by libpfm4 (or NULL).
            let pmu_name = unsafe { cstr(info[0] as *const c_char) };
            let mut idx = first_event;
            let mut guard = 0;
            while idx >= 0 && guard < 100_000 {
                guard += 1;
                let mut ev = [0u64; 16];
                // SAFETY: ev is zeroed and larger than pfm_event_info_t; size 0 = ABI 0.
                let r = unsafe {
                    (self.event_info)(idx, PFM_OS_PERF_EVENT_EXT, ev.as_mut_ptr().cast())
                };
                if r == PFM_SUCCESS {
                    // SAFETY: name and desc are static C strings owned by libpfm4.
                    let (name, desc) =
                        unsafe { (cstr(ev[0] as *const c_char), cstr(ev[1] as *const c_char)) };
                    out.push(PfmEvent {
                        name: format!("{pmu_name}::{name}"),
                        desc,
                    });
                }
                // SAFETY: plain integer argument.
                idx = unsafe { (self.event_next)(idx) };
            }
        }
        out
    }
}

/// # Safety
/// `p` must be NULL or point to a NUL-terminated string that lives for the call.
unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
