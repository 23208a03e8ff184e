//! Kernel symbols from `/proc/kallsyms`.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, ParseError, parse_hex, parse_hex_bytes};

/// One kernel function symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSymbol {
    /// Absolute kernel address.
    pub start: u64,
    /// Distance to the next symbol (kallsyms has no sizes).
    pub size: u64,
    /// Symbol name.
    pub name: Arc<str>,
    /// Module name without brackets (`nf_tables`), `None` for the core kernel.
    pub module: Option<Arc<str>>,
    /// A data symbol (kallsyms types other than `t`/`w`: `d`, `b`, ...), which perf keeps
    /// as `STT_OBJECT` (its `kallsyms2elf_type`) and prints in a report row with the
    /// offset of the row's address (`__start_rodata+0x10`).
    pub object: bool,
}

/// The kernel's function symbols sorted by address, from `/proc/kallsyms` (or a saved copy,
/// such as perf's `~/.debug/[kernel.kallsyms]/BUILDID/kallsyms`).
///
/// The symbols perf loads are kept (text, weak, data and bss: its `symbol_type__filter`),
/// data ones marked [`KernelSymbol::object`]. When every address reads
/// as zero the kernel is hiding them (`kptr_restrict`, or not root): [`Kallsyms::hidden`]
/// is then true and lookups give nothing.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    symbols: Vec<KernelSymbol>,
    hidden: bool,
}

/// The table being built from kallsyms lines.
#[derive(Default)]
struct Parse {
    symbols: Vec<KernelSymbol>,
    modules: std::collections::HashMap<String, Arc<str>>,
    any_nonzero: bool,
    total: usize,
}

/// A line being parsed, for its errors.
struct At<'a> {
    line: &'a [u8],
    number: usize,
    source: &'a str,
}

impl At<'_> {
    fn err(&self, message: &str) -> ParseError {
        ParseError {
            source: self.source.to_owned(),
            line: self.number,
            message: format!(
                "{message}: {:?}",
                String::from_utf8_lossy(self.line).trim_end()
            ),
        }
    }
}

