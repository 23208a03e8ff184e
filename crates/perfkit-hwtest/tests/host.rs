//! On a machine without a hardware PMU (this one, CI) the hardware tests must say so and
//! skip, never crash or fail; on one with a PMU they must pass. The real run is in the
//! emulated arm64 guest (scripts/arm64-pmu-test.sh).

use std::process::Command;

#[test]
fn runs_on_the_host_and_skips_or_passes() {
    let out = Command::new(env!("CARGO_BIN_EXE_perfkit-hwtest"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("PASS ") || l.starts_with("SKIP ") || l.starts_with("FAIL "))
        .collect();
    assert!(results.len() >= 9, "{text}");
    assert!(!text.contains("\nFAIL "), "{text}");
    let no_pmu = !std::path::Path::new("/sys/bus/event_source/devices/cpu").exists()
        && !std::path::Path::new("/sys/bus/event_source/devices/armv8_pmuv3_0").exists();
    if no_pmu {
        // Each skip names the reason.
        for l in results.iter().filter(|l| l.starts_with("SKIP ")) {
            assert!(
                l.contains("not supported") || l.contains("arm64 guest"),
                "{l}"
            );
        }
    }
}

#[test]
fn spin_mode_and_bad_arguments() {
    let bin = env!("CARGO_BIN_EXE_perfkit-hwtest");
    let ok = Command::new(bin).args(["--spin", "1000"]).output().unwrap();
    assert!(ok.status.success() && ok.stdout.is_empty());
    let bad = Command::new(bin).args(["--spin", "x"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--spin needs a number"));
    let bad = Command::new(bin).arg("--frobnicate").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown argument"));
}
