//! Probe arguments as `perf probe -x BINARY 'FUNC ARG...'` takes them, turned into the fetch
//! arguments tracefs' `uprobe_events` takes, as perf 6.1's probe finder turns them.
//!
//! An argument is `[NAME=]VAR[->FIELD|.FIELD|[INDEX]]...[:TYPE]`, `$vars` / `$params`, or a
//! raw fetch argument (anything not starting like a C name: `%di`, `+8(%sp)`, `$retval`,
//! `$retval->x`, `$comm`), which goes to the kernel as written and is named `argN`. A
//! variable is looked up as perf's `die_find_variable_at` does: in the scope of the probe
//! (the function named, an inlined copy too, or for `FILE:LINE` the function declared
//! nearest before the line), walking nested blocks and inlined copies that hold the
//! address in DWARF order, then among the unit's globals. Its location there (an
//! expression or a location list entry; only the first operation counts, as in perf)
//! becomes a register (`%di`), a memory operand (`-20(%bp)`: a frame-base offset resolved
//! through the call frame information at that address, as perf does for
//! `DW_OP_call_frame_cfa`), a constant (`\42`), or for a global the file-offset memory
//! operand uprobes take (`@+0x4040`; perf 6.1 writes `@sym+0`, which uprobes refuse).
//! `->FIELD` and indexes through a pointer dereference (`+0(%dx)`), `.FIELD` and indexes
//! within an array add offsets. The type is perf's: a cast as given, `string` of a `char`
//! pointer or array, else `s` for signed base types and `x` otherwise, with the type's size.

use std::path::Path;

use gimli::{Reader as _, UnwindSection as _};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};

use crate::probe_lines::{Reader, load_dwarf};
use crate::uprobe_events::ProbeError;

/// One access after the variable: `->FIELD`, `.FIELD` or `[INDEX]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    /// `->FIELD`: a member through a pointer.
    Arrow(String),
    /// `.FIELD`: a member of a structure or union.
    Dot(String),
    /// `[INDEX]`: an element of an array or of what a pointer points to; the text as
    /// written (`[0x1]`) names it in perf's messages.
    Index(i64, String),
}

impl Field {
    /// The member's name, or the index as written.
    fn name(&self) -> &str {
        match self {
            Field::Arrow(n) | Field::Dot(n) | Field::Index(_, n) => n,
        }
    }
}

/// One probe argument as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgSpec {
    /// As the user wrote it (`x=p->x`).
    pub text: String,
    /// `NAME=`, when given.
    pub name: Option<String>,
    /// The variable (`p`), or the raw fetch argument (`%di`, `$retval`, `+8(%sp)`), or
    /// `$vars` / `$params`.
    pub var: String,
    /// Member accesses and indexes in order.
    pub fields: Vec<Field>,
    /// `:TYPE`, when given.
    pub ty: Option<String>,
}

/// perf's test for a C variable name: a letter or `_` first. Anything else (`$retval`,
/// `%di`, `+8(%sp)`, `@sym`) is passed to the kernel as written.
fn is_c_varname(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// `strtol(s, &end, 0)`: the number at the start of `s` (decimal, `0x` hex, `0` octal,
/// signed) and the rest.
fn strtol(s: &str) -> (Option<i64>, &str) {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (radix, digits) = if let Some(h) = body
        .strip_prefix("0x")
        .or_else(|| body.strip_prefix("0X"))
        .filter(|h| h.starts_with(|c: char| c.is_ascii_hexdigit()))
    {
        (16, h)
    } else if body.starts_with('0') {
        (8, body)
    } else {
        (10, body)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return (None, s);
    }
    let v = i64::from_str_radix(&digits[..end], radix).ok();
    (v.map(|v| if neg { -v } else { v }), &digits[end..])
}

impl ArgSpec {
    /// Parse one argument as perf does; the error is perf's semantic error text.
    pub fn parse(text: &str) -> Result<ArgSpec, String> {
        let (name, rest) = match text.split_once('=') {
            Some((n, r)) if is_ident(n) => (Some(n.to_owned()), r),
            Some(_) => return Err(format!("Invalid argument name in '{text}'.")),
            None => (None, text),
        };
        let (expr, ty) = match rest.split_once(':') {
            Some((e, t)) => (e, Some(t.to_owned())),
            None => (rest, None),
        };
        let mut spec = ArgSpec {
            text: text.to_owned(),
            name,
            var: expr.to_owned(),
            fields: Vec::new(),
            ty,
        };
        let Some(first) = expr.find(['-', '.', '[']).filter(|_| is_c_varname(expr)) else {
            return Ok(spec);
        };
        spec.var = expr[..first].to_owned();
        let mut seg = expr;
        let mut s = &expr[first..];
        while !s.is_empty() {
            if let Some(body) = s.strip_prefix('[') {
                let (index, tail) = strtol(body);
                let (Some(index), Some(after)) = (index, tail.strip_prefix(']')) else {
                    return Err("Array index must be a number.".into());
                };
                let written = &s[..s.len() - after.len()];
                spec.fields.push(Field::Index(index, written.to_owned()));
                s = after;
                seg = s;
                continue;
            }
            let (arrow, tail) = if let Some(t) = s.strip_prefix('.') {
                (false, t)
            } else if let Some(t) = s.strip_prefix("->") {
                (true, t)
            } else {
                return Err(format!("Argument parse error: {seg}"));
            };
            let end = tail.find(['-', '.', '[']).unwrap_or(tail.len());
            let member = tail[..end].to_owned();
            spec.fields.push(if arrow {
                Field::Arrow(member)
            } else {
                Field::Dot(member)
            });
            seg = tail;
            s = &tail[end..];
        }
        if spec.name.is_none() {
            // As perf: named after the last member (not an index), else the variable.
            let good = spec
                .fields
                .iter()
                .rev()
                .find(|f| !matches!(f, Field::Index(..)))
                .map_or(spec.var.clone(), |f| f.name().to_owned());
            spec.name = Some(good);
            spec.text = format!("{}={}", spec.name.as_deref().unwrap_or(""), spec.text);
        }
        Ok(spec)
    }

    /// `$vars` (true: every variable) or `$params` (false: the parameters), which perf
    /// expands into the variables in scope at the probe address.
    pub fn expansion(&self) -> Option<bool> {
        match self.var.as_str() {
            "$vars" => Some(true),
            "$params" => Some(false),
            _ => None,
        }
    }

    /// A C variable (looked up in DWARF), not a raw fetch argument or `$vars`.
    pub fn is_variable(&self) -> bool {
        is_c_varname(&self.var)
    }

    /// A raw fetch argument (`%di`, `$retval`, `+8(%sp)`, `$comm`), written as given.
    pub fn is_raw(&self) -> bool {
        !self.is_variable() && self.expansion().is_none()
    }

    /// Whether resolving this argument needs the binary's DWARF (perf's
    /// `perf_probe_with_var`: a variable, `$vars` or `$params`).
    pub fn needs_dwarf(&self) -> bool {
        !self.is_raw()
    }

    /// The event field's name, as perf names it; `index` is the argument's place (0-based):
    /// the name given (or taken from the last member, `p->x`: `x`), else for a raw
    /// argument `argN`, else the variable's with `_TYPE` when a type is given (`b:x32`:
    /// `b_x32`).
    pub fn field_name(&self, index: usize) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        if !self.is_variable() {
            return format!("arg{}", index + 1);
        }
        match &self.ty {
            Some(t) => format!("{}_{t}", self.var),
            None => self.var.clone(),
        }
    }

    /// How perf echoes it in "Added new event": `NAME=` before it when a name is given or
    /// taken from a member (`x=p->x`).
    pub fn echo(&self) -> String {
        self.text.clone()
    }
}

