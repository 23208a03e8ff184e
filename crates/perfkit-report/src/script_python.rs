//! `script -s FILE.py`: perf's Python scripting interface, run by the system's `python3`
//! rather than an embedded interpreter. perfkit starts `python3` with a small driver
//! ([`DRIVER`]) that runs the user's script, then streams the profile to it as JSON lines:
//! each sample (for `process_event(param_dict)` or a tracepoint's `sys__name(...)`
//! handler) and, for scripts that set `perf_db_export_mode`, perf's db-export tables
//! (`evsel_table`, `machine_table`, `thread_table`, `comm_table`, `comm_thread_table`,
//! `dso_table`, `symbol_table`, `sample_table`, `call_path_table`) with perf's ids.
//! `trace_begin()` and `trace_end()` are called around them.

use crate::script_events::{Extras, NO_DATA_SRC, SampleDetail};
use crate::{FrameId, Profile, Sample, StackId};
use rustc_hash::FxHashMap as HashMap;
use serde_json::{Value, json};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};

/// The Python side: runs the script, then dispatches each JSON line to it.
pub const DRIVER: &str = r#"
import json, sys
path = sys.argv[1]
sys.argv = [path] + sys.argv[2:]
g = {'__name__': '__main__', '__file__': path}
with open(path) as f:
    code = compile(f.read(), path, 'exec')
exec(code, g)
db = bool(g.get('perf_db_export_mode', False))
def call(name, *args):
    f = g.get(name)
    if callable(f):
        return f(*args), True
    return None, False
ATTRS = {}
# The C scanner behind json.loads, called directly: one message a line, no whitespace.
decode = json.JSONDecoder().scan_once
call('trace_begin')
for line in sys.stdin:
    # Lines of the other mode are passed over undecoded (half the driver's time).
    if line.startswith('["table"' if not db else '["sample"'):
        continue
    ev = decode(line, 0)[0]
    kind = ev[0]
    if kind == 'attr':
        ATTRS[ev[1]] = bytes(ev[2])
    elif kind == 'table':
        if db:
            call(ev[1], *ev[2])
    elif kind == 'sample':
        if db:
            continue
        # The dictionary arrives in perf's key order (json.loads keeps it); only the
        # values JSON has no type for are converted here.
        d = ev[1]
        d['attr'] = ATTRS.get(d['attr'], b'')
        d['raw_buf'] = bytes(d['raw_buf'])
        s = d['sample']
        s['values'] = [tuple(v) for v in s['values']]
        tp = ev[2]
        if tp is not None:
            handler = tp['handler']
            f = g.get(handler)
            s = d['sample']
            common = [s['cpu'], s['time'] // 1000000000, s['time'] % 1000000000,
                      s['pid'], d['comm'], d.get('callchain', [])]
            if callable(f):
                args = [handler, None] + common + [v for k, v in tp['fields']]
                if f.__code__.co_argcount > len(args) or f.__code__.co_flags & 0x04:
                    args.append(d)
                f(*args)
            else:
                fields = dict((k, v) for k, v in tp['fields'])
                fields.update({'common_cpu': s['cpu'], 'common_s': common[1],
                               'common_ns': common[2], 'common_pid': s['pid'],
                               'common_comm': d['comm'], 'common_callchain': common[5]})
                if not call('trace_unhandled', handler, None, fields)[1]:
                    call('process_event', d)
        else:
            call('process_event', d)
call('trace_end')
"#;

