//! Records perf synthesizes before the first sample.
