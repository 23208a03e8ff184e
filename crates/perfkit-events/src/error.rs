//! Parse errors that point at the offending byte.

use std::fmt;

/// An event string that did not parse (or named something this machine lacks).
///
/// `Display` prints it the way perf does, with a caret under the position:
///
/// ```text
/// event syntax error: 'cyclez:u'
///                      ^ unknown event `cyclez`
///   did you mean `cycles`?
///   Run `perfkit list` to see the events of this machine.
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The whole input string.
    pub input: String,
    /// Byte offset of the problem in `input`.
    pub pos: usize,
    /// What is wrong.
    pub message: String,
    /// What the parser expected there, if that is a useful thing to say.
    pub expected: Option<String>,
    /// A close known name ("did you mean").
    pub suggestion: Option<String>,
    /// Advice on how to find what exists.
    pub hint: Option<String>,
}

impl ParseError {
    pub(crate) fn new(input: &str, pos: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            input: input.to_string(),
            pos: pos.min(input.len()),
            message: message.into(),
            expected: None,
            suggestion: None,
            hint: None,
        }
    }
    pub(crate) fn expected(mut self, what: impl Into<String>) -> Self {
        self.expected = Some(what.into());
        self
    }
    pub(crate) fn suggest(mut self, s: Option<String>) -> Self {
        self.suggestion = s;
        self
    }
    pub(crate) fn hint(mut self, h: impl Into<String>) -> Self {
        self.hint = Some(h.into());
        self
    }
    pub(crate) fn list_hint(self) -> Self {
        self.hint("Run `perfkit list` to see the events of this machine.")
    }

    /// The caret column (in characters) under the input as printed by `Display`.
    pub fn column(&self) -> usize {
        let mut p = self.pos.min(self.input.len());
        while !self.input.is_char_boundary(p) {
            p -= 1;
        }
        self.input[..p].chars().count()
    }
}

const PREFIX: &str = "event syntax error: '";

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{PREFIX}{}'", self.input)?;
        write!(
            f,
            "{:width$}^ {}",
            "",
            self.message,
            width = PREFIX.len() + self.column()
        )?;
        if let Some(e) = &self.expected {
            write!(f, "\n  expected {e}")?;
        }
        if let Some(s) = &self.suggestion {
            write!(f, "\n  did you mean `{s}`?")?;
        }
        if let Some(h) = &self.hint {
            write!(f, "\n  {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}

/// The closest of `candidates` to `word`, if close enough to be a plausible typo.
pub fn closest<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let lw = word.to_ascii_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        if c.is_empty() {
            continue;
        }
        let lc = c.to_ascii_lowercase();
        let d = strsim::damerau_levenshtein(&lw, &lc);
        let max = lw.chars().count().max(lc.chars().count());
        let score = 1.0 - d as f64 / max.max(1) as f64;
        let jw = strsim::jaro_winkler(&lw, &lc);
        let s = score.max(jw - 0.15);
        if (d <= 2 || s >= 0.7) && best.is_none_or(|(b, _)| s > b) {
            best = Some((s, c));
        }
    }
    best.map(|(_, c)| c.to_string())
}
