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
use std::fmt::Write;

/// A parsed `print fmt:` line.
#[derive(Clone, Debug, PartialEq)]
pub struct PrintFmt {
    format: String,
    args: Vec<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Num(i64),
    Str(String),
    /// `REC->name`
    Field(String),
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
            let t = s[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                u64::from_str_radix(h, 16)
            } else if t.len() > 1 && t.starts_with('0') {
                u64::from_str_radix(&t[1..], 8)
            } else {
                t.parse::<u64>()
            }
            .map_err(|_| format!("bad number `{}`", &s[start..i]))?;
            out.push(Tok::Num(v as i64));
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
            let mut words = Vec::new();
            while let Some(Tok::Ident(w)) = self.peek() {
                words.push(w.clone());
                self.i += 1;
            }
            if self.eat("*") {
                words.push("*".into());
            }
            if !words.is_empty() && words.iter().all(|w| w != "REC") && self.eat(")") {
                if let Some((size, signed)) = c_type(&words) {
                    let e = self.unary()?;
                    return Ok(Expr::Cast(size, signed, Box::new(e)));
                }
                // A typedef we do not know (`(__kernel_rwf_t)0x1`, `(xfs_lsn_t)x`): a cast
                // when an operand follows; it keeps the value as it is.
                if matches!(
                    self.peek(),
                    Some(Tok::Num(_) | Tok::Ident(_) | Tok::Punct("(" | "~" | "!"))
                ) {
                    let e = self.unary()?;
                    return Ok(Expr::Cast(8, true, Box::new(e)));
                }
            }
            self.i = save;
        }
        self.postfix()
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
            Tok::Punct("{") => {
                let mut items = Vec::new();
                if !self.eat("}") {
                    loop {
                        items.push(self.expr()?);
                        if self.eat("}") {
                            break;
                        }
                        self.want(",")?;
                    }
                }
                Ok(Expr::List(items))
            }
            Tok::Ident(id) if id == "REC" => self.rec_field(),
            // `sizeof(type)`: a constant.
            Tok::Ident(id) if id == "sizeof" => {
                self.want("(")?;
                let mut words = Vec::new();
                while let Some(Tok::Ident(w)) = self.peek() {
                    words.push(w.clone());
                    self.i += 1;
                }
                if self.eat("*") {
                    words.push("*".into());
                }
                self.want(")")?;
                match c_type(&words) {
                    Some((0, _)) => Ok(Expr::SizeofLong),
                    Some((size, _)) => Ok(Expr::Num(i64::from(size))),
                    None => Err(format!("sizeof of an unknown type {words:?}")),
                }
            }
            Tok::Ident(id) => {
                if self.eat("(") {
                    let mut args = Vec::new();
                    if !self.eat(")") {
                        loop {
                            args.push(self.expr()?);
                            if self.eat(")") {
                                break;
                            }
                            self.want(",")?;
                        }
                    }
                    Ok(Expr::Call(id, args))
                } else {
                    // The helpers name dynamic fields bare: `__get_str(comm)`.
                    Ok(Expr::Field(id))
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

impl Ctx<'_> {
    /// The bytes a `%p` extension prints: a fixed field's own bytes as recorded (a `u8`
    /// array decodes as text otherwise), else the value's.
    fn bytes_of(&self, arg: &Expr, v: &V) -> Vec<u8> {
        if let Expr::Field(name) = arg
            && let Some(f) = self.fmt.field(name)
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

    fn field(&self, name: &str) -> Result<(&Field, V), String> {
        let f = self
            .fmt
            .field(name)
            .ok_or_else(|| format!("no field `{name}`"))?;
        let v = self
            .fmt
            .decode_one(f, self.raw)
            .map_err(|e| e.to_string())?;
        Ok((
            f,
            match v {
                Value::Signed(x) => V::Int(x),
                Value::Unsigned(x) => V::Int(x as i64),
                Value::Str(s) => V::Str(s),
                Value::Array(a) => V::Array(a),
                Value::Bytes(b) => V::Bytes(b),
            },
        ))
    }

    fn eval(&self, e: &Expr) -> Result<V, String> {
        Ok(match e {
            Expr::Num(v) => V::Int(*v),
            Expr::Str(s) => V::Str(s.clone()),
            Expr::Field(name) => self.field(name)?.1,
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
        let field_arg = |i: usize| -> Result<(&Field, V), String> {
            match args.get(i) {
                Some(Expr::Field(f)) => self.field(f),
                Some(Expr::Call(_, _)) | Some(_) => Err(format!("{name}: expected REC->field")),
                None => Err(format!("{name}: missing argument")),
            }
        };
        Ok(match name {
            "__get_str" | "__get_rel_str" => match field_arg(0)?.1 {
                V::Str(s) => V::Str(s),
                V::Bytes(b) => V::Str(cstr(&b)),
                other => other,
            },
            "__get_dynamic_array" | "__get_rel_dynamic_array" => field_arg(0)?.1,
            "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
                let (f, v) = field_arg(0)?;
                let _ = f;
                V::Int(match v {
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
                let mut out = String::new();
                for (v, s) in self.table(&args[2..])? {
                    let v = v as u64;
                    if (v == 0 && val == 0) || (v != 0 && val & v == v) {
                        if !out.is_empty() {
                            out.push_str(&delim);
                        }
                        out.push_str(&s);
                        val &= !v;
                        if v == 0 {
                            break;
                        }
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
                match self.table(&args[1..])?.into_iter().find(|(v, _)| *v == val) {
                    Some((_, s)) => V::Str(s),
                    None => V::Str(format!("0x{:x}", val as u64)),
                }
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
                let bytes = match field_arg(0)?.1 {
                    V::Bytes(b) => b,
                    V::Array(a) => a.iter().map(|&x| x as u8).collect(),
                    V::Str(s) => s.into_bytes(),
                    V::Int(n) => n.to_le_bytes().to_vec(),
                };
                V::Str(bitmap(&bytes, bytes.len() * 8, false))
            }
            // `{0x1,0x2}`, as the kernel's trace_print_array_seq prints it.
            "__print_array" => {
                let arg = |i: usize| args.get(i).ok_or("__print_array: missing argument");
                let count = usize::try_from(self.eval(arg(1)?)?.int()?).unwrap_or(0);
                let el = usize::try_from(self.eval(arg(2)?)?.int()?).unwrap_or(0);
                let items: Vec<u64> = match self.eval(arg(0)?)? {
                    V::Bytes(b) if matches!(el, 1 | 2 | 4 | 8) => b
                        .chunks_exact(el)
                        .map(|c| {
                            let mut w = [0u8; 8];
                            w[..el].copy_from_slice(c);
                            u64::from_le_bytes(w)
                        })
                        .collect(),
                    V::Array(a) => a.iter().map(|&x| x as u64).collect(),
                    _ => return Err("__print_array: not an array".into()),
                };
                let body: Vec<String> = items
                    .iter()
                    .take(count)
                    .map(|v| format!("0x{v:x}"))
                    .collect();
                V::Str(format!("{{{}}}", body.join(",")))
            }
            other => return Err(format!("helper `{other}` is not supported")),
        })
    }

    fn table(&self, items: &[Expr]) -> Result<Vec<(i64, String)>, String> {
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            let Expr::List(pair) = it else {
                return Err("expected { value, \"name\" } entries".into());
            };
            let [value, name] = pair.as_slice() else {
                return Err("expected { value, \"name\" } entries".into());
            };
            let v = self.eval(value)?.int()?;
            match self.eval(name)? {
                V::Str(s) => out.push((v, s)),
                // `{ -1, NULL }` ends some tables.
                V::Int(0) => break,
                _ => return Err("a table entry's name is not a string".into()),
            }
        }
        Ok(out)
    }
}

/// The kernel's `%p` extensions that print the bytes of a field (as libtraceevent does):
/// `M`/`m` MAC addresses, `I4`/`i4`, `I6`/`i6`/`I6c` IP addresses, `IS`/`iS` socket
/// addresses with `p` (port) and `c` (compressed), `U` UUIDs. `None` for the rest, which
/// print the address itself.
fn pointer_extension(ext: &str, bytes: &[u8]) -> Option<String> {
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
            hex_joined(&mac, if ext.starts_with('M') { ":" } else { "" })
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
            let family = u16::from_le_bytes(bytes.get(..2)?.try_into().ok()?);
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

    /// Evaluate over a RAW record of `fmt`'s event; `long_size` is the traced kernel's
    /// `sizeof(long)` (8 on 64-bit machines).
    pub fn format(&self, fmt: &TraceFormat, raw: &[u8], long_size: u8) -> Result<String, String> {
        let ctx = Ctx {
            fmt,
            raw,
            long_size,
        };
        let mut args = self.args.iter();
        let mut out = String::new();
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
                    let bytes = ctx.bytes_of(arg, &v);
                    // `%*pb` / `%*pbl`: a bitmap of `*` bits, in hex or as a list.
                    if ext == "b" || ext == "bl" {
                        let bits = std::mem::take(&mut spec.width);
                        out.push_str(&bitmap(&bytes, bits, ext == "bl"));
                        continue;
                    }
                    match pointer_extension(ext, &bytes) {
                        Some(text) => spec.pad_text(&text),
                        // %p and %pS/%ps/%pK...: the address.
                        None => {
                            let n = v.int()? as u64;
                            spec.pad_number("0x", &format!("{n:x}"))
                        }
                    }
                }
                b'c' => spec.pad_text(&((v.int()? as u8) as char).to_string()),
                b's' => {
                    let s = match v {
                        V::Str(s) => s,
                        V::Bytes(b) => cstr(&b),
                        V::Int(n) => n.to_string(),
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
        Ok(out)
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
    if let Some(p) = parsed
        && let Ok(s) = p.format(fmt, raw, std::mem::size_of::<usize>() as u8)
    {
        return s;
    }
    fields_text(fmt, raw)
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
