//! The names cpp_demangle cannot parse at all, demangled by binutils' `c++filt` where it
//! is installed.
//!
//! cpp_demangle 0.5.1 (the newest release) refuses a few manglings GCC writes, the
//! common one an `enable_if<...>::type` return type whose condition is an unresolved name
//! written without `N...E` (`Xsr St6__and_ I...E 5value E`, from `std::swap<long>`).
//! perf 6.1 demangles with libiberty, which takes them; `c++filt` is libiberty's
//! command-line front end (binutils, which perf's own annotate needs too), so asking it
//! gives perf's exact spelling (`-i`: no `DMGL_VERBOSE`, as perf; `-p`: no parameters).
//!
//! One `c++filt` process per way (with or without parameters) is started on the first
//! name it is asked about and kept: names go to its standard input one a line, answers
//! come back one a line (c++filt flushes at each newline), a batch written at once.
//! Each answer is cached for the process. A writer and a reader thread own the pipes,
//! so nothing here blocks on them: an answer that does not come within
//! [`ANSWER_TIMEOUT`] (a stuck c++filt), a c++filt that dies or a missing one leaves the
//! names as the caller's own best effort (the name alone); the process is then killed
//! and reaped, and no other is started.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How long one answer may take (c++filt answers in microseconds; a loaded machine may
/// hold it back a while, a stuck one never answers).
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest name written to c++filt: its line buffer holds 32767 bytes.
const MAX_NAME: usize = 32_000;

/// `c++filt -i [-p] NAME`'s answer for `name` (`params`: with parameters), or `None` when
/// c++filt is missing, stuck or dead, or leaves the name as it is.
pub(crate) fn cxxfilt(name: &str, params: bool) -> Option<String> {
    cxxfilt_many(&[name], params).pop().flatten()
}

/// [`cxxfilt`] for many names at once: the ones not asked before are written in one
/// batch.
pub(crate) fn cxxfilt_many(names: &[&str], params: bool) -> Vec<Option<String>> {
    static FILTERS: [OnceLock<Mutex<Demangler>>; 2] = [OnceLock::new(), OnceLock::new()];
    let d = FILTERS[usize::from(params)].get_or_init(|| {
        let args: &[&str] = if params { &["-i"] } else { &["-i", "-p"] };
        Mutex::new(Demangler::new(OsStr::new("c++filt"), args, ANSWER_TIMEOUT))
    });
    match d.lock() {
        Ok(mut d) => d.answers(names),
        Err(_) => vec![None; names.len()],
    }
}

/// Whether `name` can go to c++filt as one line that it reads as one name: a mangled
/// name (`_Z`) of the characters c++filt takes as a symbol's (others split it in two,
/// unlike c++filt given the name as an argument).
fn askable(name: &str) -> bool {
    name.starts_with("_Z")
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.$".contains(&b))
}

/// One c++filt (started on first use) and the answers it gave.
pub(crate) struct Demangler {
    program: Box<OsStr>,
    args: Vec<String>,
    timeout: Duration,
    state: State,
    cache: HashMap<String, Option<String>>,
}

enum State {
    NotStarted,
    Running(Filter),
    /// Missing, dead or stuck: every name stays the caller's.
    Gone,
}

/// A running c++filt: lines to write go to the writer thread, lines read come from the
/// reader thread.
struct Filter {
    child: Child,
    to_write: Sender<String>,
    answers: Receiver<String>,
}

