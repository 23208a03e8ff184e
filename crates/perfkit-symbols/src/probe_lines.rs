//! Source lines of a binary's functions from its DWARF, for `perf probe`'s line forms:
//! `FUNC:RLN` (a line relative to the function's declaration line), `FILE:LINE`, and `-L`
//! (the lines of a function that have code, numbered as perf numbers them).
//!
//! As perf's `die_walk_lines`, only line-table rows that begin a statement (`is_stmt`) are
//! probe points, a function's rows are those inside its address ranges, and a line that
//! several rows begin is probed at each of their addresses.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use gimli::Reader as _;
use object::{Object, ObjectSection, ObjectSegment};

use crate::uprobe_events::ProbeError;

pub(crate) type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// A function with its source lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncLines {
    /// The function's name.
    pub name: String,
    /// Its source file, as the DWARF names it (compilation directory joined).
    pub file: String,
    /// `DW_AT_decl_line`: line 0 of `FUNC:RLN`.
    pub decl_line: u32,
    /// Lines of its file that begin a statement inside it, with their addresses (virtual
    /// addresses of the ELF file, ascending).
    pub lines: BTreeMap<u32, Vec<u64>>,
    /// Its address ranges.
    pub ranges: Vec<(u64, u64)>,
    /// The lines `-L` numbers: those whose code maps back to them (perf's
    /// `cu_find_lineinfo` check: the entry address belongs to the declaration line).
    pub listed: std::collections::BTreeSet<u32>,
    /// The line each address of the function maps back to (the entry address: the
    /// declaration line).
    pub back: BTreeMap<u64, u32>,
}

impl FuncLines {
    /// perf's check before probing `line` at `addrs`: an address that maps back to another
    /// line ("This line is sharing the address with other lines"); that line.
    pub fn shared_line(&self, line: u32, addrs: &[u64]) -> Option<u32> {
        addrs
            .iter()
            .filter_map(|a| self.back.get(a))
            .find(|&&l| l != line)
            .copied()
    }
}

/// The DWARF of one ELF file: its functions and their lines.
#[derive(Debug)]
pub struct DebugLines {
    funcs: Vec<FuncLines>,
    /// (virtual address, size, file offset) of each segment.
    segments: Vec<(u64, u64, u64)>,
}

fn binary_error(path: &Path, reason: impl Into<String>) -> ProbeError {
    ProbeError::Binary {
        path: path.into(),
        reason: reason.into(),
    }
}

impl DebugLines {
    /// Read the functions and line tables of ELF file `path`; an error when it has no
    /// DWARF (`perf probe` needs debuginfo for lines too).
    pub fn open(path: &Path) -> Result<DebugLines, ProbeError> {
        let data = std::fs::read(path).map_err(|e| binary_error(path, e.to_string()))?;
        let obj = object::File::parse(&*data).map_err(|e| binary_error(path, e.to_string()))?;
        let dwarf = load_dwarf(path, &obj)?;
        let funcs = read_funcs(&dwarf).map_err(|e| binary_error(path, format!("DWARF: {e}")))?;
        Ok(DebugLines {
            funcs,
            segments: obj
                .segments()
                .map(|s| (s.address(), s.size(), s.file_range().0))
                .collect(),
        })
    }

    /// Every function with its lines.
    pub fn functions(&self) -> &[FuncLines] {
        &self.funcs
    }

    /// The function named `name` (the first defined one).
    pub fn function(&self, name: &str) -> Option<&FuncLines> {
        self.funcs.iter().find(|f| f.name == name)
    }

    /// The function named `name` whose source file's path ends with `file` (`FUNC@FILE`),
    /// or the first of that name when `file` is `None`.
    pub fn function_in(&self, name: &str, file: Option<&str>) -> Option<&FuncLines> {
        self.funcs
            .iter()
            .find(|f| f.name == name && file.is_none_or(|t| tail_matches(&f.file, t)))
    }

    /// The function whose ranges hold `addr`.
    pub fn function_at(&self, addr: u64) -> Option<&FuncLines> {
        self.funcs
            .iter()
            .find(|f| f.ranges.iter().any(|&(lo, hi)| addr >= lo && addr < hi))
    }

    /// `FUNC:RLN`: the addresses of line `decl_line + rln` in `func` (empty: no code).
    pub fn relative_line(&self, func: &str, rln: u32) -> Option<Vec<u64>> {
        let f = self.function(func)?;
        Some(
            f.lines
                .get(&(f.decl_line + rln))
                .cloned()
                .unwrap_or_default(),
        )
    }

    /// `FILE:LINE`: the addresses that begin line `line` of the source file whose path
    /// ends with `file` (as perf's `strtailcmp`), with the function holding each.
    pub fn file_line(&self, file: &str, line: u32) -> Vec<(u64, &FuncLines)> {
        let mut out: Vec<(u64, &FuncLines)> = self
            .funcs
            .iter()
            .filter(|f| tail_matches(&f.file, file))
            .flat_map(|f| {
                f.lines
                    .get(&line)
                    .into_iter()
                    .flatten()
                    .map(move |&a| (a, f))
            })
            .collect();
        out.sort_by_key(|x| x.0);
        out.dedup_by_key(|x| x.0);
        out
    }

