//! An interactive SVG flamegraph (click to zoom, Ctrl-F to search), drawn by `inferno`.
//!
//! The picture is made for its first screen: stacks deeper than [`Options::max_depth`]
//! boxes keep their root side and their leaf, with the frames between folded into one
//! `… N frames` box, so one runaway stack (a garbage frame-pointer walk of 127 frames)
//! cannot push the hot frames below the fold of a 1000-pixel-high window. Frames are
//! coloured by kind as FlameGraph's and inferno's `--color=java` do (kernel orange, JIT and
//! interpreted code green, inlined aqua, user code warm red/yellow), and the title says the
//! event, the number of samples and the command. With off-CPU time (`record --off-cpu`)
//! each event is a tower under a root box of its name, counted in nanoseconds
//! ([`super::weight`]).

use super::folded::{FoldOptions, lines_with};
use crate::Profile;
use inferno::flamegraph::color::{Color, MultiPalette, PaletteMap};
use inferno::flamegraph::{Direction, Palette};
use std::io::{self, Write};

/// The default bound on drawn depth: the picture is then at most 51 × 16 + 94 = 910 pixels
/// high (inferno's 16-pixel frames, title and footer).
pub const DEFAULT_MAX_DEPTH: usize = 50;

/// How to draw.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The title (default: [`default_title`]).
    pub title: Option<String>,
    /// A line under the title (default: the recorded command line, when the file has it).
    pub subtitle: Option<String>,
    /// Icicle graph: roots at the top, stacks growing down.
    pub inverted: bool,
    /// Bound on the boxes drawn per stack, the comm box included (0: none).
    pub max_depth: usize,
    /// Width in pixels (inferno's default, 1200, when `None`).
    pub width: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            title: None,
            subtitle: None,
            inverted: false,
            max_depth: DEFAULT_MAX_DEPTH,
            width: None,
        }
    }
}

/// `cpu-clock: 1234 samples of workload`: the event (the events with samples, when there
/// are several: `cpu-clock, offcpu-time: ...`), the number of samples, and the command with
/// the most samples.
pub fn default_title(p: &Profile) -> String {
    let event = if super::weight::Weights::of(p).several() {
        let mut seen = vec![false; p.events.len()];
        for s in &p.samples {
            if let Some(x) = seen.get_mut(s.event as usize) {
                *x = true;
            }
        }
        p.events
            .iter()
            .zip(seen)
            .filter(|(_, seen)| *seen)
            .map(|(e, _)| e.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        p.events
            .first()
            .map_or("samples", |e| e.name.as_str())
            .to_string()
    };
    let n: u64 = p.samples.iter().map(|s| u64::from(s.count)).sum();
    let unit = if n == 1 { "sample" } else { "samples" };
    match p.main_command() {
        Some(cmd) => format!("{event}: {n} {unit} of {cmd}"),
        None => format!("{event}: {n} {unit}"),
    }
}

/// Write the flamegraph of `p` as SVG.
pub fn write_with(p: &Profile, opts: &Options, w: impl Write) -> io::Result<()> {
    let fold = FoldOptions {
        annotate: true,
        max_depth: opts.max_depth,
    };
    let lines = lines_with(p, &fold);
    if lines.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the profile has no samples to draw",
        ));
    }
    // User code in FlameGraph's warm "hot" colours, by name (the Java palette would call a
    // versioned `memcpy@@GLIBC_2.14` Java for its dot); annotated frames get the palette's
    // kernel, JIT and inline colours.
    let mut palette = PaletteMap::default();
    for line in &lines {
        let stack = line.rsplit_once(' ').map_or(line.as_str(), |(s, _)| s);
        for name in stack.split(';') {
            if !is_annotated(name) && palette.get(name).is_none() {
                palette.insert(name, warm(name));
            }
        }
    }
    let mut fo = inferno::flamegraph::Options::default();
    fo.palette_map = Some(&mut palette);
    fo.title = opts.title.clone().unwrap_or_else(|| default_title(p));
    fo.subtitle = opts.subtitle.clone().or_else(|| {
        p.meta
            .iter()
            .find(|(k, _)| k == "cmdline")
            .map(|(_, v)| format!("recorded with: {v}"))
    });
    fo.count_name = super::weight::Weights::of(p).unit(p).to_string();
    fo.colors = Palette::Multi(MultiPalette::Java);
    // The same function gets the same colour in every picture.
    fo.hash = true;
    if opts.inverted {
        fo.direction = Direction::Inverted;
    }
    fo.image_width = opts.width;
    inferno::flamegraph::from_lines(&mut fo, lines.iter().map(String::as_str), w)
        .map_err(io::Error::other)
}

fn is_annotated(name: &str) -> bool {
    ["_[k]", "_[j]", "_[i]"].iter().any(|a| name.ends_with(a))
}

/// A warm colour (red to yellow) that depends only on the name.
fn warm(name: &str) -> Color {
    // FNV-1a, then three fractions of the hash.
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let frac = |shift: u32| ((h >> shift) & 0xff) as f32 / 255.0;
    Color {
        r: 205 + (50.0 * frac(0)) as u8,
        g: (230.0 * frac(8)) as u8,
        b: (55.0 * frac(16)) as u8,
    }
}

/// Write the flamegraph of `p` as SVG, titled `title`, with the default [`Options`].
pub fn write(p: &Profile, title: &str, w: impl Write) -> io::Result<()> {
    let opts = Options {
        title: Some(title.to_string()),
        ..Options::default()
    };
    write_with(p, &opts, w)
}

#[cfg(test)]
mod tests {
    use crate::model::testing::sample_profile;

    #[test]
    fn svg_names_hot_functions() {
        let mut out = Vec::new();
        super::write(&sample_profile(), "test", &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(
            svg.contains("hot_loop (70 samples, 70.00%)"),
            "{}",
            &svg[..500]
        );
        assert!(svg.contains("<script"), "interactive script included");
        // Kernel frames drawn without their annotation, in the kernel's orange.
        assert!(svg.contains("do_syscall_64 (10 samples"), "{svg}");
        assert!(!svg.contains("_[k]"));
    }

    #[test]
    fn deep_stacks_are_cut_and_titled() {
        let mut p = sample_profile();
        // One sample with a 127-frame stack.
        let f = p.frames.len() as u32 - 1;
        let deep = p.stack_from_root(std::iter::repeat_n(f, 127));
        let mut s = p.samples[0];
        s.stack = deep;
        p.samples.push(s);
        let mut out = Vec::new();
        super::write_with(&p, &super::Options::default(), &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        let height: usize = svg
            .split("height=\"")
            .nth(1)
            .and_then(|h| h.split('"').next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(height <= 1000, "SVG is {height} px high");
        assert!(
            svg.contains("\u{2026} 79 frames"),
            "the cut box counts the frames"
        );
        assert!(svg.contains("cpu-clock: 101 samples of app"));
        let o = super::Options {
            inverted: true,
            ..super::Options::default()
        };
        let mut out = Vec::new();
        super::write_with(&p, &o, &mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("hot_loop"));
    }

    #[test]
    fn off_cpu_time_is_drawn_in_nanoseconds_under_its_event() {
        let p = crate::model::testing::off_cpu_profile();
        let mut out = Vec::new();
        super::write_with(&p, &super::Options::default(), &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        assert!(
            svg.contains("cpu-clock, offcpu-time: 101 samples of app"),
            "{}",
            &svg[..2000]
        );
        assert!(svg.contains("offcpu-time (5,000,000 ns"), "{svg}");
        assert!(svg.contains("cpu-clock (25,000,000 ns"), "{svg}");
    }
}
