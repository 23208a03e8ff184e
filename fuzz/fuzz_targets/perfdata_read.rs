//! The perf.data reader on arbitrary bytes (file and pipe mode): no panic, and no
//! allocation sized by a length field read off the file (libFuzzer's `-rss_limit_mb` and
//! `-malloc_limit_mb` turn one into a crash).
#![no_main]

use libfuzzer_sys::fuzz_target;
use perfkit_data::{Item, PerfData};

fuzz_target!(|data: &[u8]| {
    let Ok(d) = PerfData::from_bytes(data.to_vec()) else {
        return;
    };
    let mut n = 0usize;
    let _ = d.for_each(
        |i| {
            if let Item::Event { record, .. } = i {
                n += format!("{:?}", record.record).len();
            }
        },
        |_| {},
    );
    let _ = d.walk(|_, _, _, _| Ok(()));
    let _ = format!("{:?} {:?}", d.features, d.attrs);
    std::hint::black_box(n);
});