/// perf's magic value for an argument missing at some of a probe's addresses
/// (`DEFAULT_PROBE_MAGIC_NUM`).
pub const MISSING_ARG_MAGIC: u32 = 0xdead_e12d;

/// perf 6.1's `fill_empty_trace_arg`: `points` holds each probe address's arguments, in
/// order; an argument missing at some addresses (a variable optimized out there, or not in
/// that inlined copy's scope) is fetched there as the immediate `\0xdeade12d` with the
/// type it has where it was found; one missing at every address is the first address's
/// error. perf writes the immediate as `\deade12d`, which the kernel refuses as an
/// invalid immediate (`Failed to write event: Invalid argument`); perfkit writes it in
/// hexadecimal, which the kernel takes, so the probe works and records the magic value.
pub fn fill_missing_args(
    points: Vec<Vec<Result<String, ArgError>>>,
) -> Result<Vec<Vec<String>>, ArgError> {
    let nargs = points.iter().map(Vec::len).max().unwrap_or(0);
    let mut filler: Vec<Option<String>> = vec![None; nargs];
    for (i, f) in filler.iter_mut().enumerate() {
        let found = points.iter().find_map(|p| p.get(i)?.as_ref().ok());
        *f = match found {
            Some(arg) => {
                let (name, fetch) = arg.split_once('=').unwrap_or((arg, ""));
                let ty = fetch.rsplit_once(':').map_or("", |(_, t)| t);
                let ty = if ty.is_empty() {
                    String::new()
                } else {
                    format!(":{ty}")
                };
                Some(format!("{name}=\\{MISSING_ARG_MAGIC:#x}{ty}"))
            }
            None => None,
        };
    }
    let mut out = Vec::with_capacity(points.len());
    for p in points {
        let mut args = Vec::with_capacity(p.len());
        for (i, a) in p.into_iter().enumerate() {
            match (a, &filler[i]) {
                (Ok(a), _) => args.push(a),
                (Err(ArgError::NotFound(_)), Some(f)) => args.push(f.clone()),
                (Err(e), _) => return Err(e),
            }
        }
        out.push(args);
    }
    Ok(out)
}

/// The fetch arguments of `specs` written as given (a return probe's, or where none is a
/// variable): `NAME=ARG[:TYPE]`, named `argN` unless named.
pub fn raw_fetch_args(specs: &[ArgSpec]) -> Vec<String> {
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| raw_fetch_arg(s, i))
        .collect()
}

fn raw_fetch_arg(spec: &ArgSpec, index: usize) -> String {
    let ty = spec
        .ty
        .as_ref()
        .map(|t| format!(":{t}"))
        .unwrap_or_default();
    format!("{}={}{ty}", spec.field_name(index), spec.var)
}

/// Why an argument could not be fetched; each is one of perf's failures, with its exit
/// status (`status`).
#[derive(Debug)]
pub enum ArgError {
    /// No variable of that name in a scope at the address, or no location there.
    NotFound(String),
    /// Found, but its location is an expression perfkit cannot fetch (as perf, which says
    /// so in the same words: computed values, pieces).
    Location,
    /// perf's words for an argument that does not fit the variable's type (-EINVAL).
    Invalid(String),
    /// perf's words for something it does not support (-EOPNOTSUPP).
    Unsupported(String),
    /// perf's words for missing type information (-ENOENT).
    Missing(String),
    /// The binary or its DWARF could not be read.
    Binary(ProbeError),
}

impl ArgError {
    /// perf's exit status for this failure (256 - errno).
    pub fn status(&self) -> u8 {
        match self {
            ArgError::NotFound(_) | ArgError::Missing(_) => 254,
            ArgError::Location | ArgError::Unsupported(_) => 161,
            ArgError::Invalid(_) => 234,
            ArgError::Binary(_) => 254,
        }
    }
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArgError::NotFound(v) => write!(
                f,
                "Failed to find the location of the '{v}' variable at this address.\n \
                 Perhaps it has been optimized out.\n \
                 Use -V with the --range option to show '{v}' location range."
            ),
            ArgError::Location => {
                f.write_str("Sorry, we don't support this variable location yet.")
            }
            ArgError::Invalid(why) | ArgError::Unsupported(why) | ArgError::Missing(why) => {
                f.write_str(why)
            }
            ArgError::Binary(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ArgError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ArgError::Binary(e) => Some(e),
            _ => None,
        }
    }
}

impl From<gimli::Error> for ArgError {
    fn from(e: gimli::Error) -> Self {
        ArgError::Unsupported(format!("reading DWARF: {e}"))
    }
}

/// Where a value lives at the probe address.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Loc {
    /// In a register (`%di`), or a fetch that yields the value itself (`\42`).
    Value(String),
    /// In memory at `base + offset`, `base` a fetch yielding an address.
    Memory(String, i64),
    /// In memory at this offset of the probed file (`@+0x3040`: a global or static
    /// variable, wherever the file is mapped).
    Static(u64),
}

impl Loc {
    fn render(&self) -> String {
        match self {
            Loc::Value(v) => v.clone(),
            Loc::Memory(base, off) => format!("{off:+}({base})"),
            Loc::Static(off) => format!("@+{off:#x}"),
        }
    }

    /// The memory this value points to.
    fn deref(&self) -> Loc {
        Loc::Memory(self.render(), 0)
    }

    /// The memory `n` bytes on; a value in a register has none.
    fn offset(self, n: i64) -> Option<Loc> {
        match self {
            Loc::Memory(b, o) => Some(Loc::Memory(b, o + n)),
            Loc::Static(o) => Some(Loc::Static(o.wrapping_add_signed(n))),
            Loc::Value(_) => None,
        }
    }
}

/// The CPU a binary is for, for its DWARF register names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arch {
    X86_64,
    Aarch64,
}

