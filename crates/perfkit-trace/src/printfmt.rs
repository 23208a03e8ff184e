//! A tracepoint's `print fmt:` evaluated over a RAW sample, the way `perf script` prints
//! tracepoint samples (through libtraceevent): `prev_comm=sleep prev_pid=12 ... ==> ...`.
//!
//! The print fmt is C: a printf format string and argument expressions over `REC->field`,
//! with the kernel's helpers (`__get_str`, `__print_flags`, `__print_symbolic`,
//! `__print_array`, `__get_cpumask`, ...), casts (to typedefs too), `sizeof`, arithmetic,
//! comparisons and `?:`; the kernel's `%p` extensions that print bytes (`%pI4`, `%pI6c`,
//! `%pISpc`, `%pM`, `%pU`, `%*pbl`). On a 6.x kernel 99.8% of the print fmts parse; the
//! rest use GNU statement expressions (`({ ... })`). [`PrintFmt::parse`] builds the expressions once
//! per event; [`PrintFmt::format`] evaluates them per sample. What it cannot evaluate
//! (an unknown helper, a malformed format) makes [`format_record`] fall back to the plain
//! `field=value` list, never to garbage or a panic.

use crate::tracefs::{Field, TraceFormat, Value};
use perfkit_records::Endian;
use std::fmt::Write;

/// What the traced kernel knew that a record does not carry: its symbols (for `%pS`) and
/// the strings of its `printk_formats` (for `%s` of a `const char *` field).
pub trait KernelInfo {
    /// The symbol containing code address `addr`: its name and `addr`'s offset into it.
    fn symbol(&self, addr: u64) -> Option<(String, u64)>;
    /// The format string at `addr` in the kernel's `printk_formats`.
    fn printk(&self, addr: u64) -> Option<&str>;
}

/// Parse tracefs `printk_formats` (`0xffffffff82a0b8e0 : "Start scheduler-tick"` lines)
/// into (address, string) pairs.
pub fn parse_printk_formats(text: &str) -> Vec<(u64, String)> {
    text.lines()
        .filter_map(|l| {
            let (addr, s) = l.split_once(" : ")?;
            let addr = u64::from_str_radix(addr.trim().trim_start_matches("0x"), 16).ok()?;
            let s = s.trim();
            let s = s
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or(s);
            // libtraceevent drops a trailing (escaped) newline.
            Some((addr, s.strip_suffix("\\n").unwrap_or(s).to_string()))
        })
        .collect()
}

/// A parsed `print fmt:` line.
#[derive(Clone, Debug, PartialEq)]
pub struct PrintFmt {
    format: String,
    args: Vec<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Num(i64),
    /// A constant with a `U` suffix (`-9ULL`): compares unsigned.
    UNum(i64),
    Str(String),
    /// `REC->name`
    Field(String),
    /// A bare name: a field in helpers (`__get_str(name)`), else a constant.
    Bare(String),
    /// A field found by [`PrintFmt::bind`]: its position in the format.
    At(usize),
    /// A bare name [`PrintFmt::bind`] found no field for: a constant the format file does
    /// not define.
    Unknown(String),
    Index(Box<Expr>, Box<Expr>),
    Unary(char, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    /// `{ value, "name" }` in a flags or symbol table.
    List(Vec<Expr>),
    /// `(type) expr`: the type's size in bytes and signedness (0 = pointer-sized).
    Cast(u8, bool, Box<Expr>),
    /// `sizeof(long)` or of a pointer: the recording machine's long size.
    SizeofLong,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(i64),
    UNum(i64),
    Str(String),
    Ident(String),
    Punct(&'static str),
}

const PUNCTS: &[&str] = &[
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "[", "]", "{", "}", ",", "?",
    ":", "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", ".",
];

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let mut v = Vec::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err("unterminated string".into()),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        let e = *b.get(i + 1).ok_or("bad escape")?;
                        v.push(match e {
                            b'n' => b'\n',
                            b't' => b'\t',
                            b'0' => 0,
                            other => other,
                        });
                        i += 2;
                    }
                    Some(&ch) => {
                        v.push(ch);
                        i += 1;
                    }
                }
            }
            // Adjacent literals concatenate, as in C.
            if let Some(Tok::Str(prev)) = out.last_mut() {
                prev.push_str(&String::from_utf8_lossy(&v));
            } else {
                out.push(Tok::Str(String::from_utf8_lossy(&v).into_owned()));
            }
        } else if c == b'\'' {
            // A character constant.
            let ch = *b.get(i + 1).ok_or("bad character constant")?;
            let (v, len) = if ch == b'\\' {
                let e = *b.get(i + 2).ok_or("bad character constant")?;
                (
                    match e {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'0' => 0,
                        o => o,
                    },
                    4,
                )
            } else {
                (ch, 3)
            };
            out.push(Tok::Num(i64::from(v)));
            i += len;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let unsigned = s[start..i].contains(['u', 'U']);
            let t = s[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                u64::from_str_radix(h, 16)
            } else if t.len() > 1 && t.starts_with('0') {
                u64::from_str_radix(&t[1..], 8)
            } else {
                t.parse::<u64>()
            }
            .map_err(|_| format!("bad number `{}`", &s[start..i]))?;
            out.push(if unsigned {
                Tok::UNum(v as i64)
            } else {
                Tok::Num(v as i64)
            });
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
        } else if let Some(p) = PUNCTS.iter().find(|p| s[i..].starts_with(**p)) {
            out.push(Tok::Punct(p));
            i += p.len();
        } else {
            return Err(format!("unexpected `{}`", c as char));
        }
    }
    Ok(out)
}