    /// The file offset of virtual address `addr` (what a uprobe takes).
    pub fn file_offset(&self, addr: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(a, size, _)| addr >= *a && addr < a + size)
            .map(|(a, _, off)| addr - a + off)
    }

    /// The virtual address of file offset `off`.
    pub fn address_of_offset(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(_, size, o)| off >= *o && off < o + size)
            .map(|(a, _, o)| off - o + a)
    }

    /// How perf describes probe address `addr` in `perf probe -l`: `FUNC@FILE` at the
    /// function's start, `FUNC:RLN@FILE` at one of its lines.
    pub fn describe(&self, addr: u64) -> Option<String> {
        let f = self.function_at(addr)?;
        if f.ranges.first().is_some_and(|r| r.0 == addr) {
            return Some(format!("{}@{}", f.name, f.file));
        }
        let line = f
            .lines
            .iter()
            .find(|(_, addrs)| addrs.contains(&addr))
            .map(|(l, _)| *l)?;
        Some(format!(
            "{}:{}@{}",
            f.name,
            line.saturating_sub(f.decl_line),
            f.file
        ))
    }
}

/// The DWARF sections of ELF file `obj` (read from `path`); an error when it has none.
pub(crate) fn load_dwarf(
    path: &Path,
    obj: &object::File<'_>,
) -> Result<gimli::Dwarf<Reader>, ProbeError> {
    if obj.section_by_name(".debug_info").is_none() {
        return Err(binary_error(
            path,
            "no debug information (.debug_info): build it with -g, or install its debug \
             package",
        ));
    }
    let endian = if obj.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
        let bytes: Arc<[u8]> = obj
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .map_or_else(|| Arc::from(&[][..]), |d| Arc::from(&*d));
        Ok(gimli::EndianArcSlice::new(bytes, endian))
    };
    gimli::Dwarf::load(load).map_err(|e| binary_error(path, e.to_string()))
}

/// perf's `strtailcmp`: `full` ends with `tail` (compared from the end).
pub(crate) fn tail_matches(full: &str, tail: &str) -> bool {
    full.ends_with(tail)
}

/// `-L FUNC`: perf's listing of `func`'s source (from `source`, the file's text): a
/// `<FUNC@FILE:0>` line, then from the declaration line every line, numbered relative to it
/// where code begins, up to the last such line and two more.
pub fn line_listing(f: &FuncLines, source: &str) -> String {
    let mut out = format!("<{}@{}:0>\n", f.name, f.file);
    let Some(&last) = f.listed.iter().next_back() else {
        return out;
    };
    let end = last + 1 + 2;
    for (i, text) in source.lines().enumerate() {
        let l = i as u32 + 1;
        if l < f.decl_line {
            continue;
        }
        if l > end {
            break;
        }
        if l <= last && f.listed.contains(&l) {
            out.push_str(&format!("{:7}  {text}\n", l - f.decl_line));
        } else {
            out.push_str(&format!("         {text}\n"));
        }
    }
    out
}

fn attr_string(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    v: gimli::AttributeValue<Reader>,
) -> Option<String> {
    let s = dwarf.attr_string(unit, v).ok()?;
    Some(s.to_string_lossy().ok()?.into_owned())
}

/// The path of file entry `index` of `unit`'s line program (compilation directory and
/// include directory joined, as the DWARF gives them).
fn file_path(
    dwarf: &gimli::Dwarf<Reader>,
    unit: &gimli::Unit<Reader>,
    index: u64,
) -> Option<String> {
    let program = unit.line_program.as_ref()?;
    let header = program.header();
    let entry = header.file(index)?;
    let name = attr_string(dwarf, unit, entry.path_name())?;
    let mut path = std::path::PathBuf::new();
    if let Some(comp) = &unit.comp_dir {
        path.push(comp.to_string_lossy().ok()?.as_ref());
    }
    if let Some(dir) = entry.directory(header)
        && let Some(d) = attr_string(dwarf, unit, dir)
    {
        path.push(d);
    }
    path.push(name);
    Some(path.to_string_lossy().into_owned())
}

