//! `perf report -T` (`--threads`): the counter values of each thread that exited while
//! recorded with `inherit_stat` (`record -s`), from its `PERF_RECORD_READ` records, in
//! perf's table (`perf_read_values_display`): a `# PID TID EVENT...` header, then one line
//! per thread, columns as wide as their widest value.

use perfkit_data::{Item, PerfData, ReadError};
use perfkit_records::Record;
use std::fmt::Write;

/// Per-thread counter values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadValues {
    /// Event names, in the order their first value came.
    pub names: Vec<String>,
    /// (pid, tid) of each thread, in the order its first value came.
    pub threads: Vec<(i32, i32)>,
    /// `values[thread][event]`: the sum of the thread's READ values for the event.
    pub values: Vec<Vec<u64>>,
}

impl ThreadValues {
    /// The READ records of `file`.
    pub fn of(file: &PerfData) -> Result<ThreadValues, ReadError> {
        let mut tv = ThreadValues::default();
        let mut attr_col: Vec<Option<usize>> = vec![None; file.attrs.len()];
        file.for_each(
            |item| {
                let Item::Event { attr, record } = item else {
                    return;
                };
                let Record::Read(r) = record.record else {
                    return;
                };
                let Some(value) = r.values.iter().next().map(|v| v.value) else {
                    return;
                };
                let col = match attr_col.get(attr).copied().flatten() {
                    Some(c) => c,
                    None => {
                        let name = file.attrs.get(attr).map_or("", |a| a.name.as_str());
                        tv.names.push(name.to_string());
                        if let Some(slot) = attr_col.get_mut(attr) {
                            *slot = Some(tv.names.len() - 1);
                        }
                        tv.names.len() - 1
                    }
                };
                let row = match tv.threads.iter().position(|&t| t == (r.pid, r.tid)) {
                    Some(i) => i,
                    None => {
                        tv.threads.push((r.pid, r.tid));
                        tv.values.push(Vec::new());
                        tv.threads.len() - 1
                    }
                };
                let vals = &mut tv.values[row];
                if vals.len() <= col {
                    vals.resize(col + 1, 0);
                }
                vals[col] += value;
            },
            |_| {},
        )?;
        Ok(tv)
    }

    /// perf's table.
    pub fn render(&self) -> String {
        let digits = |v: i64| v.to_string().len();
        let pid_w = self
            .threads
            .iter()
            .map(|t| digits(t.0.into()))
            .fold(3, usize::max);
        let tid_w = self
            .threads
            .iter()
            .map(|t| digits(t.1.into()))
            .fold(3, usize::max);
        let value = |row: &Vec<u64>, j: usize| row.get(j).copied().unwrap_or(0);
        let widths: Vec<usize> = (0..self.names.len())
            .map(|j| {
                self.values
                    .iter()
                    .map(|row| value(row, j).to_string().len())
                    .fold(self.names[j].len(), usize::max)
            })
            .collect();
        let mut s = format!("# {:>pid_w$}  {:>tid_w$}", "PID", "TID");
        for (name, w) in self.names.iter().zip(&widths) {
            let _ = write!(s, "  {name:>w$}");
        }
        s.push('\n');
        for (&(pid, tid), row) in self.threads.iter().zip(&self.values) {
            let _ = write!(s, "  {pid:>pid_w$}  {tid:>tid_w$}");
            for (j, w) in widths.iter().enumerate() {
                let _ = write!(s, "  {:>w$}", value(row, j));
            }
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_like_perfs() {
        let tv = ThreadValues {
            names: vec!["cpu-clock:ppp".into()],
            threads: vec![(22243, 22245)],
            values: vec![vec![100234941]],
        };
        assert_eq!(
            tv.render(),
            "#   PID    TID  cpu-clock:ppp\n  22243  22245      100234941\n"
        );
        assert_eq!(ThreadValues::default().render(), "# PID  TID\n");
    }
}
