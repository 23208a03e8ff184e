//! The daemon itself: sessions from the config file, kept in step with it, and the
//! requests of [`client`](super::client) answered on `BASE/control`.

use super::client::Request;
use super::config::{DaemonConfig, check_base};
use crate::{Error, Result};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How the daemon is started.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The config file (absolute: the daemon watches it for changes).
    pub config: PathBuf,
    /// `--base`, overriding the config's `daemon.base`.
    pub base: Option<PathBuf>,
    /// The program each session runs as `EXE record --control=fifo:control,ack RUN`.
    pub exe: PathBuf,
}

impl ServeOptions {
    /// The base directory: `--base`, else the config's, checked to be a directory.
    pub fn base_dir(&self, cfg: &DaemonConfig) -> Result<PathBuf> {
        check_base(self.base.as_deref().or(cfg.base.as_deref()))
    }
}

/// How often the daemon looks at its socket, its sessions and its config file.
const TICK: Duration = Duration::from_millis(20);
/// How long a session gets to end after each of `stop`, SIGTERM and SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(10);
/// How long a ping waits for the session's acknowledgement (perf's 2 s).
const ACK_WAIT: Duration = Duration::from_secs(2);

/// Take `BASE/lock` (flock) and write this process's pid in it; the lock holds while the
/// returned file is open. Another daemon on the same base is an error in perf's words.
pub fn check_lock(base: &Path) -> Result<File> {
    let path = base.join("lock");
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    let locked = perfkit::try_lock_exclusive(&f)
        .map_err(|e| Error::io(format!("locking {}", path.display()), e))?;
    if !locked {
        let pid = std::fs::read_to_string(&path).unwrap_or_default();
        return Err(Error::Usage(format!(
            "another perf daemon (pid {}) owns {}",
            pid.trim(),
            base.display()
        )));
    }
    let pid = std::process::id().to_string();
    f.set_len(0)
        .and_then(|_| f.write_all(pid.as_bytes()))
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    Ok(f)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Running as configured.
    Ok,
    /// New, or its `run` changed: (re)start it.
    Reconfig,
    /// No longer configured, or ended by itself: remove it.
    Kill,
}

#[derive(Debug)]
struct Session {
    name: String,
    run: String,
    dir: PathBuf,
    child: Option<Child>,
    state: State,
    start: SystemTime,
}

impl Session {
    fn pid(&self) -> i64 {
        self.child.as_ref().map_or(-1, |c| i64::from(c.id()))
    }
}

struct Daemon<'a> {
    opts: &'a ServeOptions,
    base: PathBuf,
    sessions: Vec<Session>,
    start: SystemTime,
    log: &'a mut dyn Write,
}

