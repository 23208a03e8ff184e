//! [`PausedChild`]: start a command stopped before `exec`, so counters can be attached
//! with `enable_on_exec` and nothing of the launcher is counted.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A forked child waiting to `exec` its command until [`PausedChild::start`].
///
/// The command starts the way a shell would start it, whatever the launcher did to its
/// own signals: every signal at its default disposition and none blocked (the Rust
/// runtime ignores `SIGPIPE`, and `exec` keeps ignored dispositions and the mask, so
/// without the reset `yes | head -1` would print "Broken pipe").
#[derive(Debug)]
pub struct PausedChild {
    pid: libc::pid_t,
    program: OsString,
    go: Option<std::os::fd::OwnedFd>,
    exec_err: std::os::fd::OwnedFd,
}

/// Why a command could not be started. The OS error is the [`source`] (not repeated in
/// `Display`).
///
/// [`source`]: std::error::Error::source
#[derive(Debug)]
#[non_exhaustive]
pub enum LaunchError {
    /// The program was not found in `PATH` (a shell exits 127); the source is ENOENT.
    NotFound {
        /// The program as given.
        program: OsString,
        /// ENOENT.
        source: io::Error,
    },
    /// Found but not executable, or `execv` failed (a shell exits 126).
    CannotExecute {
        /// The program as given.
        program: OsString,
        /// The errno `execv` gave.
        source: io::Error,
    },
    /// `fork`, `pipe2` or argument preparation failed.
    Os {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: io::Error,
    },
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::NotFound { program, .. } => {
                write!(f, "{}: command not found", program.to_string_lossy())
            }
            LaunchError::CannotExecute { program, .. } => {
                write!(f, "{}: cannot execute", program.to_string_lossy())
            }
            LaunchError::Os { what, .. } => write!(f, "cannot start the command: {what}"),
        }
    }
}

impl std::error::Error for LaunchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.io_error())
    }
}

impl LaunchError {
    /// The exit status a shell would give: 127 not found, 126 not executable.
    pub fn exit_code(&self) -> i32 {
        match self {
            LaunchError::NotFound { .. } => 127,
            LaunchError::CannotExecute { .. } => 126,
            LaunchError::Os { .. } => 1,
        }
    }

    /// The OS error.
    pub fn io_error(&self) -> &io::Error {
        match self {
            LaunchError::NotFound { source, .. }
            | LaunchError::CannotExecute { source, .. }
            | LaunchError::Os { source, .. } => source,
        }
    }

    /// The errno, 0 if none.
    pub fn errno(&self) -> i32 {
        self.io_error().raw_os_error().unwrap_or(0)
    }
}

/// Find `program` the way a shell does: as a path if it has a `/`, else in `PATH`.
pub fn find_program(program: &OsStr) -> Option<PathBuf> {
    let p = Path::new(program);
    if program.as_bytes().contains(&b'/') {
        return p.exists().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|cand| {
            std::fs::metadata(cand)
                .map(|m| {
                    m.is_file()
                        && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
                })
                .unwrap_or(false)
        })
}

fn pipe() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two new descriptors that we now own.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

impl PausedChild {
    /// Fork a child that will exec `program` with `args` (`argv[0]` = `program`) once
    /// [`start`](Self::start) is called. The child inherits the environment and stdio.
    pub fn spawn(program: &OsStr, args: &[OsString]) -> Result<PausedChild, LaunchError> {
        use std::os::fd::AsRawFd;
        let path = find_program(program).ok_or_else(|| LaunchError::NotFound {
            program: program.into(),
            source: io::Error::from_raw_os_error(libc::ENOENT),
        })?;
        let os = |what| move |source| LaunchError::Os { what, source };
        let cstr = |s: &OsStr| {
            CString::new(s.as_bytes())
                .map_err(|e| os("an argument contains a NUL byte")(io::Error::from(e)))
        };
        let cpath = cstr(path.as_os_str())?;
        let mut argv_c = vec![cstr(program)?];
        for a in args {
            argv_c.push(cstr(a)?);
        }
        let mut argv: Vec<*const libc::c_char> = argv_c.iter().map(|c| c.as_ptr()).collect();
        argv.push(std::ptr::null());
        let (go_r, go_w) = pipe().map_err(os("pipe2"))?;
        let (err_r, err_w) = pipe().map_err(os("pipe2"))?;
        // SAFETY: fork in a possibly multi-threaded process; the child only calls
        // async-signal-safe functions (close, read, rt_sigaction, rt_sigprocmask, execv,
        // write, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(os("fork")(io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: in the child: async-signal-safe calls on descriptors and buffers
            // that were set up before the fork and stay valid until exec or _exit.
            unsafe {
                libc::close(go_w.as_raw_fd());
                libc::close(err_r.as_raw_fd());
                let mut b = 0u8;
                let n = libc::read(go_r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
                if n != 1 {
                    // The parent gave up (dropped us without start): leave quietly.
                    libc::_exit(127);
                }
                default_signals();
                libc::execv(cpath.as_ptr(), argv.as_ptr());
                let errno = *libc::__errno_location();
                let bytes = errno.to_ne_bytes();
                libc::write(err_w.as_raw_fd(), bytes.as_ptr().cast(), 4);
                libc::_exit(126);
            }
        }
        drop(go_r);
        drop(err_w);
        Ok(PausedChild {
            pid,
            program: program.into(),
            go: Some(go_w),
            exec_err: err_r,
        })
    }

