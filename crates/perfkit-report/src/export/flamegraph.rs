//! An interactive SVG flamegraph (click to zoom, Ctrl-F to search), drawn by `inferno`.

use crate::Profile;
use std::io::{self, Write};

/// Write the flamegraph of `p` as SVG, titled `title`.
pub fn write(p: &Profile, title: &str, w: impl Write) -> io::Result<()> {
    let lines = super::folded::lines(p);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = super::weight::Weights::of(p).unit(p).to_string();
    if lines.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the profile has no samples to draw",
        ));
    }
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), w)
        .map_err(io::Error::other)
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
    }
}
