//! Record a command into a perf.data file that perf and perfkit read, as `perfkit record
//! -F 999 -g -o FILE -- COMMAND` does.
//!
//! `cargo run -p perfkit-engine --example record_command -- /tmp/ls.data ls -l /`
//! then `perf report -i /tmp/ls.data` (or `perfkit report -i /tmp/ls.data`).

use perfkit_data::{PerfDataWriter, WriteOptions};
use perfkit_engine::sampling::{CallGraph, Sampling, SamplingOptions, sampling_attrs};
use perfkit_engine::{OpenOptions, Place, Recorder, Workload};
use std::ffi::OsString;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let output = args.next().unwrap_or_else(|| "perf.data".into());
    let mut command: Vec<OsString> = args.collect();
    if command.is_empty() {
        command = vec!["ls".into(), "-l".into(), "/".into()];
    }
    // cycles where the machine has a PMU, cpu-clock where it does not (OpenOptions).
    let mut specs = perfkit_engine::parse(&["cycles".to_string()])?;
    let child = Workload::prepare(&command)?;
    sampling_attrs(
        &mut specs,
        &SamplingOptions {
            sampling: Sampling::Freq(999),
            call_graph: CallGraph::Fp,
            ..SamplingOptions::default()
        },
    );
    // One ring per CPU: the command's events, on every online CPU.
    let places: Vec<Place> = perfkit_engine::cpus(None)?
        .into_iter()
        .map(|cpu| Place::thread_on_cpu(child.pid(), cpu))
        .collect();
    let opts = OpenOptions {
        cycles_fallback: true,
        inherit: true,
        enable_on_exec: true,
        ..OpenOptions::default()
    };
    let opened = perfkit_engine::open(&specs, &places, &opts).require_all()?;
    for note in &opened.notes {
        eprintln!("note: {note}");
    }
    let mut recorder = Recorder::new(opened, 64)?;
    let mut w = PerfDataWriter::create(
        output.as_ref(),
        recorder.file_events(),
        WriteOptions::default(),
    )?;
    recorder.write_preamble(&mut w, &[])?;
    let stop = recorder.stopper();
    let workload = Workload::start(child, move |_| stop.stop())?;
    let stats = recorder.run(&mut w)?;
    let bytes = w.finish(&[])?;
    let status = workload.wait_timeout(std::time::Duration::from_secs(5));
    println!(
        "{:?}: {} samples ({} records, {} lost) in {} bytes; command {:?}",
        output,
        stats.samples,
        stats.records,
        stats.lost,
        bytes,
        status.map(|s| s.0)
    );
    Ok(())
}
