//! DWARF unwinding of `--call-graph dwarf` samples (placeholder, filled in below).
