//! Demangle the symbol names read from standard input, one a line, as perf 6.1 prints
//! them: with `-v` (`c++filt -i`'s form, the default here) or, given `-p`, without
//! parameters (`c++filt -p -i`); `-1`: one name at a time (as symbol tables demangle
//! them) rather than [`demangle_all`]'s batch. `scripts/demangle-vs-cxxfilt.sh` compares
//! the two over a binary's symbols.

use std::io::{BufRead, Write};

use perfkit_symbols::{Demangling, demangle_all};

fn main() -> std::io::Result<()> {
    let way = if std::env::args().any(|a| a == "-p") {
        Demangling::Names
    } else {
        Demangling::Signatures
    };
    let lines: Vec<String> = std::io::stdin().lock().lines().collect::<Result<_, _>>()?;
    let names: Vec<&str> = lines.iter().map(String::as_str).collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if std::env::args().any(|a| a == "-1") {
        for name in names {
            writeln!(out, "{}", way.apply(name))?;
        }
    } else {
        for name in demangle_all(&names, way) {
            writeln!(out, "{name}")?;
        }
    }
    out.flush()
}