/// Run the daemon until `done` is set (SIGINT/SIGTERM) or a client sends `stop`; `log`
/// gets perf's timestamped lines (`daemon started (pid N)`, each session started and
/// ended). Every session has ended when this returns.
pub fn serve(opts: &ServeOptions, done: Arc<AtomicBool>, log: &mut dyn Write) -> Result<()> {
    let text = std::fs::read_to_string(&opts.config)
        .map_err(|e| Error::io(format!("reading the config {}", opts.config.display()), e))?;
    let cfg = DaemonConfig::parse(&text)?;
    let base = opts.base_dir(&cfg)?;
    let _lock = check_lock(&base)?;
    let mut d = Daemon {
        opts,
        base: base.clone(),
        sessions: Vec::new(),
        start: SystemTime::now(),
        log,
    };
    d.say(&format!("daemon started (pid {})", std::process::id()));
    let sock_path = base.join("control");
    let _ = std::fs::remove_file(&sock_path);
    let listener = UnixListener::bind(&sock_path)
        .map_err(|e| Error::io(format!("binding {}", sock_path.display()), e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("setting the socket non-blocking", e))?;
    d.configure(&cfg);
    let (mut applied, mut last_read) = (text.clone(), text);
    let mut result = Ok(());
    while !done.load(Ordering::SeqCst) {
        if let Err(e) = d.reconfig() {
            result = Err(e);
            break;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                if d.answer(stream) {
                    break;
                }
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => d.say(&format!("failed: accept: {e}")),
        }
        d.reap();
        // The config file changed: act once two looks agree, so a file caught half
        // written is not taken for the new config.
        if let Ok(now) = std::fs::read_to_string(&opts.config) {
            if now == last_read && now != applied {
                match DaemonConfig::parse(&now) {
                    Ok(cfg) => d.configure(&cfg),
                    Err(e) => d.say(&format!("failed: config: {e}")),
                }
                applied = now.clone();
            }
            last_read = now;
        }
        std::thread::sleep(TICK);
    }
    d.kill_all();
    let _ = std::fs::remove_file(&sock_path);
    d.say("daemon exited");
    result
}

impl Daemon<'_> {
    fn say(&mut self, msg: &str) {
        let _ = writeln!(self.log, "[{}] {msg}", timestamp(SystemTime::now()));
        let _ = self.log.flush();
    }

    /// Mark sessions against a (new) config, as perf: unchanged ones stay, changed and new
    /// ones are (re)started, missing ones are ended by the next [`reconfig`](Self::reconfig).
    fn configure(&mut self, cfg: &DaemonConfig) {
        if let Some(b) = self.opts.base.as_ref().or(cfg.base.as_ref())
            && *b != self.base
        {
            self.say("failed: can't redefine base, keeping the first one");
        }
        for s in &mut self.sessions {
            s.state = State::Kill;
        }
        for (name, run) in &cfg.sessions {
            match self.sessions.iter_mut().find(|s| &s.name == name) {
                Some(s) if s.run == *run && s.child.is_some() => s.state = State::Ok,
                Some(s) => {
                    s.run = run.clone();
                    s.state = State::Reconfig;
                }
                None => self.sessions.push(Session {
                    name: name.clone(),
                    run: run.clone(),
                    dir: self.base.join(format!("session-{name}")),
                    child: None,
                    state: State::Reconfig,
                    start: SystemTime::now(),
                }),
            }
        }
    }

    /// Carry out the states [`configure`](Self::configure) and [`reap`](Self::reap) set.
    fn reconfig(&mut self) -> Result<()> {
        let mut i = 0;
        while i < self.sessions.len() {
            match self.sessions[i].state {
                State::Ok => i += 1,
                State::Kill => {
                    if self.sessions[i].child.is_some() {
                        self.kill(i);
                        let name = self.sessions[i].name.clone();
                        self.say(&format!("reconfig: session '{name}' killed"));
                    }
                    self.sessions.remove(i);
                }
                State::Reconfig => {
                    if self.sessions[i].child.is_some() {
                        self.kill(i);
                        let name = self.sessions[i].name.clone();
                        self.say(&format!("reconfig: session '{name}' killed"));
                    }
                    self.run(i)?;
                    self.sessions[i].state = State::Ok;
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// Start session `i` in its directory, its output and FIFOs there.
    fn run(&mut self, i: usize) -> Result<()> {
        let exe = self.opts.exe.clone();
        let s = &mut self.sessions[i];
        std::fs::create_dir_all(&s.dir)
            .map_err(|e| Error::io(format!("creating {}", s.dir.display()), e))?;
        let out_path = s.dir.join("output");
        let out = File::create(&out_path)
            .map_err(|e| Error::io(format!("creating {}", out_path.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| Error::io("duplicating the session output", e))?;
        for fifo in ["control", "ack"] {
            let p = s.dir.join(fifo);
            perfkit::mkfifo(&p, 0o600)
                .map_err(|e| Error::io(format!("creating the FIFO {}", p.display()), e))?;
        }
        s.start = SystemTime::now();
        let child = Command::new(&exe)
            .arg("record")
            .arg("--control=fifo:control,ack")
            .args(s.run.split_whitespace())
            .current_dir(&s.dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| Error::io(format!("running {} record", exe.display()), e))?;
        s.child = Some(child);
        let msg = format!(
            "reconfig: running session [{}:{}]: {}",
            s.name,
            s.pid(),
            s.run
        );
        self.say(&msg);
        Ok(())
    }

    /// Note the sessions that ended by themselves; they are removed, as perf does.
    fn reap(&mut self) {
        let mut ended = Vec::new();
        for s in &mut self.sessions {
            if let Some(c) = &mut s.child
                && let Ok(Some(st)) = c.try_wait()
            {
                s.child = None;
                s.state = State::Kill;
                ended.push(match (st.code(), st.signal()) {
                    (Some(code), _) => format!("session '{}' exited, status={code}", s.name),
                    (_, Some(sig)) => format!("session '{}' killed (signal {sig})", s.name),
                    _ => format!("session '{}' ended ({st})", s.name),
                });
            }
        }
        for msg in ended {
            self.say(&msg);
        }
    }

    /// End session `i`: `stop` on its control FIFO, then SIGTERM, then SIGKILL, each
    /// given [`KILL_WAIT`].
    fn kill(&mut self, i: usize) {
        for how in 0..3 {
            let s = &mut self.sessions[i];
            let Some(child) = &mut s.child else { return };
            match how {
                // No record reads the control FIFO (yet): straight to SIGTERM.
                0 => {
                    if control(&s.dir, "stop", false).is_err() {
                        continue;
                    }
                }
                1 => {
                    let _ = perfkit::kill(child.id() as i32, libc::SIGTERM);
                }
                _ => {
                    let _ = child.kill();
                }
            }
            let until = Instant::now() + KILL_WAIT;
            while Instant::now() < until {
                self.reap();
                if self.sessions[i].child.is_none() {
                    return;
                }
                std::thread::sleep(TICK);
            }
        }
        let name = self.sessions[i].name.clone();
        self.say(&format!("failed to wait for session {name}"));
    }

    /// End every session at once (`stop` to all, then SIGTERM, then SIGKILL).
    fn kill_all(&mut self) {
        for how in 0..3 {
            for s in &mut self.sessions {
                let Some(child) = &mut s.child else { continue };
                match how {
                    // A session whose record does not read its FIFO gets SIGTERM now.
                    0 => {
                        if control(&s.dir, "stop", false).is_err() {
                            let _ = perfkit::kill(child.id() as i32, libc::SIGTERM);
                        }
                    }
                    1 => {
                        let _ = perfkit::kill(child.id() as i32, libc::SIGTERM);
                    }
                    _ => {
                        let _ = child.kill();
                    }
                }
            }
            let until = Instant::now() + KILL_WAIT;
            while Instant::now() < until {
                self.reap();
                if self.sessions.iter().all(|s| s.child.is_none()) {
                    return;
                }
                std::thread::sleep(TICK);
            }
        }
        self.say("failed to wait for sessions");
    }

    /// Answer one client; true when it asked the daemon to stop.
    fn answer(&mut self, mut stream: UnixStream) -> bool {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while line.len() < 4096 {
            match stream.read(&mut byte) {
                Ok(1) if byte[0] != b'\n' => line.push(byte[0]),
                _ => break,
            }
        }
        let Some(req) = Request::decode(&String::from_utf8_lossy(&line)) else {
            let _ = writeln!(stream, "failed: unknown request");
            return false;
        };
        let reply = match &req {
            Request::List { verbose, sep } => self.list(*verbose, *sep),
            Request::Signal(name) => self.signal(name.as_deref()),
            Request::Ping(name) => self.ping(name.as_deref()),
            Request::Stop => String::new(),
        };
        let _ = stream.write_all(reply.as_bytes());
        req == Request::Stop
    }

    /// perf's `daemon` listing (plain, `-v`, or `-x SEP`).
    fn list(&self, verbose: bool, sep: Option<char>) -> String {
        let now = SystemTime::now();
        let up = |t: SystemTime| now.duration_since(t).unwrap_or_default().as_secs() / 60;
        let base = self.base.display();
        let mut out = String::new();
        let pid = std::process::id();
        if let Some(c) = sep {
            out += &format!(
                "{pid}{c}daemon{c}{base}{c}{base}/output{c}{base}/lock{c}{}\n",
                up(self.start)
            );
        } else {
            out += &format!("[{pid}:daemon] base: {base}\n");
            if verbose {
                out += &format!(
                    "  output:  {base}/output\n  lock:    {base}/lock\n  up:      {} minutes\n",
                    up(self.start)
                );
            }
        }
        for s in &self.sessions {
            let dir = s.dir.display();
            if let Some(c) = sep {
                out += &format!(
                    "{}{c}{}{c}{}{c}{dir}{c}{dir}/output{c}{dir}/control{c}{dir}/ack{c}{}\n",
                    s.pid(),
                    s.name,
                    s.run,
                    up(s.start)
                );
            } else {
                out += &format!("[{}:{}] perf record {}\n", s.pid(), s.name, s.run);
                if verbose {
                    out += &format!(
                        "  base:    {dir}\n  output:  {dir}/output\n  control: {dir}/control\n  ack:     {dir}/ack\n  up:      {} minutes\n",
                        up(s.start)
                    );
                }
            }
        }
        out
    }

    /// SIGUSR2 to the named session or all (a `--switch-output` session writes a file).
    fn signal(&self, name: Option<&str>) -> String {
        let mut out = String::new();
        for s in &self.sessions {
            if name.is_none_or(|n| n == s.name) {
                if let Some(c) = &s.child {
                    let _ = perfkit::kill(c.id() as i32, libc::SIGUSR2);
                }
                out += &format!(
                    "signal {} sent to session '{} [{}]'\n",
                    libc::SIGUSR2,
                    s.name,
                    s.pid()
                );
            }
        }
        out
    }

    /// `OK` or `FAIL` per session, from a `ping` on its control FIFO.
    fn ping(&self, name: Option<&str>) -> String {
        let mut out = String::new();
        let mut found = false;
        for s in &self.sessions {
            if name.is_none_or(|n| n == s.name) {
                let ok = s.child.is_some() && control(&s.dir, "ping", true).unwrap_or(false);
                out += &format!("{:<4} {}\n", if ok { "OK" } else { "FAIL" }, s.name);
                found = true;
            }
        }
        if let (false, Some(n)) = (found, name) {
            out += &format!("{:<4} {n} (not found)\n", "FAIL");
        }
        out
    }
}

/// Write `msg` to the session's control FIFO (failing at once when no record reads it)
/// and, with `ack`, wait up to [`ACK_WAIT`] for its `ack`.
fn control(dir: &Path, msg: &str, ack: bool) -> std::io::Result<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut ctl = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(dir.join("control"))?;
    let mut ack_fifo = if ack {
        Some(
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(dir.join("ack"))?,
        )
    } else {
        None
    };
    ctl.write_all(msg.as_bytes())?;
    let Some(a) = &mut ack_fifo else {
        return Ok(true);
    };
    let until = Instant::now() + ACK_WAIT;
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while Instant::now() < until {
        match a.read(&mut buf) {
            Ok(n) if n > 0 => {
                got.extend_from_slice(&buf[..n]);
                if got.starts_with(b"ack\n") {
                    return Ok(true);
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(false)
}

/// `YYYY-MM-DD hh:mm:ss.uuuuuu` (UTC), the stamp of the daemon's log lines.
fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = ((secs / 86400) as i64, secs % 86400);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:06}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::timestamp;
    use std::time::{Duration, SystemTime};

    #[test]
    fn log_stamps_are_civil_utc() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_micros(1_795_000_000_123_456);
        // date -u -d @1795000000 → 2026-11-18 11:06:40
        assert_eq!(timestamp(t), "2026-11-18 11:06:40.123456");
        assert_eq!(
            timestamp(SystemTime::UNIX_EPOCH),
            "1970-01-01 00:00:00.000000"
        );
    }
}