fn reg_name(arch: Arch, reg: gimli::Register) -> Option<String> {
    const X86: [&str; 17] = [
        "ax", "dx", "cx", "bx", "si", "di", "bp", "sp", "r8", "r9", "r10", "r11", "r12", "r13",
        "r14", "r15", "ip",
    ];
    let n = reg.0 as usize;
    match arch {
        Arch::X86_64 => X86.get(n).map(|r| format!("%{r}")),
        Arch::Aarch64 if n < 31 => Some(format!("%x{n}")),
        Arch::Aarch64 if n == 31 => Some("%sp".into()),
        Arch::Aarch64 => None,
    }
}

/// Where a probe is, to choose the DWARF scope its variables are looked up in, as perf's
/// probe finder does.
#[derive(Clone, Copy, Debug)]
pub enum Scope<'a> {
    /// At a function (`FUNC`, `FUNC:RLN`): the function of that name holding the address,
    /// an inlined copy too.
    Function(&'a str),
    /// At a source line (`FILE:LINE`): the function declared nearest before that line.
    Line(u32),
}

/// The DWARF and call frame information of one binary, to resolve arguments at addresses.
pub struct ArgResolver {
    dwarf: gimli::Dwarf<Reader>,
    eh_frame: Option<(gimli::EhFrame<Reader>, gimli::BaseAddresses)>,
    debug_frame: Option<gimli::DebugFrame<Reader>>,
    arch: Arch,
    /// Loadable segments: (virtual address, size in the file, file offset).
    segments: Vec<(u64, u64, u64)>,
    /// Data symbols by name, for a global variable declared without a location.
    objects: std::collections::HashMap<String, u64>,
}

/// The DIEs around a probe address.
struct Context {
    unit: gimli::Unit<Reader>,
    /// The scope variables are looked up in.
    scope: gimli::UnitOffset,
    /// The real function holding the address (its frame base).
    function: Option<gimli::UnitOffset>,
}

impl ArgResolver {
    /// Read the DWARF of ELF file `path`.
    pub fn open(path: &Path) -> Result<ArgResolver, ProbeError> {
        let bad = |reason: String| ProbeError::Binary {
            path: path.into(),
            reason,
        };
        let data = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let obj = object::File::parse(&*data).map_err(|e| bad(e.to_string()))?;
        let arch = match obj.architecture() {
            object::Architecture::X86_64 => Arch::X86_64,
            object::Architecture::Aarch64 => Arch::Aarch64,
            other => {
                return Err(bad(format!(
                    "probe arguments are supported for x86_64 and aarch64 binaries, not {other:?}"
                )));
            }
        };
        let dwarf = load_dwarf(path, &obj)?;
        let section = |name: &str| {
            obj.section_by_name(name)
                .and_then(|s| Some((s.address(), s.uncompressed_data().ok()?)))
        };
        let endian = if obj.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let reader = |d: &[u8]| gimli::EndianArcSlice::new(std::sync::Arc::from(d), endian);
        let eh_frame = section(".eh_frame").map(|(addr, d)| {
            let mut bases = gimli::BaseAddresses::default().set_eh_frame(addr);
            if let Some(t) = obj.section_by_name(".text") {
                bases = bases.set_text(t.address());
            }
            let mut eh = gimli::EhFrame::from(reader(&d));
            eh.set_address_size(8);
            (eh, bases)
        });
        let debug_frame = section(".debug_frame").map(|(_, d)| {
            let mut df = gimli::DebugFrame::from(reader(&d));
            df.set_address_size(8);
            df
        });
        let segments = obj
            .segments()
            .map(|s| (s.address(), s.size(), s.file_range().0))
            .collect();
        let objects = obj
            .symbols()
            .filter(|s| s.kind() == object::SymbolKind::Data && s.is_definition())
            .filter_map(|s| Some((s.name().ok()?.to_owned(), s.address())))
            .collect();
        Ok(ArgResolver {
            dwarf,
            eh_frame,
            debug_frame,
            arch,
            segments,
            objects,
        })
    }

    /// Whether the compilation unit holding `addr` counts as built with optimization, as
    /// perf 6.1 decides whether to skip a function's prologue before reading its
    /// arguments: some variable or parameter of the unit has a location list
    /// (`DW_FORM_sec_offset`). Code built with -O2 whose variables each keep one place
    /// counts as unoptimized, as it does for perf.
    pub fn is_optimized(&self, addr: u64) -> bool {
        let Ok(Some((unit, _))) = self.unit_at(addr) else {
            return true;
        };
        let mut entries = unit.entries();
        while let Ok(Some((_, e))) = entries.next_dfs() {
            if matches!(
                e.tag(),
                gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter
            ) && matches!(
                e.attr_value(gimli::DW_AT_location),
                Ok(Some(gimli::AttributeValue::LocationListsRef(_)))
            ) {
                return true;
            }
        }
        false
    }

    fn unit_at(&self, addr: u64) -> Result<Option<(gimli::Unit<Reader>, ())>, gimli::Error> {
        let mut units = self.dwarf.units();
        while let Some(header) = units.next()? {
            let unit = self.dwarf.unit(header)?;
            let mut ranges = self.dwarf.unit_ranges(&unit)?;
            while let Some(r) = ranges.next()? {
                if addr >= r.begin && addr < r.end {
                    return Ok(Some((unit, ())));
                }
            }
        }
        Ok(None)
    }