impl Parse {
    fn line(&mut self, line: &[u8], number: usize, source: &str) -> Result<(), ParseError> {
        let at = At {
            line,
            number,
            source,
        };
        // The kernel's layout, `ADDR T name` or `ADDR T name\t[module]`, is split by hand;
        // anything else goes through the general whitespace split below.
        if let [addr @ .., b' ', ty, b' '] = &line[..line.len().min(19)]
            && addr.len() == 16
            && let Some(addr) = parse_hex_bytes(addr)
        {
            let rest = &line[19..];
            let (name, module) = match memchr::memchr(b'\t', rest) {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            if !name.is_empty() && !name.contains(&b' ') {
                return self.symbol(addr, *ty as char, name, module, &at);
            }
        }
        // Works on bytes: /proc/kallsyms has ~200K lines and most are skipped, so nothing is
        // allocated or UTF-8-checked until a line is known to be a text symbol.
        let mut fields = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let Some(first) = fields.next() else {
            return Ok(());
        };
        let err = |message: &str| at.err(message);
        let addr = parse_hex_bytes(first).ok_or_else(|| err("bad address"))?;
        let ty = fields
            .next()
            .filter(|t| t.len() == 1)
            .map(|t| t[0] as char)
            .ok_or_else(|| err("bad symbol type"))?;
        let name = fields.next().ok_or_else(|| err("missing symbol name"))?;
        let module_field = fields.next();
        self.symbol(addr, ty, name, module_field, &at)
    }

    /// One symbol line, split: only the symbols perf loads are kept (its
    /// `symbol_type__filter`: text, weak, data and bss, `u` and `l`).
    fn symbol(
        &mut self,
        addr: u64,
        ty: char,
        name: &[u8],
        module_field: Option<&[u8]>,
        at: &At<'_>,
    ) -> Result<(), ParseError> {
        let err = |message: &str| at.err(message);
        if !matches!(
            ty,
            't' | 'T' | 'w' | 'W' | 'd' | 'D' | 'b' | 'B' | 'u' | 'l'
        ) {
            if let Some(m) = module_field
                && !(m.starts_with(b"[") && m.ends_with(b"]"))
            {
                return Err(err("bad module field"));
            }
            self.total += 1;
            self.any_nonzero |= addr != 0;
            return Ok(());
        }
        let name = std::str::from_utf8(name).map_err(|_| err("symbol name is not UTF-8"))?;
        let module = match module_field {
            Some(m) => Some(
                std::str::from_utf8(m)
                    .ok()
                    .and_then(|m| m.strip_prefix('['))
                    .and_then(|m| m.strip_suffix(']'))
                    .ok_or_else(|| err("bad module field"))?,
            ),
            None => None,
        };
        self.total += 1;
        self.any_nonzero |= addr != 0;
        let module = module.map(|m| match self.modules.get(m) {
            Some(a) => a.clone(),
            None => {
                let a: Arc<str> = Arc::from(m);
                self.modules.insert(m.to_string(), a.clone());
                a
            }
        });
        self.symbols.push(KernelSymbol {
            start: addr,
            size: 0,
            name: Arc::from(name),
            module,
            object: !matches!(ty.to_ascii_lowercase(), 't' | 'w'),
        });
        Ok(())
    }

    fn finish(mut self) -> Kallsyms {
        let hidden = self.total > 0 && !self.any_nonzero;
        if hidden {
            self.symbols.clear();
        }
        // Aliases share an address (`memcpy`, `__memcpy`, `__pi_memcpy`): perf names the
        // address with the last one listed (its symbols__fixup_end gives the others a zero
        // size, and choose_best_symbol prefers a sized one).
        self.symbols.sort_by_key(|s| s.start);
        self.symbols.reverse();
        self.symbols.dedup_by_key(|s| s.start);
        self.symbols.reverse();
        let mut symbols = self.symbols;
        // A symbol ends where the next of its object starts; the last of an object (the
        // core kernel's, a module's) a page past its page, as perf's symbols__fixup_end.
        for i in 0..symbols.len() {
            let s = &symbols[i];
            symbols[i].size = match symbols.get(i + 1) {
                Some(next) if next.module == s.module => next.start - s.start,
                _ => {
                    s.start
                        .checked_next_multiple_of(LAST_SYMBOL_SIZE)
                        .and_then(|e| e.checked_add(LAST_SYMBOL_SIZE))
                        .unwrap_or(u64::MAX)
                        - s.start
                }
            };
        }
        Kallsyms { symbols, hidden }
    }
}

/// The address of `_text` in a kallsyms file, read from its first lines only (the core
/// kernel's text comes first, so this stops after a few lines even on `/proc/kallsyms`,
/// whose full text the kernel formats at tens of milliseconds' cost).
pub fn text_address(path: &Path) -> Option<u64> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let reader = std::io::BufReader::with_capacity(1 << 14, file);
    for line in reader.lines().take(4096) {
        let line = line.ok()?;
        let mut f = line.split_whitespace();
        let (addr, ty, name) = (f.next()?, f.next()?, f.next()?);
        if name == "_text" && (ty == "T" || ty == "t") {
            return parse_hex(addr);
        }
    }
    None
}

/// perf's saved copy of the kernel's symbols for `build_id` in the build-id cache
/// (`~/.debug/[kernel.kallsyms]/HEX/kallsyms`, written by `perf record`), when it exists and
/// its `_text` address is the running kernel's (the same kernel, booted at the same KASLR
/// offset). Reading it costs a few milliseconds; `/proc/kallsyms` costs the kernel tens.
pub fn cached_copy(build_id: &[u8], proc_kallsyms: &Path) -> Option<std::path::PathBuf> {
    let home = std::env::var_os("HOME")?;
    cached_copy_in(&Path::new(&home).join(".debug"), build_id, proc_kallsyms)
}

/// [`cached_copy`] in the build-id cache at `debug_dir` (perf's `~/.debug`).
pub fn cached_copy_in(
    debug_dir: &Path,
    build_id: &[u8],
    proc_kallsyms: &Path,
) -> Option<std::path::PathBuf> {
    if build_id.is_empty() {
        return None;
    }
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let path = debug_dir
        .join("[kernel.kallsyms]")
        .join(hex)
        .join("kallsyms");
    let saved = text_address(&path)?;
    (saved != 0 && text_address(proc_kallsyms) == Some(saved)).then_some(path)
}

/// The page past which the last symbol of an object ends (kallsyms has no sizes; perf does
/// the same).
const LAST_SYMBOL_SIZE: u64 = 4096;

