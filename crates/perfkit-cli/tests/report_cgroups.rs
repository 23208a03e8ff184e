//! `report --sort cgroup` and `--sort cgroup_id` against perf 6.1, on recordings of a
//! workload that moves itself into a cgroup made for the test and then runs part of its
//! work in a new cgroup namespace (`unshare -C`): `record --all-cgroups --namespaces` by
//! perf and by perfkit, each file reported by both tools. perfkit's recording must name
//! the cgroup for perf (its synthesized CGROUP records) and give the command's namespaces
//! (its synthesized NAMESPACES record).

mod common;

use common::{have_perf, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The cgroup2 mount (`/sys/fs/cgroup` or `/sys/fs/cgroup/unified`).
fn cgroup2_mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
    })
}

/// A cgroup made for the test, removed at the end.
struct Cgroup(PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Its tasks have exited; an empty cgroup is removed with rmdir.
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The report of `file` by `tool` with `args`, without perf's random tip line.
fn report(tool: &str, file: &Path, args: &[&str]) -> String {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let out = cmd
        .args(["report", "--stdio", "-i"])
        .arg(file)
        .args(args)
        .output()
        .expect("report");
    assert!(out.status.success(), "{tool} report {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("# (Tip:") && !l.starts_with("# (Report by"))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn cgroup_keys_match_perf_on_both_tools_recordings() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let Some(mount) = cgroup2_mount() else {
        return skip("no cgroup2 file system is mounted");
    };
    let path = mount.join(format!("perfkit-test-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir(&path) {
        return skip(&format!("cannot make a cgroup ({e}): needs root"));
    }
    let cg = Cgroup(path);
    if Command::new("unshare")
        .args(["-C", "true"])
        .status()
        .map_or(true, |s| !s.success())
    {
        return skip("unshare -C (util-linux, root) does not run here");
    }
    let dir = tempfile::tempdir().unwrap();
    // The same CPU work before and after the new cgroup namespace: the same loop.
    let script = dir.path().join("work.sh");
    std::fs::write(
        &script,
        format!(
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done\n\
             if [ \"$1\" = outer ]; then unshare -C sh {} inner; fi\n",
            dir.path().join("work.sh").display()
        ),
    )
    .unwrap();
    let procs = cg.0.join("cgroup.procs");
    // The recorded command moves itself into the cgroup, then runs the work.
    let command = format!(
        "echo $$ > {}; exec sh {} outer",
        procs.display(),
        script.display()
    );
    let name = format!("/{}", cg.0.file_name().unwrap().to_string_lossy());
    for tool in ["perf", "perfkit"] {
        let file = dir.path().join(format!("{tool}.data"));
        let exe = if tool == "perf" {
            "perf".to_string()
        } else {
            env!("CARGO_BIN_EXE_perfkit").to_string()
        };
        let st = Command::new(&exe)
            .args(["record", "-q", "--all-cgroups", "--namespaces"])
            .args(["-e", "cpu-clock", "-c", "1000000", "-o"])
            .arg(&file)
            .args(["--", "sh", "-c", &command])
            .status()
            .expect("record");
        assert!(st.success(), "{tool} record");
        for sort in [
            "cgroup",
            "cgroup_id",
            "cgroup,cgroup_id,pid",
            "comm,cgroup",
            "cgroup_id,cgroup",
        ] {
            let args = ["--no-children", "--sort", sort];
            let (a, b) = (
                report("perf", &file, &args),
                report("perfkit", &file, &args),
            );
            assert_eq!(a, b, "{tool}'s file, --sort {sort}");
        }
        // The work ran in the test's cgroup, named from the file's CGROUP records, and in
        // two cgroup namespaces (before and after unshare), from its NAMESPACES records.
        let rows = report("perfkit", &file, &["--no-children", "--sort", "cgroup_id"]);
        let namespaces: Vec<&str> = rows
            .lines()
            .filter(|l| l.contains('%') && !l.starts_with('#'))
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        assert!(
            namespaces.len() >= 2 && !namespaces.contains(&"0/0x0"),
            "{tool}'s file: {rows}"
        );
        let rows = report("perfkit", &file, &["--no-children", "--sort", "cgroup"]);
        assert!(
            rows.contains(&format!("%  {name}")),
            "{tool}'s file: {rows}"
        );
    }
    // Children mode by namespace, where perf's entries match perfkit's.
    let file = dir.path().join("perf.data");
    let args = ["--children", "--sort", "cgroup_id", "-g", "none"];
    assert_eq!(
        report("perf", &file, &args),
        report("perfkit", &file, &args)
    );
}