/// Whether `python3` runs here (what `script -s` needs).
pub fn available() -> bool {
    Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// perf's db-export ids, handed out as things are first met.
#[derive(Default)]
struct Db {
    threads: HashMap<u32, u64>,
    /// Per thread, its comms' ids.
    comms: HashMap<u32, HashMap<String, u64>>,
    dsos: HashMap<String, u64>,
    /// Per dso, its symbols' ids.
    symbols: HashMap<String, HashMap<String, u64>>,
    next_symbol: u64,
    call_paths: HashMap<(u64, u64, u64), u64>,
    stack_paths: HashMap<StackId, u64>,
    next_comm_thread: u64,
    next_sample: u64,
    /// The events whose attr the driver has (sent once, not with every sample).
    attrs_sent: Vec<bool>,
    /// The message being written (one buffer for every sample).
    buf: Vec<u8>,
    /// Each frame's dso and symbol ids (one lookup per sample, not two by name).
    frame_ids: HashMap<FrameId, (u64, u64)>,
    /// The last `datasrc_decode` text, and the `data_src` it describes.
    data_src_text: Option<(u64, String)>,
}

/// Run `script` (with `args`) on `samples` of `profile`.
pub fn run(
    profile: &Profile,
    extras: &Extras,
    samples: &mut dyn Iterator<Item = (usize, &Sample)>,
    script: &Path,
    args: &[String],
) -> std::io::Result<ExitStatus> {
    let mut session = Session::start(script, args)?;
    for (index, s) in samples {
        session.sample(profile, extras, s, extras.details.get(index));
    }
    session.finish(profile)
}

/// A running script fed one sample at a time, as a streamed `script` reads them: memory
/// follows perf's db-export ids (threads, comms, symbols, call paths), not the samples.
pub struct Session {
    child: Child,
    w: BufWriter<ChildStdin>,
    db: Db,
    started: bool,
    /// The first write that failed; nothing more is sent after it.
    failed: Option<std::io::Error>,
}

impl Session {
    /// Start `python3` on `script` (with `args`).
    pub fn start(script: &Path, args: &[String]) -> std::io::Result<Session> {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(DRIVER)
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        Ok(Session {
            child,
            w: BufWriter::new(stdin),
            db: Db::default(),
            started: false,
            failed: None,
        })
    }

    /// Send sample `s` of `p` (the profile as built so far), with its own fields
    /// `detail`; `extras` gives its event's attr.
    pub fn sample(
        &mut self,
        p: &Profile,
        extras: &Extras,
        s: &Sample,
        detail: Option<&SampleDetail>,
    ) {
        if self.failed.is_some() {
            return;
        }
        let sent = self
            .begin(p)
            .and_then(|()| feed_one(&mut self.db, p, extras, s, detail, &mut self.w));
        if let Err(e) = sent {
            self.failed = Some(e);
        }
    }

    /// The tables sent before the first sample.
    fn begin(&mut self, p: &Profile) -> std::io::Result<()> {
        if std::mem::replace(&mut self.started, true) {
            return Ok(());
        }
        for (i, e) in p.events.iter().enumerate() {
            table(&mut self.w, "evsel_table", json!([i + 1, e.name]))?;
        }
        table(&mut self.w, "machine_table", json!([1, -1, ""]))
    }

    /// Close the script's input (after the tables of `p`, if no sample was sent) and wait
    /// for it.
    pub fn finish(mut self, p: &Profile) -> std::io::Result<ExitStatus> {
        let fed = match self.failed.take() {
            Some(e) => Err(e),
            None => self.begin(p).and_then(|()| self.w.flush()),
        };
        drop(self.w);
        let status = self.child.wait()?;
        match fed {
            // The script stopped reading (it failed, or exited early): its status says why.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(status),
            Err(e) => Err(e),
            Ok(()) => Ok(status),
        }
    }
}

fn line(w: &mut dyn Write, v: &Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, v)?;
    w.write_all(b"\n")
}

fn table(w: &mut dyn Write, name: &str, args: Value) -> std::io::Result<()> {
    line(w, &json!(["table", name, args]))
}

