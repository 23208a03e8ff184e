//! Tracepoints through tracefs: finding (or mounting) it, listing `events/<subsys>/<event>`,
//! reading ids (`PERF_TYPE_TRACEPOINT` configs), parsing each event's `format` file, and
//! decoding the `PERF_SAMPLE_RAW` payload of a sample with it.

pub use crate::error::TraceError;
use perfkit_records::Endian;
use std::fs;
use std::path::{Path, PathBuf};

/// The places tracefs is looked for, in order.
pub const TRACEFS_PATHS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

fn looks_like_tracefs(p: &Path) -> bool {
    p.join("events").is_dir()
}

/// The tracefs directory of this machine, if it is mounted.
pub fn find_tracefs() -> Option<PathBuf> {
    TRACEFS_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| looks_like_tracefs(p))
}

/// Find tracefs, mounting it on `/sys/kernel/tracing` if it is not mounted
/// (`mount -t tracefs nodev /sys/kernel/tracing`). "Already mounted" (`EBUSY`) is fine.
/// Needs root (`CAP_SYS_ADMIN`) to mount.
pub fn find_or_mount_tracefs() -> Result<PathBuf, TraceError> {
    if let Some(p) = find_tracefs() {
        return Ok(p);
    }
    let target = PathBuf::from(TRACEFS_PATHS[0]);
    let out = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev"])
        .arg(&target)
        .output()
        .map_err(|source| TraceError::MountCommand {
            target: target.clone(),
            source,
        })?;
    if looks_like_tracefs(&target) {
        return Ok(target);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("already mounted") || err.contains("busy") {
        if let Some(p) = find_tracefs() {
            return Ok(p);
        }
    }
    Err(TraceError::Mount {
        target,
        stderr: err.trim().to_string(),
    })
}

/// Subsystem names under `tracefs/events` (directories only), sorted.
pub fn subsystems(tracefs: &Path) -> Vec<String> {
    subdirs(&tracefs.join("events"))
}

/// Event names of `subsys`, sorted.
pub fn events_of(tracefs: &Path, subsys: &str) -> Vec<String> {
    subdirs(&tracefs.join("events").join(subsys))
}

/// The directories in `dir`, sorted, told apart by the directory entry's own type (no
/// `stat` per entry: tracefs has thousands).
fn subdirs(dir: &Path) -> Vec<String> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The tracepoint id of `subsys:event` (the `id` file), the `attr.config` to open it with.
pub fn event_id(tracefs: &Path, subsys: &str, event: &str) -> Result<u64, TraceError> {
    let p = tracefs.join("events").join(subsys).join(event).join("id");
    // One read into a small buffer (an id is a few digits): `perfkit list` reads thousands.
    let mut buf = [0u8; 32];
    let n = fs::File::open(&p)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut buf))
        .map_err(|source| TraceError::Io {
            path: p.clone(),
            source,
        })?;
    let s = String::from_utf8_lossy(&buf[..n]);
    s.trim().parse().map_err(|_| TraceError::BadId {
        text: s.trim().to_string(),
        path: p,
    })
}

/// Find `subsys:event` by id (a reverse of [`event_id`]); scans tracefs.
pub fn name_of_id(tracefs: &Path, id: u64) -> Option<String> {
    for s in subsystems(tracefs) {
        for e in events_of(tracefs, &s) {
            if event_id(tracefs, &s, &e).ok() == Some(id) {
                return Some(format!("{s}:{e}"));
            }
        }
    }
    None
}

/// One field of a tracepoint's `format`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Field {
    /// Field name (`prev_comm`).
    pub name: String,
    /// The C type as written (`char`, `__data_loc char[]`, `pid_t`).
    pub c_type: String,
    /// Byte offset in the RAW record.
    pub offset: usize,
    /// Size in bytes (for arrays: the whole array; for `__data_loc`: 4).
    pub size: usize,
    /// `signed:1`
    pub signed: bool,
    /// Element count of a fixed array (`char prev_comm[16]` gives 16).
    pub array_len: Option<usize>,
    /// A `__data_loc` field: a u32 with the offset (low 16 bits) and length (high 16 bits)
    /// of dynamic data in the record. `__rel_loc` offsets count from the end of the field.
    pub data_loc: Option<DataLoc>,
    /// Whether the type is character data (decoded as a string).
    pub is_string: bool,
}

/// Kind of dynamic-location field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum DataLoc {
    /// `__data_loc`: offset from the start of the record.
    Absolute,
    /// `__rel_loc`: offset from the end of this field.
    Relative,
}

/// A parsed `format` file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TraceFormat {
    /// Event name (`name:` line).
    pub name: String,
    /// Tracepoint id (`ID:` line).
    pub id: u64,
    /// The `common_*` fields.
    pub common_fields: Vec<Field>,
    /// The event's own fields.
    pub fields: Vec<Field>,
    /// The `print fmt:` line.
    pub print_fmt: String,
    /// Byte order of the RAW payloads this format decodes: the recording machine's
    /// ([`Endian::NATIVE`] from [`parse`](Self::parse); a perf.data file's own order from
    /// [`with_endian`](Self::with_endian)).
    #[serde(skip)]
    pub endian: Endian,
}

