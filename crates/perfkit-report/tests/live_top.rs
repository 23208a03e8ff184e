//! `perfkit top`'s live path (samples folded as they come, each thread's table of where
//! its samples land, the view's rows kept between refreshes) shows what the plain builder
//! shows of the same real samples: a perf recording of a shell that runs short-lived
//! processes (new maps, new addresses, exits) and then a busy loop, fed to both, aged and
//! cleared at the same points, and compared view by view.

use perfkit_data::{Item, PerfData};
use perfkit_report::load::{LoadOptions, Loader};
use perfkit_report::report::SortKey;
use perfkit_report::top::{Live, View, ViewOptions, view, view_live};
use std::process::Command;

fn skip(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and this test would skip: {reason}");
    }
    eprintln!("skipped: {reason}");
}

/// Rows of equal weight may come in another order (first seen against the time the
/// plain decay sorts by): compare them by weight, then keys.
fn norm(mut v: View) -> View {
    v.rows
        .sort_by(|a, b| b.overhead.total_cmp(&a.overhead).then(a.keys.cmp(&b.keys)));
    v
}

const SORTS: &[&[SortKey]] = &[
    &[SortKey::Dso, SortKey::Sym],
    &[SortKey::Sym],
    &[SortKey::Pid, SortKey::Sym],
    &[SortKey::Cpu],
    &[SortKey::Dso],
];

/// Feed every record of `file` to a loader (live: as `perfkit top` makes it), aging the
/// samples every `every` samples (clearing them instead every fifth time), and take the views at each
/// of those points (with the live view's kept state when `live`).
fn views(file: &PerfData, live: bool, every: usize) -> (Vec<Vec<View>>, usize) {
    let mut loader = Loader::for_file(file, &LoadOptions::default());
    loader.cache_symbol_ranges();
    if live {
        loader.fold_live();
    }
    let mut states: Vec<Live> = SORTS.iter().map(|_| Live::default()).collect();
    let mut out = Vec::new();
    let mut samples = 0usize;
    let mut take = |loader: &mut Loader, out: &mut Vec<Vec<View>>| {
        let p = loader.profile();
        let mut row = Vec::new();
        for (sort, state) in SORTS.iter().zip(&mut states) {
            let opts = ViewOptions {
                sort: sort.to_vec(),
                ..ViewOptions::default()
            };
            let v = if live {
                let v = norm(view_live(p, &opts, state));
                assert_eq!(v, norm(view(p, &opts)), "{sort:?}: kept state vs fresh");
                v
            } else {
                norm(view(p, &opts))
            };
            row.push(v);
        }
        out.push(row);
    };
    file.for_each(
        |item| {
            let sample = matches!(
                &item,
                Item::Event { record, .. }
                    if matches!(record.record, perfkit_records::Record::Sample(_))
            );
            loader.item(item);
            if sample {
                samples += 1;
                if samples % every == 0 {
                    take(&mut loader, &mut out);
                    if out.len() % 5 == 0 {
                        // `top -z`.
                        loader.clear_samples();
                    } else {
                        // Much harsher than top's 7/8: entries not sampled again go
                        // within three agings (and the others move).
                        loader.decay_samples(1, 50);
                    }
                }
            }
        },
        |_| {},
    )
    .unwrap();
    take(&mut loader, &mut out);
    (out, samples)
}