/// C type names (for casts): (size, signed); size 0 = long/pointer-sized.
fn c_type(words: &[String]) -> Option<(u8, bool)> {
    let unsigned = words.iter().any(|w| w == "unsigned");
    let base: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|w| !matches!(*w, "unsigned" | "signed" | "const" | "volatile" | "struct"))
        .collect();
    let t = match base.as_slice() {
        [] | ["int"] => (4, !unsigned),
        ["char"] => (1, !unsigned),
        ["short"] | ["short", "int"] => (2, !unsigned),
        ["long"] | ["long", "int"] => (0, !unsigned),
        ["long", "long"] | ["long", "long", "int"] => (8, !unsigned),
        ["bool"] | ["u8"] | ["__u8"] => (1, false),
        ["s8"] | ["__s8"] => (1, true),
        ["u16"] | ["__u16"] => (2, false),
        ["s16"] | ["__s16"] => (2, true),
        ["int8_t"] => (1, true),
        ["uint8_t"] | ["u_char"] => (1, false),
        ["int16_t"] => (2, true),
        ["uint16_t"] | ["u_short"] => (2, false),
        ["u32"]
        | ["__u32"]
        | ["uint32_t"]
        | ["uint"]
        | ["u_int"]
        | ["gfp_t"]
        | ["uid_t"]
        | ["gid_t"]
        | ["dev_t"] => (4, false),
        ["s32"] | ["__s32"] | ["int32_t"] | ["pid_t"] => (4, true),
        ["u64"] | ["__u64"] | ["uint64_t"] | ["size_t"] => (8, false),
        ["s64"] | ["__s64"] | ["int64_t"] | ["loff_t"] | ["ssize_t"] => (8, true),
        ["ulong"] | ["u_long"] => (0, false),
        [_, "*"] | [_, _, "*"] => (0, false),
        _ => return None,
    };
    Some(t)
}

struct P {
    t: Vec<Tok>,
    i: usize,
    /// Nesting of expressions, bounded so that a corrupt print fmt (`((((...`) is an error,
    /// not a stack overflow.
    depth: usize,
}

/// Deeper than any kernel print fmt (they nest a dozen levels at most).
const MAX_DEPTH: usize = 200;

