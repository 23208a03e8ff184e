//! A probe argument missing at some of a probe's addresses, as perf 6.1 handles it: an
//! inline function built with -O2 has three copies, and its local `z` lives only in one
//! of them. perf (`fill_empty_trace_arg`, when tracefs' README lists `\imm-value`) fetches
//! the others' `z` as its magic number `0xdeade12d`, typed as where it was found, and
//! refuses the probe only when no copy has the variable. perf 6.1 writes that immediate
//! as `\deade12d`, which the kernel refuses ("Invalid immediate value": perf fails with
//! `Failed to write event: Invalid argument`); perfkit writes `\0xdeade12d`, the same
//! number in the form the kernel takes, so the probe is added and records the magic value
//! where `z` is missing. Everything else (addresses, names, fetch arguments and types, the
//! refusal of a variable no copy has) is compared with perf's dry run (`-n -v`, whose
//! `Writing event:` lines are what it would write), and `probe -l` of the three copies
//! with perf's listing of the same definitions.

mod common;

use common::{have_perf, perfkit, run_ok, skip};
use std::path::{Path, PathBuf};

const EVENTS: &str = "/sys/kernel/tracing/uprobe_events";

const PROG_C: &str = "#include <stdio.h>
#include <stdlib.h>
volatile int sink;
static inline __attribute__((always_inline)) int pkm_h(int q, int w) {
\tint z = q * w;
\tsink = z;
\treturn z + q;
}
__attribute__((noinline)) int pkm_a(int x) { return pkm_h(x, 3); }
__attribute__((noinline)) int pkm_b(int x, int y) { return pkm_h(x, y) + pkm_h(y, x); }
int main(int argc, char **argv) {
\tint n = argc > 1 ? atoi(argv[1]) : 3;
\tint t = 0;
\tfor (int i = 0; i < n; i++)
\t\tt += pkm_a(i) + pkm_b(i, n);
\tprintf(\"%d\\n\", t);
\treturn 0;
}
";

/// Deletes the group's probes when dropped, whatever the assertions did.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = perfkit()
            .args(["probe", "-q", "-d"])
            .arg(format!("{}:*", self.0))
            .output();
    }
}