/// Send one sample, and the db-export rows it is the first to use.
fn feed_one(
    db: &mut Db,
    p: &Profile,
    extras: &Extras,
    s: &Sample,
    detail: Option<&SampleDetail>,
    w: &mut dyn Write,
) -> std::io::Result<()> {
    let t = &p.threads[s.thread as usize];
    let thread_id = thread(db, p, s.thread, w)?;
    let comm = t.name_at(s.time);
    let known = db.comms.get(&s.thread).and_then(|c| c.get(comm));
    let comm_id = match known {
        Some(&id) => id,
        None => {
            let id = db.next_comm_thread + 1;
            let comms = db.comms.entry(s.thread).or_default();
            comms.insert(comm.to_string(), id);
            table(w, "comm_table", json!([id, comm, thread_id, s.time, false]))?;
            db.next_comm_thread += 1;
            table(
                w,
                "comm_thread_table",
                json!([db.next_comm_thread, id, thread_id]),
            )?;
            id
        }
    };
    let leaf = p.stack_frames(s.stack).next();
    let (dso_id, sym_id, sym_off, ip) = match leaf {
        Some(f) => {
            let (d, sy) = symbol(db, p, f, w)?;
            let fr = &p.frames[f as usize];
            (d, sy, fr.sym_offset.unwrap_or(0), fr.addr)
        }
        None => (0, 0, 0, 0),
    };
    let call_path = match s.stack {
        Some(st) if p.events[s.event as usize].callchain => call_path(db, p, st, w)?,
        _ => 0,
    };
    db.next_sample += 1;
    let cpu = s.cpu.map_or(-1, i64::from);
    // perf's sample_table row, written directly (one per sample).
    let data_src = detail.map_or(NO_DATA_SRC, |d| d.data_src);
    let b = &mut db.buf;
    b.clear();
    b.extend_from_slice(b"[\"table\",\"sample_table\",[");
    let row: [i128; 25] = [
        i128::from(db.next_sample),
        i128::from(s.event + 1),
        1,
        i128::from(thread_id),
        i128::from(comm_id),
        i128::from(dso_id),
        i128::from(sym_id),
        i128::from(sym_off),
        i128::from(ip),
        i128::from(s.time),
        i128::from(cpu),
        0,
        0,
        0,
        0,
        i128::from(s.period),
        0,
        0,
        i128::from(data_src),
        0,
        0,
        i128::from(call_path),
        0,
        0,
        0,
    ];
    for (n, v) in row.iter().enumerate() {
        if n > 0 {
            b.push(b',');
        }
        put(b, v)?;
    }
    b.extend_from_slice(b"]]\n");
    w.write_all(b)?;
    let event = s.event as usize;
    if !db.attrs_sent.get(event).copied().unwrap_or(false) {
        let attr = extras.attrs.get(event).map_or(&[][..], Vec::as_slice);
        line(w, &json!(["attr", event, attr]))?;
        if db.attrs_sent.len() <= event {
            db.attrs_sent.resize(event + 1, false);
        }
        db.attrs_sent[event] = true;
    }
    let mut b = std::mem::take(&mut db.buf);
    let sent =
        sample_event(&mut b, &mut db.data_src_text, p, s, detail).and_then(|()| w.write_all(&b));
    db.buf = b;
    sent
}

fn thread(db: &mut Db, p: &Profile, tix: u32, w: &mut dyn Write) -> std::io::Result<u64> {
    if let Some(&id) = db.threads.get(&tix) {
        return Ok(id);
    }
    let t = &p.threads[tix as usize];
    // The process's main thread first, as perf exports it.
    let main = p
        .threads
        .iter()
        .position(|m| m.pid == t.pid && m.tid == t.pid)
        .map(|m| m as u32)
        .filter(|&m| m != tix);
    let process_id = match main {
        Some(m) => Some(thread(db, p, m, w)?),
        None => None,
    };
    let id = db.threads.len() as u64 + 1;
    db.threads.insert(tix, id);
    table(
        w,
        "thread_table",
        json!([id, 1, process_id.unwrap_or(id), t.pid, t.tid]),
    )?;
    Ok(id)
}

fn symbol(db: &mut Db, p: &Profile, f: FrameId, w: &mut dyn Write) -> std::io::Result<(u64, u64)> {
    if let Some(&ids) = db.frame_ids.get(&f) {
        return Ok(ids);
    }
    let ids = new_symbol(db, p, f, w)?;
    db.frame_ids.insert(f, ids);
    Ok(ids)
}