/// An error parsing a `format` file, with the 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "format line {}: {}", self.line, self.message)
    }
}
impl std::error::Error for FormatError {}

fn parse_field(line: &str, lineno: usize) -> Result<Field, FormatError> {
    let err = |m: String| FormatError {
        line: lineno,
        message: m,
    };
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let Some((k, v)) = part.split_once(':') else {
            return Err(err(format!("expected `key:value`, got `{part}`")));
        };
        match k.trim() {
            "field" => decl = Some(v.trim().to_string()),
            "offset" => {
                offset = Some(
                    v.trim()
                        .parse::<usize>()
                        .map_err(|_| err(format!("bad offset `{v}`")))?,
                )
            }
            "size" => {
                size = Some(
                    v.trim()
                        .parse::<usize>()
                        .map_err(|_| err(format!("bad size `{v}`")))?,
                )
            }
            "signed" => signed = v.trim() == "1",
            _ => {}
        }
    }
    let decl = decl.ok_or_else(|| err("no `field:`".into()))?;
    let offset = offset.ok_or_else(|| err("no `offset:`".into()))?;
    let size = size.ok_or_else(|| err("no `size:`".into()))?;
    // "type name", "type name[N]", "__data_loc type[] name", "const char * name"
    let (mut ty, mut name) = match decl.rfind([' ', '*']) {
        Some(i) => (
            decl[..=i].trim().to_string(),
            decl[i + 1..].trim().to_string(),
        ),
        None => return Err(err(format!("cannot split type and name in `{decl}`"))),
    };
    let mut array_len = None;
    if let Some(open) = name.find('[') {
        let inner = name[open + 1..].trim_end_matches(']').to_string();
        name.truncate(open);
        if !inner.is_empty() {
            array_len = inner.parse::<usize>().ok();
        }
        ty.push_str("[]");
    }
    let data_loc = if ty.starts_with("__data_loc") {
        Some(DataLoc::Absolute)
    } else if ty.starts_with("__rel_loc") {
        Some(DataLoc::Relative)
    } else {
        None
    };
    let base = ty
        .trim_start_matches("__data_loc")
        .trim_start_matches("__rel_loc")
        .trim()
        .trim_end_matches("[]")
        .trim();
    let is_string = matches!(
        base,
        "char" | "unsigned char" | "const char" | "u8" | "signed char"
    ) && (array_len.is_some() || data_loc.is_some());
    if name.is_empty() {
        return Err(err(format!("empty field name in `{decl}`")));
    }
    Ok(Field {
        name,
        c_type: ty,
        offset,
        size,
        signed,
        array_len,
        data_loc,
        is_string,
    })
}

impl TraceFormat {
    /// Parse the text of a `format` file.
    pub fn parse(text: &str) -> Result<TraceFormat, FormatError> {
        let mut name = String::new();
        let mut id = None;
        let mut common = Vec::new();
        let mut fields = Vec::new();
        let mut print_fmt = String::new();
        let mut seen_blank = false;
        // `print fmt:` runs to the end of the file: its string may hold newlines.
        let (head, print) = match text.find("\nprint fmt:") {
            Some(at) => (&text[..at], Some(&text[at + "\nprint fmt:".len()..])),
            None => (text, text.strip_prefix("print fmt:")),
        };
        if let Some(p) = print {
            print_fmt = p.trim().to_string();
        }
        for (i, line) in head.lines().enumerate() {
            let lineno = i + 1;
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                name = v.trim().to_string();
            } else if let Some(v) = t.strip_prefix("ID:") {
                id = Some(v.trim().parse::<u64>().map_err(|_| FormatError {
                    line: lineno,
                    message: format!("bad ID `{}`", v.trim()),
                })?);
            } else if t.starts_with("field:") {
                let f = parse_field(t, lineno)?;
                if !seen_blank && f.name.starts_with("common_") {
                    common.push(f);
                } else {
                    fields.push(f);
                }
            } else if t.is_empty() && !common.is_empty() {
                seen_blank = true;
            }
        }
        let id = id.ok_or(FormatError {
            line: 0,
            message: "no `ID:` line".into(),
        })?;
        Ok(TraceFormat {
            name,
            id,
            common_fields: common,
            fields,
            print_fmt,
            endian: Endian::NATIVE,
        })
    }

    /// This format for RAW payloads in byte order `endian` (a perf.data file's).
    pub fn with_endian(mut self, endian: Endian) -> TraceFormat {
        self.endian = endian;
        self
    }

    /// Read and parse `tracefs/events/<subsys>/<event>/format`.
    pub fn read(tracefs: &Path, subsys: &str, event: &str) -> Result<TraceFormat, TraceError> {
        let p = tracefs
            .join("events")
            .join(subsys)
            .join(event)
            .join("format");
        let text = match fs::read_to_string(&p) {
            Ok(t) => t,
            Err(source) => return Err(TraceError::Io { path: p, source }),
        };
        TraceFormat::parse(&text).map_err(|source| TraceError::Format { path: p, source })
    }

    /// A field (common or own) by name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.common_fields
            .iter()
            .chain(&self.fields)
            .find(|f| f.name == name)
    }

    /// The position of a field (common fields first), for [`field_at`](Self::field_at).
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.common_fields
            .iter()
            .chain(&self.fields)
            .position(|f| f.name == name)
    }

    /// The field at a position from [`field_index`](Self::field_index).
    pub fn field_at(&self, i: usize) -> Option<&Field> {
        match i.checked_sub(self.common_fields.len()) {
            None => self.common_fields.get(i),
            Some(j) => self.fields.get(j),
        }
    }

    /// Decode one field of a RAW sample payload (in [`endian`](Self::endian) order).
    pub fn decode_one(&self, f: &Field, raw: &[u8]) -> Result<Value, DecodeError> {
        decode_field(f, raw, self.endian)
    }

    /// Decode a RAW sample payload (in [`endian`](Self::endian) order) into
    /// `(field, value)` pairs for the event's own fields (`common` = true adds the
    /// `common_*` fields first).
    pub fn decode<'a>(
        &'a self,
        raw: &[u8],
        common: bool,
    ) -> Result<Vec<(&'a str, Value)>, DecodeError> {
        let mut out = Vec::new();
        let list: Vec<&Field> = if common {
            self.common_fields.iter().chain(&self.fields).collect()
        } else {
            self.fields.iter().collect()
        };
        for f in list {
            out.push((f.name.as_str(), decode_field(f, raw, self.endian)?));
        }
        Ok(out)
    }
}