/// The program built with -O2 -g as `NAME<pid>` (its probes' group is `probe_NAME<pid>`).
fn build(dir: &Path, name: &str) -> Option<PathBuf> {
    let src = dir.join("pkmiss.c");
    std::fs::write(&src, PROG_C).unwrap();
    let bin = dir.join(format!("{name}{}", std::process::id()));
    std::process::Command::new("cc")
        .args(["-O2", "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success())
        .then_some(bin)
}

/// (offset, arguments) of each definition line, `p:G/E PATH:0xOFF ARGS...`.
fn parse_defs(lines: &[String]) -> Vec<(u64, Vec<String>)> {
    lines
        .iter()
        .filter_map(|l| {
            let mut words = l.split_whitespace().skip(1);
            let place = words.next()?.trim_end_matches(']');
            let off = place.rsplit_once(":0x")?.1;
            Some((
                u64::from_str_radix(off, 16).ok()?,
                words.map(str::to_owned).collect(),
            ))
        })
        .collect()
}

/// The definitions perf would write for `spec` (its dry run), and its exit status.
fn perf_dry_run(bin: &Path, spec: &str) -> (Option<i32>, Vec<String>, String) {
    let out = std::process::Command::new("perf")
        .args(["probe", "-n", "-v", "-x"])
        .arg(bin)
        .arg(spec)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines = err
        .lines()
        .filter_map(|l| l.strip_prefix("Writing event: "))
        .map(str::to_owned)
        .collect();
    (out.status.code(), lines, err)
}

fn defs(group: &str) -> Vec<String> {
    std::fs::read_to_string(EVENTS)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&format!(":{group}/")))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_variable_missing_at_some_addresses_gets_perfs_magic_value() {
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    if !Path::new(EVENTS).exists() {
        skip("no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS, tracefs mounted)");
        return;
    }
    let readme = std::fs::read_to_string("/sys/kernel/tracing/README").unwrap_or_default();
    if !readme.contains("\\imm-value") {
        skip("this kernel's probe syntax has no immediates (perf refuses the probe instead)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path(), "pkmiss") else {
        skip("no C compiler (cc)");
        return;
    };
    let group = format!(
        "probe_{}",
        bin.file_name().unwrap().to_string_lossy().into_owned()
    );
    let _clean = Cleanup(group.clone());
    for spec in ["pkm_h z", "pkm_h q z:x32", "pkm_h q"] {
        let (pc, intended, perr) = perf_dry_run(&bin, spec);
        assert_eq!(pc, Some(0), "{spec}: perf -n: {perr}");
        let out = perfkit()
            .args(["probe", "-q", "-x"])
            .arg(&bin)
            .arg(spec)
            .output()
            .unwrap();
        assert!(out.status.success(), "{spec}: {out:?}");
        let ours = parse_defs(&defs(&group));
        // `-l` of the three copies: perf's order (its sorted definition lines) and
        // names (a copy's entry on its caller's declaration line is `FUNC@FILE`).
        let listed = |cmd: &mut assert_cmd::Command| -> Vec<String> {
            String::from_utf8_lossy(&run_ok(cmd.args(["probe", "-l"])).stdout)
                .lines()
                .filter(|l| l.contains(&group))
                .map(str::to_owned)
                .collect()
        };
        let perf_l = listed(&mut assert_cmd::Command::new("perf"));
        assert_eq!(perf_l.len(), 3, "{spec}: {perf_l:?}");
        assert_eq!(listed(&mut perfkit()), perf_l, "{spec}: probe -l");
        run_ok(
            perfkit()
                .args(["probe", "-q", "-d"])
                .arg(format!("{group}:*")),
        );
        // perf's lines with its `\deade12d` written as the kernel takes it.
        let mut theirs: Vec<(u64, Vec<String>)> = parse_defs(&intended)
            .into_iter()
            .map(|(o, args)| {
                let args = args
                    .into_iter()
                    .map(|a| a.replace("=\\deade12d", "=\\0xdeade12d"))
                    .collect();
                (o, args)
            })
            .collect();
        let mut ours_sorted = ours.clone();
        theirs.sort();
        ours_sorted.sort();
        assert_eq!(ours_sorted, theirs, "{spec}");
        assert_eq!(ours.len(), 3, "{spec}: three copies of pkm_h: {ours:?}");
        let filled = ours
            .iter()
            .filter(|(_, a)| a.iter().any(|x| x.contains("\\0xdeade12d")))
            .count();
        if spec.contains('z') {
            // z lives in one copy: the other two get the magic value, typed as found.
            assert!((1..3).contains(&filled), "{spec}: {ours:?}");
            let want = if spec.contains(":x32") {
                ":x32"
            } else {
                ":s32"
            };
            assert!(
                ours.iter()
                    .flat_map(|(_, a)| a)
                    .filter(|x| x.starts_with("z="))
                    .all(|x| x.ends_with(want)),
                "{spec}: {ours:?}"
            );
        } else {
            assert_eq!(filled, 0, "{spec}");
        }
    }
    // perf itself writes `\deade12d`, which this kernel refuses.
    let refused = std::process::Command::new("perf")
        .args(["probe", "-x"])
        .arg(&bin)
        .arg("pkm_h z")
        .output()
        .unwrap();
    let perr = String::from_utf8_lossy(&refused.stderr);
    if refused.status.success() {
        eprintln!("note: this kernel took perf's `\\deade12d`");
    } else {
        assert!(perr.contains("Invalid argument"), "{perr}");
    }
    let _ = perfkit()
        .args(["probe", "-q", "-d"])
        .arg(format!("{group}:*"))
        .output();
    // A variable no copy has: both refuse it alike.
    let (pc, _, perr) = perf_dry_run(&bin, "pkm_h nosuch");
    let out = perfkit()
        .args(["probe", "-x"])
        .arg(&bin)
        .arg("pkm_h nosuch")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), pc);
    let ours = String::from_utf8_lossy(&out.stderr);
    assert!(
        perr.contains(ours.lines().next().unwrap_or("?")),
        "perf: {perr}\nperfkit: {ours}"
    );
    assert!(defs(&group).is_empty());
}

#[test]
fn a_recorded_probe_holds_the_magic_value_where_the_variable_is_missing() {
    if !Path::new(EVENTS).exists() {
        skip("no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS, tracefs mounted)");
        return;
    }
    let readme = std::fs::read_to_string("/sys/kernel/tracing/README").unwrap_or_default();
    if !readme.contains("\\imm-value") {
        skip("this kernel's probe syntax has no immediates");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path(), "pkmissrec") else {
        skip("no C compiler (cc)");
        return;
    };
    let group = format!(
        "probe_{}",
        bin.file_name().unwrap().to_string_lossy().into_owned()
    );
    let _clean = Cleanup(group.clone());
    run_ok(
        perfkit()
            .args(["probe", "-q", "-x"])
            .arg(&bin)
            // Its own event name: perf takes a name as used whatever the group.
            .arg("pkmrec=pkm_h q z:x32"),
    );
    let data = dir.path().join("miss.data");
    let rec = perfkit()
        .args(["record", "-q", "-o"])
        .arg(&data)
        .args(["-e", &format!("{group}:pkmrec"), "--"])
        .arg(&bin)
        .arg("4")
        .output()
        .unwrap();
    assert!(rec.status.success(), "{rec:?}");
    let script =
        String::from_utf8(run_ok(perfkit().arg("script").arg("-i").arg(&data)).stdout).unwrap();
    let values: Vec<&str> = script
        .lines()
        .filter_map(|l| l.split_once(") ").map(|x| x.1))
        .collect();
    // Three copies run per loop turn (pkm_a's, and pkm_b's two), four turns.
    assert_eq!(values.len(), 12, "{script}");
    let magic = values
        .iter()
        .filter(|v| v.ends_with("z_x32=0xdeade12d"))
        .count();
    assert!((4..12).contains(&magic) && magic % 4 == 0, "{script}");
    // Where z lives, it holds q * w: the values are the program's, not the magic one.
    assert!(
        values
            .iter()
            .filter(|v| !v.ends_with("0xdeade12d"))
            .all(|v| v.starts_with("q=") && v.contains(" z_x32=0x")),
        "{script}"
    );
}
