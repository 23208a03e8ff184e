//! Metric formulas in perf 6.1's expression language (`tools/perf/util/expr.y`, `expr.l`),
//! parsed once and evaluated over counts.
//!
//! The language: numbers (`1e9`, `.5`), event names (`cycles:k`, `msr@tsc@`,
//! `cpu@L1D_PEND_MISS.FB_FULL\,cmask\=1@`: a backslash keeps the next character, and `?` is
//! the runtime parameter), literals (`#SMT_on`, `#num_cores`, `#num_packages`,
//! `#num_dies`, `#num_cpus`, `#core_wide`, `#system_tsc_freq`), `source_count(EV)`,
//! `d_ratio(a, b)`, `min(a, b)`, `max(a, b)`, unary minus, the binary operators `* / %`,
//! `+ -`, `< >`, `&`, `^`, `|` (tightest first, each left-associative) and, outermost or
//! in parentheses, `A if COND else B` (chaining to the right). Characters the lexer has no
//! rule for (spaces among them) are skipped, as in perf.

use std::fmt;

/// A parsed formula.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A constant.
    Num(f64),
    /// An event's count (the name after perf's normalisation: escapes removed).
    Event(String),
    /// `source_count(EV)`: how many counters were merged into the event's count.
    SourceCount(String),
    /// A `#literal`, as written (`#SMT_on`).
    Literal(String),
    /// `-x`.
    Neg(Box<Expr>),
    /// `a OP b` with OP one of `+ - * / % < > & ^ |`.
    Bin(char, Box<Expr>, Box<Expr>),
    /// `d_ratio(a, b)`.
    Ratio(Box<Expr>, Box<Expr>),
    /// `min(a, b)`.
    Min(Box<Expr>, Box<Expr>),
    /// `max(a, b)`.
    Max(Box<Expr>, Box<Expr>),
    /// `then if cond else other`.
    If(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// Why a formula does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    /// Byte offset in the formula.
    pub at: usize,
    /// What was expected.
    pub what: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.at, self.what)
    }
}

impl std::error::Error for ExprError {}

/// One token of perf's lexer.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Id(String),
    Literal(String),
    Key(&'static str),
    Op(char),
    End,
}

/// perf's keywords, in its lexer's rule order.
const KEYWORDS: [&str; 6] = ["d_ratio", "max", "min", "if", "else", "source_count"];

fn is_sym(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'@' | b'?')
}

/// Length of perf's `number` at the start of `s`:
/// `([0-9]+\.?[0-9]*|[0-9]*\.?[0-9]+)(e-?[0-9]+)?`.
fn number_len(s: &[u8]) -> usize {
    let digits = |from: usize| s[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(0);
    let mut i = int;
    if s.get(i) == Some(&b'.') {
        let frac = digits(i + 1);
        if int == 0 && frac == 0 {
            return 0;
        }
        i += 1 + frac;
    } else if int == 0 {
        return 0;
    }
    if s.get(i) == Some(&b'e') {
        let sign = usize::from(s.get(i + 1) == Some(&b'-'));
        let exp = digits(i + 1 + sign);
        if exp > 0 {
            i += 1 + sign + exp;
        }
    }
    i
}

/// Length of perf's `symbol` (`(\\[-,=]|[0-9a-zA-Z_.:@?])+`) at the start of `s`.
fn symbol_len(s: &[u8]) -> usize {
    let mut i = 0;
    loop {
        if s.get(i) == Some(&b'\\') && matches!(s.get(i + 1), Some(b'-' | b',' | b'=')) {
            i += 2;
        } else if s.get(i).is_some_and(|&c| is_sym(c)) {
            i += 1;
        } else {
            return i;
        }
    }
}

/// perf's `normalize`: a backslash keeps the next character, `?` is the runtime
/// parameter (perfkit's is always 0).
fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '?' => out.push('0'),
            c => out.push(c),
        }
    }
    out
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
    /// The token under the cursor and where it starts.
    tok: Tok,
    at: usize,
}

