//! Metric formulas: numbers, event names (with perf's `msr@tsc@` and `cycles:k` forms), `+ - * /`, parentheses, unary minus and
//! `d_ratio(a, b)` (a / b, 0 when b is 0), parsed once and evaluated over counts.

use std::fmt;

/// A parsed formula.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A constant.
    Num(f64),
    /// An event's count.
    Event(String),
    /// `-x`.
    Neg(Box<Expr>),
    /// `a OP b` with OP one of `+ - * /`.
    Bin(char, Box<Expr>, Box<Expr>),
    /// `d_ratio(a, b)`.
    Ratio(Box<Expr>, Box<Expr>),
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

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err<T>(&self, what: &str) -> Result<T, ExprError> {
        Err(ExprError {
            at: self.i,
            what: what.to_string(),
        })
    }

    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// sum := product (('+' | '-') product)*
    fn sum(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.product()?;
        loop {
            let op = if self.eat(b'+') {
                '+'
            } else if self.eat(b'-') {
                '-'
            } else {
                return Ok(left);
            };
            left = Expr::Bin(op, Box::new(left), Box::new(self.product()?));
        }
    }

    /// product := unary (('*' | '/') unary)*
    fn product(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.unary()?;
        loop {
            let op = if self.eat(b'*') {
                '*'
            } else if self.eat(b'/') {
                '/'
            } else {
                return Ok(left);
            };
            left = Expr::Bin(op, Box::new(left), Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        if self.eat(b'-') {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Expr, ExprError> {
        self.skip_ws();
        if self.eat(b'(') {
            let e = self.sum()?;
            if !self.eat(b')') {
                return self.err("`)`");
            }
            return Ok(e);
        }
        let start = self.i;
        let word = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'@' | b':');
        while self.i < self.s.len() && word(self.s[self.i]) {
            self.i += 1;
        }
        let w = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        if w.is_empty() {
            return self.err("a number, an event name or `(`");
        }
        if w.as_bytes()[0].is_ascii_digit() {
            return match w.parse() {
                Ok(v) => Ok(Expr::Num(v)),
                Err(_) => {
                    self.i = start;
                    self.err("a number")
                }
            };
        }
        if w == "d_ratio" {
            if !self.eat(b'(') {
                return self.err("`(` after d_ratio");
            }
            let a = self.sum()?;
            if !self.eat(b',') {
                return self.err("`,` in d_ratio(a, b)");
            }
            let b = self.sum()?;
            if !self.eat(b')') {
                return self.err("`)` after d_ratio(a, b");
            }
            return Ok(Expr::Ratio(Box::new(a), Box::new(b)));
        }
        Ok(Expr::Event(w))
    }
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
        let mut p = Parser {
            s: s.as_bytes(),
            i: 0,
        };
        let e = p.sum()?;
        p.skip_ws();
        if p.i != p.s.len() {
            return p.err("an operator or the end");
        }
        Ok(e)
    }

    /// The event names read, each once, in the order they first appear.
    pub fn events(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut Vec<String>) {
        match self {
            Expr::Num(_) => {}
            Expr::Event(n) => {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
            Expr::Neg(a) => a.collect(out),
            Expr::Bin(_, a, b) | Expr::Ratio(a, b) => {
                a.collect(out);
                b.collect(out);
            }
        }
    }

    /// The formula with each event name that `f` maps replaced by what it gives (metric
    /// references: `1 / IPC` with IPC's formula in its place).
    pub fn substitute(&self, f: &mut dyn FnMut(&str) -> Option<Expr>) -> Expr {
        match self {
            Expr::Num(_) => self.clone(),
            Expr::Event(n) => f(n).unwrap_or_else(|| self.clone()),
            Expr::Neg(a) => Expr::Neg(Box::new(a.substitute(f))),
            Expr::Bin(op, a, b) => {
                Expr::Bin(*op, Box::new(a.substitute(f)), Box::new(b.substitute(f)))
            }
            Expr::Ratio(a, b) => Expr::Ratio(Box::new(a.substitute(f)), Box::new(b.substitute(f))),
        }
    }

    /// The value, with `count` giving each event's count (`None`: not counted, and then
    /// the metric has no value). Division by zero gives no value, as in perf; `d_ratio`
    /// gives 0.
    pub fn eval(&self, count: &mut dyn FnMut(&str) -> Option<f64>) -> Option<f64> {
        Some(match self {
            Expr::Num(v) => *v,
            Expr::Event(n) => count(n)?,
            Expr::Neg(a) => -a.eval(count)?,
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.eval(count)?, b.eval(count)?);
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    _ if b == 0.0 => return None,
                    _ => a / b,
                }
            }
            Expr::Ratio(a, b) => {
                let (a, b) = (a.eval(count)?, b.eval(count)?);
                if b == 0.0 { 0.0 } else { a / b }
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
    }

    #[test]
    fn errors_say_where() {
        let e = Expr::parse("a + ").unwrap_err();
        assert_eq!(e.at, 4);
        assert!(Expr::parse("d_ratio(a b)").is_err());
        assert!(Expr::parse("(a").is_err());
        assert!(Expr::parse("a b").is_err());
    }
}