impl Filter {
    fn spawn(program: &OsStr, args: &[String]) -> Option<Filter> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        };
        let (to_write, lines) = channel::<String>();
        let (answer, answers) = channel();
        // The threads end when the pipes close: the writer when the sender is dropped or
        // c++filt's stdin is gone, the reader at c++filt's end of output.
        let spawned = std::thread::Builder::new()
            .name("c++filt-writer".into())
            .spawn(move || {
                for l in lines {
                    if stdin.write_all(l.as_bytes()).is_err() || stdin.flush().is_err() {
                        break;
                    }
                }
            })
            .and_then(|_| {
                std::thread::Builder::new()
                    .name("c++filt-reader".into())
                    .spawn(move || {
                        for l in BufReader::new(stdout).lines() {
                            let Ok(l) = l else { break };
                            if answer.send(l).is_err() {
                                break;
                            }
                        }
                    })
            });
        if spawned.is_err() {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        Some(Filter {
            child,
            to_write,
            answers,
        })
    }

    /// The answers for `names`, in order, or `None` when c++filt does not give them all
    /// in time.
    fn ask(&mut self, names: &[&str], timeout: Duration) -> Option<Vec<String>> {
        let mut batch = String::with_capacity(names.iter().map(|n| n.len() + 1).sum());
        for n in names {
            batch.push_str(n);
            batch.push('\n');
        }
        self.to_write.send(batch).ok()?;
        let mut out = Vec::with_capacity(names.len());
        for _ in names {
            match self.answers.recv_timeout(timeout) {
                Ok(a) => out.push(a),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
            }
        }
        Some(out)
    }

    /// Kill and reap c++filt (its pipes close, so the threads end).
    fn end(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Demangler {
    /// A demangler that runs `program args` on first use and waits `timeout` for each
    /// answer.
    pub(crate) fn new(program: &OsStr, args: &[&str], timeout: Duration) -> Demangler {
        Demangler {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            timeout,
            state: State::NotStarted,
            cache: HashMap::new(),
        }
    }

    /// The demangled `names` (`None`: not a name c++filt changed, or no c++filt).
    pub(crate) fn answers(&mut self, names: &[&str]) -> Vec<Option<String>> {
        let mut new: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| askable(n) && !self.cache.contains_key(*n))
            .collect();
        new.sort_unstable();
        new.dedup();
        if !new.is_empty() {
            let got = self.ask(&new);
            for (i, n) in new.iter().enumerate() {
                let a = got
                    .as_ref()
                    .and_then(|g| g.get(i))
                    .and_then(|a| (a != n && !a.is_empty()).then(|| a.clone()));
                self.cache.insert(n.to_string(), a);
            }
        }
        names
            .iter()
            .map(|n| self.cache.get(*n).cloned().flatten())
            .collect()
    }

    fn ask(&mut self, names: &[&str]) -> Option<Vec<String>> {
        if matches!(self.state, State::NotStarted) {
            self.state =
                Filter::spawn(&self.program, &self.args).map_or(State::Gone, State::Running);
        }
        let State::Running(f) = &mut self.state else {
            return None;
        };
        let got = f.ask(names, self.timeout);
        if got.is_none()
            && let State::Running(f) = std::mem::replace(&mut self.state, State::Gone)
        {
            f.end();
        }
        got
    }

    /// The process id of the running c++filt, if one runs.
    #[cfg(test)]
    fn pid(&self) -> Option<u32> {
        match &self.state {
            State::Running(f) => Some(f.child.id()),
            _ => None,
        }
    }
}

impl Drop for Demangler {
    fn drop(&mut self) {
        if let State::Running(f) = std::mem::replace(&mut self.state, State::Gone) {
            // Closing its input ends c++filt; kill it in case it is stuck, and reap it.
            drop(f.to_write);
            let mut child = f.child;
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn have_cxxfilt() -> bool {
        let ok = Command::new("c++filt")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "CI has binutils' c++filt"
            );
            eprintln!("skipped: no c++filt");
        }
        ok
    }

