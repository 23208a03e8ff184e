//! JIT symbol maps: `/tmp/perf-PID.map`.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, ParseError, parse_hex};

/// One JIT-compiled function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitSymbol {
    /// Start address in the process.
    pub start: u64,
    /// Code size in bytes.
    pub size: u64,
    /// Name as the JIT wrote it (not demangled: JITs write readable names).
    pub name: Arc<str>,
}

/// A perf map: the text file a JIT (V8/node `--perf-basic-prof`, the JVM's perf-map-agent,
/// .NET `DOTNET_PerfMapEnabled`, LuaJIT, ...) writes to `/tmp/perf-PID.map`, one line
/// `START SIZE NAME` per function, START and SIZE in hex (with or without `0x`).
///
/// JITs reuse memory, so a later line wins over an earlier one at the same start, as in
/// perf.
#[derive(Clone, Debug, Default)]
pub struct PerfMap {
    symbols: Vec<JitSymbol>,
}

impl PerfMap {
    /// Read and parse a perf map file.
    pub fn from_file(path: &Path) -> Result<PerfMap, Error> {
        let text = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(PerfMap::parse(
            &String::from_utf8_lossy(&text),
            &path.display().to_string(),
        )?)
    }

    /// Parse perf map text.
    pub fn parse(text: &str, source: &str) -> Result<PerfMap, ParseError> {
        let mut symbols = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let err = |message: &str| ParseError {
                source: source.to_owned(),
                line: i + 1,
                message: format!("{message}: {line:?}"),
            };
            let (start, rest) = line
                .split_once(' ')
                .ok_or_else(|| err("expected START SIZE NAME"))?;
            let (size, name) = rest
                .split_once(' ')
                .ok_or_else(|| err("expected START SIZE NAME"))?;
            let start = parse_hex(start).ok_or_else(|| err("bad start address"))?;
            let size = parse_hex(size).ok_or_else(|| err("bad size"))?;
            symbols.push(JitSymbol {
                start,
                size,
                name: Arc::from(name.trim()),
            });
        }
        // Stable sort keeps file order among equal starts; keep the last of each.
        symbols.sort_by_key(|s| s.start);
        let mut out: Vec<JitSymbol> = Vec::with_capacity(symbols.len());
        for s in symbols {
            match out.last_mut() {
                Some(last) if last.start == s.start => *last = s,
                _ => out.push(s),
            }
        }
        Ok(PerfMap { symbols: out })
    }

    /// The function covering `addr`.
    pub fn find(&self, addr: u64) -> Option<&JitSymbol> {
        let i = self
            .symbols
            .partition_point(|s| s.start <= addr)
            .checked_sub(1)?;
        let s = &self.symbols[i];
        (addr - s.start < s.size.max(1)).then_some(s)
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// No functions?
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_finds() {
        let m = PerfMap::parse(
            "7f0000001000 40 LazyCompile:~foo /app/x.js:1\n\
             0x7f0000002000 0x100 Function:bar\n\
             7f0000001000 20 LazyCompile:*foo (optimized)\n",
            "perf-1.map",
        )
        .unwrap();
        assert_eq!(m.len(), 2);
        let s = m.find(0x7f0000001010).unwrap();
        assert_eq!(&*s.name, "LazyCompile:*foo (optimized)");
        assert_eq!(s.size, 0x20);
        assert!(m.find(0x7f0000001020).is_none());
        assert_eq!(&*m.find(0x7f00000020ff).unwrap().name, "Function:bar");
        assert!(m.find(0x7f0000002100).is_none());
        assert!(m.find(0x1000).is_none());
    }

    #[test]
    fn bad_lines() {
        let e = PerfMap::parse("1000 10 ok\nnothex 10 x\n", "m").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("m:2: bad start address"), "{e}");
        assert!(
            PerfMap::parse("1000\n", "m")
                .unwrap_err()
                .message
                .contains("START SIZE NAME")
        );
        assert!(
            PerfMap::parse("1000 zz name\n", "m")
                .unwrap_err()
                .message
                .contains("bad size")
        );
    }
}
