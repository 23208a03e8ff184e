//! Stand-ins for Pyroscope's and Parca's ingest endpoints that accept exactly what the
//! real servers accept, and refuse with the status they would give what they refuse.
//!
//! No real Pyroscope or Parca server can run here (no Debian package, no pip/npm package
//! of either server, no Go module proxy to build one), so each rule below restates what
//! the servers' sources check (read, not copied):
//!
//! * Pyroscope, `POST /ingest` (`pkg/ingester/pyroscope/ingest_handler.go`,
//!   `api/model/labelset`, `pkg/og/convert/pprof/profile.go`, `pkg/validation`): `name`
//!   is `APP{k=v,...}` (APP of letters, digits, `_ . - /`; label names of letters, digits,
//!   `_ .`, not `__name__`); `from`/`until` are digits (Unix seconds unless 13, 16 or 19
//!   digits long); `sampleRate` a non-negative integer; `format=pprof` makes the whole
//!   body the (optionally gzipped) profile; the profile has sample types, none with `-`,
//!   non-zero location and function ids, one value per sample type, string indices in
//!   the table, and a `cpu` sample type (else it is not stored as `process_cpu`).
//!   Refusals: 400 for the query, 422 for the profile.
//! * Parca, `parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw`
//!   (`pkg/server/server.go`, `pkg/normalizer/{normalizer,validate}.go`): only requests
//!   whose Content-Type starts with `application/grpc` reach gRPC (anything else gets the
//!   UI's page); the gRPC-Web body is one length-prefixed message; every series has a
//!   `__name__` and valid, distinct Prometheus label names; each raw profile (gzipped or
//!   not) has `string_table[0] == ""`, ids of mappings, functions and locations equal to
//!   their position + 1, every index in range, one value per sample type, non-zero
//!   location ids, non-zero label keys. Refusals: `grpc-status: 3` (INVALID_ARGUMENT).

#![allow(dead_code)]

use perfkit_fleet::upload::{grpc_web, parca};
use perfkit_report::export::pprof::PprofProfile;
use prost::Message;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};

/// One HTTP request.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// Path and query.
    pub target: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
    /// The query's parameters, percent-decoded.
    pub fn query(&self) -> HashMap<String, String> {
        let q = self.target.split_once('?').map_or("", |(_, q)| q);
        q.split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (decode_pct(k), decode_pct(v))
            })
            .collect()
    }
}

fn decode_pct(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An answer: status, headers, body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    fn plain(status: u16, text: &str) -> Answer {
        Answer {
            status,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: text.as_bytes().to_vec(),
        }
    }
    /// A gRPC-Web answer with status `code` in the trailer frame.
    fn grpc(code: u32, msg: &str) -> Answer {
        let mut body = grpc_web::frame(&[]);
        let trailer = format!("grpc-status:{code}\r\ngrpc-message:{msg}\r\n");
        body.push(0x80);
        body.extend_from_slice(&(trailer.len() as u32).to_be_bytes());
        body.extend_from_slice(trailer.as_bytes());
        Answer {
            status: 200,
            headers: vec![("Content-Type".into(), "application/grpc-web+proto".into())],
            body,
        }
    }
}

/// Read one request from `r`; None at the end of the connection.
pub fn read_request(r: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

pub fn write_answer(w: &mut impl Write, a: &Answer) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\n",
        a.status,
        a.body.len()
    );
    for (k, v) in &a.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    w.write_all(&a.body)?;
    w.flush()
}

/// Serve requests on one connection with `handle` until it closes.
pub fn serve_connection<S: Read + Write>(stream: S, handle: &dyn Fn(&Request) -> Answer) {
    let mut r = BufReader::new(stream);
    while let Some(req) = read_request(&mut r) {
        let a = handle(&req);
        if write_answer(r.get_mut(), &a).is_err() {
            return;
        }
    }
}

/// What a store accepted.
#[derive(Clone, Debug)]
pub struct Accepted {
    /// The series' labels (Pyroscope: `__name__` is the application name).
    pub labels: Vec<(String, String)>,
    /// The request's query parameters (Pyroscope).
    pub query: HashMap<String, String>,
    pub profile: PprofProfile,
}

/// Gunzip when gzipped, then decode.
fn decode_profile(raw: &[u8]) -> Result<PprofProfile, String> {
    let mut data = raw.to_vec();
    if raw.starts_with(&[0x1f, 0x8b]) {
        data.clear();
        flate2::read::GzDecoder::new(raw)
            .read_to_end(&mut data)
            .map_err(|e| format!("decompressing profile: {e}"))?;
    }
    PprofProfile::decode(&data[..]).map_err(|e| format!("failed to parse profile: {e}"))
}