    /// The child's pid (attach counters to it before [`start`](Self::start)).
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Let the child exec. Returns an error if exec failed (the child has then exited
    /// with status 126 and is reaped here).
    pub fn start(mut self) -> Result<libc::pid_t, LaunchError> {
        use std::os::fd::AsRawFd;
        let go = self.go.take();
        if let Some(go) = &go {
            let b = [1u8];
            // SAFETY: writing one byte from a valid buffer to our pipe.
            unsafe { libc::write(go.as_raw_fd(), b.as_ptr().cast(), 1) };
        }
        drop(go);
        let mut buf = [0u8; 4];
        // SAFETY: reading up to 4 bytes into a valid buffer; EOF (0) means exec succeeded
        // (the CLOEXEC write end closed).
        let n = unsafe { libc::read(self.exec_err.as_raw_fd(), buf.as_mut_ptr().cast(), 4) };
        if n == 4 {
            let errno = i32::from_ne_bytes(buf);
            let mut status = 0;
            // SAFETY: reaping our own child.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
            return Err(LaunchError::CannotExecute {
                program: std::mem::take(&mut self.program),
                source: io::Error::from_raw_os_error(errno),
            });
        }
        let pid = self.pid;
        self.pid = 0;
        Ok(pid)
    }
}

impl Drop for PausedChild {
    fn drop(&mut self) {
        if self.pid > 0 {
            // Never started: closing the go pipe makes the child _exit; reap it.
            self.go.take();
            let mut status = 0;
            // SAFETY: reaping our own child.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
        }
    }
}

/// The kernel's `sigset_t` size (`_NSIG / 8`): 128 signals on mips, 64 elsewhere.
const KERNEL_SIGSET_SIZE: usize = if cfg!(any(target_arch = "mips", target_arch = "mips64")) {
    16
} else {
    8
};

/// Put every signal back to its default disposition and unblock all, in a forked child
/// just before `exec`.
///
/// Goes to the kernel directly (`rt_sigaction`, `rt_sigprocmask`): the C library's
/// wrappers refuse its internal signals (32 and 33 in glibc), which a launcher may still
/// have ignored.
///
/// # Safety
/// Meant for the child between `fork` and `exec`: it changes the process-wide signal
/// dispositions and the calling thread's mask, with raw system calls only
/// (async-signal-safe).
unsafe fn default_signals() {
    // A zeroed kernel `struct sigaction` is SIG_DFL (0) with no flags and an empty mask
    // on every architecture; 64 bytes cover the largest layout.
    let dfl = [0u64; 8];
    let empty = [0u64; 2];
    for sig in 1..=(KERNEL_SIGSET_SIZE as libc::c_long * 8) {
        // SAFETY: `dfl` is a readable, zeroed kernel sigaction; no old action is asked
        // for. SIGKILL and SIGSTOP answer EINVAL, which is fine (they cannot be ignored).
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                dfl.as_ptr(),
                std::ptr::null_mut::<u64>(),
                KERNEL_SIGSET_SIZE,
            );
        }
    }
    // SAFETY: `empty` is a readable, zeroed kernel sigset; no old mask is asked for.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            empty.as_ptr(),
            std::ptr::null_mut::<u64>(),
            KERNEL_SIGSET_SIZE,
        );
    }
}

/// How a process ended, as a shell reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// Exited with a code.
    Exited(i32),
    /// Killed by a signal.
    Signaled(i32),
}

impl ExitStatus {
    /// The shell's `$?`: the code, or 128 + signal.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Exited(c) => c,
            ExitStatus::Signaled(s) => 128 + s,
        }
    }
}

/// `waitpid(pid)`, retrying on EINTR.
pub fn wait(pid: libc::pid_t) -> io::Result<ExitStatus> {
    loop {
        let mut status = 0;
        // SAFETY: status is a valid int for waitpid to fill.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if libc::WIFEXITED(status) {
            return Ok(ExitStatus::Exited(libc::WEXITSTATUS(status)));
        }
        if libc::WIFSIGNALED(status) {
            return Ok(ExitStatus::Signaled(libc::WTERMSIG(status)));
        }
    }
}

/// CPU time a waited-for child used (`wait4`'s rusage).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChildUsage {
    /// User CPU time in nanoseconds.
    pub user_ns: u64,
    /// System CPU time in nanoseconds.
    pub sys_ns: u64,
}

/// `wait4(pid)`: exit status and the child's CPU usage, retrying on EINTR.
pub fn wait_with_usage(pid: libc::pid_t) -> io::Result<(ExitStatus, ChildUsage)> {
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data for wait4 to fill.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: status and ru are valid for wait4 to fill.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        let usage = ChildUsage {
            user_ns: tv(ru.ru_utime),
            sys_ns: tv(ru.ru_stime),
        };
        if libc::WIFEXITED(status) {
            return Ok((ExitStatus::Exited(libc::WEXITSTATUS(status)), usage));
        }
        if libc::WIFSIGNALED(status) {
            return Ok((ExitStatus::Signaled(libc::WTERMSIG(status)), usage));
        }
    }
}

/// `kill(pid, sig)`.
pub fn kill(pid: libc::pid_t, sig: i32) -> io::Result<()> {
    // SAFETY: kill takes plain integers.
    if unsafe { libc::kill(pid, sig) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The ids of every thread of process `pid` (from `/proc/PID/task`).
pub fn threads_of(pid: libc::pid_t) -> io::Result<Vec<libc::pid_t>> {
    let mut tids: Vec<libc::pid_t> = std::fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}