impl Kallsyms {
    /// Read and parse a kallsyms file (read whole: a few megabytes, for a moment, parse
    /// faster than line by line reads).
    pub fn from_file(path: &Path) -> Result<Kallsyms, Error> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        let source = path.display().to_string();
        let mut p = Parse::default();
        let mut start = 0;
        for (n, end) in memchr::memchr_iter(b'\n', &bytes)
            .chain((!bytes.ends_with(b"\n") && !bytes.is_empty()).then_some(bytes.len()))
            .enumerate()
        {
            p.line(&bytes[start..end], n + 1, &source)?;
            start = end + 1;
        }
        Ok(p.finish())
    }

    /// Parse kallsyms text: lines `ADDRESS TYPE NAME [\t[MODULE]]`.
    pub fn parse(text: &str, source: &str) -> Result<Kallsyms, ParseError> {
        let mut p = Parse::default();
        for (i, line) in text.lines().enumerate() {
            p.line(line.as_bytes(), i + 1, source)?;
        }
        Ok(p.finish())
    }

    /// A table of these symbols (sorted by address, sized), from another source than
    /// kallsyms text (a vmlinux).
    pub(crate) fn from_symbols(symbols: Vec<KernelSymbol>) -> Kallsyms {
        Kallsyms {
            symbols,
            hidden: false,
        }
    }

    /// Are the addresses hidden (all zero)?
    pub fn hidden(&self) -> bool {
        self.hidden
    }

    /// Number of function symbols.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// No symbols at all?
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The symbol covering `addr`, if any.
    pub fn find(&self, addr: u64) -> Option<&KernelSymbol> {
        let i = self
            .symbols
            .partition_point(|s| s.start <= addr)
            .checked_sub(1)?;
        let s = &self.symbols[i];
        (addr - s.start < s.size).then_some(s)
    }

    /// Whether `addr` is inside the kernel's map as perf draws it: from the first symbol to
    /// the end of the last (perf's `map__fixup_start`/`fixup_end`). An address outside it
    /// has no map at all (`[unknown]`), even in the kernel's half of the address space.
    pub fn covers(&self, addr: u64) -> bool {
        match (self.symbols.first(), self.symbols.last()) {
            (Some(first), Some(last)) => {
                first.start <= addr && addr < last.start.saturating_add(last.size.max(1))
            }
            _ => false,
        }
    }

    /// The first symbol with this name (tests, `perf probe`-like uses).
    pub fn by_name(&self, name: &str) -> Option<&KernelSymbol> {
        self.symbols.iter().find(|s| &*s.name == name)
    }
}