    /// The fetch arguments (`NAME=FETCH[:TYPE]`) of `specs` at virtual address `addr` in
    /// `scope`, as perf writes them: variables from DWARF, `$vars` / `$params` expanded
    /// into the variables in scope that have a location there, raw arguments (`%di`,
    /// `$retval`, `+8(%sp)`) as written. Warnings perf prints go to `warnings` (a value
    /// wider than 64 bits is cut down).
    pub fn fetch_args(
        &self,
        addr: u64,
        specs: &[ArgSpec],
        scope: Scope<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>, ArgError> {
        self.fetch_args_each(addr, specs, scope, warnings)?
            .into_iter()
            .collect()
    }

    /// [`ArgResolver::fetch_args`] with each argument's own result: an argument whose
    /// variable is not in scope at `addr`, or has no location there, is its
    /// [`ArgError::NotFound`] (perf's `skip_empty_arg`: it may be found at the probe's
    /// other addresses, see [`fill_missing_args`]); any other failure is the whole
    /// call's error.
    pub fn fetch_args_each(
        &self,
        addr: u64,
        specs: &[ArgSpec],
        scope: Scope<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Result<String, ArgError>>, ArgError> {
        let ctx = if specs.iter().any(ArgSpec::needs_dwarf) {
            self.context(addr, scope)?
        } else {
            None
        };
        let mut expanded = Vec::new();
        for spec in specs {
            match (spec.expansion(), &ctx) {
                (Some(all), Some(ctx)) => {
                    for name in self.scope_variables(ctx, addr, all)? {
                        expanded.push(ArgSpec {
                            text: name.clone(),
                            name: None,
                            var: name,
                            fields: Vec::new(),
                            ty: None,
                        });
                    }
                }
                _ => expanded.push(spec.clone()),
            }
        }
        let mut out = Vec::new();
        // As perf: a variable not found is left empty, and the arguments are checked by
        // their places in what was asked, so the one reported is the one asked for at
        // that place (`$vars`, when it expanded to fewer names than were asked for).
        let not_found = |i: usize| {
            let asked = specs.get(i).or(expanded.get(i));
            ArgError::NotFound(asked.map_or_else(String::new, |s| s.var.clone()))
        };
        if expanded.len() < specs.len() {
            // An index past the expansion has no value, unless an earlier one is empty.
            for (i, spec) in expanded.iter().enumerate() {
                if let (Some(ctx), false) = (&ctx, spec.is_raw())
                    && let Err(ArgError::NotFound(_)) =
                        self.resolve(ctx, addr, spec, &mut Vec::new())
                {
                    return Err(not_found(i));
                }
            }
            return Err(not_found(expanded.len()));
        }
        for (i, spec) in expanded.iter().enumerate() {
            let name = spec.field_name(i);
            let ctx = match &ctx {
                Some(ctx) if !spec.is_raw() => ctx,
                _ => {
                    out.push(Ok(raw_fetch_arg(spec, i)));
                    continue;
                }
            };
            let (fetch, ty) = match self.resolve(ctx, addr, spec, warnings) {
                Err(ArgError::NotFound(_)) => {
                    out.push(Err(not_found(i)));
                    continue;
                }
                other => other?,
            };
            let ty = ty.map(|t| format!(":{t}")).unwrap_or_default();
            out.push(Ok(format!("{name}={fetch}{ty}")));
        }
        Ok(out)
    }

    /// The entry addresses of the inlined copies of function `name`, in DWARF order: where
    /// perf probes an inline function that has no copy of its own.
    pub fn inline_entries(&self, name: &str) -> Result<Vec<u64>, ArgError> {
        let mut out = Vec::new();
        let mut units = self.dwarf.units();
        while let Some(header) = units.next()? {
            let unit = self.dwarf.unit(header)?;
            let mut entries = unit.entries();
            while let Some((_, e)) = entries.next_dfs()? {
                if e.tag() == gimli::DW_TAG_inlined_subroutine
                    && self.die_name(&unit, e)?.as_deref() == Some(name)
                    && let Some(entry) = self.entry_pc(&unit, e)?
                    && entry != 0
                {
                    out.push(entry);
                }
            }
        }
        Ok(out)
    }

    /// A function's entry address, as elfutils' `die_entrypc`: `DW_AT_entry_pc`, else
    /// `DW_AT_low_pc`, else the start of its first range.
    fn entry_pc(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
    ) -> Result<Option<u64>, gimli::Error> {
        let low = match e.attr_value(gimli::DW_AT_low_pc)? {
            Some(v) => self.dwarf.attr_address(unit, v)?,
            None => None,
        };
        if let Some(v) = e.attr_value(gimli::DW_AT_entry_pc)? {
            if let Some(a) = self.dwarf.attr_address(unit, v.clone())? {
                return Ok(Some(a));
            }
            // DWARF 5: a constant is an offset from the low address.
            if let (Some(off), Some(low)) = (v.udata_value(), low) {
                return Ok(Some(low + off));
            }
        }
        if low.is_some() {
            return Ok(low);
        }
        let mut ranges = self.dwarf.die_ranges(unit, e)?;
        Ok(ranges.next()?.map(|r| r.begin))
    }

    /// perf's `-l` description of `addr` where it lies in an inlined copy of a function:
    /// (function, line relative to its declaration). At a copy's entry it is the calling
    /// function and the line of the call; inside a copy, the inlined function and its
    /// line `line` (of the line table). `None` outside inlined copies.
    pub fn inline_description(&self, addr: u64, line: u32) -> Option<(String, u32)> {
        let (unit, ()) = self.unit_at(addr).ok()??;
        let mut chain = Vec::new();
        let mut tree = unit.entries_tree(None).ok()?;
        self.functions_at(&unit, tree.root().ok()?, addr, &mut chain)
            .ok()?;
        let sp = chain
            .iter()
            .rposition(|f| f.1 == gimli::DW_TAG_subprogram)?;
        let inlines = &chain[sp + 1..];
        if inlines.is_empty() {
            return None;
        }
        let (mut func, mut base) = (chain[sp].2.clone()?, chain[sp].3);
        let mut lineno = line;
        for f in inlines {
            let e = unit.entry(f.0).ok()?;
            if self.entry_pc(&unit, &e).ok()? == Some(addr) {
                lineno = e.attr_value(gimli::DW_AT_call_line).ok()??.udata_value()? as u32;
                break;
            }
            func = f.2.clone()?;
            base = f.3;
        }
        Some((func, lineno.saturating_sub(base)))
    }

    /// The name of the scope perf gives a `FILE:LINE` probe at `addr`: the function (or
    /// inlined copy) holding it that is declared nearest before `line`.
    pub fn line_scope_name(&self, addr: u64, line: u32) -> Option<String> {
        let ctx = self.context(addr, Scope::Line(line)).ok()??;
        let e = ctx.unit.entry(ctx.scope).ok()?;
        self.die_name(&ctx.unit, &e).ok()?
    }

    /// The unit and scope of `addr`; `None` where no unit holds it.
    fn context(&self, addr: u64, scope: Scope<'_>) -> Result<Option<Context>, ArgError> {
        let Some((unit, ())) = self.unit_at(addr)? else {
            return Ok(None);
        };
        // The functions (real and inlined) holding addr, outermost first.
        let mut chain = Vec::new();
        {
            let mut tree = unit.entries_tree(None)?;
            self.functions_at(&unit, tree.root()?, addr, &mut chain)?;
        }
        let function = chain
            .iter()
            .rev()
            .find(|f| f.1 == gimli::DW_TAG_subprogram)
            .map(|f| f.0);
        let chosen = match scope {
            Scope::Function(name) => chain
                .iter()
                .rev()
                .find(|f| f.2.as_deref() == Some(name))
                .map(|f| f.0),
            Scope::Line(line) => chain
                .iter()
                .filter(|f| f.3 < line)
                .min_by_key(|f| line - f.3)
                .map(|f| f.0),
        };
        let Some(scope) = chosen.or_else(|| chain.last().map(|f| f.0)) else {
            return Ok(None);
        };
        Ok(Some(Context {
            unit,
            scope,
            function,
        }))
    }

    /// Collect (offset, tag, name, declaration line) of the subprograms and inlined
    /// subroutines holding `addr` below `node`, outermost first.
    #[allow(clippy::type_complexity)]
    fn functions_at(
        &self,
        unit: &gimli::Unit<Reader>,
        node: gimli::EntriesTreeNode<Reader>,
        addr: u64,
        chain: &mut Vec<(gimli::UnitOffset, gimli::DwTag, Option<String>, u32)>,
    ) -> Result<(), gimli::Error> {
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            let tag = e.tag();
            let scope = matches!(
                tag,
                gimli::DW_TAG_subprogram
                    | gimli::DW_TAG_inlined_subroutine
                    | gimli::DW_TAG_lexical_block
            );
            let container = matches!(
                tag,
                gimli::DW_TAG_namespace | gimli::DW_TAG_class_type | gimli::DW_TAG_structure_type
            );
            // An inlined copy's entry can lie outside its ranges (an empty range at the
            // entry, after optimization): perf probes it there, in the copy's scope.
            let entered = scope
                && (self.holds(unit, e, addr)?
                    || tag == gimli::DW_TAG_inlined_subroutine
                        && self.entry_pc(unit, e)? == Some(addr));
            if container || entered {
                if tag != gimli::DW_TAG_lexical_block && !container {
                    let name = self.die_name(unit, e)?;
                    let line = self.decl_line(unit, e)?;
                    chain.push((e.offset(), tag, name, line));
                }
                self.functions_at(unit, child, addr, chain)?;
            }
        }
        Ok(())
    }

    /// A DIE's name, its abstract origin's or specification's where it has none.
    fn die_name(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
    ) -> Result<Option<String>, gimli::Error> {
        match self.integrated(unit, e, gimli::DW_AT_name)? {
            Some(v) => {
                let s = self.dwarf.attr_string(unit, v)?;
                Ok(Some(s.to_string_lossy()?.into_owned()))
            }
            None => Ok(None),
        }
    }

    /// An attribute of a DIE or of its abstract origin (a variable's type in an inlined
    /// copy is its origin's).
    fn integrated(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
        at: gimli::DwAt,
    ) -> Result<Option<gimli::AttributeValue<Reader>>, gimli::Error> {
        let mut cur = e.clone();
        for _ in 0..4 {
            if let Some(v) = cur.attr_value(at)? {
                return Ok(Some(v));
            }
            let next = match cur.attr_value(gimli::DW_AT_abstract_origin)? {
                Some(gimli::AttributeValue::UnitRef(o)) => o,
                _ => match cur.attr_value(gimli::DW_AT_specification)? {
                    Some(gimli::AttributeValue::UnitRef(o)) => o,
                    _ => return Ok(None),
                },
            };
            cur = unit.entry(next)?;
        }
        Ok(None)
    }

    fn decl_line(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
    ) -> Result<u32, gimli::Error> {
        Ok(self
            .integrated(unit, e, gimli::DW_AT_decl_line)?
            .and_then(|v| v.udata_value())
            .unwrap_or(0) as u32)
    }

    /// The names `$vars` (`all`) or `$params` expand to at `addr`: perf's walk of the
    /// scope, parameters (and variables) that have a location there, in DWARF order,
    /// into nested scopes holding the address.
    fn scope_variables(
        &self,
        ctx: &Context,
        addr: u64,
        all: bool,
    ) -> Result<Vec<String>, ArgError> {
        let mut names = Vec::new();
        let mut tree = ctx.unit.entries_tree(Some(ctx.scope))?;
        self.collect_variables(ctx, tree.root()?, addr, all, &mut names)?;
        Ok(names)
    }

    fn collect_variables(
        &self,
        ctx: &Context,
        node: gimli::EntriesTreeNode<Reader>,
        addr: u64,
        all: bool,
        names: &mut Vec<String>,
    ) -> Result<(), ArgError> {
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            let tag = e.tag();
            if (tag == gimli::DW_TAG_formal_parameter || all && tag == gimli::DW_TAG_variable)
                && let Some(name) = self.die_name(&ctx.unit, e)?
                && self.location(ctx, e, addr).is_ok()
            {
                names.push(name);
            }
            if self.holds(&ctx.unit, e, addr)? {
                self.collect_variables(ctx, child, addr, all, names)?;
            }
        }
        Ok(())
    }