/// Pyroscope's `name` parameter: `APP{k=v,...}`.
fn pyroscope_labelset(name: &str) -> Result<Vec<(String, String)>, String> {
    let label_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    let (app, rest) = name.split_once('{').unwrap_or((name, "}"));
    let app = app.trim();
    if app.is_empty() {
        return Err("service name is required".into());
    }
    if let Some(c) = app
        .chars()
        .find(|&c| !(label_char(c) || c == '-' || c == '/'))
    {
        return Err(format!(
            "invalid service name: {app}: character is not allowed: {c:?}"
        ));
    }
    let mut out = vec![("__name__".to_string(), app.to_string())];
    let body = rest.split('}').next().unwrap_or("");
    for kv in body.split(',').filter(|s| !s.trim().is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("label without value: {kv}"))?;
        let k = k.trim();
        if k.is_empty() || !k.chars().all(label_char) || k == "__name__" {
            return Err(format!("invalid label name: {k}"));
        }
        out.push((k.to_string(), v.trim().to_string()));
    }
    Ok(out)
}

/// Pyroscope's `from`/`until`: digits, seconds unless 13/16/19 digits long.
fn pyroscope_time_secs(v: &str) -> Result<u64, String> {
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("not Unix time: {v}"));
    }
    let n: u64 = v.parse().map_err(|_| format!("not Unix time: {v}"))?;
    Ok(match v.len() {
        13 => n / 1000,
        16 => n / 1_000_000,
        19 => n / 1_000_000_000,
        _ => n,
    })
}

