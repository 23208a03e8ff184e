//! Probe arguments as `perf probe -x BINARY 'FUNC ARG...'` takes them, turned into the fetch
//! arguments tracefs' `uprobe_events` takes.
//!
//! An argument is `[NAME=]VAR[->FIELD|.FIELD]...[:TYPE]` or `$retval` (return probes). Each
//! variable is looked up in the DWARF scopes (function, lexical blocks) holding the probe
//! address, innermost first; its `DW_AT_location` valid there (an expression or a location
//! list entry) becomes a register (`%di`) or a memory operand (`-20(%bp)`, `+8(%sp)`): a
//! frame-base offset is resolved through the call frame information at that address, as
//! perf does for `DW_OP_call_frame_cfa`. `->FIELD` dereferences (`+0(%dx)`), `.FIELD` adds the
//! member's offset. The type is the variable's (`s32`, `u64`; pointers and aggregates `x64`)
//! unless `:TYPE` names one, and the argument is named as perf names it: the last field or
//! the variable, `_TYPE` appended when a type is given, `argN` for `$retval`.

use std::path::Path;

use gimli::{Reader as _, UnwindSection as _};
use object::{Object, ObjectSection};

use crate::probe_lines::{Reader, load_dwarf};
use crate::uprobe_events::ProbeError;

/// One probe argument as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgSpec {
    /// As the user wrote it (`x=p->x`).
    pub text: String,
    /// `NAME=`, when given.
    pub name: Option<String>,
    /// The variable (`p`), or `$retval`.
    pub var: String,
    /// Member accesses in order: (`true` for `->`, the member's name).
    pub fields: Vec<(bool, String)>,
    /// `:TYPE`, when given.
    pub ty: Option<String>,
}

/// The fetch types `uprobe_events` takes that perfkit passes on.
fn valid_type(t: &str) -> bool {
    matches!(t, "string" | "ustring")
        || t.len() > 1
            && matches!(t.as_bytes()[0], b's' | b'u' | b'x')
            && matches!(&t[1..], "8" | "16" | "32" | "64")
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

impl ArgSpec {
    /// Parse one argument; the error says what is wrong, in words.
    pub fn parse(text: &str) -> Result<ArgSpec, String> {
        let (name, rest) = match text.split_once('=') {
            Some((n, r)) if is_ident(n) => (Some(n.to_owned()), r),
            Some(_) => return Err(format!("Invalid argument name in '{text}'.")),
            None => (None, text),
        };
        let (expr, ty) = match rest.rsplit_once(':') {
            Some((e, t)) => (e, Some(t.to_owned())),
            None => (rest, None),
        };
        if let Some(t) = &ty
            && !valid_type(t)
        {
            return Err(format!(
                "'{t}' is not a type perfkit knows: use s8..s64, u8..u64, x8..x64 or string"
            ));
        }
        let end = expr.find(['-', '.']).unwrap_or(expr.len());
        let var = &expr[..end];
        let plain = var.strip_prefix('$').unwrap_or(var);
        if !is_ident(plain) {
            return Err(format!(
                "'{text}': perfkit takes VAR, VAR->FIELD, VAR.FIELD and $retval as arguments \
                 (no array indexes, casts or registers yet)"
            ));
        }
        if var.starts_with('$') && var != "$retval" {
            return Err(format!(
                "'{var}': of perf's special variables perfkit supports $retval only"
            ));
        }
        let mut fields = Vec::new();
        let mut s = &expr[end..];
        while !s.is_empty() {
            let (arrow, tail) = if let Some(t) = s.strip_prefix("->") {
                (true, t)
            } else if let Some(t) = s.strip_prefix('.') {
                (false, t)
            } else {
                return Err(format!("'{text}': expected -> or . before '{s}'"));
            };
            let end = tail.find(['-', '.']).unwrap_or(tail.len());
            if !is_ident(&tail[..end]) {
                return Err(format!("'{text}': '{}' is not a field name", &tail[..end]));
            }
            fields.push((arrow, tail[..end].to_owned()));
            s = &tail[end..];
        }
        Ok(ArgSpec {
            text: text.to_owned(),
            name,
            var: var.to_owned(),
            fields,
            ty,
        })
    }

    /// `$retval`.
    pub fn is_retval(&self) -> bool {
        self.var == "$retval"
    }

    /// The event field's name, as perf names it; `index` is the argument's place (0-based):
    /// the name given, else the last field's (`p->x`: `x`), else the variable's with `_TYPE`
    /// when a type is given (`b:x32`: `b_x32`), `argN` for `$retval`.
    pub fn field_name(&self, index: usize) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        if let Some(f) = self.fields.last() {
            return f.1.clone();
        }
        if self.var.starts_with('$') {
            return format!("arg{}", index + 1);
        }
        match &self.ty {
            Some(t) => format!("{}_{t}", self.var),
            None => self.var.clone(),
        }
    }

    /// How perf echoes it in "Added new event": `NAME=` before it when a name is given or
    /// taken from a field (`x=p->x`).
    pub fn echo(&self) -> String {
        match (&self.name, self.fields.last()) {
            (None, Some(f)) => format!("{}={}", f.1, self.text),
            _ => self.text.clone(),
        }
    }
}

