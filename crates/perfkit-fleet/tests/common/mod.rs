//! Helpers of perfkit-fleet's tests.
#![allow(dead_code)]

pub mod stores;

/// Skip with a printed reason; under `CI=true` (where the CI machine has what the test
/// needs) the skip fails instead.
pub fn skip(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and this test would skip: {reason}");
    }
    eprintln!("skipped: {reason}");
}