/// The advice to print when kernel symbols are hidden: the current
/// `/proc/sys/kernel/kptr_restrict` value and how to lift it.
pub fn kernel_hidden_hint() -> String {
    let value = std::fs::read_to_string("/proc/sys/kernel/kptr_restrict")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unreadable".to_owned());
    format!(
        "kernel symbols are hidden: /proc/kallsyms shows zero addresses \
         (/proc/sys/kernel/kptr_restrict is {value}); run as root, or lower it with \
         `sysctl kernel.kptr_restrict=0` (value 1 hides addresses from non-root readers, \
         2 from everyone)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "\
ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff81000100 t secondary_startup_64
ffffffff81000200 D some_data
ffffffff81001000 T schedule
ffffffff81001080 W weak_fn
ffffffffc0001000 t nft_do_chain\t[nf_tables]
ffffffffc0001100 T nft_register\t[nf_tables]
";

    #[test]
    fn parses_and_finds() {
        let k = Kallsyms::parse(FIXTURE, "fixture").unwrap();
        assert!(!k.hidden());
        assert_eq!(k.len(), 7);
        // Aliases: the last listed names the address, as perf names it (`__pi_memcpy`
        // after `memcpy` and `__memcpy` on this kernel).
        assert_eq!(&*k.find(0xffffffff81000004).unwrap().name, "startup_64");
        let s = k.find(0xffffffff81001010).unwrap();
        assert_eq!(&*s.name, "schedule");
        assert_eq!(s.size, 0x80);
        assert_eq!(s.module, None);
        let s = k.find(0xffffffff81000150).unwrap();
        assert_eq!(&*s.name, "secondary_startup_64");
        // Data symbols are perf's too (its symbol_type__filter): one ends the text before.
        assert_eq!(s.size, 0x100);
        let d = k.find(0xffffffff81000250).unwrap();
        assert_eq!(&*d.name, "some_data");
        // perf's kallsyms2elf_type: data is STT_OBJECT, text and weak symbols functions.
        assert!(d.object);
        assert!(!s.object);
        // The last symbol of an object ends a page past its page, as perf's fixup_end:
        // the core kernel's, before the modules' symbols.
        let s = k.find(0xffffffff81002fff).unwrap();
        assert_eq!((&*s.name, s.size, s.object), ("weak_fn", 0x1f80, false));
        assert!(k.find(0xffffffff81003000).is_none());
        let m = k.find(0xffffffffc0001004).unwrap();
        assert_eq!(&*m.name, "nft_do_chain");
        assert_eq!(m.module.as_deref(), Some("nf_tables"));
        assert!(k.find(0xffffffff80000000).is_none());
        assert_eq!(&*k.find(0xffffffffc0002fff).unwrap().name, "nft_register");
        assert!(k.find(0xffffffffc0003000).is_none());
        // The kernel's map, as perf draws it: garbage of the kernel half outside it has no
        // map at all.
        assert!(k.covers(0xffffffff81000004));
        assert!(k.covers(0xffffffffc0001004));
        assert!(!k.covers(0xffffffff80000000));
        assert!(!k.covers(0xffffffffc0003000));
        assert!(!k.covers(0xff5bba430e94b77c));
    }

    #[test]
    fn hidden_when_all_zero() {
        let k = Kallsyms::parse(
            "0000000000000000 T _text\n0000000000000000 T schedule\n",
            "z",
        )
        .unwrap();
        assert!(k.hidden());
        assert!(k.find(0).is_none());
        assert!(kernel_hidden_hint().contains("kptr_restrict"));
    }

    #[test]
    fn bad_lines_are_errors_with_line_numbers() {
        let e = Kallsyms::parse("ffffffff81000000 T ok\nzzzz T bad\n", "f").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("bad address"), "{e}");
        let e = Kallsyms::parse("ffffffff81000000 TT x\n", "f").unwrap_err();
        assert!(e.message.contains("type"));
        let e = Kallsyms::parse("ffffffff81000000 T\n", "f").unwrap_err();
        assert!(e.message.contains("name"));
    }

    #[test]
    fn build_id_cache_copy_is_used_only_for_the_same_kernel_address() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("live");
        std::fs::write(
            &live,
            "ffffffff81000000 T _text\nffffffff81000010 T start\n",
        )
        .unwrap();
        let id = [0x4a, 0x5a, 0x01];
        let copy = dir.path().join("[kernel.kallsyms]/4a5a01/kallsyms");
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::write(
            &copy,
            "ffffffff81000000 T _text\nffffffff81000020 T other\n",
        )
        .unwrap();
        assert_eq!(cached_copy_in(dir.path(), &id, &live), Some(copy.clone()));
        // Another build id: no copy.
        assert_eq!(cached_copy_in(dir.path(), &[1, 2], &live), None);
        // The same kernel booted elsewhere (KASLR): the copy's addresses are wrong.
        std::fs::write(&live, "ffffffff9a000000 T _text\n").unwrap();
        assert_eq!(cached_copy_in(dir.path(), &id, &live), None);
        // Hidden addresses in the copy are never used.
        std::fs::write(&copy, "0000000000000000 T _text\n").unwrap();
        std::fs::write(&live, "0000000000000000 T _text\n").unwrap();
        assert_eq!(cached_copy_in(dir.path(), &id, &live), None);
    }

    #[test]
    fn real_proc_kallsyms() {
        let k = match Kallsyms::from_file(Path::new("/proc/kallsyms")) {
            Ok(k) => k,
            Err(e) => {
                eprintln!("skipping: {e}");
                return;
            }
        };
        if k.hidden() {
            eprintln!("skipping: kernel symbols hidden: {}", kernel_hidden_hint());
            return;
        }
        let s = k.by_name("schedule").expect("schedule in /proc/kallsyms");
        let found = k.find(s.start + 1).unwrap();
        assert_eq!(found.start, s.start);
        assert!(found.size > 1);
        assert!(k.len() > 10_000, "only {} symbols", k.len());
    }
}
