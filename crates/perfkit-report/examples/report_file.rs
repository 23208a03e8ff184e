//! Load a perf.data file (perfkit's or perf's) and print perf's `report --stdio
//! --no-children -g none` table from the profile model.
//!
//! `cargo run -p perfkit-report --example report_file -- perf.data`

use perfkit_report::report::{self, GraphMode, ReportOptions};
use perfkit_report::{LoadOptions, load};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os()
        .nth(1)
        .unwrap_or_else(|| "perf.data".into());
    let file = perfkit_report::load::open(path.as_ref())?;
    let (profile, diag) = load(&file, &LoadOptions::default())?;
    for w in &diag.warnings {
        eprintln!("warning: {w}");
    }
    let opts = ReportOptions {
        children: false,
        graph: GraphMode::None,
        ..ReportOptions::default()
    };
    let sections = report::build(&profile, &opts);
    print!("{}", report::render(&profile, &sections, &opts));
    if let Some(e) = diag.error {
        // A truncated file: the report above shows what was read before it.
        return Err(e.into());
    }
    Ok(())
}
