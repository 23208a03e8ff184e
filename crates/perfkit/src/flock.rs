//! `flock(2)`: the exclusive lock `perf daemon` holds on `BASE/lock` while it runs (std's
//! `File::try_lock` needs a newer Rust than this workspace's minimum).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Take an exclusive lock on `file` without waiting: `Ok(false)` when another open file
/// description holds it. The lock lasts while `file` (or a duplicate of it) stays open.
pub fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    // SAFETY: flock takes a descriptor that `file` keeps open for the call, and flags.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_second_description_is_refused_until_the_first_closes() {
        let path = std::env::temp_dir().join(format!("perfkit-flock-{}", std::process::id()));
        let a = std::fs::File::create(&path).unwrap();
        assert!(super::try_lock_exclusive(&a).unwrap());
        let b = std::fs::File::open(&path).unwrap();
        assert!(!super::try_lock_exclusive(&b).unwrap());
        drop(a);
        assert!(super::try_lock_exclusive(&b).unwrap());
        std::fs::remove_file(&path).unwrap();
    }
}