impl Lexer<'_> {
    /// Move to the next token: the longest match of perf's rules, the earlier rule on a
    /// tie; characters no rule takes are skipped.
    fn advance(&mut self) -> Result<(), ExprError> {
        loop {
            let rest = &self.s[self.i..];
            self.at = self.i;
            let Some(&c) = rest.first() else {
                self.tok = Tok::End;
                return Ok(());
            };
            let sym = symbol_len(rest);
            let num = number_len(rest);
            let lit = if c == b'#' {
                1 + rest[1..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
                    .count()
            } else {
                0
            };
            let key = KEYWORDS
                .iter()
                .find(|k| rest.starts_with(k.as_bytes()) && sym == k.len());
            let text = |n: usize| String::from_utf8_lossy(&rest[..n]).into_owned();
            if let Some(k) = key {
                self.i += k.len();
                self.tok = Tok::Key(k);
            } else if lit > 1 {
                self.i += lit;
                self.tok = Tok::Literal(text(lit));
            } else if num > 0 && num >= sym {
                let t = text(num);
                self.i += num;
                self.tok = Tok::Num(t.parse().map_err(|_| ExprError {
                    at: self.at,
                    what: format!("a number, not `{t}`"),
                })?);
            } else if sym > 0 {
                self.i += sym;
                self.tok = Tok::Id(normalize(&text(sym)));
            } else if b"|^&<>-+*/%(),".contains(&c) {
                self.i += 1;
                self.tok = Tok::Op(char::from(c));
            } else {
                // perf's `.` rule: anything else (spaces) is dropped.
                self.i += 1;
                continue;
            }
            return Ok(());
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, ExprError> {
        Err(ExprError {
            at: self.at,
            what: what.to_string(),
        })
    }

    fn eat_op(&mut self, c: char) -> Result<bool, ExprError> {
        if self.tok == Tok::Op(c) {
            self.advance()?;
            return Ok(true);
        }
        Ok(false)
    }

    fn expect_op(&mut self, c: char, what: &str) -> Result<(), ExprError> {
        if !self.eat_op(c)? {
            return self.err(what);
        }
        Ok(())
    }

    /// if_expr := expr ['if' expr 'else' if_expr]
    fn if_expr(&mut self) -> Result<Expr, ExprError> {
        let then = self.binary(0)?;
        if self.tok != Tok::Key("if") {
            return Ok(then);
        }
        self.advance()?;
        let cond = self.binary(0)?;
        if self.tok != Tok::Key("else") {
            return self.err("`else` after `A if COND`");
        }
        self.advance()?;
        let other = self.if_expr()?;
        Ok(Expr::If(Box::new(then), Box::new(cond), Box::new(other)))
    }

    /// The binary operators from perf's `%left` lines, loosest first.
    const LEVELS: [&'static [char]; 6] = [
        &['|'],
        &['^'],
        &['&'],
        &['<', '>'],
        &['-', '+'],
        &['*', '/', '%'],
    ];

    fn binary(&mut self, level: usize) -> Result<Expr, ExprError> {
        if level == Self::LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        loop {
            let op = match self.tok {
                Tok::Op(c) if Self::LEVELS[level].contains(&c) => c,
                _ => return Ok(left),
            };
            self.advance()?;
            let right = self.binary(level + 1)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        if self.eat_op('-')? {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.atom()
    }

    /// `(` a `,` b `)` after a function's name.
    fn two_args(&mut self, name: &str) -> Result<(Box<Expr>, Box<Expr>), ExprError> {
        self.expect_op('(', &format!("`(` after {name}"))?;
        let a = self.binary(0)?;
        self.expect_op(',', &format!("`,` in {name}(a, b)"))?;
        let b = self.binary(0)?;
        self.expect_op(')', &format!("`)` after {name}(a, b"))?;
        Ok((Box::new(a), Box::new(b)))
    }

    fn atom(&mut self) -> Result<Expr, ExprError> {
        let tok = self.tok.clone();
        match tok {
            Tok::Num(v) => {
                self.advance()?;
                Ok(Expr::Num(v))
            }
            Tok::Id(name) => {
                self.advance()?;
                Ok(Expr::Event(name))
            }
            Tok::Literal(l) => {
                self.advance()?;
                Ok(Expr::Literal(l))
            }
            Tok::Op('(') => {
                self.advance()?;
                let e = self.if_expr()?;
                self.expect_op(')', "`)`")?;
                Ok(e)
            }
            Tok::Key("source_count") => {
                self.advance()?;
                self.expect_op('(', "`(` after source_count")?;
                let Tok::Id(name) = self.tok.clone() else {
                    return self.err("an event name in source_count(EV)");
                };
                self.advance()?;
                self.expect_op(')', "`)` after source_count(EV")?;
                Ok(Expr::SourceCount(name))
            }
            Tok::Key(k @ ("d_ratio" | "min" | "max")) => {
                self.advance()?;
                let (a, b) = self.two_args(k)?;
                Ok(match k {
                    "d_ratio" => Expr::Ratio(a, b),
                    "min" => Expr::Min(a, b),
                    _ => Expr::Max(a, b),
                })
            }
            _ => self.err("a number, an event name or `(`"),
        }
    }
}

/// Whether perf's `fpclassify(v) == FP_ZERO`.
fn is_zero(v: f64) -> bool {
    v == 0.0
}

impl Expr {
    /// Parse a formula.
    ///
    /// ```
    /// use perfkit_events::metrics::Expr;
    /// let e = Expr::parse("(a * 16) / b")?;
    /// assert_eq!(e.events(), ["a", "b"]);
    /// assert_eq!(e.eval(&mut |n| Some(if n == "a" { 3.0 } else { 4.0 })), Some(12.0));
    /// # Ok::<(), perfkit_events::metrics::ExprError>(())
    /// ```
    pub fn parse(s: &str) -> Result<Expr, ExprError> {
        let mut p = Lexer {
            s: s.as_bytes(),
            i: 0,
            tok: Tok::End,
            at: 0,
        };
        p.advance()?;
        let e = p.if_expr()?;
        if p.tok != Tok::End {
            return p.err("an operator or the end");
        }
        Ok(e)
    }

    /// The event names read, each once, in the order they first appear (every branch of
    /// an `if`; [`crate::metrics::IdMap`] has the ones perf opens).
    pub fn events(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Event(n) | Expr::SourceCount(n) = e
                && !out.contains(n)
            {
                out.push(n.clone());
            }
        });
        out
    }

    /// The `#literals` used, each once.
    pub fn literals(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Literal(n) = e
                && !out.contains(n)
            {
                out.push(n.clone());
            }
        });
        out
    }

    fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Num(_) | Expr::Event(_) | Expr::SourceCount(_) | Expr::Literal(_) => {}
            Expr::Neg(a) => a.walk(f),
            Expr::Bin(_, a, b) | Expr::Ratio(a, b) | Expr::Min(a, b) | Expr::Max(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::If(a, c, b) => {
                a.walk(f);
                c.walk(f);
                b.walk(f);
            }
        }
    }

    /// The formula with each `#literal` that `f` knows replaced by its value (perf reads
    /// them once, when it parses the metric).
    pub fn with_literals(&self, f: &dyn Fn(&str) -> Option<f64>) -> Expr {
        let mut e = self.clone();
        e.fold_literals(f);
        e
    }

    fn fold_literals(&mut self, f: &dyn Fn(&str) -> Option<f64>) {
        match self {
            Expr::Literal(l) => {
                if let Some(v) = f(l) {
                    *self = Expr::Num(v);
                }
            }
            Expr::Num(_) | Expr::Event(_) | Expr::SourceCount(_) => {}
            Expr::Neg(a) => a.fold_literals(f),
            Expr::Bin(_, a, b) | Expr::Ratio(a, b) | Expr::Min(a, b) | Expr::Max(a, b) => {
                a.fold_literals(f);
                b.fold_literals(f);
            }
            Expr::If(a, c, b) => {
                a.fold_literals(f);
                c.fold_literals(f);
                b.fold_literals(f);
            }
        }
    }

    /// The formula with each event name that `f` maps replaced by what it gives (metric
    /// references: `1 / IPC` with IPC's formula in its place).
    pub fn substitute(&self, f: &mut dyn FnMut(&str) -> Option<Expr>) -> Expr {
        let mut two = |a: &Expr, b: &Expr| (Box::new(a.substitute(f)), Box::new(b.substitute(f)));
        match self {
            Expr::Num(_) | Expr::SourceCount(_) | Expr::Literal(_) => self.clone(),
            Expr::Event(n) => f(n).unwrap_or_else(|| self.clone()),
            Expr::Neg(a) => Expr::Neg(Box::new(a.substitute(f))),
            Expr::Bin(op, a, b) => {
                let (a, b) = two(a, b);
                Expr::Bin(*op, a, b)
            }
            Expr::Ratio(a, b) => {
                let (a, b) = two(a, b);
                Expr::Ratio(a, b)
            }
            Expr::Min(a, b) => {
                let (a, b) = two(a, b);
                Expr::Min(a, b)
            }
            Expr::Max(a, b) => {
                let (a, b) = two(a, b);
                Expr::Max(a, b)
            }
            Expr::If(a, c, b) => Expr::If(
                Box::new(a.substitute(f)),
                Box::new(c.substitute(f)),
                Box::new(b.substitute(f)),
            ),
        }
    }

    /// The value, with `count` giving each event's count and each `#literal`'s value
    /// (`None`: not counted or unknown, and then the metric has no value). As perf
    /// evaluates: division (and `%`) by zero gives no value, `d_ratio` by zero gives 0,
    /// `A if C else B` is B when C is 0 and A otherwise, comparisons give 1 or 0, `& ^ |`
    /// work on the integer parts, `source_count` is 1 for a counted event.
    pub fn eval(&self, count: &mut dyn FnMut(&str) -> Option<f64>) -> Option<f64> {
        Some(match self {
            Expr::Num(v) => *v,
            Expr::Event(n) | Expr::Literal(n) => count(n)?,
            Expr::SourceCount(n) => {
                count(n)?;
                1.0
            }
            Expr::Neg(a) => -a.eval(count)?,
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.eval(count)?, b.eval(count)?);
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    '<' => f64::from(u8::from(a < b)),
                    '>' => f64::from(u8::from(a > b)),
                    '&' => ((a as i64) & (b as i64)) as f64,
                    '^' => ((a as i64) ^ (b as i64)) as f64,
                    '|' => ((a as i64) | (b as i64)) as f64,
                    _ if is_zero(b) => return None,
                    '%' => ((a as i64) % (b as i64)) as f64,
                    _ => a / b,
                }
            }
            Expr::Ratio(a, b) => {
                let (a, b) = (a.eval(count)?, b.eval(count)?);
                if is_zero(b) { 0.0 } else { a / b }
            }
            Expr::Min(a, b) => {
                let (a, b) = (a.eval(count)?, b.eval(count)?);
                if a < b { a } else { b }
            }
            Expr::Max(a, b) => {
                let (a, b) = (a.eval(count)?, b.eval(count)?);
                if a > b { a } else { b }
            }
            Expr::If(a, c, b) => {
                if is_zero(c.eval(count)?) {
                    b.eval(count)?
                } else {
                    a.eval(count)?
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(s: &str) -> Option<f64> {
        Expr::parse(s).unwrap().eval(&mut |n| match n {
            "x" => Some(2.0),
            "y.z" => Some(8.0),
            "zero" => Some(0.0),
            "#SMT_on" => Some(1.0),
            "#num_cores" => Some(4.0),
            "cpu@A,cmask=1@" => Some(5.0),
            _ => None,
        })
    }

    #[test]
    fn precedence_and_functions() {
        assert_eq!(val("1 + 2 * 3"), Some(7.0));
        assert_eq!(val("(1 + 2) * 3"), Some(9.0));
        assert_eq!(val("y.z / x - 1"), Some(3.0));
        assert_eq!(val("-x + 10"), Some(8.0));
        assert_eq!(val("d_ratio(y.z, x)"), Some(4.0));
        assert_eq!(val("d_ratio(x, zero)"), Some(0.0));
        assert_eq!(val("x / zero"), None);
        assert_eq!(val("x + missing"), None);
        assert_eq!(val("7 % 4"), Some(3.0));
        assert_eq!(val("6 | 1 ^ 3 & 2"), Some(7.0)); // 6 | (1 ^ (3 & 2))
        assert_eq!(val("1 + 2 < 4"), Some(1.0));
        assert_eq!(val("x > y.z"), Some(0.0));
        assert_eq!(val("min(x, y.z) + max(x, y.z)"), Some(10.0));
        assert_eq!(val("2e3 + 1.5e-1 + .5 + 3."), Some(2003.65));
    }

    #[test]
    fn if_else_and_literals() {
        assert_eq!(val("x if #SMT_on else y.z"), Some(2.0));
        assert_eq!(val("x if zero else y.z"), Some(8.0));
        // `else` chains to the right, the condition binds tighter than `if`.
        assert_eq!(val("1 if x < 1 else 2 if #SMT_on else 3"), Some(2.0));
        assert_eq!(val("(1 if zero else 4) * #num_cores"), Some(16.0));
        assert_eq!(val("1 if #unknown else 2"), None);
        // Escapes are removed from names, as perf's normalize does.
        assert_eq!(val(r"cpu@A\,cmask\=1@ * 2"), Some(10.0));
        assert_eq!(
            Expr::parse(r"cpu@A\,cmask\=1@ + source_count(x)")
                .unwrap()
                .events(),
            ["cpu@A,cmask=1@", "x"]
        );
        assert_eq!(val("source_count(x)"), Some(1.0));
        // Keywords are whole words; longer words are names.
        assert_eq!(
            Expr::parse("ifx + minimum + else_x").unwrap().events(),
            ["ifx", "minimum", "else_x"]
        );
        assert_eq!(Expr::parse("#SMT_on * x").unwrap().literals(), ["#SMT_on"]);
        let e = Expr::parse("x if #SMT_on else 3").unwrap();
        let off = e.with_literals(&|l| (l == "#SMT_on").then_some(0.0));
        assert_eq!(off.eval(&mut |_| None), Some(3.0));
        assert!(off.literals().is_empty());
    }

    #[test]
    fn errors_say_where() {
        let e = Expr::parse("a + ").unwrap_err();
        assert_eq!(e.at, 4);
        assert!(Expr::parse("d_ratio(a b)").is_err());
        assert!(Expr::parse("(a").is_err());
        assert!(Expr::parse("a b").is_err());
        assert!(Expr::parse("a if b").is_err());
        assert!(Expr::parse("min(a if b else c, d)").is_err());
    }
}
