//! `perf script -F srccode`: after a sample, the source line its ip is on, as perf 6.1
//! prints it (`|LINE     TEXT`), only when that thread's line changed since the last one
//! printed (perf's `srccode_state`), and nothing where the source file cannot be read.

use crate::model::ThreadId;
use std::collections::HashMap;
use std::fmt::Write;

/// Per-thread state and the source files read so far.
#[derive(Debug, Default)]
pub struct SrcCode {
    last: HashMap<ThreadId, (String, u32)>,
    files: HashMap<String, Option<Vec<String>>>,
}

impl SrcCode {
    /// Append the source line `at` (file, line) of a sample of `thread` to `out`, as perf.
    pub fn push(&mut self, thread: ThreadId, at: Option<&(String, u32)>, out: &mut String) {
        let Some((file, line)) = at else { return };
        if self
            .last
            .get(&thread)
            .is_some_and(|(f, l)| f == file && l == line)
        {
            return;
        }
        let lines = self.files.entry(file.clone()).or_insert_with(|| {
            std::fs::read(file).ok().map(|b| {
                String::from_utf8_lossy(&b)
                    .lines()
                    .map(str::to_string)
                    .collect()
            })
        });
        let Some(text) = lines
            .as_ref()
            .and_then(|l| l.get((*line as usize).checked_sub(1)?))
        else {
            return;
        };
        let _ = writeln!(out, "|{line:<8} {text}");
        self.last.insert(thread, (file.clone(), *line));
    }
}

#[cfg(test)]
mod tests {
    use super::SrcCode;

    #[test]
    fn a_line_once_per_change_per_thread() {
        let dir = std::env::temp_dir().join(format!("perfkit-srccode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.c");
        std::fs::write(&f, "int x;\n\tx = 1;\n").unwrap();
        let at = (f.display().to_string(), 2);
        let mut s = SrcCode::default();
        let mut out = String::new();
        s.push(0, Some(&at), &mut out);
        s.push(0, Some(&at), &mut out);
        s.push(1, Some(&at), &mut out);
        s.push(1, Some(&(at.0.clone(), 9)), &mut out);
        assert_eq!(out, "|2        \tx = 1;\n|2        \tx = 1;\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
