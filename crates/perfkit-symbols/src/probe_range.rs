//! `perf probe -L`'s line ranges: `FUNC[@FILE][:RLN[+NUM|-RLN2]]` (lines relative to the
//! function's declaration line, numbered that way) and `FILE[:LINE[+NUM|-LINE2]]`
//! (absolute lines), listed as perf 6.1 lists them: the lines that begin a statement
//! numbered, the others indented.

use crate::probe_lines::{DebugLines, FuncLines, tail_matches};
use std::collections::BTreeSet;

/// A parsed `-L` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRange {
    /// The function, for the function form.
    pub func: Option<String>,
    /// The source file (`FUNC@FILE`, or the file form).
    pub file: Option<String>,
    /// First line (relative to the function in the function form); 0 when not given.
    pub start: u32,
    /// Last line, inclusive, when given (`-END` or `+NUM`).
    pub end: Option<u32>,
}

impl LineRange {
    /// Parse perf's syntax; the message says what is wrong, in perf's words where perf
    /// has some.
    pub fn parse(spec: &str) -> Result<LineRange, String> {
        let (name, range) = match spec.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (spec, None),
        };
        let num = |s: &str| -> Result<u32, String> {
            s.parse()
                .map_err(|_| format!("-L {spec}: `{s}` is not a line number"))
        };
        let (start, end) = match range {
            None => (0, None),
            Some(r) => {
                if let Some((a, b)) = r.split_once('+') {
                    let (a, n) = (num(a)?, num(b)?);
                    (a, Some((a + n).saturating_sub(1)))
                } else if let Some((a, b)) = r.split_once('-') {
                    (num(a)?, Some(num(b)?))
                } else {
                    (num(r)?, None)
                }
            }
        };
        if end.is_some_and(|e| e < start) {
            return Err("Semantic error :Start line must be smaller than end line.".into());
        }
        if name.is_empty() {
            return Err(format!("-L {spec}: give a function or a source file"));
        }
        let (func, file) = match name.split_once('@') {
            Some((f, file)) => (Some(f.to_string()), Some(file.to_string())),
            // perf: a name with a dot or a slash is a source file.
            None if name.contains(['.', '/']) => (None, Some(name.to_string())),
            None => (Some(name.to_string()), None),
        };
        Ok(LineRange {
            func,
            file,
            start,
            end,
        })
    }
}

/// What to list: the file to read, the header, and which lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeListing {
    /// The source file (as the DWARF names it).
    pub file: String,
    header: String,
    first: u32,
    last: Option<u32>,
    numbered: BTreeSet<u32>,
    number_base: u32,
}

impl DebugLines {
    /// The listing `range` asks for; `None` when its function or file has no lines here
    /// (perf: "Specified source line is not found.").
    pub fn range_listing(&self, range: &LineRange) -> Option<RangeListing> {
        let in_file = |f: &&FuncLines| range.file.as_ref().is_none_or(|p| tail_matches(&f.file, p));
        if let Some(name) = &range.func {
            let f = self
                .functions()
                .iter()
                .filter(in_file)
                .find(|f| &f.name == name)?;
            let last_listed = *f.listed.iter().next_back()?;
            let numbered: BTreeSet<u32> = f
                .listed
                .iter()
                .copied()
                .filter(|&l| l >= f.decl_line)
                .collect();
            return Some(RangeListing {
                file: f.file.clone(),
                header: format!("<{}@{}:{}>", f.name, f.file, range.start),
                first: f.decl_line + range.start,
                // Without an end: the function and the two lines after it, as perf.
                last: Some(range.end.map_or(last_listed + 3, |e| f.decl_line + e)),
                numbered,
                number_base: f.decl_line,
            });
        }
        let funcs: Vec<&FuncLines> = self.functions().iter().filter(in_file).collect();
        let file = funcs.first()?.file.clone();
        Some(RangeListing {
            header: format!("<{file}:{}>", range.start),
            numbered: funcs
                .iter()
                .filter(|f| f.file == file)
                .flat_map(|f| f.listed.iter().copied())
                .collect(),
            file,
            first: range.start.max(1),
            last: range.end,
            number_base: 0,
        })
    }
}

impl RangeListing {
    /// The listing of `source` (the text of [`file`](Self::file)).
    pub fn render(&self, source: &str) -> String {
        let mut out = format!("{}\n", self.header);
        for (i, text) in source.lines().enumerate() {
            let l = i as u32 + 1;
            if l < self.first {
                continue;
            }
            if self.last.is_some_and(|e| l > e) {
                break;
            }
            if self.numbered.contains(&l) {
                out.push_str(&format!("{:7}  {text}\n", l - self.number_base));
            } else {
                out.push_str(&format!("         {text}\n"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::LineRange;

    #[test]
    fn perfs_range_forms() {
        let r = |s: &str| LineRange::parse(s).unwrap();
        assert_eq!(
            r("main:1-3"),
            LineRange {
                func: Some("main".into()),
                file: None,
                start: 1,
                end: Some(3)
            }
        );
        assert_eq!(r("main:2+2").end, Some(3));
        assert_eq!(r("main:3").end, None);
        assert_eq!(r("work@t.c").file.as_deref(), Some("t.c"));
        let f = r("src/t.c:12+2");
        assert_eq!(
            (f.func, f.file.as_deref(), f.start, f.end),
            (None, Some("src/t.c"), 12, Some(13))
        );
        assert_eq!(
            LineRange::parse("work:4-2").unwrap_err(),
            "Semantic error :Start line must be smaller than end line."
        );
        assert!(LineRange::parse("main:x").is_err());
    }
}