#[test]
fn live_path_shows_what_the_plain_builder_shows_of_real_samples() {
    if Command::new("perf").arg("--version").output().is_err() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    // Short-lived processes (each its own maps at its own addresses, then an exit) and a
    // busy shell loop, each followed into its children.
    let script = "i=0; while [ $i -lt 150 ]; do /bin/true; i=$((i+1)); done; \
                  j=0; while [ $j -lt 200000 ]; do j=$((j+1)); done";
    let out = Command::new("perf")
        .args(["record", "-q", "-F", "10000", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("ermission") || err.contains("Access to performance monitoring") {
            return skip(&format!("perf record is not allowed here: {err}"));
        }
        panic!("perf record failed: {err}");
    }
    let file = PerfData::open(&data).unwrap();
    let (live, n) = views(&file, true, 100);
    let (plain, n2) = views(&file, false, 100);
    assert_eq!(n, n2);
    // The shell loops run for a good part of a second on a CPU (at 10 kHz, or at the
    // kernel's lowered perf_event_max_sample_rate): several agings and clears.
    assert!(n >= 400, "only {n} samples");
    assert_eq!(live.len(), plain.len());
    let mut pids = std::collections::HashSet::new();
    for (i, (l, p)) in live.iter().zip(&plain).enumerate() {
        for ((lv, pv), sort) in l.iter().zip(p).zip(SORTS) {
            assert_eq!(lv, pv, "view {i} of {}, sorted by {sort:?}", live.len());
        }
        for r in &p[2].rows {
            pids.insert(r.keys[0].clone());
        }
    }
    // Many processes came and went, each seen by both.
    assert!(pids.len() >= 20, "{} threads: {pids:?}", pids.len());
}

#[inline(never)]
fn marker() -> u64 {
    std::hint::black_box(marker as *const () as usize as u64)
}

/// A builder fed this process's maps and name; live as `perfkit top` makes it, or plain.
fn builder(live: bool) -> perfkit_report::build::Builder {
    use perfkit_report::build::{Builder, Input};
    let mut b = Builder::new(
        vec![perfkit_report::EventDesc {
            name: "cpu-clock".into(),
            callchain: false,
            trace: None,
        }],
        perfkit_symbols::Options::default(),
    );
    b.cache_symbol_ranges();
    if live {
        b.fold_live();
    }
    let pid = std::process::id() as i32;
    for m in perfkit_symbols::read_proc_maps(std::process::id())
        .unwrap()
        .iter()
    {
        b.push(Input::Mmap {
            pid,
            mapping: m.clone(),
        });
    }
    b.push(Input::Comm {
        pid,
        tid: pid,
        name: "tester".into(),
        exec: false,
        time: 1,
    });
    b
}

#[test]
fn a_new_mapping_under_a_sampled_address_moves_its_samples_as_in_the_plain_builder() {
    use perfkit_report::build::{Input, SampleInput};
    let pid = std::process::id() as i32;
    let ip = marker();
    let page = ip & !0xfff;
    let (mut live, mut plain) = (builder(true), builder(false));
    let mut state = Live::default();
    let opts = ViewOptions::default();
    for b in [&mut live, &mut plain] {
        let mut time = 10;
        let mut sample = |b: &mut perfkit_report::build::Builder, n: u64| {
            for i in 0..n {
                time += 1;
                b.push(Input::Sample(SampleInput {
                    event: 0,
                    pid,
                    tid: pid,
                    time,
                    cpu: Some((i % 2) as u32),
                    period: 1000 + i,
                    ip,
                    kernel: false,
                    callchain: &[],
                    user: None,
                    raw: None,
                    cgroup: 0,
                }));
            }
        };
        sample(b, 10);
        // Another file mapped over the sampled code (a new maps generation): the same
        // address is now somewhere else.
        b.push(Input::Mmap {
            pid,
            mapping: perfkit_symbols::Mapping {
                start: page,
                end: page + 0x1000,
                pgoff: 0,
                path: "/bin/true".into(),
                build_id: None,
            },
        });
        sample(b, 6);
    }
    let want = norm(view(plain.profile(), &opts));
    assert_eq!(norm(view_live(live.profile(), &opts, &mut state)), want);
    let dsos: Vec<&str> = want.rows.iter().map(|r| r.keys[0].as_str()).collect();
    assert_eq!(dsos.len(), 2, "{want:?}");
    assert!(dsos.contains(&"true"), "{dsos:?}");
    assert_eq!(
        want.rows.iter().map(|r| r.samples).collect::<Vec<_>>(),
        [10, 6]
    );
}
