//! `perfkit record` on a disk that fills up: a clear error, a non-zero exit, and a file that
//! both perfkit and perf read up to the last complete round. Uses a 256 KiB tmpfs (needs
//! root to mount; skipped with the reason otherwise, a failure under CI=true).

mod common;

use assert_cmd::Command;
use std::path::Path;

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

fn small_disk(dir: &Path) -> Option<Mount> {
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(dir)
        .status()
        .ok()?
        .success();
    ok.then(|| Mount(dir.to_path_buf()))
}

#[test]
fn a_full_disk_stops_with_a_clear_error_and_a_readable_file() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_mount) = small_disk(dir.path()) else {
        common::skip("cannot mount a small tmpfs (needs root)");
        return;
    };
    let out = dir.path().join("p.data");
    let pidfile = std::env::temp_dir().join(format!("perfkit-full-{}", std::process::id()));
    // Enough callchain samples to overflow 256 KiB: -F 20000 for 3 s of a shell loop.
    let o = Command::cargo_bin("perfkit")
        .unwrap()
        .args(["record", "-g", "-F", "20000", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c"])
        .arg(format!(
            "echo $$ > {}; i=0; while [ $i -lt 30000000 ]; do i=$((i+1)); done",
            pidfile.display()
        ))
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("last complete round"), "{err}");
    // The command is not left running without its recorder.
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let _ = std::fs::remove_file(&pidfile);
    let stat = format!("/proc/{}/stat", pid.trim());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the command still runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // perfkit reads what was written.
    let r = Command::cargo_bin("perfkit")
        .unwrap()
        .args(["report", "--stdio", "--no-children", "-i"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&r.stdout);
    let samples: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("# Samples: "))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.trim_end_matches('K').parse::<f64>().ok())
        .map(|n| n as u64)
        .unwrap_or(0);
    assert!(samples > 0, "no samples read back:\n{text}");
    assert!(text.contains("sh"), "{text}");

    // So does perf, with the same sample count.
    if let Ok(p) = std::process::Command::new("perf")
        .args(["report", "--stdio", "--no-children", "-i"])
        .arg(&out)
        .output()
    {
        let theirs = String::from_utf8_lossy(&p.stdout);
        let line = |t: &str| {
            t.lines()
                .find(|l| l.starts_with("# Samples:"))
                .map(str::to_string)
        };
        assert!(
            p.status.success(),
            "perf: {}",
            String::from_utf8_lossy(&p.stderr)
        );
        assert_eq!(line(&text), line(&theirs));
    } else {
        eprintln!("perf not installed: only perfkit's reading checked");
    }
}