    /// Whether process `pid` is gone (reaped), not a zombie or alive.
    fn reaped(pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    const SWAP: &str = "_ZSt4swapIlENSt9enable_ifIXsrSt6__and_IJSt6__not_ISt15__is_tuple_likeIT_EESt21is_move_constructibleIS4_ESt18is_move_assignableIS4_EEE5valueEvE4typeERS4_SE_";

    #[test]
    fn one_process_answers_every_name_as_cxxfilt_given_it_alone() {
        if !have_cxxfilt() {
            return;
        }
        let names = [
            SWAP,
            "_Z3foov",
            "_ZN2ns1S5heavyEi.isra.0",
            "_Z3barv@plt",
            "not_mangled",
            "_Z3bazv",
        ];
        let mut d = Demangler::new(OsStr::new("c++filt"), &["-i"], ANSWER_TIMEOUT);
        let got = d.answers(&names);
        let pid = d.pid().expect("c++filt runs");
        for (n, g) in names.iter().zip(&got) {
            // c++filt given the name as its argument, as perfkit asked it before.
            let alone = Command::new("c++filt").args(["-i", n]).output().unwrap();
            let alone = String::from_utf8(alone.stdout).unwrap();
            let alone = alone.trim_end();
            let want = (alone != *n).then(|| alone.to_string());
            // (`@plt` is not a symbol character: such a name is left to the caller.)
            if n.contains('@') {
                assert_eq!(g, &None, "{n}");
            } else {
                assert_eq!(g, &want, "{n}");
            }
        }
        assert!(got[0].as_deref().unwrap().starts_with("std::enable_if<"));
        assert_eq!(got[4], None);
        // Later names go to the same process, and answers are cached.
        assert_eq!(
            d.answers(&["_Z1fi", "_Z3foov"])[0].as_deref(),
            Some("f(int)")
        );
        assert_eq!(d.pid(), Some(pid));
        // Many names, more than the old 512 processes, in one batch.
        let many: Vec<String> = (0..3000)
            .map(|i| format!("_Z{}f{i}v", 1 + i.to_string().len()))
            .collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let got = d.answers(&refs);
        assert_eq!(got[2999].as_deref(), Some("f2999()"));
        assert!(got.iter().all(Option::is_some));
        assert_eq!(d.pid(), Some(pid));
        drop(d);
        assert!(reaped(pid), "c++filt {pid} left behind");
    }

    #[test]
    fn a_missing_filter_leaves_the_names() {
        let mut d = Demangler::new(OsStr::new("/nonexistent/c++filt"), &["-i"], ANSWER_TIMEOUT);
        assert_eq!(d.answers(&[SWAP, "_Z3foov"]), [None, None]);
        assert!(d.pid().is_none());
    }

    #[test]
    fn a_dead_filter_leaves_the_names_and_is_reaped() {
        // Exits at once without answering: the reader sees the end of its output.
        let mut d = Demangler::new(OsStr::new("true"), &[], ANSWER_TIMEOUT);
        let t = Instant::now();
        assert_eq!(d.answers(&["_Z3foov"]), [None]);
        assert!(d.pid().is_none());
        // Not the timeout: the end of output is seen at once.
        assert!(t.elapsed() < ANSWER_TIMEOUT, "{:?}", t.elapsed());
        // Once gone, never started again, and later names are left alone at once.
        assert_eq!(d.answers(&["_Z3barv"]), [None]);
    }

    #[test]
    fn a_stuck_filter_times_out_and_is_killed() {
        // Reads nothing, answers nothing: the pipes fill, the answer never comes.
        let timeout = Duration::from_millis(300);
        let mut d = Demangler::new(OsStr::new("sleep"), &["1000"], timeout);
        let names: Vec<String> = (0..20_000).map(|i| format!("_Z4f{i:03}v")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let t = Instant::now();
        // The first call starts it; keep its pid to check that it is reaped.
        let pid = {
            d.state = Filter::spawn(OsStr::new("sleep"), &["1000".to_string()])
                .map_or(State::Gone, State::Running);
            d.pid().expect("sleep runs")
        };
        let got = d.answers(&refs);
        assert!(got.iter().all(Option::is_none));
        assert!(d.pid().is_none());
        assert!(reaped(pid), "stuck filter {pid} left behind");
        // It waited for one answer, then gave up (bounded by the timeout, not by the
        // 20,000 names; 20 timeouts of slack for a loaded machine).
        assert!(t.elapsed() < timeout * 20, "{:?}", t.elapsed());
    }

    #[test]
    fn a_filter_answering_the_name_itself_leaves_it() {
        // `cat` answers every line with itself: nothing demangled.
        let mut d = Demangler::new(OsStr::new("cat"), &[], ANSWER_TIMEOUT);
        assert_eq!(d.answers(&["_Z3foov", "_Z3foov"]), [None, None]);
        let pid = d.pid().expect("cat runs");
        drop(d);
        assert!(reaped(pid));
    }
}