/// [`symbol`] for a frame not met before: its dso's and symbol's ids, and their rows
/// where they are new.
fn new_symbol(
    db: &mut Db,
    p: &Profile,
    f: FrameId,
    w: &mut dyn Write,
) -> std::io::Result<(u64, u64)> {
    let func = p.func_of(f);
    let fr = &p.frames[f as usize];
    let dso_id = match db.dsos.get(&func.dso) {
        Some(&id) => id,
        None => {
            let id = db.dsos.len() as u64 + 1;
            db.dsos.insert(func.dso.clone(), id);
            let short = Path::new(&func.dso)
                .file_name()
                .map_or(func.dso.clone(), |n| n.to_string_lossy().into_owned());
            let short = if func.dso.starts_with('[') {
                func.dso.clone()
            } else {
                short
            };
            table(w, "dso_table", json!([id, 1, short, func.dso, ""]))?;
            id
        }
    };
    if func.name == "[unknown]" {
        return Ok((dso_id, 0));
    }
    let known = db.symbols.get(&func.dso).and_then(|s| s.get(&func.name));
    let sym_id = match known {
        Some(&id) => id,
        None => {
            db.next_symbol += 1;
            let id = db.next_symbol;
            let syms = db.symbols.entry(func.dso.clone()).or_default();
            syms.insert(func.name.clone(), id);
            let start = fr.addr.saturating_sub(fr.sym_offset.unwrap_or(0));
            table(
                w,
                "symbol_table",
                json!([id, dso_id, start, start, 1, func.name]),
            )?;
            id
        }
    };
    Ok((dso_id, sym_id))
}

/// The call path of a stack, from the root: perf's `call_path_table` rows, ids from 2
/// (1 is the root, which perf does not export).
fn call_path(db: &mut Db, p: &Profile, stack: StackId, w: &mut dyn Write) -> std::io::Result<u64> {
    if let Some(&id) = db.stack_paths.get(&stack) {
        return Ok(id);
    }
    let frames: Vec<FrameId> = p.stack_frames(Some(stack)).collect();
    let mut parent = 1u64;
    for &f in frames.iter().rev() {
        let (_, sym) = symbol(db, p, f, w)?;
        let ip = if sym == 0 {
            p.frames[f as usize].addr
        } else {
            0
        };
        let key = (parent, sym, ip);
        parent = match db.call_paths.get(&key) {
            Some(&id) => id,
            None => {
                let id = db.call_paths.len() as u64 + 2;
                db.call_paths.insert(key, id);
                table(w, "call_path_table", json!([id, key.0, sym, ip]))?;
                id
            }
        };
    }
    db.stack_paths.insert(stack, parent);
    Ok(parent)
}

/// A JSON value written straight into a message (no `serde_json::Value` per sample):
/// serde_json writes each number and string (with its escaping) from the borrowed field.
fn put<T: serde::Serialize + ?Sized>(b: &mut Vec<u8>, v: &T) -> std::io::Result<()> {
    serde_json::to_writer(b, v).map_err(std::io::Error::from)
}

/// `"key":value` pairs of a JSON object, in the order written (Python's `json.loads`
/// keeps it: the script's dictionaries have perf's key order).
fn key<T: serde::Serialize + ?Sized>(b: &mut Vec<u8>, k: &str, v: &T) -> std::io::Result<()> {
    if !matches!(b.last(), Some(b'{' | b'[')) {
        b.push(b',');
    }
    b.push(b'"');
    b.extend_from_slice(k.as_bytes());
    b.extend_from_slice(b"\":");
    put(b, v)
}