/// A decoded field value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub enum Value {
    /// A signed integer.
    Signed(i64),
    /// An unsigned integer.
    Unsigned(u64),
    /// Character data up to the first NUL (lossy UTF-8).
    Str(String),
    /// An array of integers.
    Array(Vec<i64>),
    /// Bytes of a dynamic or odd-sized field.
    Bytes(Vec<u8>),
}

/// A RAW payload too short for a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Field that did not fit.
    pub field: String,
    /// Byte offset wanted.
    pub offset: usize,
    /// Bytes wanted from there.
    pub len: usize,
    /// Bytes available in total.
    pub available: usize,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RAW data too short for field `{}`: needs bytes {}..{}, have {}",
            self.field,
            self.offset,
            self.offset + self.len,
            self.available
        )
    }
}
impl std::error::Error for DecodeError {}

fn slice<'b>(f: &Field, raw: &'b [u8], off: usize, len: usize) -> Result<&'b [u8], DecodeError> {
    off.checked_add(len)
        .and_then(|end| raw.get(off..end))
        .ok_or(DecodeError {
            field: f.name.clone(),
            offset: off,
            len,
            available: raw.len(),
        })
}

/// An unsigned integer of 1 to 8 bytes in byte order `e`.
pub(crate) fn uint(bytes: &[u8], e: Endian) -> u64 {
    let n = bytes.len().min(8);
    let mut b = [0u8; 8];
    match e {
        Endian::Big => b[8 - n..].copy_from_slice(&bytes[..n]),
        Endian::Little => b[..n].copy_from_slice(&bytes[..n]),
    }
    e.u64(b)
}

fn int(bytes: &[u8], signed: bool, e: Endian) -> Value {
    let n = bytes.len().min(8);
    let u = uint(bytes, e);
    if signed && n < 8 && n > 0 {
        let shift = 64 - 8 * n as u32;
        Value::Signed(((u << shift) as i64) >> shift)
    } else if signed {
        Value::Signed(u as i64)
    } else {
        Value::Unsigned(u)
    }
}

fn cstr(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn decode_field(f: &Field, raw: &[u8], e: Endian) -> Result<Value, DecodeError> {
    let here = slice(f, raw, f.offset, f.size)?;
    if let Some(kind) = f.data_loc {
        let loc = uint(&here[..here.len().min(4)], e);
        let mut off = (loc & 0xffff) as usize;
        let len = ((loc >> 16) & 0xffff) as usize;
        if kind == DataLoc::Relative {
            off += f.offset + f.size;
        }
        let data = slice(f, raw, off, len)?;
        return Ok(if f.is_string {
            Value::Str(cstr(data))
        } else {
            Value::Bytes(data.to_vec())
        });
    }
    if f.is_string {
        return Ok(Value::Str(cstr(here)));
    }
    if let Some(n) = f.array_len {
        if n > 0 && f.size % n == 0 && matches!(f.size / n, 1 | 2 | 4 | 8) {
            let w = f.size / n;
            return Ok(Value::Array(
                here.chunks(w)
                    .map(|c| match int(c, f.signed, e) {
                        Value::Signed(v) => v,
                        Value::Unsigned(v) => v as i64,
                        _ => 0,
                    })
                    .collect(),
            ));
        }
        return Ok(Value::Bytes(here.to_vec()));
    }
    Ok(match f.size {
        1 | 2 | 4 | 8 => int(here, f.signed, e),
        _ => Value::Bytes(here.to_vec()),
    })
}
