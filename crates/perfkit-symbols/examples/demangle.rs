//! Demangle the symbol names read from standard input, one a line, as perf 6.1 prints
//! them: with `-v` (`c++filt -i`'s form, the default here) or, given `-p`, without
//! parameters (`c++filt -p -i`). `scripts/demangle-vs-cxxfilt.sh` compares the two over a
//! binary's symbols.

use std::io::{BufRead, Write};

use perfkit_symbols::{Demangling, demangle, demangle_with_params};

fn main() -> std::io::Result<()> {
    let way = if std::env::args().any(|a| a == "-p") {
        Demangling::Names
    } else {
        Demangling::Signatures
    };
    let stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in stdin.lines() {
        let line = line?;
        let name = match way {
            Demangling::Names => demangle(&line),
            _ => demangle_with_params(&line),
        };
        writeln!(out, "{name}")?;
    }
    out.flush()
}
