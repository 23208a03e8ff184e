//! `mkfifo(3)`: the named pipes perf's `--control fifo:` channels use (`perf daemon`
//! creates them in each session's directory).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Create the FIFO `path` with permission bits `mode`; an existing file of that name is
/// left alone and is not an error (`Ok(false)`), a new FIFO is `Ok(true)`.
pub fn mkfifo(path: &Path, mode: u32) -> io::Result<bool> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    if unsafe { libc::mkfifo(c.as_ptr(), mode as libc::mode_t) } < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::AlreadyExists {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn makes_a_fifo_once() {
        let dir = std::env::temp_dir().join(format!("perfkit-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("ctl");
        assert!(super::mkfifo(&p, 0o600).unwrap());
        assert!(std::fs::metadata(&p).unwrap().file_type().is_fifo());
        assert!(!super::mkfifo(&p, 0o600).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