    /// The variable `name` as perf's `die_find_variable_at` finds it: the first in a
    /// walk of the scope (into nested scopes holding the address) with a location, a
    /// constant value or external linkage; else a variable of the unit (a global).
    fn find_variable(
        &self,
        ctx: &Context,
        name: &str,
        addr: u64,
    ) -> Result<Option<gimli::UnitOffset>, gimli::Error> {
        let mut tree = ctx.unit.entries_tree(Some(ctx.scope))?;
        if let Some(o) = self.find_in(&ctx.unit, tree.root()?, name, Some(addr))? {
            return Ok(Some(o));
        }
        let mut tree = ctx.unit.entries_tree(None)?;
        self.find_in(&ctx.unit, tree.root()?, name, None)
    }

    fn find_in(
        &self,
        unit: &gimli::Unit<Reader>,
        node: gimli::EntriesTreeNode<Reader>,
        name: &str,
        addr: Option<u64>,
    ) -> Result<Option<gimli::UnitOffset>, gimli::Error> {
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            if matches!(
                e.tag(),
                gimli::DW_TAG_formal_parameter | gimli::DW_TAG_variable
            ) && (e.attr(gimli::DW_AT_external)?.is_some()
                || e.attr(gimli::DW_AT_location)?.is_some()
                || e.attr(gimli::DW_AT_const_value)?.is_some())
                && self.die_name(unit, e)?.as_deref() == Some(name)
            {
                return Ok(Some(e.offset()));
            }
            if let Some(addr) = addr
                && self.holds(unit, e, addr)?
                && let Some(o) = self.find_in(unit, child, name, Some(addr))?
            {
                return Ok(Some(o));
            }
        }
        Ok(None)
    }

    /// Where variable `e` is at `addr`, as perf's `convert_variable_location` finds it.
    fn location(
        &self,
        ctx: &Context,
        e: &gimli::DebuggingInformationEntry<Reader>,
        addr: u64,
    ) -> Result<Loc, ArgError> {
        let unit = &ctx.unit;
        let name = || self.die_name(unit, e).ok().flatten().unwrap_or_default();
        if e.attr(gimli::DW_AT_external)?.is_some() {
            return self.static_location(unit, e, &name(), addr);
        }
        if let Some(v) = e.attr_value(gimli::DW_AT_const_value)? {
            let n = v
                .sdata_value()
                .or_else(|| v.udata_value().map(|u| u as i64))
                .ok_or(ArgError::Location)?;
            return Ok(Loc::Value(format!("\\{n}")));
        }
        let value = e
            .attr_value(gimli::DW_AT_location)?
            .ok_or_else(|| ArgError::NotFound(name()))?;
        let mut expr = self.location_at(unit, value.clone(), addr)?;
        if expr.is_none() && e.tag() == gimli::DW_TAG_formal_parameter {
            // As perf: a parameter without a location at the function's entry takes its
            // first location in the function (code before it, like mcount, moves it).
            if let Some((entry, end)) = self.function_bounds(ctx)?
                && entry == addr
            {
                for a in addr + 1..end {
                    expr = self.location_at(unit, value.clone(), a)?;
                    if expr.is_some() {
                        break;
                    }
                }
            }
        }
        let expr = expr.ok_or_else(|| ArgError::NotFound(name()))?;
        use gimli::Operation as Op;
        // As perf: the first operation says where; what follows is not looked at.
        let first = expr
            .operations(unit.encoding())
            .next()?
            .ok_or_else(|| ArgError::NotFound(name()))?;
        let reg = |r| reg_name(self.arch, r).ok_or(ArgError::Location);
        match first {
            Op::Address { .. } => self.static_location(unit, e, &name(), addr),
            Op::Register { register } => Ok(Loc::Value(reg(register)?)),
            Op::RegisterOffset {
                register, offset, ..
            } => Ok(Loc::Memory(reg(register)?, offset)),
            Op::FrameOffset { offset } => self.frame_slot(ctx, addr, offset),
            _ => Err(ArgError::Location),
        }
    }

    /// The entry address and end of the real function holding the probe.
    fn function_bounds(&self, ctx: &Context) -> Result<Option<(u64, u64)>, gimli::Error> {
        let Some(f) = ctx.function else {
            return Ok(None);
        };
        let e = ctx.unit.entry(f)?;
        let mut ranges = self.dwarf.die_ranges(&ctx.unit, &e)?;
        let mut bounds: Option<(u64, u64)> = None;
        while let Some(r) = ranges.next()? {
            bounds = Some(match bounds {
                None => (r.begin, r.end),
                Some((b, e)) => (b.min(r.begin), e.max(r.end)),
            });
        }
        let entry = match e.attr_value(gimli::DW_AT_entry_pc)? {
            Some(gimli::AttributeValue::Addr(a)) => Some(a),
            _ => e
                .attr_value(gimli::DW_AT_low_pc)?
                .and_then(|v| self.dwarf.attr_address(&ctx.unit, v).ok().flatten()),
        };
        Ok(bounds.map(|(b, end)| (entry.unwrap_or(b), end)))
    }

    /// A frame-base relative slot: the frame base of the real function (through the call
    /// frame information when it is the CFA) plus `offset`.
    fn frame_slot(&self, ctx: &Context, addr: u64, offset: i64) -> Result<Loc, ArgError> {
        use gimli::Operation as Op;
        let f = ctx.function.ok_or(ArgError::Location)?;
        let e = ctx.unit.entry(f)?;
        let base = e
            .attr_value(gimli::DW_AT_frame_base)?
            .ok_or(ArgError::Location)?;
        let base = self
            .location_at(&ctx.unit, base, addr)?
            .ok_or(ArgError::Location)?;
        let reg = |r| reg_name(self.arch, r).ok_or(ArgError::Location);
        match base.operations(ctx.unit.encoding()).next()? {
            Some(Op::CallFrameCFA) => {
                let (r, o) = self.cfa(addr).ok_or(ArgError::Location)?;
                Ok(Loc::Memory(reg(r)?, o + offset))
            }
            Some(Op::Register { register }) => Ok(Loc::Memory(reg(register)?, offset)),
            Some(Op::RegisterOffset {
                register,
                offset: o,
                ..
            }) => Ok(Loc::Memory(reg(register)?, o + offset)),
            _ => Err(ArgError::Location),
        }
    }

    /// A global or static variable: its address (the location's, else the symbol's) as
    /// uprobes' `@+OFFSET` takes it, relative to the mapping holding the probe at `probe`.
    fn static_location(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
        name: &str,
        probe: u64,
    ) -> Result<Loc, ArgError> {
        let mut addr = None;
        if let Some(gimli::AttributeValue::Exprloc(expr)) = e.attr_value(gimli::DW_AT_location)?
            && let Some(gimli::Operation::Address { address }) =
                expr.operations(unit.encoding()).next()?
        {
            addr = Some(address);
        }
        let addr = addr
            .or_else(|| self.objects.get(name).copied())
            .ok_or_else(|| ArgError::NotFound(name.to_owned()))?;
        // The kernel adds the probed mapping's base (the probe's address less its file
        // offset) to the offset given: make it the variable's address from there.
        let delta = self
            .segments
            .iter()
            .find(|s| probe >= s.0 && probe < s.0 + s.1)
            .map_or(0, |s| s.0.wrapping_sub(s.2));
        let off = addr.wrapping_sub(delta);
        Ok(Loc::Static(off))
    }

    /// One variable argument: its fetch and its type (`None`: perf writes none, as for an
    /// array without an index).
    fn resolve(
        &self,
        ctx: &Context,
        addr: u64,
        spec: &ArgSpec,
        warnings: &mut Vec<String>,
    ) -> Result<(String, Option<String>), ArgError> {
        let unit = &ctx.unit;
        let var = self
            .find_variable(ctx, &spec.var, addr)?
            .ok_or_else(|| ArgError::NotFound(spec.var.clone()))?;
        let entry = unit.entry(var)?;
        let mut loc = match self.location(ctx, &entry, addr) {
            Err(ArgError::NotFound(_)) => return Err(ArgError::NotFound(spec.var.clone())),
            other => other?,
        };
        // perf's `convert_variable_fields`: `die` is the variable, then the member, or
        // the array or pointer type indexed; `name` what perf calls it in messages.
        let mut die = var;
        let mut name = spec.var.clone();
        for field in &spec.fields {
            let d = unit.entry(die)?;
            let ty = self
                .real_type(unit, &d)?
                .ok_or_else(|| ArgError::Missing(format!("Failed to get the type of {name}.")))?;
            let t = unit.entry(ty)?;
            let tag = t.tag();
            if let Field::Index(index, _) = field
                && matches!(tag, gimli::DW_TAG_array_type | gimli::DW_TAG_pointer_type)
            {
                let elem = self.real_type(unit, &t)?.ok_or_else(|| {
                    ArgError::Missing(format!("Failed to get the type of {name}."))
                })?;
                let size = self.byte_size(unit, &unit.entry(elem)?)?.unwrap_or(0) as i64;
                if tag == gimli::DW_TAG_pointer_type {
                    loc = loc.deref();
                }
                loc = loc.offset(size * index).ok_or_else(|| {
                    ArgError::Unsupported("Structure on a register is not supported yet.".into())
                })?;
                die = ty;
            } else {
                let arrow = matches!(field, Field::Arrow(_));
                let mut st = t;
                if tag == gimli::DW_TAG_pointer_type {
                    if !arrow {
                        return Err(ArgError::Invalid(format!(
                            "Semantic error: {} must be referred by '->'",
                            field.name()
                        )));
                    }
                    let pointee = self.real_type(unit, &st)?.ok_or_else(|| {
                        ArgError::Missing(format!("Failed to get the type of {name}."))
                    })?;
                    st = unit.entry(pointee)?;
                    if !matches!(
                        st.tag(),
                        gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type
                    ) {
                        return Err(ArgError::Invalid(format!(
                            "{name} is not a data structure nor a union."
                        )));
                    }
                    loc = loc.deref();
                } else {
                    if !matches!(tag, gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type) {
                        return Err(ArgError::Invalid(format!(
                            "{name} is not a data structure nor a union."
                        )));
                    }
                    if matches!(field, Field::Index(..)) {
                        return Err(ArgError::Invalid(format!(
                            "Semantic error: {name} is not a pointer nor array."
                        )));
                    }
                    if arrow {
                        return Err(ArgError::Invalid(format!(
                            "Semantic error: {} must be referred by '.'",
                            field.name()
                        )));
                    }
                    if matches!(loc, Loc::Value(_)) {
                        return Err(ArgError::Unsupported(
                            "Structure on a register is not supported yet.".into(),
                        ));
                    }
                }
                let Some((off, member)) = self.member(unit, st.offset(), field.name())? else {
                    let tname = self.die_name(unit, &st)?.unwrap_or_else(|| "(null)".into());
                    return Err(ArgError::Invalid(format!(
                        "{name}(type:{tname}) has no member {}.",
                        field.name()
                    )));
                };
                loc = loc.offset(off).ok_or(ArgError::Location)?;
                die = member;
            }
            name = field.name().to_owned();
        }
        self.convert_type(ctx, die, loc, spec.ty.as_deref(), warnings)
    }

    /// perf's `convert_variable_type`: a cast other than `string`, `ustring`, `s`, `u`,
    /// `x` as written; `string` of a `char` pointer or array (a pointer dereferenced);
    /// else `s` for signed base types, `x` for the rest (or the cast's letter), and the
    /// type's size in bits (no type where DWARF gives no size).
    fn convert_type(
        &self,
        ctx: &Context,
        die: gimli::UnitOffset,
        mut loc: Loc,
        cast: Option<&str>,
        warnings: &mut Vec<String>,
    ) -> Result<(String, Option<String>), ArgError> {
        let unit = &ctx.unit;
        if let Some(c) = cast
            && !matches!(c, "string" | "ustring" | "s" | "u" | "x")
        {
            return Ok((loc.render(), Some(c.to_owned())));
        }
        let d = unit.entry(die)?;
        let dname = self.die_name(unit, &d)?.unwrap_or_else(|| "(null)".into());
        let ty = self.real_type(unit, &d)?.ok_or_else(|| {
            ArgError::Missing(format!("Failed to get a type information of {dname}."))
        })?;
        let t = unit.entry(ty)?;
        if let Some(c @ ("string" | "ustring")) = cast {
            let tag = t.tag();
            if !matches!(tag, gimli::DW_TAG_pointer_type | gimli::DW_TAG_array_type) {
                let tname = self.die_name(unit, &t)?.unwrap_or_else(|| "(null)".into());
                return Err(ArgError::Invalid(format!(
                    "Failed to cast into string: {dname}({tname}) is not a pointer nor array."
                )));
            }
            let elem = self
                .real_type(unit, &t)?
                .ok_or_else(|| ArgError::Missing("Failed to get a type information.".into()))?;
            if tag == gimli::DW_TAG_pointer_type {
                loc = loc.deref();
            }
            let ename = self.die_name(unit, &unit.entry(elem)?)?;
            if !matches!(ename.as_deref(), Some("char" | "unsigned char")) {
                return Err(ArgError::Invalid(format!(
                    "Failed to cast into string: {dname} is not (unsigned) char *."
                )));
            }
            return Ok((loc.render(), Some(c.to_owned())));
        }
        let signed = t.tag() == gimli::DW_TAG_base_type
            && matches!(
                t.attr_value(gimli::DW_AT_encoding)?,
                Some(gimli::AttributeValue::Encoding(
                    gimli::DW_ATE_signed | gimli::DW_ATE_signed_char | gimli::DW_ATE_signed_fixed
                ))
            );
        let prefix = match cast {
            Some("u") => 'u',
            Some("s") => 's',
            Some("x") => 'x',
            _ if signed => 's',
            _ => 'x',
        };
        let Some(bytes) = self.byte_size(unit, &t)?.filter(|&b| b > 0) else {
            return Ok((loc.render(), None));
        };
        let mut bits = bytes * 8;
        if bits > 64 {
            let tname = self.die_name(unit, &t)?.unwrap_or_else(|| "(null)".into());
            warnings.push(format!(
                "{tname} exceeds max-bitwidth. Cut down to 64 bits."
            ));
            bits = 64;
        }
        Ok((loc.render(), Some(format!("{prefix}{bits}"))))
    }

    /// The type of `e` with typedefs and qualifiers followed.
    fn real_type(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
    ) -> Result<Option<gimli::UnitOffset>, gimli::Error> {
        let ty = match self.integrated(unit, e, gimli::DW_AT_type)? {
            Some(gimli::AttributeValue::UnitRef(o)) => Some(o),
            _ => None,
        };
        self.strip(unit, ty)
    }

    /// `DW_AT_byte_size` of a type (a pointer's is the address size).
    fn byte_size(
        &self,
        unit: &gimli::Unit<Reader>,
        t: &gimli::DebuggingInformationEntry<Reader>,
    ) -> Result<Option<u64>, gimli::Error> {
        Ok(match t.attr_value(gimli::DW_AT_byte_size)? {
            Some(v) => v.udata_value(),
            None if t.tag() == gimli::DW_TAG_pointer_type => {
                Some(u64::from(unit.encoding().address_size))
            }
            None => None,
        })
    }

    fn holds(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
        addr: u64,
    ) -> Result<bool, gimli::Error> {
        let mut ranges = self.dwarf.die_ranges(unit, e)?;
        while let Some(r) = ranges.next()? {
            if addr >= r.begin && addr < r.end {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn location_at(
        &self,
        unit: &gimli::Unit<Reader>,
        value: gimli::AttributeValue<Reader>,
        addr: u64,
    ) -> Result<Option<gimli::Expression<Reader>>, gimli::Error> {
        if let gimli::AttributeValue::Exprloc(e) = value {
            return Ok(Some(e));
        }
        let Some(mut list) = self.dwarf.attr_locations(unit, value)? else {
            return Ok(None);
        };
        while let Some(entry) = list.next()? {
            if addr >= entry.range.begin && addr < entry.range.end {
                return Ok(Some(entry.data));
            }
        }
        Ok(None)
    }

    /// The canonical frame address rule at `addr`: (register, offset).
    fn cfa(&self, addr: u64) -> Option<(gimli::Register, i64)> {
        let rule = if let Some((eh, bases)) = &self.eh_frame {
            let mut ctx = gimli::UnwindContext::new();
            eh.unwind_info_for_address(bases, &mut ctx, addr, gimli::EhFrame::cie_from_offset)
                .ok()
                .map(|row| row.cfa().clone())
        } else {
            None
        };
        let rule = rule.or_else(|| {
            let df = self.debug_frame.as_ref()?;
            let mut ctx = gimli::UnwindContext::new();
            df.unwind_info_for_address(
                &gimli::BaseAddresses::default(),
                &mut ctx,
                addr,
                gimli::DebugFrame::cie_from_offset,
            )
            .ok()
            .map(|row| row.cfa().clone())
        })?;
        match rule {
            gimli::CfaRule::RegisterAndOffset { register, offset } => Some((register, offset)),
            gimli::CfaRule::Expression(_) => None,
        }
    }

    /// Follow typedefs and qualifiers.
    fn strip(
        &self,
        unit: &gimli::Unit<Reader>,
        mut ty: Option<gimli::UnitOffset>,
    ) -> Result<Option<gimli::UnitOffset>, gimli::Error> {
        for _ in 0..32 {
            let Some(o) = ty else { return Ok(None) };
            let e = unit.entry(o)?;
            match e.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type => ty = type_of(Some(&e)),
                _ => return Ok(Some(o)),
            }
        }
        Ok(ty)
    }

    /// The member `field` of structure or union `ty`, as perf's `die_find_member` finds
    /// it (within unnamed members too): its offset and DIE. A member of a structure
    /// without `DW_AT_data_member_location` (a bit field) is perf's "Failed to get the
    /// offset".
    fn member(
        &self,
        unit: &gimli::Unit<Reader>,
        ty: gimli::UnitOffset,
        field: &str,
    ) -> Result<Option<(i64, gimli::UnitOffset)>, ArgError> {
        let union = unit.entry(ty)?.tag() == gimli::DW_TAG_union_type;
        let mut tree = unit.entries_tree(Some(ty))?;
        let root = tree.root()?;
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_member {
                continue;
            }
            let inner = match e.attr_value(gimli::DW_AT_name)? {
                Some(n) => {
                    if self.dwarf.attr_string(unit, n)?.to_string_lossy()? != field {
                        continue;
                    }
                    None
                }
                None => {
                    // An unnamed structure or union: the field may be one of its members.
                    let Some(t) = self.real_type(unit, e)? else {
                        continue;
                    };
                    match self.member(unit, t, field)? {
                        Some(found) => Some(found),
                        None => continue,
                    }
                }
            };
            let off = if union {
                0
            } else {
                e.attr_value(gimli::DW_AT_data_member_location)?
                    .and_then(|v| {
                        v.sdata_value()
                            .or_else(|| v.udata_value().map(|u| u as i64))
                    })
                    .ok_or_else(|| {
                        ArgError::Missing(format!("Failed to get the offset of {field}."))
                    })?
            };
            return Ok(Some(match inner {
                Some((o, m)) => (off + o, m),
                None => (off, e.offset()),
            }));
        }
        Ok(None)
    }
}

