//! The names cpp_demangle cannot parse at all, demangled by binutils' `c++filt` where it
//! is installed.
//!
//! cpp_demangle 0.5.1 (the newest release) refuses a few manglings GCC writes, the
//! common one an `enable_if<...>::type` return type whose condition is an unresolved name
//! written without `N...E` (`Xsr St6__and_ I...E 5value E`, from `std::swap<long>`).
//! perf 6.1 demangles with libiberty, which takes them; `c++filt` is libiberty's
//! command-line front end (binutils, which perf's own annotate needs too), so asking it
//! gives perf's exact spelling (`-i`: no `DMGL_VERBOSE`, as perf; `-p`: no parameters).
//! Only names cpp_demangle refused come here; each answer is cached for the process, at
//! most [`MAX_ASKED`] names are asked about (a process each, about a millisecond), and
//! without `c++filt` the caller keeps its own best effort (the name alone).

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// How many names one process asks c++filt about, so that a binary full of names
/// cpp_demangle refuses costs at most a fraction of a second.
pub(crate) const MAX_ASKED: usize = 512;

/// Answers so far, by (name, with parameters).
type Answers = HashMap<(String, bool), Option<String>>;

/// `c++filt -i [-p] NAME`'s answer for `name` (`params`: with parameters), or `None` when
/// c++filt is missing or leaves the name as it is.
pub(crate) fn cxxfilt(name: &str, params: bool) -> Option<String> {
    static CACHE: OnceLock<Mutex<Answers>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (name.to_string(), params);
    {
        let c = cache.lock().ok()?;
        if let Some(hit) = c.get(&key) {
            return hit.clone();
        }
        if c.len() >= MAX_ASKED {
            return None;
        }
    }
    let answer = ask(name, params);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, answer.clone());
    }
    answer
}

fn ask(name: &str, params: bool) -> Option<String> {
    // A name is one argument, never an option: mangled names start with `_Z`.
    if !name.starts_with("_Z") || name.contains(char::is_whitespace) {
        return None;
    }
    let mut cmd = Command::new("c++filt");
    cmd.arg("-i");
    if !params {
        cmd.arg("-p");
    }
    let out = cmd.arg(name).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim_end_matches('\n');
    (text != name && !text.is_empty() && !text.contains('\n')).then(|| text.to_string())
}