fn read_funcs(dwarf: &gimli::Dwarf<Reader>) -> Result<Vec<FuncLines>, gimli::Error> {
    let mut funcs = Vec::new();
    let mut units = dwarf.units();
    while let Some(header) = units.next()? {
        let unit = dwarf.unit(header)?;
        // Rows of this unit: (file index, line, address, is_stmt).
        let mut rows: Vec<(u64, u32, u64, bool)> = Vec::new();
        if let Some(program) = unit.line_program.clone() {
            let mut state = program.rows();
            while let Some((_, row)) = state.next_row()? {
                if row.end_sequence() {
                    continue;
                }
                if let Some(line) = row.line() {
                    let stmt = row.is_stmt();
                    rows.push((row.file_index(), line.get() as u32, row.address(), stmt));
                }
            }
        }
        let mut paths: BTreeMap<u64, Option<String>> = BTreeMap::new();
        let mut entries = unit.entries();
        while let Some((_, e)) = entries.next_dfs()? {
            if e.tag() != gimli::DW_TAG_subprogram {
                continue;
            }
            let Some(name) = e
                .attr_value(gimli::DW_AT_name)?
                .and_then(|v| attr_string(dwarf, &unit, v))
            else {
                continue;
            };
            let mut ranges = Vec::new();
            let mut it = dwarf.die_ranges(&unit, e)?;
            while let Some(r) = it.next()? {
                if r.begin < r.end {
                    ranges.push((r.begin, r.end));
                }
            }
            if ranges.is_empty() {
                continue;
            }
            ranges.sort_unstable();
            let decl_line = match e.attr_value(gimli::DW_AT_decl_line)? {
                Some(gimli::AttributeValue::Udata(n)) => n as u32,
                Some(v) => v.udata_value().unwrap_or(0) as u32,
                None => 0,
            };
            let decl_file = match e.attr_value(gimli::DW_AT_decl_file)? {
                Some(gimli::AttributeValue::FileIndex(n)) => n,
                Some(v) => v.udata_value().unwrap_or(0),
                None => 0,
            };
            let file = paths
                .entry(decl_file)
                .or_insert_with(|| file_path(dwarf, &unit, decl_file))
                .clone()
                .unwrap_or_default();
            let entry = match e.attr_value(gimli::DW_AT_low_pc)? {
                Some(gimli::AttributeValue::Addr(a)) => a,
                _ => ranges[0].0,
            };
            let mut lines: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
            // The line each address maps back to (its last row).
            let mut back: BTreeMap<u64, u32> = BTreeMap::new();
            // The same over every row, statements or not: what perf's shared-address check
            // finds an address maps back to.
            let mut back_any: BTreeMap<u64, u32> = BTreeMap::new();
            let mut listed = std::collections::BTreeSet::new();
            // As perf's `__die_walk_funclines`: the declaration line at the entry address.
            lines.entry(decl_line).or_default().push(entry);
            listed.insert(decl_line);
            for &(fi, line, addr, stmt) in &rows {
                if !ranges.iter().any(|&(lo, hi)| addr >= lo && addr < hi) {
                    continue;
                }
                let same_file = fi == decl_file
                    || paths
                        .entry(fi)
                        .or_insert_with(|| file_path(dwarf, &unit, fi))
                        .as_deref()
                        == Some(file.as_str());
                if same_file {
                    back_any.insert(addr, line);
                }
                if same_file && stmt {
                    let v = lines.entry(line).or_default();
                    if !v.contains(&addr) {
                        v.push(addr);
                    }
                    back.insert(addr, line);
                }
            }
            for (&addr, &line) in &back {
                if addr != entry {
                    listed.insert(line);
                }
            }
            let mut back = back_any;
            back.insert(entry, decl_line);
            for v in lines.values_mut() {
                v.sort_unstable();
            }
            funcs.push(FuncLines {
                name,
                file,
                decl_line,
                lines,
                ranges,
                listed,
                back,
            });
        }
    }
    Ok(funcs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_numbers_lines_with_code_relative_to_the_declaration() {
        let f = FuncLines {
            name: "work".into(),
            file: "/src/a.c".into(),
            decl_line: 3,
            lines: BTreeMap::from([(3, vec![0x10]), (5, vec![0x14, 0x20]), (6, vec![0x30])]),
            ranges: vec![(0x10, 0x40)],
            listed: [3, 5, 6].into(),
            back: BTreeMap::new(),
        };
        let src = "a\nb\nint work(void)\n{\n  x();\n}\n\nint main\n{\n}\n";
        assert_eq!(
            line_listing(&f, src),
            "<work@/src/a.c:0>\n      0  int work(void)\n         {\n      2    x();\n      3  }\n         \n         int main\n         {\n"
        );
    }

    #[test]
    fn this_test_binarys_functions_have_lines() {
        let exe = std::env::current_exe().unwrap();
        let Ok(d) = DebugLines::open(&exe) else {
            eprintln!("skipped: the test binary has no DWARF");
            return;
        };
        let f = d
            .funcs
            .iter()
            .find(|f| f.name == "this_test_binarys_functions_have_lines")
            .expect("this function");
        assert!(f.file.ends_with("probe_lines.rs"), "{}", f.file);
        assert!(!f.lines.is_empty());
        let (&line, addrs) = f.lines.iter().next().unwrap();
        assert!(line >= f.decl_line);
        assert_eq!(d.function_at(addrs[0]).map(|g| &g.name), Some(&f.name));
    }
}
