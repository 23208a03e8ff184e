//! Uprobe locations: a symbol in an ELF file to the file offset the uprobe PMU wants in
//! `config2` (`probe_offset`).

use object::{Object, ObjectSegment, ObjectSymbol};

/// The file offset of `symbol` in the ELF file at `path`: the symbol's virtual address
/// mapped through the loadable segment that contains it. Looks in `.symtab` and then
/// `.dynsym`.
pub fn symbol_file_offset(path: &std::path::Path, symbol: &str) -> Result<u64, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file = object::File::parse(&*data)
        .map_err(|e| format!("{} is not an ELF file: {e}", path.display()))?;
    let addr = file
        .symbols()
        .chain(file.dynamic_symbols())
        .find(|s| s.name() == Ok(symbol) && s.is_definition())
        .map(|s| s.address())
        .ok_or_else(|| format!("no symbol `{symbol}` in {}", path.display()))?;
    for seg in file.segments() {
        let (start, size) = (seg.address(), seg.size());
        if addr >= start && addr < start.saturating_add(size) {
            let (foff, fsize) = seg.file_range();
            let delta = addr - start;
            if delta < fsize {
                return Ok(foff + delta);
            }
        }
    }
    Err(format!(
        "symbol `{symbol}` at {addr:#x} is not in a loadable segment of {}",
        path.display()
    ))
}