/// Write the message of a sample into `b` (cleared first): `["sample", param_dict, tp]`,
/// `param_dict` as perf's `process_event` gets it with its keys in perf's order, and for
/// tracepoints the handler's name and fields.
/// (Its `attr` is the event's number: the driver has the bytes from an `attr` line.)
fn sample_event(
    b: &mut Vec<u8>,
    data_src_text: &mut Option<(u64, String)>,
    p: &Profile,
    s: &Sample,
    detail: Option<&SampleDetail>,
) -> std::io::Result<()> {
    b.clear();
    let t = &p.threads[s.thread as usize];
    let ev = &p.events[s.event as usize];
    let leaf = p.stack_frames(s.stack).next();
    let leaf_kernel = leaf.is_some_and(|f| p.func_of(f).kernel);
    let none = SampleDetail {
        data_src: NO_DATA_SRC,
        ..SampleDetail::default()
    };
    let d0 = detail.unwrap_or(&none);
    let raw = match ev.trace {
        Some(_) => s.raw.and_then(|r| p.raw.get(r as usize)),
        None => None,
    };
    b.extend_from_slice(b"[\"sample\",{");
    key(b, "ev_name", &ev.name)?;
    key(b, "attr", &s.event)?;
    b.extend_from_slice(b",\"sample\":{");
    key(b, "pid", &t.pid)?;
    key(b, "tid", &t.tid)?;
    // perf's (u32)-1 for a sample without a CPU.
    key(b, "cpu", &s.cpu.unwrap_or(u32::MAX))?;
    key(b, "ip", &leaf.map_or(0, |f| p.frames[f as usize].addr))?;
    key(b, "time", &s.time)?;
    key(b, "period", &s.period)?;
    key(b, "phys_addr", &d0.phys_addr)?;
    key(b, "addr", &d0.addr)?;
    key(b, "values", &[[0u8; 3]])?;
    key(b, "weight", &d0.weight)?;
    key(b, "transaction", &0u8)?;
    key(b, "datasrc", &d0.data_src)?;
    let text = match data_src_text {
        Some((v, text)) if *v == d0.data_src => text,
        _ => {
            let text = crate::data_src::describe(d0.data_src);
            &data_src_text.insert((d0.data_src, text)).1
        }
    };
    key(b, "datasrc_decode", text)?;
    key(b, "cpumode", &if leaf_kernel { 1u8 } else { 2 })?;
    b.push(b'}');
    key(b, "raw_buf", raw.unwrap_or(&[]))?;
    key(b, "comm", t.name_at(s.time))?;
    if let Some(f) = leaf {
        let func = p.func_of(f);
        key(b, "dso", &func.dso)?;
        if func.name != "[unknown]" {
            key(b, "symbol", &func.name)?;
            key(b, "symoff", &p.frames[f as usize].sym_offset.unwrap_or(0))?;
        }
    }
    b.extend_from_slice(b",\"callchain\":[");
    if ev.callchain {
        for f in p.stack_frames(s.stack) {
            let fr = &p.frames[f as usize];
            let func = p.func_of(f);
            // Each entry's keys in the sorted order scripts have always seen.
            if b.last() != Some(&b'[') {
                b.push(b',');
            }
            b.push(b'{');
            key(b, "dso", &func.dso)?;
            key(b, "ip", &fr.addr)?;
            if func.name != "[unknown]" {
                let start = fr.addr.saturating_sub(fr.sym_offset.unwrap_or(0));
                b.extend_from_slice(b",\"sym\":{");
                key(b, "binding", &1u8)?;
                key(b, "end", &start)?;
                key(b, "name", &func.name)?;
                key(b, "start", &start)?;
                b.push(b'}');
            }
            b.push(b'}');
        }
    }
    b.push(b']');
    b.extend_from_slice(b",\"brstack\":[],\"brstacksym\":[],\"iregs\":\"\",\"uregs\":\"\"},");
    match (ev.trace.as_ref(), raw) {
        (Some(te), Some(raw)) => {
            b.extend_from_slice(b"{\"handler\":");
            put(b, &ev.name.replacen(':', "__", 1))?;
            b.extend_from_slice(b",\"fields\":[");
            if let Ok(values) = te.format.decode(raw, false) {
                for (i, (k, v)) in values.iter().enumerate() {
                    use perfkit_trace::tracefs::Value as V;
                    if i > 0 {
                        b.push(b',');
                    }
                    b.push(b'[');
                    put(b, k)?;
                    b.push(b',');
                    match v {
                        V::Signed(x) => put(b, x)?,
                        V::Unsigned(x) => put(b, x)?,
                        V::Str(x) => put(b, x)?,
                        V::Array(x) => put(b, x)?,
                        V::Bytes(x) => put(b, x)?,
                        other => put(b, other)?,
                    }
                    b.push(b']');
                }
            }
            b.extend_from_slice(b"]}]\n");
        }
        _ => b.extend_from_slice(b"null]\n"),
    }
    Ok(())
}
