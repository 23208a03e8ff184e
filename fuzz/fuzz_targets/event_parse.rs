//! The event parser on arbitrary strings, against the fixture machine of
//! `perfkit_events::fixture` (a `cpu` PMU with overlapping formats, uncore aliases with
//! scale and unit, msr, power, uprobe, tracefs): no panic, errors that point inside the
//! input, and names that parse back to the same event.
#![no_main]

use libfuzzer_sys::fuzz_target;
use perfkit_events::{Env, fixture};
use std::sync::OnceLock;

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("perfkit-fuzz-{}", std::process::id()));
        fixture::standard(&root).expect("fixture tree");
        fixture::env(&root)
    })
}

fuzz_target!(|data: &[u8]| {
    let input = String::from_utf8_lossy(data);
    if let Err(broken) = fixture::check_input(env(), &input) {
        panic!("{broken}");
    }
});