/// Why an argument could not be fetched.
#[derive(Debug)]
pub enum ArgError {
    /// No variable of that name in a scope at the address, or no location there.
    NotFound(String),
    /// Found, but its location is an expression perfkit cannot fetch (as perf, which says
    /// so in the same words: computed values, pieces, globals).
    Location,
    /// Not something perfkit can fetch (the reason).
    Unsupported(String),
    /// The binary or its DWARF could not be read.
    Binary(ProbeError),
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
            ArgError::Unsupported(why) => f.write_str(why),
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
    /// In a register (`%di`) or a fetch that yields the value itself.
    Value(String),
    /// In memory at `base + offset`, `base` a fetch yielding an address.
    Memory(String, i64),
}

impl Loc {
    fn render(&self) -> String {
        match self {
            Loc::Value(v) => v.clone(),
            Loc::Memory(base, off) => format!("{off:+}({base})"),
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

/// The DWARF and call frame information of one binary, to resolve arguments at addresses.
pub struct ArgResolver {
    dwarf: gimli::Dwarf<Reader>,
    eh_frame: Option<(gimli::EhFrame<Reader>, gimli::BaseAddresses)>,
    debug_frame: Option<gimli::DebugFrame<Reader>>,
    arch: Arch,
}

/// A variable found in scope.
struct Var {
    location: gimli::AttributeValue<Reader>,
    ty: Option<gimli::UnitOffset>,
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
        Ok(ArgResolver {
            dwarf,
            eh_frame,
            debug_frame,
            arch,
        })
    }

    /// Whether the compilation unit holding `addr` was built with optimization (its
    /// `DW_AT_producer` names `-O1`, `-O2`, `-Os`, ...), as perf decides whether to skip a
    /// function's prologue before reading its arguments.
    pub fn is_optimized(&self, addr: u64) -> bool {
        let Ok(Some((unit, _))) = self.unit_at(addr) else {
            return true;
        };
        let mut entries = unit.entries();
        let Ok(Some((_, root))) = entries.next_dfs() else {
            return true;
        };
        let producer = root
            .attr_value(gimli::DW_AT_producer)
            .ok()
            .flatten()
            .and_then(|v| self.dwarf.attr_string(&unit, v).ok())
            .map(|s| {
                s.to_string_lossy()
                    .map(|c| c.into_owned())
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        producer
            .split_whitespace()
            .any(|w| w.starts_with("-O") && w != "-O0")
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

    /// The fetch arguments (`NAME=FETCH[:TYPE]`) of `specs` at virtual address `addr`; a
    /// return probe takes `$retval` only. Warnings perf prints go to `warnings` (a value
    /// wider than 64 bits is cut down).
    pub fn fetch_args(
        &self,
        addr: u64,
        specs: &[ArgSpec],
        is_return: bool,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<String>, ArgError> {
        let mut out = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            let name = spec.field_name(i);
            if spec.is_retval() {
                if !is_return {
                    return Err(ArgError::Unsupported(
                        "$retval is the value a function returns: probe FUNC%return for it".into(),
                    ));
                }
                if !spec.fields.is_empty() {
                    return Err(ArgError::Unsupported(
                        "$retval takes no fields in perfkit yet".into(),
                    ));
                }
                let ty = spec
                    .ty
                    .as_ref()
                    .map(|t| format!(":{t}"))
                    .unwrap_or_default();
                out.push(format!("{name}=$retval{ty}"));
                continue;
            }
            if is_return {
                return Err(ArgError::Unsupported(format!(
                    "'{}': a return probe can fetch $retval only (the function's variables \
                     are gone when it returns)",
                    spec.text
                )));
            }
            let (fetch, ty) = self.resolve(addr, spec, warnings)?;
            let ty = spec.ty.clone().unwrap_or(ty);
            out.push(format!("{name}={fetch}:{ty}"));
        }
        Ok(out)
    }

    fn resolve(
        &self,
        addr: u64,
        spec: &ArgSpec,
        warnings: &mut Vec<String>,
    ) -> Result<(String, String), ArgError> {
        let not_found = || ArgError::NotFound(spec.var.clone());
        let (unit, ()) = self.unit_at(addr)?.ok_or_else(not_found)?;
        let mut scopes: Vec<Vec<(String, Var)>> = Vec::new();
        let mut frame_base = None;
        let mut tree = unit.entries_tree(None)?;
        self.walk(&unit, tree.root()?, addr, &mut scopes, &mut frame_base)?;
        let var = scopes
            .into_iter()
            .rev()
            .find_map(|vars| {
                vars.into_iter()
                    .rev()
                    .find(|(n, _)| *n == spec.var)
                    .map(|v| v.1)
            })
            .ok_or_else(not_found)?;
        let expr = self
            .location_at(&unit, var.location, addr)?
            .ok_or_else(not_found)?;
        let mut loc = self.eval(&unit, expr, frame_base, addr)?;
        let mut ty = var.ty;
        for (arrow, field) in &spec.fields {
            let mut t = self.strip(&unit, ty)?;
            if *arrow {
                let e = t.map(|o| unit.entry(o)).transpose()?;
                if e.as_ref().map(|e| e.tag()) != Some(gimli::DW_TAG_pointer_type) {
                    return Err(ArgError::Unsupported(format!(
                        "'{}': {} is not a pointer: use '.' for its fields",
                        spec.text, spec.var
                    )));
                }
                t = self.strip(&unit, type_of(e.as_ref()))?;
                loc = Loc::Memory(loc.render(), 0);
            }
            let (off, mty) = self.member(&unit, t, field)?.ok_or_else(|| {
                ArgError::Unsupported(format!(
                    "'{}': no field '{field}' in the type of {}",
                    spec.text, spec.var
                ))
            })?;
            loc = match loc {
                Loc::Memory(b, o) => Loc::Memory(b, o + off),
                Loc::Value(_) => {
                    return Err(ArgError::Unsupported(format!(
                        "'{}': the structure is in registers here; perfkit cannot take its \
                         fields",
                        spec.text
                    )));
                }
            };
            ty = mty;
        }
        let ty = self.type_name(&unit, ty, warnings)?;
        Ok((loc.render(), ty))
    }

    /// Collect the variables of every scope holding `addr`, outermost first, and the frame
    /// base of the innermost function.
    fn walk(
        &self,
        unit: &gimli::Unit<Reader>,
        node: gimli::EntriesTreeNode<Reader>,
        addr: u64,
        scopes: &mut Vec<Vec<(String, Var)>>,
        frame_base: &mut Option<gimli::AttributeValue<Reader>>,
    ) -> Result<(), gimli::Error> {
        let idx = scopes.len();
        scopes.push(Vec::new());
        let mut entered = false;
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            match e.tag() {
                gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter => {
                    let (Some(name), Some(location)) = (
                        e.attr_value(gimli::DW_AT_name)?,
                        e.attr_value(gimli::DW_AT_location)?,
                    ) else {
                        continue;
                    };
                    let name = self.dwarf.attr_string(unit, name)?;
                    let var = Var {
                        location,
                        ty: type_of(Some(e)),
                    };
                    scopes[idx].push((name.to_string_lossy()?.into_owned(), var));
                }
                gimli::DW_TAG_subprogram | gimli::DW_TAG_lexical_block
                    if !entered && self.holds(unit, e, addr)? =>
                {
                    if e.tag() == gimli::DW_TAG_subprogram {
                        *frame_base = e.attr_value(gimli::DW_AT_frame_base)?;
                    }
                    entered = true;
                    self.walk(unit, child, addr, scopes, frame_base)?;
                }
                _ => {}
            }
        }
        Ok(())
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

    fn eval(
        &self,
        unit: &gimli::Unit<Reader>,
        expr: gimli::Expression<Reader>,
        frame_base: Option<gimli::AttributeValue<Reader>>,
        addr: u64,
    ) -> Result<Loc, ArgError> {
        use gimli::Operation as Op;
        let mut ops = expr.operations(unit.encoding());
        let first = ops.next()?.ok_or(ArgError::Location)?;
        if ops.next()?.is_some() {
            return Err(ArgError::Location);
        }
        let reg = |r| reg_name(self.arch, r).ok_or(ArgError::Location);
        match first {
            Op::Register { register } => Ok(Loc::Value(reg(register)?)),
            Op::RegisterOffset {
                register, offset, ..
            } => Ok(Loc::Memory(reg(register)?, offset)),
            Op::FrameOffset { offset } => {
                let base = frame_base
                    .and_then(|v| match v {
                        gimli::AttributeValue::Exprloc(e) => Some(e),
                        _ => None,
                    })
                    .ok_or(ArgError::Location)?;
                let mut ops = base.operations(unit.encoding());
                match ops.next()? {
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
            Op::Address { .. } => Err(ArgError::Location),
            _ => Err(ArgError::Location),
        }
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

    fn member(
        &self,
        unit: &gimli::Unit<Reader>,
        ty: Option<gimli::UnitOffset>,
        field: &str,
    ) -> Result<Option<(i64, Option<gimli::UnitOffset>)>, gimli::Error> {
        let Some(o) = ty else { return Ok(None) };
        let mut tree = unit.entries_tree(Some(o))?;
        let root = tree.root()?;
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_member {
                continue;
            }
            let Some(n) = e.attr_value(gimli::DW_AT_name)? else {
                continue;
            };
            if self.dwarf.attr_string(unit, n)?.to_string_lossy()? != field {
                continue;
            }
            let off = e
                .attr_value(gimli::DW_AT_data_member_location)?
                .and_then(|v| {
                    v.sdata_value()
                        .or_else(|| v.udata_value().map(|u| u as i64))
                })
                .unwrap_or(0);
            return Ok(Some((off, type_of(Some(e)))));
        }
        Ok(None)
    }

    /// perf's fetch type for a variable of type `ty`: `s`/`u` and the bits of a base type,
    /// `x` and the bits of anything else (pointers, aggregates).
    fn type_name(
        &self,
        unit: &gimli::Unit<Reader>,
        ty: Option<gimli::UnitOffset>,
        warnings: &mut Vec<String>,
    ) -> Result<String, gimli::Error> {
        let Some(o) = self.strip(unit, ty)? else {
            return Ok("x64".into());
        };
        let e = unit.entry(o)?;
        let bytes = e
            .attr_value(gimli::DW_AT_byte_size)?
            .and_then(|v| v.udata_value())
            .unwrap_or(u64::from(unit.encoding().address_size));
        let bits = (bytes.clamp(1, 8) * 8).next_power_of_two();
        if e.tag() == gimli::DW_TAG_base_type
            && let Some(gimli::AttributeValue::Encoding(enc)) =
                e.attr_value(gimli::DW_AT_encoding)?
        {
            let sign = match enc {
                gimli::DW_ATE_signed | gimli::DW_ATE_signed_char => 's',
                gimli::DW_ATE_unsigned | gimli::DW_ATE_unsigned_char | gimli::DW_ATE_boolean => 'u',
                _ => 'x',
            };
            return Ok(format!("{sign}{bits}"));
        }
        if e.tag() == gimli::DW_TAG_pointer_type {
            return Ok(format!("x{}", unit.encoding().address_size as u64 * 8));
        }
        if bytes > 8 {
            let name = match e.attr_value(gimli::DW_AT_name)? {
                Some(v) => self
                    .dwarf
                    .attr_string(unit, v)?
                    .to_string_lossy()?
                    .into_owned(),
                None => String::new(),
            };
            warnings.push(format!("{name} exceeds max-bitwidth. Cut down to 64 bits."));
        }
        Ok("x64".into())
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
        assert_eq!(a.fields, [(true, "x".to_string())]);
        assert_eq!(a.field_name(0), "x");
        assert_eq!(a.echo(), "x=p->x");
        assert_eq!(ArgSpec::parse("p->x:u8").unwrap().field_name(0), "x");
        assert_eq!(ArgSpec::parse("b:x32").unwrap().field_name(2), "b_x32");
        assert_eq!(ArgSpec::parse("v=a").unwrap().field_name(0), "v");
        assert_eq!(ArgSpec::parse("$retval").unwrap().field_name(0), "arg1");
        let s = ArgSpec::parse("pt.q->r").unwrap();
        assert_eq!(
            s.fields,
            [(false, "q".to_string()), (true, "r".to_string())]
        );
        assert!(ArgSpec::parse("a:u33").is_err());
        assert!(ArgSpec::parse("a[1]").is_err());
        assert!(ArgSpec::parse("$vars").is_err());
        assert!(ArgSpec::parse("p->").is_err());
    }

    #[test]
    fn memory_operands_render_with_perfs_sign() {
        assert_eq!(Loc::Memory("%bp".into(), -20).render(), "-20(%bp)");
        let p = Loc::Memory("%bp".into(), -40);
        assert_eq!(Loc::Memory(p.render(), 0).render(), "+0(-40(%bp))");
        assert_eq!(Loc::Value("%di".into()).render(), "%di");
    }
}
