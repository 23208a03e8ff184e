//! Fuzz-style: random mutations of real perf.data files (the fixtures) never make the
//! reader panic, and never make it allocate more than the input could justify: a global
//! allocator records the largest single allocation, which must stay far below what a
//! size field read off the file (up to 2^64) could ask for.

use perfkit_data::{Item, PerfData};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Peak;
static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only records the largest size.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LARGEST.fetch_max(n, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Peak = Peak;

/// xorshift64*: deterministic, so a failure reproduces from its iteration number.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, b: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            return;
        }
        let at = rng.below(b.len());
        match rng.below(6) {
            0 => b[at] = rng.next() as u8,
            1 => b[at] ^= 1 << rng.below(8),
            // A size-like field: all ones, huge, or small.
            2 => {
                let v: u64 = [u64::MAX, 1 << 40, 0, 7, 0xffff][rng.below(5)];
                let end = (at + 8).min(b.len());
                let n = end - at;
                b[at..end].copy_from_slice(&v.to_le_bytes()[..n]);
            }
            3 => b.truncate(at),
            4 => {
                let n = rng.below(64).min(b.len() - at);
                b.drain(at..at + n);
            }
            _ => {
                let n = rng.below(64);
                let fill = rng.next() as u8;
                b.splice(at..at, std::iter::repeat_n(fill, n));
            }
        }
    }
}

/// Everything a user of the reader would do with a file.
fn exercise(bytes: Vec<u8>) -> usize {
    let Ok(d) = PerfData::from_bytes(bytes) else {
        return 0;
    };
    let mut n = 0;
    let _ = d.for_each(
        |i| {
            if let Item::Event { record, .. } = i {
                n += 1;
                std::hint::black_box(format!("{:?}", record.record).len());
            }
        },
        |_| {},
    );
    let _ = d.walk(|_, _, _, _| Ok(()));
    n
}

#[test]
fn random_mutations_never_panic_nor_allocate_unboundedly() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let names = [
        "plain",
        "callchain",
        "zstd",
        "two-events",
        "tracepoint",
        "pipe",
    ];
    let iterations: usize = std::env::var("PERFKIT_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut read_some = 0;
    for i in 0..iterations {
        let name = names[i % names.len()];
        let mut b = std::fs::read(dir.join(format!("{name}.data"))).unwrap();
        mutate(&mut rng, &mut b);
        let len = b.len();
        LARGEST.store(0, Ordering::Relaxed);
        if exercise(b) > 0 {
            read_some += 1;
        }
        let largest = LARGEST.load(Ordering::Relaxed);
        // The read buffer is 256 KiB, zstd's window a few MiB; the inputs are < 20 KiB.
        assert!(
            largest <= 16 << 20,
            "iteration {i} ({name}, {len} bytes): an allocation of {largest} bytes"
        );
    }
    // Most single mutations leave most of a file readable: the test exercised the decoders.
    assert!(read_some > iterations / 4, "{read_some} of {iterations}");
}
