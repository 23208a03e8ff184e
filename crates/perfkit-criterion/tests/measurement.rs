//! A criterion bench measured with `PerfMeasurement`: its per-iteration task-clock (the only
//! CPU event this PMU-less machine has) agrees with the thread's task-clock measured around
//! single calls of the same routine; and bad events are errors.

use criterion::Criterion;
use perfkit::{Attr, Counter, Software, Target};
use perfkit_criterion::{Error, PerfMeasurement};
use std::hint::black_box;
use std::time::Duration;

fn work() -> u64 {
    (0..20_000u64)
        .map(black_box)
        .fold(0, |a, b| a ^ b.wrapping_mul(31))
}

/// The median task-clock of one call of `work`, measured directly.
fn direct_median() -> f64 {
    let c = Counter::open(&Attr::new(Software::TaskClock), &Target::this_thread()).unwrap();
    c.enable().unwrap();
    let mut v: Vec<u64> = (0..60)
        .map(|_| {
            let a = c.read().unwrap().value;
            black_box(work());
            c.read().unwrap().value - a
        })
        .collect();
    v.sort();
    v[v.len() / 2] as f64
}

#[test]
fn task_clock_per_iteration_is_the_routines_cpu_time() {
    let dir = tempfile::tempdir().unwrap();
    let m = PerfMeasurement::new("task-clock").unwrap();
    assert_eq!(m.event(), "task-clock");
    assert!(m.note().is_none());
    let mut c = Criterion::default()
        .with_measurement(m)
        .output_directory(dir.path())
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(800))
        .without_plots();
    c.bench_function("work", |b| b.iter(work));
    let est: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("work/new/estimates.json")).unwrap())
            .unwrap();
    let per_iter = est["mean"]["point_estimate"].as_f64().unwrap();
    let direct = direct_median();
    // Both are CPU time of this thread (not wall time): a loaded machine stretches neither
    // much. Criterion's mean also carries its loop and outliers, hence the wide bounds.
    assert!(
        per_iter > direct * 0.5 && per_iter < direct * 2.0,
        "criterion says {per_iter:.0} ns/iteration, a direct task-clock read {direct:.0} ns"
    );
}

#[test]
fn bad_events_are_errors_and_no_pmu_falls_back_with_a_note() {
    assert!(matches!(
        PerfMeasurement::new("no-such-event"),
        Err(Error::Parse(_))
    ));
    let e = PerfMeasurement::new("task-clock,page-faults").unwrap_err();
    assert!(matches!(e, Error::NotOneEvent(_)), "{e}");
    assert!(e.to_string().contains("exactly one event"));
    let m = PerfMeasurement::instructions_or_task_clock();
    match PerfMeasurement::instructions() {
        Ok(_) => assert_eq!((m.event(), m.note()), ("instructions", None)),
        Err(e) => {
            assert!(matches!(e, Error::Open(_)), "{e}");
            assert_eq!(m.event(), "task-clock");
            assert!(
                m.note()
                    .unwrap()
                    .contains("instructions cannot be measured here")
            );
        }
    }
}
