//! [`PerfDataWriter`]: perf.data files perf 6.1 opens.