fn type_of(e: Option<&gimli::DebuggingInformationEntry<Reader>>) -> Option<gimli::UnitOffset> {
    match e?.attr_value(gimli::DW_AT_type).ok()?? {
        gimli::AttributeValue::UnitRef(o) => Some(o),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_and_are_named_as_perf_names_them() {
        let a = ArgSpec::parse("p->x").unwrap();
        assert_eq!(a.var, "p");
        assert_eq!(a.fields, [Field::Arrow("x".into())]);
        assert_eq!(a.field_name(0), "x");
        assert_eq!(a.echo(), "x=p->x");
        assert_eq!(ArgSpec::parse("p->x:u8").unwrap().field_name(0), "x");
        assert_eq!(ArgSpec::parse("b:x32").unwrap().field_name(2), "b_x32");
        assert_eq!(ArgSpec::parse("v=a").unwrap().field_name(0), "v");
        assert_eq!(ArgSpec::parse("$retval").unwrap().field_name(0), "arg1");
        let s = ArgSpec::parse("pt.q->r").unwrap();
        assert_eq!(s.fields, [Field::Dot("q".into()), Field::Arrow("r".into())]);
        // Indexes: named after the last member or the variable, echoed with the name.
        let i = ArgSpec::parse("p->arr[0x1]").unwrap();
        assert_eq!(
            i.fields,
            [Field::Arrow("arr".into()), Field::Index(1, "[0x1]".into())]
        );
        assert_eq!(i.echo(), "arr=p->arr[0x1]");
        assert_eq!(
            ArgSpec::parse("arr[-2]").unwrap().fields[0],
            Field::Index(-2, "[-2]".into())
        );
        assert_eq!(ArgSpec::parse("arr[2]").unwrap().field_name(0), "arr");
        assert_eq!(
            ArgSpec::parse("arr[x]").unwrap_err(),
            "Array index must be a number."
        );
        assert_eq!(
            ArgSpec::parse("p-x").unwrap_err(),
            "Argument parse error: p-x"
        );
        // Raw arguments stay whole; $vars and $params are neither raw nor variables.
        let r = ArgSpec::parse("$retval->x").unwrap();
        assert!(r.is_raw() && r.fields.is_empty() && r.var == "$retval->x");
        assert_eq!(
            ArgSpec::parse("%di:u32").unwrap().ty.as_deref(),
            Some("u32")
        );
        let v = ArgSpec::parse("$vars").unwrap();
        assert!(!v.is_raw() && !v.is_variable() && v.expansion() == Some(true));
        assert_eq!(
            raw_fetch_args(&[
                ArgSpec::parse("%di").unwrap(),
                ArgSpec::parse("r=+8(%sp):u64").unwrap()
            ]),
            ["arg1=%di", "r=+8(%sp):u64"]
        );
    }

    #[test]
    fn memory_operands_render_with_perfs_sign() {
        assert_eq!(Loc::Memory("%bp".into(), -20).render(), "-20(%bp)");
        let p = Loc::Memory("%bp".into(), -40);
        assert_eq!(Loc::Memory(p.render(), 0).render(), "+0(-40(%bp))");
        assert_eq!(Loc::Value("%di".into()).render(), "%di");
        // A global: memory at a file offset; a member adds to it, a pointer wraps it.
        let g = Loc::Static(0x4080).offset(0x14).unwrap();
        assert_eq!(g.render(), "@+0x4094");
        assert_eq!(g.deref().offset(4).unwrap().render(), "+4(@+0x4094)");
        assert_eq!(Loc::Value("%di".into()).offset(4), None);
    }
}