/// Pyroscope's profile validation (`ValidateProfile`) and its series naming.
fn pyroscope_profile(p: &PprofProfile) -> Result<(), String> {
    let st = |i: i64| p.string_table.get(i as usize).map(String::as_str);
    if p.sample_type.is_empty() {
        return Err("empty profile".into());
    }
    for l in &p.location {
        if l.id == 0 {
            return Err("location id is 0".into());
        }
    }
    for f in &p.function {
        if f.id == 0 {
            return Err("function id is 0".into());
        }
    }
    for s in &p.sample {
        if s.value.len() != p.sample_type.len() {
            return Err("sample value length mismatch".into());
        }
        if s.label.len() > 100 {
            return Err("too many sample labels".into());
        }
    }
    string_indices(p)?;
    for t in &p.sample_type {
        if st(t.r#type).unwrap_or("").contains('-') {
            return Err("sample type contains -".into());
        }
    }
    if !p
        .sample_type
        .iter()
        .any(|t| st(t.r#type).unwrap_or("").contains("cpu"))
    {
        return Err("no cpu sample type: not stored as process_cpu".into());
    }
    Ok(())
}

/// Every string index of a profile is in its table.
fn string_indices(p: &PprofProfile) -> Result<(), String> {
    let n = p.string_table.len() as i64;
    let ok = |i: i64| (0..n).contains(&i);
    let mut all: Vec<i64> = Vec::new();
    all.extend(p.sample_type.iter().flat_map(|t| [t.r#type, t.unit]));
    all.extend(
        p.sample
            .iter()
            .flat_map(|s| &s.label)
            .flat_map(|l| [l.key, l.str, l.num_unit]),
    );
    all.extend(p.mapping.iter().flat_map(|m| [m.filename, m.build_id]));
    all.extend(
        p.function
            .iter()
            .flat_map(|f| [f.name, f.system_name, f.filename]),
    );
    all.extend(p.period_type.iter().flat_map(|t| [t.r#type, t.unit]));
    all.extend(p.comment.iter().copied());
    all.push(p.drop_frames);
    all.push(p.keep_frames);
    match all.into_iter().find(|&i| !ok(i)) {
        Some(i) => Err(format!("string index {i} out of the table ({n})")),
        None => Ok(()),
    }
}

/// Pyroscope's `/ingest`: the answer, and what was accepted.
pub fn pyroscope_ingest(req: &Request) -> (Answer, Option<Accepted>) {
    if req.method != "POST" || req.path() != "/ingest" {
        return (Answer::plain(404, "404 page not found"), None);
    }
    let q = req.query();
    let bad = |e: String| (Answer::plain(400, &e), None);
    let labels = match pyroscope_labelset(q.get("name").map_or("", String::as_str)) {
        Ok(l) => l,
        Err(e) => return bad(format!("name: {e}")),
    };
    let (from, until) = match (
        q.get("from").map(|v| pyroscope_time_secs(v)),
        q.get("until").map(|v| pyroscope_time_secs(v)),
    ) {
        (Some(Ok(f)), Some(Ok(u))) => (f, u),
        _ => return bad("from/until: Unix seconds expected".into()),
    };
    if from > until {
        return bad(format!("from {from} after until {until}"));
    }
    if q.get("sampleRate")
        .is_some_and(|r| r.parse::<u32>().is_err())
    {
        return bad("invalid sample rate".into());
    }
    if q.get("format").map(String::as_str) != Some("pprof") {
        return bad("format: pprof expected from this client".into());
    }
    if q.get("spyName").is_none_or(|s| s.is_empty()) {
        return bad("spyName: the agent names itself".into());
    }
    if !matches!(
        q.get("units").map(String::as_str),
        None | Some(
            "samples" | "objects" | "goroutines" | "bytes" | "lock_nanoseconds" | "lock_samples"
        )
    ) {
        return bad("units: unknown".into());
    }
    if !matches!(
        q.get("aggregationType").map(String::as_str),
        None | Some("sum" | "average")
    ) {
        return bad("aggregationType: sum or average".into());
    }
    // format=pprof: the body is the profile (a multipart body would be parsed as one
    // and fail here, as it fails on the real server).
    let profile = match decode_profile(&req.body).and_then(|p| pyroscope_profile(&p).map(|()| p)) {
        Ok(p) => p,
        Err(e) => return (Answer::plain(422, &e), None),
    };
    (
        Answer::plain(200, ""),
        Some(Accepted {
            labels,
            query: q,
            profile,
        }),
    )
}

/// Parca's profile validation (`ValidatePprofProfile`).
fn parca_profile(p: &PprofProfile, executable_infos: usize) -> Result<(), String> {
    let n = p.string_table.len() as i64;
    if n > 0 && !p.string_table[0].is_empty() {
        return Err("first item in string table is expected to be empty string".into());
    }
    for (i, m) in p.mapping.iter().enumerate() {
        if m.id != i as u64 + 1 {
            return Err("mapping id is not sequential".into());
        }
    }
    if executable_infos != 0 && executable_infos != p.mapping.len() {
        return Err("executable infos do not match mappings".into());
    }
    for (i, f) in p.function.iter().enumerate() {
        if f.id != i as u64 + 1 {
            return Err("function id is not sequential".into());
        }
    }
    for (i, l) in p.location.iter().enumerate() {
        if l.id != i as u64 + 1 {
            return Err("location id is not sequential".into());
        }
        if l.mapping_id > p.mapping.len() as u64 {
            return Err(format!("location has invalid mapping id: {}", l.mapping_id));
        }
        for ln in &l.line {
            if ln.function_id > p.function.len() as u64 {
                return Err(format!("location {} has invalid function id", l.id));
            }
        }
    }
    if p.sample_type.is_empty() && !p.sample.is_empty() {
        return Err("missing sample type information".into());
    }
    for (i, s) in p.sample.iter().enumerate() {
        if s.value.len() != p.sample_type.len() {
            return Err("mismatch: sample values vs. types".into());
        }
        for &l in &s.location_id {
            if l == 0 || l > p.location.len() as u64 {
                return Err(format!("sample {i} location {l} out of range"));
            }
        }
        for l in &s.label {
            if l.key == 0 {
                return Err(format!("sample {i} label has no key"));
            }
        }
    }
    string_indices(p)
}

/// Parca's `WriteRaw` over gRPC-Web: the answer, and what was accepted.
pub fn parca_write_raw(req: &Request) -> (Answer, Vec<Accepted>) {
    let ctype = req.headers.get("content-type").map_or("", String::as_str);
    if !ctype.starts_with("application/grpc") {
        // Parca's HTTP handler sends everything else to its UI.
        return (Answer::plain(404, "not found"), Vec::new());
    }
    if req.method != "POST"
        || req.path() != "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw"
    {
        return (Answer::grpc(12, "unknown method"), Vec::new());
    }
    let invalid = |e: String| (Answer::grpc(3, &e), Vec::new());
    let frames = match grpc_web::frames(&req.body) {
        Some(f) if f.len() == 1 && f[0].0 == 0 => f,
        _ => return (Answer::grpc(13, "malformed gRPC-Web body"), Vec::new()),
    };
    let Ok(w) = parca::WriteRawRequest::decode(frames[0].1) else {
        return (
            Answer::grpc(13, "cannot decode WriteRawRequest"),
            Vec::new(),
        );
    };
    let prom = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    let mut out = Vec::new();
    for series in &w.series {
        let labels: Vec<(String, String)> = series
            .labels
            .iter()
            .flat_map(|l| &l.labels)
            .map(|l| (l.name.clone(), l.value.clone()))
            .collect();
        let mut seen = std::collections::HashSet::new();
        for (k, _) in labels.iter().filter(|(k, _)| k != "__name__") {
            if !prom(k) {
                return invalid(format!("invalid label name: {k}"));
            }
            if !seen.insert(k) {
                return invalid(format!("duplicate label name: {k}"));
            }
        }
        if !labels.iter().any(|(k, v)| k == "__name__" && !v.is_empty()) {
            return invalid("missing __name__ label".into());
        }
        for s in &series.samples {
            let p = match decode_profile(&s.raw_profile) {
                Ok(p) => p,
                Err(e) => return invalid(e),
            };
            if let Err(e) = parca_profile(&p, s.executable_info.len()) {
                return invalid(format!("invalid profile: {e}"));
            }
            out.push(Accepted {
                labels: labels.clone(),
                query: HashMap::new(),
                profile: p,
            });
        }
    }
    (Answer::grpc(0, ""), out)
}
