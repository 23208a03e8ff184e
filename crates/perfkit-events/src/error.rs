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

    /// The error position in characters from the start of `input` (`pos` counts bytes).
    ///
    /// For an input of at most 100 characters this is also the caret's column under the
    /// input printed by `Display`; a longer input prints as a window around the error.
    pub fn column(&self) -> usize {
        let mut p = self.pos.min(self.input.len());
        while !self.input.is_char_boundary(p) {
            p -= 1;
        }
        self.input[..p].chars().count()
    }

    /// The part of the input `Display` prints and the caret's column (in characters) in it.
    ///
    /// An input longer than `SHOWN_CHARS` characters is cut to a window of that many
    /// around the error, with `...` where text was cut, as perf does: a 70,000-character
    /// event list with a typo at its end shows that end, and the caret stays under the typo.
    fn excerpt(&self) -> (String, usize) {
        let col = self.column();
        let n = self.input.chars().count();
        if n <= SHOWN_CHARS {
            return (self.input.clone(), col);
        }
        let mut start = col.saturating_sub(SHOWN_BEFORE);
        let end = (start + SHOWN_CHARS).min(n);
        start = start.min(end.saturating_sub(SHOWN_CHARS));
        let mut text = String::new();
        let mut caret = col - start;
        if start > 0 {
            text.push_str(CUT);
            caret += CUT.len();
        }
        text.extend(self.input.chars().skip(start).take(end - start));
        if end < n {
            text.push_str(CUT);
        }
        (text, caret)
    }
}

/// Inputs up to this many characters print whole; longer ones as a window around the error.
const SHOWN_CHARS: usize = 100;
/// How many characters of a long input are shown before the error position.
const SHOWN_BEFORE: usize = 60;
/// Messages longer than this many characters print their start and end only (a message
/// quotes the offending name, which can be as long as the input).
const MESSAGE_CHARS: usize = 160;
/// Marks text cut from a long input or message.
const CUT: &str = "...";

const PREFIX: &str = "event syntax error: '";

/// `s`, or its start and end around a `...` when it is longer than `max` characters.
fn shorten(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let n = s.chars().count();
    if n <= max {
        return s.into();
    }
    let tail = max / 4;
    let head = max - tail - CUT.len();
    let mut out: String = s.chars().take(head).collect();
    out.push_str(CUT);
    out.extend(s.chars().skip(n - tail));
    out.into()
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (text, caret) = self.excerpt();
        writeln!(f, "{PREFIX}{text}'")?;
        // Padding written out, not as a format width: widths are limited to 16 bits.
        for _ in 0..PREFIX.len() + caret {
            f.write_str(" ")?;
        }
        write!(f, "^ {}", shorten(&self.message, MESSAGE_CHARS))?;
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

/// Words longer than this get no "did you mean": no event or term name is that long, and the
/// edit distance costs time and memory in the product of the lengths.
const CLOSEST_MAX_WORD: usize = 256;

/// The closest of `candidates` to `word`, if close enough to be a plausible typo.
pub fn closest<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    if word.len() > CLOSEST_MAX_WORD {
        return None;
    }
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
