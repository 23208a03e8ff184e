//! libpfm4 names: with `LIBPFM_FORCE_PMU=skl`, perfkit's encodings must equal what libpfm4
//! itself answers. The reference is a small C program (fixtures/pfm_encode.c) linked against
//! libpfm4 that calls `pfm_get_os_event_encoding(PFM_OS_PERF_EVENT)` directly; perfkit's side
//! runs in a child process of this test binary so the forced PMU applies from libpfm4's
//! initialization on. Skips (with the reason) where libpfm4 or its headers are missing, and
//! fails then under CI=true (.ci/run installs them).

mod common;

use std::path::PathBuf;
use std::process::Command;

const NAMES: &[&str] = &[
    "unhalted_reference_cycles",
    "unhalted_core_cycles",
    "instruction_retired",
    "inst_retired:any_p",
    "offcore_response_0:any_request",
    "cycle_activity:stalls_total",
    "mem_load_retired:l3_miss",
    "br_misp_retired:all_branches",
];

const CHILD: &str = "PERFKIT_PFM_ENCODE_CHILD";

/// In the child: print perfkit's encoding of each name, one line each, as the C program does.
#[test]
fn pfm_child_encodes() {
    if std::env::var_os(CHILD).is_none() {
        return; // Only meaningful as the child of `encodings_match_libpfm4_under_forced_skl`.
    }
    let env = perfkit_events::Env::system();
    for n in NAMES {
        match env.parse(n) {
            Ok(list) => {
                let a = list.groups[0].members[0].attr;
                // C's %#llx: 0 prints as "0".
                let hex = |v: u64| {
                    if v == 0 {
                        "0".into()
                    } else {
                        format!("{v:#x}")
                    }
                };
                println!(
                    "ENC {n} type={} config={} config1={}",
                    a.type_,
                    hex(a.config),
                    hex(a.config1)
                );
            }
            Err(e) => println!("ENC {n} error {}", e.message),
        }
    }
}

fn c_reference() -> Result<PathBuf, String> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pfm_encode.c");
    let out = std::env::temp_dir().join(format!("perfkit-pfm-encode-{}", std::process::id()));
    let st = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .arg("-lpfm")
        .output()
        .map_err(|e| format!("no C compiler: {e}"))?;
    if !st.status.success() {
        return Err(format!(
            "cannot build the libpfm4 reference (install libpfm4-dev): {}",
            String::from_utf8_lossy(&st.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ));
    }
    Ok(out)
}

fn lines(out: &[u8], prefix: &str) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter_map(|l| {
            l.find(prefix)
                .map(|i| l[i + prefix.len()..].trim().to_string())
        })
        .collect()
}

#[test]
fn encodings_match_libpfm4_under_forced_skl() {
    let reference = match c_reference() {
        Ok(p) => p,
        Err(why) => {
            common::skip(&why);
            return;
        }
    };
    let theirs = Command::new(&reference)
        .args(NAMES)
        .env("LIBPFM_FORCE_PMU", "skl")
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&reference);
    assert!(theirs.status.success(), "{theirs:?}");
    let theirs: Vec<String> = String::from_utf8_lossy(&theirs.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let ours = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "pfm_child_encodes",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LIBPFM_FORCE_PMU", "skl")
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(ours.status.success(), "{ours:?}");
    let ours = lines(&ours.stdout, "ENC ");
    assert_eq!(ours.len(), NAMES.len(), "{ours:?}");
    assert_eq!(ours, theirs);
    // The named case, spelled out: Skylake's reference cycles are event 0x00,
    // umask 0x03 on the core PMU's raw type.
    assert_eq!(
        ours[0],
        "unhalted_reference_cycles type=4 config=0x300 config1=0"
    );
}