impl P {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(x)) if *x == p)
    }
    fn eat(&mut self, p: &str) -> bool {
        let y = self.is(p);
        if y {
            self.i += 1;
        }
        y
    }
    fn want(&mut self, p: &str) -> Result<(), String> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(format!("expected `{p}`, found {:?}", self.peek()))
        }
    }

    /// Run `f` one level deeper, refusing to go past [`MAX_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, String>) -> Result<T, String> {
        if self.depth >= MAX_DEPTH {
            return Err(format!("expressions nested more than {MAX_DEPTH} deep"));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.nested(Self::expr_inner)
    }

    fn expr_inner(&mut self) -> Result<Expr, String> {
        let c = self.binary(0)?;
        if self.eat("?") {
            let a = self.expr()?;
            self.want(":")?;
            let b = self.expr()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn binary(&mut self, min: u8) -> Result<Expr, String> {
        const OPS: &[(&str, u8)] = &[
            ("||", 1),
            ("&&", 2),
            ("|", 3),
            ("^", 4),
            ("&", 5),
            ("==", 6),
            ("!=", 6),
            ("<", 7),
            (">", 7),
            ("<=", 7),
            (">=", 7),
            ("<<", 8),
            (">>", 8),
            ("+", 9),
            ("-", 9),
            ("*", 10),
            ("/", 10),
            ("%", 10),
        ];
        let mut lhs = self.unary()?;
        while let Some(Tok::Punct(p)) = self.peek() {
            let Some(&(op, prec)) = OPS.iter().find(|(o, _)| o == p) else {
                break;
            };
            if prec < min {
                break;
            }
            self.i += 1;
            let rhs = self.binary(prec + 1)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        self.nested(Self::unary_inner)
    }

    fn unary_inner(&mut self) -> Result<Expr, String> {
        for op in ["-", "!", "~", "+"] {
            if self.eat(op) {
                let e = self.unary()?;
                return Ok(Expr::Unary(op.chars().next().unwrap_or('+'), Box::new(e)));
            }
        }
        if self.is("(") {
            // A cast: `(` type words [`*`] `)`.
            let save = self.i;
            self.i += 1;
            let words = self.type_words();
            if !words.is_empty() && words.iter().all(|w| w != "REC") && self.eat(")") {
                if let Some((size, signed)) = c_type(&words) {
                    let e = self.unary()?;
                    return Ok(Expr::Cast(size, signed, Box::new(e)));
                }
                // A typedef we do not know (`(__kernel_rwf_t)0x1`, `(xfs_lsn_t)x`): a cast
                // when an operand follows; it keeps the value as it is.
                if matches!(
                    self.peek(),
                    Some(Tok::Num(_) | Tok::UNum(_) | Tok::Ident(_) | Tok::Punct("(" | "~" | "!"))
                ) {
                    let e = self.unary()?;
                    return Ok(Expr::Cast(8, true, Box::new(e)));
                }
            }
            self.i = save;
        }
        self.postfix()
    }

    /// Comma-separated expressions up to `close` (consumed).
    fn list(&mut self, close: &str) -> Result<Vec<Expr>, String> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(self.expr()?);
            if self.eat(close) {
                return Ok(items);
            }
            self.want(",")?;
        }
    }

    /// The words of a C type name (`unsigned long`, `struct page *`).
    fn type_words(&mut self) -> Vec<String> {
        let mut words = Vec::new();
        while let Some(Tok::Ident(w)) = self.peek() {
            words.push(w.clone());
            self.i += 1;
        }
        if self.eat("*") {
            words.push("*".into());
        }
        words
    }

    /// After `REC`: `->field` or `.field`.
    fn rec_field(&mut self) -> Result<Expr, String> {
        if !self.eat("->") {
            self.want(".")?;
        }
        match self.peek().cloned() {
            Some(Tok::Ident(f)) => {
                self.i += 1;
                Ok(Expr::Field(f))
            }
            other => Err(format!("expected a field after REC->, found {other:?}")),
        }
    }

    fn postfix(&mut self) -> Result<Expr, String> {
        let mut e = self.primary()?;
        while self.eat("[") {
            let idx = self.expr()?;
            self.want("]")?;
            e = Expr::Index(Box::new(e), Box::new(idx));
        }
        Ok(e)
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let t = self.peek().cloned().ok_or("unexpected end")?;
        self.i += 1;
        match t {
            Tok::Num(v) => Ok(Expr::Num(v)),
            Tok::UNum(v) => Ok(Expr::UNum(v)),
            Tok::Str(s) => Ok(Expr::Str(s)),
            // `(REC)->field`, as some print fmts write it.
            Tok::Punct("(")
                if matches!(self.peek(), Some(Tok::Ident(r)) if r == "REC")
                    && matches!(self.t.get(self.i + 1), Some(Tok::Punct(")"))) =>
            {
                self.i += 2;
                self.rec_field()
            }
            Tok::Punct("(") => {
                let e = self.expr()?;
                self.want(")")?;
                Ok(e)
            }
            Tok::Punct("{") => Ok(Expr::List(self.list("}")?)),
            Tok::Ident(id) if id == "REC" => self.rec_field(),
            // `sizeof(type)`: a constant.
            Tok::Ident(id) if id == "sizeof" => {
                self.want("(")?;
                let words = self.type_words();
                self.want(")")?;
                match c_type(&words) {
                    Some((0, _)) => Ok(Expr::SizeofLong),
                    Some((size, _)) => Ok(Expr::Num(i64::from(size))),
                    None => Err(format!("sizeof of an unknown type {words:?}")),
                }
            }
            Tok::Ident(id) => {
                if self.eat("(") {
                    Ok(Expr::Call(id, self.list(")")?))
                } else {
                    // The helpers name dynamic fields bare: `__get_str(comm)`; other bare
                    // names are the kernel's constants (`HRTIMER_MODE_ABS`).
                    Ok(Expr::Bare(id))
                }
            }
            Tok::Punct(p) => Err(format!("unexpected `{p}`")),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum V {
    Int(i64),
    Str(String),
    Array(Vec<i64>),
    Bytes(Vec<u8>),
}

impl V {
    fn int(&self) -> Result<i64, String> {
        match self {
            V::Int(v) => Ok(*v),
            V::Str(_) => Err("a string used as a number".into()),
            V::Array(_) | V::Bytes(_) => Err("an array used as a number".into()),
        }
    }
}

struct Ctx<'a> {
    fmt: &'a TraceFormat,
    raw: &'a [u8],
    long_size: u8,
}

impl<'a> Ctx<'a> {
    /// A kernel bitmap (an array of `unsigned long`) as recorded, with bit `i` at byte
    /// `i / 8`, bit `i % 8`: as it is from a little-endian machine, each long's bytes
    /// reversed from a big-endian one.
    fn bitmap_bytes(&self, mut b: Vec<u8>) -> Vec<u8> {
        if self.fmt.endian == Endian::Big {
            let long = match self.long_size {
                4 => 4,
                _ => 8,
            };
            for word in b.chunks_mut(long) {
                word.reverse();
            }
        }
        b
    }

    /// The bytes a `%p` extension prints: a fixed field's own bytes as recorded (a `u8`
    /// array decodes as text otherwise), else the value's.
    fn bytes_of(&self, arg: &Expr, v: &V) -> Vec<u8> {
        if let Some(f) = self.field_of(arg)
            && f.data_loc.is_none()
            && let Some(b) = self.raw.get(f.offset..f.offset + f.size)
        {
            return b.to_vec();
        }
        match v {
            V::Bytes(b) => b.clone(),
            V::Array(a) => a.iter().map(|&x| x as u8).collect(),
            V::Int(n) => n.to_le_bytes().to_vec(),
            V::Str(s) => s.as_bytes().to_vec(),
        }
    }

    /// Whether `e` has an unsigned C type of at least `int`'s size (smaller ones promote
    /// to `int`).
    fn is_unsigned(&self, e: &Expr) -> bool {
        match e {
            Expr::UNum(_) => true,
            Expr::Cast(size, signed, _) => !signed && (*size == 0 || *size >= 4),
            Expr::Field(_) | Expr::Bare(_) | Expr::At(_) => self
                .field_of(e)
                .is_some_and(|f| !f.signed && f.size >= 4 && f.array_len.is_none()),
            Expr::Binary(op, a, b) => {
                !matches!(*op, "<" | ">" | "<=" | ">=" | "==" | "!=" | "&&" | "||")
                    && (self.is_unsigned(a) || self.is_unsigned(b))
            }
            Expr::Unary('-' | '~' | '+', a) => self.is_unsigned(a),
            Expr::Cond(_, a, b) => self.is_unsigned(a) || self.is_unsigned(b),
            Expr::Call(name, args) if name == "__builtin_expect" => {
                args.first().is_some_and(|a| self.is_unsigned(a))
            }
            _ => false,
        }
    }

    /// A field bound by position, or its name.
    fn field_of(&self, e: &Expr) -> Option<&'a Field> {
        match e {
            Expr::At(i) => self.fmt.field_at(*i),
            Expr::Field(n) | Expr::Bare(n) => self.fmt.field(n),
            _ => None,
        }
    }

    fn field_value(&self, f: &Field) -> Result<V, String> {
        let v = self
            .fmt
            .decode_one(f, self.raw)
            .map_err(|e| e.to_string())?;
        Ok(match v {
            Value::Signed(x) => V::Int(x),
            Value::Unsigned(x) => V::Int(x as i64),
            Value::Str(s) => V::Str(s),
            Value::Array(a) => V::Array(a),
            Value::Bytes(b) => V::Bytes(b),
        })
    }

    fn eval(&self, e: &Expr) -> Result<V, String> {
        Ok(match e {
            Expr::Num(v) | Expr::UNum(v) => V::Int(*v),
            Expr::Str(s) => V::Str(s.clone()),
            Expr::Field(name) => {
                let f = self
                    .fmt
                    .field(name)
                    .ok_or_else(|| format!("no field `{name}`"))?;
                self.field_value(f)?
            }
            Expr::At(i) => {
                let f = self.fmt.field_at(*i).ok_or("field index out of range")?;
                self.field_value(f)?
            }
            // A name that is not a field is a constant the format file does not define:
            // 0, as libtraceevent reads it (so `{ HRTIMER_MODE_ABS, "ABS" }` matches 0 and
            // a value with no entry prints in hex, as perf prints it).
            Expr::Unknown(_) => V::Int(0),
            Expr::Bare(name) => match self.fmt.field(name) {
                Some(f) => self.field_value(f)?,
                None => V::Int(0),
            },
            Expr::Index(a, i) => {
                let i = usize::try_from(self.eval(i)?.int()?).map_err(|_| "negative index")?;
                match self.eval(a)? {
                    V::Array(v) => V::Int(*v.get(i).ok_or("index out of range")?),
                    V::Bytes(v) => V::Int(i64::from(*v.get(i).ok_or("index out of range")?)),
                    V::Str(s) => V::Int(i64::from(*s.as_bytes().get(i).unwrap_or(&0))),
                    V::Int(_) => return Err("indexing a number".into()),
                }
            }
            Expr::Unary(op, a) => {
                let v = self.eval(a)?.int()?;
                V::Int(match op {
                    '-' => v.wrapping_neg(),
                    '!' => i64::from(v == 0),
                    '~' => !v,
                    _ => v,
                })
            }
            Expr::Binary(op, a, b) => {
                let x = self.eval(a)?.int()?;
                // `&&` and `||` short-circuit.
                if *op == "&&" && x == 0 {
                    return Ok(V::Int(0));
                }
                if *op == "||" && x != 0 {
                    return Ok(V::Int(1));
                }
                let y = self.eval(b)?.int()?;
                let (ux, uy) = (x as u64, y as u64);
                // C's usual conversions: an unsigned operand makes the comparison (and
                // division) unsigned: `(unsigned long)addr >= (unsigned long)-4095`.
                if matches!(*op, "<" | ">" | "<=" | ">=" | "/" | "%")
                    && (self.is_unsigned(a) || self.is_unsigned(b))
                {
                    return Ok(V::Int(match *op {
                        "<" => i64::from(ux < uy),
                        ">" => i64::from(ux > uy),
                        "<=" => i64::from(ux <= uy),
                        ">=" => i64::from(ux >= uy),
                        "/" => ux.checked_div(uy).ok_or("division by zero")? as i64,
                        _ => ux.checked_rem(uy).ok_or("division by zero")? as i64,
                    }));
                }
                V::Int(match *op {
                    "||" | "&&" => i64::from(y != 0),
                    "|" => x | y,
                    "^" => x ^ y,
                    "&" => x & y,
                    "==" => i64::from(x == y),
                    "!=" => i64::from(x != y),
                    "<" => i64::from(x < y),
                    ">" => i64::from(x > y),
                    "<=" => i64::from(x <= y),
                    ">=" => i64::from(x >= y),
                    "<<" => ux.checked_shl(uy as u32).unwrap_or(0) as i64,
                    ">>" => ux.checked_shr(uy as u32).unwrap_or(0) as i64,
                    "+" => x.wrapping_add(y),
                    "-" => x.wrapping_sub(y),
                    "*" => x.wrapping_mul(y),
                    "/" => x.checked_div(y).ok_or("division by zero")?,
                    "%" => x.checked_rem(y).ok_or("division by zero")?,
                    _ => return Err(format!("operator {op}")),
                })
            }
            Expr::Cond(c, a, b) => {
                if self.eval(c)?.int()? != 0 {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::Cast(size, signed, a) => match self.eval(a)? {
                V::Int(v) => {
                    let size = if *size == 0 { self.long_size } else { *size };
                    V::Int(truncate(v, size, *signed))
                }
                // `(const char *)__get_str(x)` and the like keep their value.
                other => other,
            },
            Expr::SizeofLong => V::Int(i64::from(self.long_size)),
            Expr::List(_) => return Err("a { } list outside __print_flags/symbolic".into()),
            Expr::Call(name, args) => self.call(name, args)?,
        })
    }

    fn call(&self, name: &str, args: &[Expr]) -> Result<V, String> {
        let field_arg = |i: usize| -> Result<V, String> {
            match args.get(i) {
                Some(e @ (Expr::Field(_) | Expr::Bare(_) | Expr::At(_))) => {
                    let f = self
                        .field_of(e)
                        .ok_or_else(|| format!("{name}: no such field"))?;
                    self.field_value(f)
                }
                Some(_) => Err(format!("{name}: expected REC->field")),
                None => Err(format!("{name}: missing argument")),
            }
        };
        Ok(match name {
            "__get_str" | "__get_rel_str" => match field_arg(0)? {
                V::Str(s) => V::Str(s),
                V::Bytes(b) => V::Str(cstr(&b)),
                other => other,
            },
            "__get_dynamic_array" | "__get_rel_dynamic_array" => field_arg(0)?,
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
                V::Int(match field_arg(0)? {
                    V::Bytes(b) => b.len() as i64,
                    V::Str(s) => s.len() as i64 + 1,
                    V::Array(a) => a.len() as i64,
                    V::Int(_) => 0,
                })
            }
            "__print_flags" => {
                let val = self.eval(args.first().ok_or("__print_flags: no value")?)?;
                let mut val = val.int()? as u64;
                let delim = match args.get(1).map(|d| self.eval(d)) {
                    Some(Ok(V::Str(s))) => s,
                    _ => return Err("__print_flags: no delimiter".into()),
                };
                // As libtraceevent: a zero value prints the first entry whose value is
                // unknown (-1); entries print when all their bits are set, and only
                // positive values count.
                let mut out = String::new();
                for item in &args[2..] {
                    let Some((v, name)) = self.entry(item)? else {
                        break;
                    };
                    if val == 0 && v < 0 {
                        out.push_str(&self.entry_name(name)?);
                        break;
                    }
                    let v = v as u64;
                    if (v as i64) > 0 && val & v == v {
                        if !out.is_empty() {
                            out.push_str(&delim);
                        }
                        out.push_str(&self.entry_name(name)?);
                        val &= !v;
                    }
                }
                if val != 0 {
                    if !out.is_empty() {
                        out.push_str(&delim);
                    }
                    let _ = write!(out, "0x{val:x}");
                }
                V::Str(out)
            }
            "__print_symbolic" | "__print_symbolic_u64" => {
                let val = self
                    .eval(args.first().ok_or("__print_symbolic: no value")?)?
                    .int()?;
                for item in &args[1..] {
                    match self.entry(item)? {
                        Some((v, name)) if v == val => return Ok(V::Str(self.entry_name(name)?)),
                        Some(_) => {}
                        None => break,
                    }
                }
                V::Str(format!("0x{:x}", val as u64))
            }
            "__print_hex" | "__print_hex_str" => {
                let bytes = match self.eval(args.first().ok_or("__print_hex: no buffer")?)? {
                    V::Bytes(b) => b,
                    V::Array(a) => a.iter().map(|&x| x as u8).collect(),
                    V::Str(s) => s.into_bytes(),
                    V::Int(_) => return Err("__print_hex of a number".into()),
                };
                let len = match args.get(1) {
                    Some(l) => usize::try_from(self.eval(l)?.int()?).unwrap_or(0),
                    None => bytes.len(),
                };
                let sep = if name == "__print_hex" { " " } else { "" };
                V::Str(
                    bytes
                        .iter()
                        .take(len)
                        .map(|b| format!("{b:02x}"))
                        .collect::<Vec<_>>()
                        .join(sep),
                )
            }
            // Kernel helpers that leave the value as it is here (libtraceevent's jbd2
            // plugin does the same for jiffies_to_msecs).
            "__builtin_expect" | "jiffies_to_msecs" | "jiffies_to_usecs" => self.eval(
                args.first()
                    .ok_or_else(|| format!("{name}: missing argument"))?,
            )?,
            // A dynamic bitmask printed with %s: hex words, as the kernel prints it.
            "__get_bitmask" | "__get_cpumask" | "__get_rel_bitmask" | "__get_rel_cpumask" => {
                let bytes = match field_arg(0)? {
                    V::Bytes(b) => self.bitmap_bytes(b),
                    V::Array(a) => a.iter().map(|&x| x as u8).collect(),
                    V::Str(s) => s.into_bytes(),
                    // A number's bits, least significant first.
                    V::Int(n) => n.to_le_bytes().to_vec(),
                };
                V::Str(bitmap(&bytes, bytes.len() * 8, false))
            }
            // Decimal, space separated, as libtraceevent (perf script) prints it.
            "__print_array" => {
                let arg = |i: usize| args.get(i).ok_or("__print_array: missing argument");
                let count = usize::try_from(self.eval(arg(1)?)?.int()?).unwrap_or(0);
                let el = usize::try_from(self.eval(arg(2)?)?.int()?).unwrap_or(0);
                let items: Vec<u64> = match self.eval(arg(0)?)? {
                    V::Bytes(b) if matches!(el, 1 | 2 | 4 | 8) => b
                        .chunks_exact(el)
                        .map(|c| crate::tracefs::uint(c, self.fmt.endian))
                        .collect(),
                    V::Array(a) => a.iter().map(|&x| x as u64).collect(),
                    _ => return Err("__print_array: not an array".into()),
                };
                let body: Vec<String> = items.iter().take(count).map(u64::to_string).collect();
                V::Str(body.join(" "))
            }
            other => return Err(format!("helper `{other}` is not supported")),
        })
    }

    /// A `{ value, "name" }` table entry: its value and its name's expression; `None` for
    /// the `{ -1, NULL }` that ends some tables.
    fn entry<'e>(&self, item: &'e Expr) -> Result<Option<(i64, &'e Expr)>, String> {
        let Expr::List(pair) = item else {
            return Err("expected { value, \"name\" } entries".into());
        };
        let [value, name] = pair.as_slice() else {
            return Err("expected { value, \"name\" } entries".into());
        };
        let v = match value {
            // A constant the format file does not define: libtraceevent knows a few by
            // name and takes the rest as -1, so they match nothing.
            Expr::Unknown(n) => known_constant(n).unwrap_or(-1),
            Expr::Bare(n) if self.fmt.field(n).is_none() => known_constant(n).unwrap_or(-1),
            _ => self.eval(value)?.int()?,
        };
        if matches!(name, Expr::Str(_)) {
            return Ok(Some((v, name)));
        }
        match self.eval(name)? {
            V::Int(0) => Ok(None),
            V::Str(_) => Ok(Some((v, name))),
            _ => Err("a table entry's name is not a string".into()),
        }
    }

    /// The text of an entry's name.
    fn entry_name(&self, name: &Expr) -> Result<String, String> {
        match name {
            Expr::Str(s) => Ok(s.clone()),
            e => match self.eval(e)? {
                V::Str(s) => Ok(s),
                _ => Err("a table entry's name is not a string".into()),
            },
        }
    }
}

/// The kernel's `%p` extensions that print the bytes of a field (as libtraceevent does):
/// `M`/`m` MAC addresses, `I4`/`i4`, `I6`/`i6`/`I6c` IP addresses, `IS`/`iS` socket
/// addresses with `p` (port) and `c` (compressed), `U` UUIDs. `None` for the rest, which
/// print the address itself.
fn pointer_extension(ext: &str, bytes: &[u8], endian: Endian) -> Option<String> {
    let hex_joined = |b: &[u8], sep: &str| {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(sep)
    };
    let ipv4 = |b: &[u8], padded: bool| {
        b.iter()
            .map(|x| {
                if padded {
                    format!("{x:03}")
                } else {
                    x.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(".")
    };
    let ipv6 = |b: &[u8], style: u8| {
        let a: [u8; 16] = b.get(..16)?.try_into().ok()?;
        Some(match style {
            b'c' => std::net::Ipv6Addr::from(a).to_string(),
            b'i' => hex_joined(&a, ""),
            _ => a
                .chunks(2)
                .map(|w| format!("{:02x}{:02x}", w[0], w[1]))
                .collect::<Vec<_>>()
                .join(":"),
        })
    };
    let mut c = ext.chars();
    Some(match (c.next()?, c.next()) {
        ('M', _) | ('m', _) => {
            let mut mac = bytes.get(..6)?.to_vec();
            if ext.contains('R') {
                mac.reverse();
            }
            let sep = match ext.as_bytes() {
                [b'm', ..] => "",
                [b'M', b'F', ..] => "-",
                _ => ":",
            };
            hex_joined(&mac, sep)
        }
        ('I' | 'i', Some('4')) => ipv4(bytes.get(..4)?, ext.starts_with('i')),
        ('I' | 'i', Some('6')) => {
            let style = if ext.starts_with('i') {
                b'i'
            } else if ext[2..].contains('c') {
                b'c'
            } else {
                b'I'
            };
            ipv6(bytes, style)?
        }
        ('I' | 'i', Some('S')) => {
            let flags = &ext[2..];
            let (port, compressed) = (flags.contains('p'), flags.contains('c'));
            // sa_family is in the traced machine's order, the port in network order.
            let family = endian.u16(bytes.get(..2)?.try_into().ok()?);
            let port_no = u16::from_be_bytes(bytes.get(2..4)?.try_into().ok()?);
            match family {
                2 => {
                    let a = ipv4(bytes.get(4..8)?, ext.starts_with('i'));
                    if port { format!("{a}:{port_no}") } else { a }
                }
                10 => {
                    let style = if compressed { b'c' } else { ext.as_bytes()[0] };
                    let a = ipv6(bytes.get(8..24)?, style)?;
                    if port { format!("[{a}]:{port_no}") } else { a }
                }
                // libtraceevent prints nothing for other families.
                _ => String::new(),
            }
        }
        ('U', _) => {
            let u = bytes.get(..16)?;
            let h = hex_joined(u, "");
            let s = format!(
                "{}-{}-{}-{}-{}",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            );
            if ext.contains('B') || ext.contains('L') {
                s.to_uppercase()
            } else {
                s
            }
        }
        _ => return None,
    })
}

/// [`PrintFmt::bind`] for one expression, children first.
fn bind_expr(e: &mut Expr, fmt: &TraceFormat, constants: &Ctx<'_>) {
    match e {
        Expr::Field(n) => {
            if let Some(i) = fmt.field_index(n) {
                *e = Expr::At(i);
            }
            return;
        }
        Expr::Bare(n) => {
            *e = match fmt.field_index(n) {
                Some(i) => Expr::At(i),
                None => Expr::Unknown(std::mem::take(n)),
            };
            return;
        }
        Expr::Index(a, b) => {
            bind_expr(a, fmt, constants);
            bind_expr(b, fmt, constants);
        }
        Expr::Unary(_, a) | Expr::Cast(_, _, a) => bind_expr(a, fmt, constants),
        Expr::Binary(_, a, b) => {
            bind_expr(a, fmt, constants);
            bind_expr(b, fmt, constants);
        }
        Expr::Cond(c, a, b) => {
            bind_expr(c, fmt, constants);
            bind_expr(a, fmt, constants);
            bind_expr(b, fmt, constants);
        }
        Expr::Call(_, args) | Expr::List(args) => {
            for a in args {
                bind_expr(a, fmt, constants);
            }
            return;
        }
        _ => return,
    }
    // Fold an operator over constants into one.
    let constant = |x: &Expr| matches!(x, Expr::Num(_) | Expr::UNum(_));
    let all_constant = match &*e {
        Expr::Unary(_, a) | Expr::Cast(_, _, a) => constant(a),
        Expr::Binary(_, a, b) => constant(a) && constant(b),
        Expr::Cond(c, a, b) => constant(c) && constant(a) && constant(b),
        _ => false,
    };
    if all_constant && let Ok(V::Int(v)) = constants.eval(e) {
        *e = if constants.is_unsigned(e) {
            Expr::UNum(v)
        } else {
            Expr::Num(v)
        };
    }
}

/// The constants libtraceevent resolves by name in flag and symbol tables.
fn known_constant(name: &str) -> Option<i64> {
    const SOFTIRQS: [&str; 10] = [
        "HI_SOFTIRQ",
        "TIMER_SOFTIRQ",
        "NET_TX_SOFTIRQ",
        "NET_RX_SOFTIRQ",
        "BLOCK_SOFTIRQ",
        "IRQ_POLL_SOFTIRQ",
        "TASKLET_SOFTIRQ",
        "SCHED_SOFTIRQ",
        "HRTIMER_SOFTIRQ",
        "RCU_SOFTIRQ",
    ];
    match name {
        "HRTIMER_NORESTART" => Some(0),
        "HRTIMER_RESTART" => Some(1),
        _ => SOFTIRQS.iter().position(|s| *s == name).map(|i| i as i64),
    }
}

/// The kernel's `%*pb` (32-bit hex chunks, most significant first, comma separated) and
/// `%*pbl` (ranges of set bits: `0-3,5`) of the first `bits` bits of a little-endian bitmap.
fn bitmap(bytes: &[u8], bits: usize, list: bool) -> String {
    let bits = bits.min(bytes.len() * 8);
    let set = |i: usize| bytes[i / 8] & (1 << (i % 8)) != 0;
    if list {
        let mut out = Vec::new();
        let mut i = 0;
        while i < bits {
            if set(i) {
                let start = i;
                while i + 1 < bits && set(i + 1) {
                    i += 1;
                }
                out.push(if start == i {
                    start.to_string()
                } else {
                    format!("{start}-{i}")
                });
            }
            i += 1;
        }
        return out.join(",");
    }
    let mut chunks = Vec::new();
    let mut lo = 0;
    while lo < bits {
        let n = (bits - lo).min(32);
        let v = (0..n).fold(0u32, |acc, b| acc | (u32::from(set(lo + b)) << b));
        chunks.push(format!("{v:0w$x}", w = n.div_ceil(4)));
        lo += 32;
    }
    chunks.reverse();
    chunks.join(",")
}

fn truncate(v: i64, size: u8, signed: bool) -> i64 {
    if size >= 8 {
        return v;
    }
    let bits = 8 * u32::from(size);
    let mask = (1u64 << bits) - 1;
    let u = v as u64 & mask;
    if signed && u >> (bits - 1) & 1 == 1 {
        (u | !mask) as i64
    } else {
        u as i64
    }
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

impl PrintFmt {
    /// Parse a `print fmt:` line's text (without the `print fmt: ` prefix).
    pub fn parse(text: &str) -> Result<PrintFmt, String> {
        let toks = lex(text)?;
        let mut p = P {
            t: toks,
            i: 0,
            depth: 0,
        };
        let format = match p.peek().cloned() {
            Some(Tok::Str(s)) => {
                p.i += 1;
                s
            }
            other => return Err(format!("print fmt does not start with a string: {other:?}")),
        };
        let mut args = Vec::new();
        while p.eat(",") {
            args.push(p.expr()?);
        }
        if p.i != p.t.len() {
            return Err(format!("unexpected {:?} after the arguments", p.peek()));
        }
        Ok(PrintFmt { format, args })
    }

    /// Resolve field names against `fmt` once, so that evaluation does not look them up
    /// by name, and fold constant sub-expressions (the kernel's flag tables are trees of
    /// casts and shifts) into numbers. A bound print fmt is for `fmt`'s records only.
    pub fn bind(&mut self, fmt: &TraceFormat) {
        let empty = TraceFormat {
            name: String::new(),
            id: 0,
            common_fields: Vec::new(),
            fields: Vec::new(),
            print_fmt: String::new(),
            endian: fmt.endian,
        };
        let constants = Ctx {
            fmt: &empty,
            raw: &[],
            long_size: std::mem::size_of::<usize>() as u8,
        };
        for a in &mut self.args {
            bind_expr(a, fmt, &constants);
        }
    }

    /// Evaluate over a RAW record of `fmt`'s event; `long_size` is the traced kernel's
    /// `sizeof(long)` (8 on 64-bit machines). `%pS` and friends print addresses.
    pub fn format(&self, fmt: &TraceFormat, raw: &[u8], long_size: u8) -> Result<String, String> {
        let mut out = String::new();
        self.format_into(fmt, raw, long_size, None, &mut out)?;
        Ok(out)
    }

    /// Whether the format prints code addresses as symbols (`%pS`, `%ps`, `%pF`, `%pf`,
    /// `%pB`), so that [`format_into`](Self::format_into) wants kernel symbols.
    pub fn uses_symbols(&self) -> bool {
        ["%pS", "%ps", "%pF", "%pf", "%pB"]
            .iter()
            .any(|p| self.format.contains(p))
    }

    /// [`format`](Self::format) appended to `out`, with kernel symbols for `%pS`
    /// (`name+0xoff`) and `%ps` (`name`) and `printk_formats` strings for `%s` of pointers,
    /// as perf script prints them; what `kernel` does not know prints in hex. On an error
    /// `out` is left as it was.
    pub fn format_into(
        &self,
        fmt: &TraceFormat,
        raw: &[u8],
        long_size: u8,
        kernel: Option<&dyn KernelInfo>,
        out: &mut String,
    ) -> Result<(), String> {
        let start = out.len();
        let r = self.write(fmt, raw, long_size, kernel, out);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    fn write(
        &self,
        fmt: &TraceFormat,
        raw: &[u8],
        long_size: u8,
        kernel: Option<&dyn KernelInfo>,
        out: &mut String,
    ) -> Result<(), String> {
        let ctx = Ctx {
            fmt,
            raw,
            long_size,
        };
        let mut args = self.args.iter();
        let f = self.format.as_bytes();
        let mut i = 0;
        while i < f.len() {
            if f[i] != b'%' {
                let start = i;
                while i < f.len() && f[i] != b'%' {
                    i += 1;
                }
                out.push_str(&self.format[start..i]);
                continue;
            }
            i += 1;
            if f.get(i) == Some(&b'%') {
                out.push('%');
                i += 1;
                continue;
            }
            let mut spec = Spec::default();
            while let Some(&c) = f.get(i) {
                match c {
                    b'-' => spec.left = true,
                    b'0' => spec.zero = true,
                    b'+' => spec.plus = true,
                    b' ' => spec.space = true,
                    b'#' => spec.alt = true,
                    _ => break,
                }
                i += 1;
            }
            if f.get(i) == Some(&b'*') {
                i += 1;
                let w = ctx.eval(args.next().ok_or("missing `*` width")?)?.int()?;
                if w < 0 {
                    spec.left = true;
                }
                spec.width = w.unsigned_abs() as usize;
            } else {
                while let Some(d) = f.get(i).filter(|c| c.is_ascii_digit()) {
                    spec.width = spec.width * 10 + usize::from(d - b'0');
                    i += 1;
                }
            }
            if f.get(i) == Some(&b'.') {
                i += 1;
                let mut p = 0usize;
                if f.get(i) == Some(&b'*') {
                    i += 1;
                    p = usize::try_from(
                        ctx.eval(args.next().ok_or("missing `*` precision")?)?
                            .int()?,
                    )
                    .unwrap_or(0);
                } else {
                    while let Some(d) = f.get(i).filter(|c| c.is_ascii_digit()) {
                        p = p * 10 + usize::from(d - b'0');
                        i += 1;
                    }
                }
                spec.prec = Some(p);
            }
            let mut longs = 0;
            let mut size: u8 = 4;
            while let Some(&c) = f.get(i) {
                match c {
                    b'l' => {
                        longs += 1;
                        size = if longs == 1 { long_size } else { 8 };
                    }
                    b'h' => size = if size == 2 { 1 } else { 2 },
                    b'z' | b'j' | b't' => size = 8,
                    b'L' | b'q' => size = 8,
                    _ => break,
                }
                i += 1;
            }
            let conv = *f.get(i).ok_or("format ends inside a conversion")?;
            i += 1;
            let arg = args
                .next()
                .ok_or_else(|| format!("no argument for %{}", conv as char))?;
            let v = ctx.eval(arg)?;
            // Most conversions have no flags, width or precision: written straight out.
            let plain =
                spec.width == 0 && spec.prec.is_none() && !(spec.plus || spec.space || spec.alt);
            if plain {
                match (conv, &v) {
                    (b'd' | b'i', V::Int(n)) => {
                        let _ = write!(out, "{}", truncate(*n, size, true));
                        continue;
                    }
                    (b'u', V::Int(n)) => {
                        let _ = write!(out, "{}", truncate(*n, size, false) as u64);
                        continue;
                    }
                    (b'x', V::Int(n)) => {
                        let _ = write!(out, "{:x}", truncate(*n, size, false) as u64);
                        continue;
                    }
                    (b's', V::Str(s)) => {
                        out.push_str(s);
                        continue;
                    }
                    _ => {}
                }
            }
            let text = match conv {
                b'd' | b'i' => {
                    let n = truncate(v.int()?, size, true);
                    let mut s = n.unsigned_abs().to_string();
                    if let Some(p) = spec.prec {
                        s = format!("{s:0>p$}");
                    }
                    let sign = if n < 0 {
                        "-"
                    } else if spec.plus {
                        "+"
                    } else if spec.space {
                        " "
                    } else {
                        ""
                    };
                    spec.pad_number(sign, &s)
                }
                b'u' => {
                    let n = truncate(v.int()?, size, false) as u64;
                    spec.pad_number("", &n.to_string())
                }
                b'x' | b'X' | b'o' => {
                    let n = truncate(v.int()?, size, false) as u64;
                    let s = match conv {
                        b'x' => format!("{n:x}"),
                        b'X' => format!("{n:X}"),
                        _ => format!("{n:o}"),
                    };
                    let prefix = match (spec.alt && n != 0, conv) {
                        (true, b'x') => "0x",
                        (true, b'X') => "0X",
                        (true, _) => "0",
                        _ => "",
                    };
                    spec.pad_number(prefix, &s)
                }
                b'p' => {
                    let start = i;
                    while f.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
                        i += 1;
                    }
                    let ext = &self.format[start..i];
                    let bytes = if ext.is_empty() {
                        Vec::new()
                    } else {
                        ctx.bytes_of(arg, &v)
                    };
                    // `%*pb` / `%*pbl`: a bitmap of `*` bits, in hex or as a list.
                    if ext == "b" || ext == "bl" {
                        let bits = std::mem::take(&mut spec.width);
                        // Recorded bytes are longs in the recording's order; a number's
                        // bytes are least significant first already.
                        let recorded = matches!(v, V::Bytes(_))
                            || ctx.field_of(arg).is_some_and(|f| f.data_loc.is_none());
                        let bytes = if recorded {
                            ctx.bitmap_bytes(bytes)
                        } else {
                            bytes
                        };
                        out.push_str(&bitmap(&bytes, bits, ext == "bl"));
                        continue;
                    }
                    let symbol = match (ext.as_bytes().first(), kernel) {
                        (Some(c @ (b'S' | b's' | b'F' | b'f' | b'B')), Some(k)) => {
                            k.symbol(v.int()? as u64).map(|(name, off)| {
                                if matches!(c, b's' | b'f') {
                                    name
                                } else {
                                    format!("{name}+0x{off:x}")
                                }
                            })
                        }
                        _ => None,
                    };
                    match symbol.or_else(|| pointer_extension(ext, &bytes, fmt.endian)) {
                        Some(text) => spec.pad_text(&text),
                        // %p and %pS/%ps/%pK...: the address, as glibc's printf writes it.
                        // (%pS of an address with no symbol: 0x..., even for 0.)
                        None => match v.int()? as u64 {
                            0 if !ext.starts_with(['S', 's', 'F', 'f', 'B']) => {
                                spec.pad_text("(nil)")
                            }
                            n => spec.pad_number("0x", &format!("{n:x}")),
                        },
                    }
                }
                b'c' => spec.pad_text(&((v.int()? as u8) as char).to_string()),
                b's' => {
                    let s = match v {
                        V::Str(s) => s,
                        V::Bytes(b) => cstr(&b),
                        // A `const char *`: a string of the kernel's printk_formats, else
                        // the address in hex (as libtraceevent prints it).
                        V::Int(n) => match kernel.and_then(|k| k.printk(n as u64)) {
                            Some(s) => s.to_string(),
                            None => format!("{:x}", n as u64),
                        },
                        V::Array(a) => a.iter().map(|x| x.to_string()).collect(),
                    };
                    let s = match spec.prec {
                        Some(p) => s.chars().take(p).collect(),
                        None => s,
                    };
                    spec.pad_text(&s)
                }
                other => return Err(format!("conversion %{} is not supported", other as char)),
            };
            out.push_str(&text);
        }
        Ok(())
    }
}

#[derive(Default)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: usize,
    prec: Option<usize>,
}

impl Spec {
    fn pad_text(&self, s: &str) -> String {
        let w = self.width;
        if self.left {
            format!("{s:<w$}")
        } else {
            format!("{s:>w$}")
        }
    }
    fn pad_number(&self, prefix: &str, digits: &str) -> String {
        let len = prefix.len() + digits.len();
        if self.left || self.width <= len {
            return self.pad_text(&format!("{prefix}{digits}"));
        }
        if self.zero && self.prec.is_none() {
            format!("{prefix}{}{digits}", "0".repeat(self.width - len))
        } else {
            format!("{}{prefix}{digits}", " ".repeat(self.width - len))
        }
    }
}

/// A tracepoint sample's text as `perf script` prints it: the event's print fmt evaluated
/// over `raw`; when that is not possible, its fields as `name=value` pairs.
pub fn format_record(fmt: &TraceFormat, parsed: Option<&PrintFmt>, raw: &[u8]) -> String {
    let mut out = String::new();
    format_record_into(fmt, parsed, raw, None, &mut out);
    out
}

/// [`format_record`] appended to `out`, with what the kernel knew (see
/// [`PrintFmt::format_into`]).
pub fn format_record_into(
    fmt: &TraceFormat,
    parsed: Option<&PrintFmt>,
    raw: &[u8],
    kernel: Option<&dyn KernelInfo>,
    out: &mut String,
) {
    let long_size = std::mem::size_of::<usize>() as u8;
    if let Some(p) = parsed
        && p.format_into(fmt, raw, long_size, kernel, out).is_ok()
    {
        return;
    }
    out.push_str(&fields_text(fmt, raw));
}

/// The fields as `name=value` pairs (libtraceevent's form when the print fmt fails).
pub fn fields_text(fmt: &TraceFormat, raw: &[u8]) -> String {
    let mut out = String::new();
    for f in &fmt.fields {
        if !out.is_empty() {
            out.push(' ');
        }
        let _ = write!(out, "{}=", f.name);
        match fmt.decode_one(f, raw) {
            Ok(Value::Signed(v)) => {
                let _ = write!(out, "{v}");
            }
            Ok(Value::Unsigned(v)) => {
                let _ = write!(out, "{v}");
            }
            Ok(Value::Str(s)) => out.push_str(&s),
            Ok(Value::Array(a)) => {
                let items: Vec<String> = a.iter().map(|x| format!("{x:#x}")).collect();
                let _ = write!(out, "[{}]", items.join(", "));
            }
            Ok(Value::Bytes(b)) => {
                let items: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
                let _ = write!(out, "ARRAY[{}]", items.join(", "));
            }
            Err(_) => out.push('?'),
        }
    }
    out
}
