//! Sending profiles to a profile store, from a bounded on-disk spool.
//!
//! Every profile is first written to the spool directory (a [`DirSink`]: bounded in bytes
//! and files, the oldest dropped first when the endpoint stays down longer than the spool
//! holds). A sender thread sends the spooled files oldest first and removes each once the
//! endpoint accepted it; on a failure it waits (1 s, doubling up to a minute, or until a
//! new profile arrives) and tries again. A profile is thus sent once the endpoint is back,
//! also after an agent restart (the spool is on disk). A profile the store refuses for
//! what it is (HTTP 4xx other than 408/429, gRPC `INVALID_ARGUMENT`) would be refused
//! again: it is dropped and counted ([`UploadStats::rejected`]) instead of blocking the
//! spool.
//!
//! The wire forms are those the stores' servers parse (read from their sources):
//!
//! * Pyroscope (`/ingest`, also Grafana Alloy's and Grafana Cloud's receivers):
//!   `POST BASE/ingest?name=APP{host=H,k=v}&from=S&until=S&format=pprof&sampleRate=HZ&spyName=perfkit&units=samples&aggregationType=sum`
//!   with the gzipped pprof as the raw body. With `format=pprof` the server takes the
//!   whole body as the profile (a multipart body is read only when no format is given),
//!   `from`/`until` are Unix seconds, and `name` is the application name (letters, digits,
//!   `_ . - /`) with its labels in braces (names of letters, digits, `_ .`; values without
//!   `,` or `}`);
//! * Parca: `parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw` as gRPC-Web
//!   (`application/grpc-web+proto`, one length-prefixed message), which Parca's HTTP/1.1
//!   port serves beside gRPC (Parca speaks neither the Connect protocol nor plain
//!   protobuf over HTTP/1.1 there). The request is a `WriteRawRequest` with one series
//!   labelled `__name__` and `host` (Prometheus label names) and the gzipped profile as
//!   its raw sample; success is `grpc-status: 0`, in the headers or the trailer frame.
//!
//! `https://` URLs use rustls with Mozilla's roots and the certificates of `--ca-cert`.

use crate::sink::DirSink;
use prost::Message;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// Where profiles go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// Pyroscope's `/ingest` (also Grafana Alloy's / Grafana Cloud's pyroscope receivers).
    Pyroscope {
        /// Base URL, `http://host:4040` or `https://...`.
        url: String,
        /// Application name.
        name: String,
    },
    /// Parca's `WriteRaw`.
    Parca {
        /// Base URL, `http://host:7070` or `https://...`.
        url: String,
        /// The series' `__name__`.
        name: String,
    },
}

/// An endpoint and what every profile sent there carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The store.
    pub endpoint: Endpoint,
    /// The series' labels (`host` first, then the user's), beside the name.
    pub labels: Vec<(String, String)>,
    /// Samples per second (Pyroscope's `sampleRate`).
    pub rate_hz: u64,
}

impl Target {
    /// Check the URL, name and labels against what the store accepts, with a message
    /// that says what to change (the store would refuse every profile otherwise).
    pub fn check(&self) -> Result<(), String> {
        let (url, name) = match &self.endpoint {
            Endpoint::Pyroscope { url, name } | Endpoint::Parca { url, name } => (url, name),
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("{url}: give an http:// or https:// URL"));
        }
        let pyroscope = matches!(self.endpoint, Endpoint::Pyroscope { .. });
        let label_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
        let prom_name = |s: &str| {
            s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !s.starts_with(|c: char| c.is_ascii_digit())
        };
        if name.is_empty() {
            return Err("--name: give a name".into());
        }
        if pyroscope && !name.chars().all(|c| label_char(c) || c == '-' || c == '/') {
            return Err(format!(
                "--name {name}: Pyroscope takes letters, digits and _ . - / in an application name"
            ));
        }
        for (k, v) in &self.labels {
            if pyroscope {
                if k.is_empty() || !k.chars().all(label_char) || k == "__name__" {
                    return Err(format!(
                        "label {k}: Pyroscope takes letters, digits, _ and . in a label name (not __name__)"
                    ));
                }
                if v.contains([',', '}', '{', '=']) {
                    return Err(format!(
                        "label {k}={v}: a Pyroscope label value cannot hold , {{ }} or ="
                    ));
                }
            } else if k.is_empty() || !prom_name(k) || k == "__name__" {
                return Err(format!(
                    "label {k}: Parca takes letters, digits and _ in a label name, not first a digit (not __name__)"
                ));
            }
        }
        let mut seen = std::collections::HashSet::new();
        if let Some((k, _)) = self.labels.iter().find(|(k, _)| !seen.insert(k.as_str())) {
            return Err(format!("label {k} given twice"));
        }
        Ok(())
    }
}

/// What the sender did so far.
#[derive(Debug, Default)]
pub struct UploadStats {
    /// Profiles the endpoint accepted.
    pub sent: AtomicU64,
    /// Attempts that failed (each retried later).
    pub failures: AtomicU64,
    /// Profiles the endpoint refused for what they are (dropped, not retried).
    pub rejected: AtomicU64,
    /// The last failure or refusal, for the log.
    pub last_error: Mutex<Option<String>>,
}

/// A client for the endpoints: rustls for `https://`, with Mozilla's roots and, where
/// given, the certificates of a PEM file (a private CA, a self-signed store).
pub fn http_client(ca_cert: Option<&Path>) -> Result<ureq::Agent, ClientError> {
    let mut b = ureq::AgentBuilder::new().timeout(Duration::from_secs(30));
    if let Some(path) = ca_cert {
        use rustls_pki_types::CertificateDer;
        use rustls_pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .and_then(|it| it.collect())
            .map_err(|e| ClientError::Pem(path.to_path_buf(), e))?;
        if certs.is_empty() {
            return Err(ClientError::NoCertificate(path.to_path_buf()));
        }
        for c in certs {
            roots
                .add(c)
                .map_err(|e| ClientError::Certificate(path.to_path_buf(), e))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientError::Certificate(path.to_path_buf(), e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        b = b.tls_config(Arc::new(config));
    }
    Ok(b.build())
}

/// Why [`http_client`] could not use `--ca-cert`.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientError {
    /// The file could not be read as PEM.
    Pem(PathBuf, rustls_pki_types::pem::Error),
    /// The file holds no `CERTIFICATE` block.
    NoCertificate(PathBuf),
    /// A certificate was refused.
    Certificate(PathBuf, rustls::Error),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Pem(p, _) => write!(f, "{}: cannot read PEM certificates", p.display()),
            ClientError::NoCertificate(p) => write!(
                f,
                "{}: no CERTIFICATE block in it (give the PEM file of the CA or server certificate)",
                p.display()
            ),
            ClientError::Certificate(p, _) => {
                write!(f, "{}: a certificate in it is not usable", p.display())
            }
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Pem(_, e) => Some(e),
            ClientError::NoCertificate(_) => None,
            ClientError::Certificate(_, e) => Some(e),
        }
    }
}

/// A spool and its sender thread.
pub struct Uploader {
    spool: DirSink,
    wake: mpsc::Sender<()>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Counters.
    pub stats: Arc<UploadStats>,
}

impl Uploader {
    /// Spool in `dir` (at most `max_bytes`) and start sending to `target` with `http`
    /// (from [`http_client`]).
    pub fn start(
        target: Target,
        http: ureq::Agent,
        dir: &Path,
        max_bytes: u64,
    ) -> std::io::Result<Uploader> {
        let spool = DirSink::new(dir, "spool", max_bytes, usize::MAX)?;
        let (wake, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(UploadStats::default());
        let thread = {
            let (spool, stop, stats) = (spool.clone(), stop.clone(), stats.clone());
            std::thread::Builder::new()
                .name("perfkit-upload".into())
                .spawn(move || sender(&target, &http, &spool, &rx, &stop, &stats))?
        };
        Ok(Uploader {
            spool,
            wake,
            stop,
            thread: Some(thread),
            stats,
        })
    }

    /// Spool a profile and wake the sender; returns how many old spooled profiles were
    /// dropped to stay within the bound.
    pub fn push(&self, p: &crate::WindowProfile) -> std::io::Result<usize> {
        let (_, dropped) = self.spool.write(p)?;
        let _ = self.wake.send(());
        Ok(dropped)
    }

    /// Profiles waiting in the spool.
    pub fn pending(&self) -> usize {
        self.spool.files().map_or(0, |f| f.len())
    }

    /// Try to send what is spooled for up to `grace`, then stop the sender (what is left
    /// stays in the spool for the next start).
    pub fn finish(mut self, grace: Duration) {
        let t = std::time::Instant::now();
        while self.pending() > 0 && t.elapsed() < grace {
            let _ = self.wake.send(());
            std::thread::sleep(Duration::from_millis(100));
        }
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.wake.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn sender(
    target: &Target,
    http: &ureq::Agent,
    spool: &DirSink,
    rx: &mpsc::Receiver<()>,
    stop: &AtomicBool,
    stats: &UploadStats,
) {
    let mut backoff = Duration::from_secs(1);
    let mut wait = Duration::ZERO;
    let note = |e: String| *stats.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
    loop {
        match rx.recv_timeout(wait) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let files = spool.files().unwrap_or_default();
        let mut failed = false;
        for (path, _) in files {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let Some((from, until)) = window_of(&path) else {
                // Not ours: leave it.
                continue;
            };
            match send(http, target, &bytes, from, until) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&path);
                    stats.sent.fetch_add(1, Ordering::Relaxed);
                    backoff = Duration::from_secs(1);
                }
                Err(SendError::Rejected(e)) => {
                    let _ = std::fs::remove_file(&path);
                    stats.rejected.fetch_add(1, Ordering::Relaxed);
                    note(format!("{}: refused: {e}", path.display()));
                }
                Err(SendError::Retry(e)) => {
                    stats.failures.fetch_add(1, Ordering::Relaxed);
                    note(e);
                    failed = true;
                    break;
                }
            }
            if stop.load(Ordering::SeqCst) {
                return;
            }
        }
        if failed {
            wait = backoff;
            backoff = (backoff * 2).min(Duration::from_secs(60));
        } else {
            wait = Duration::from_secs(3600);
        }
    }
}

/// The window of a spooled file, from its name (`spool-<ms>-<ms>.pb.gz`), in seconds.
fn window_of(path: &Path) -> Option<(u64, u64)> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("spool-")?.strip_suffix(".pb.gz")?;
    let (a, b) = rest.split_once('-')?;
    let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
    Some((a / 1000, (b / 1000).max(a / 1000 + 1)))
}

/// Why a profile was not sent.
#[derive(Debug, PartialEq, Eq)]
pub enum SendError {
    /// The endpoint is down, overloaded, or not set up for us (yet): try again later.
    Retry(String),
    /// The endpoint refused this profile for what it is: sending it again gets the same.
    Rejected(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Retry(e) => write!(f, "{e} (will retry)"),
            SendError::Rejected(e) => write!(f, "refused: {e}"),
        }
    }
}

impl std::error::Error for SendError {}

/// An HTTP failure as retry or refusal: 400, 413 and 422 are about the request's content.
fn http_failure(url: &str, e: ureq::Error) -> SendError {
    match e {
        ureq::Error::Status(code, resp) => {
            let body = resp.into_string().unwrap_or_default();
            let msg = format!("{url}: HTTP {code}: {}", body.trim());
            if matches!(code, 400 | 413 | 422) {
                SendError::Rejected(msg)
            } else {
                SendError::Retry(msg)
            }
        }
        ureq::Error::Transport(t) => SendError::Retry(format!("{url}: {t}")),
    }
}

/// Send one gzipped pprof profile of the window `from`..`until` (Unix seconds).
pub fn send(
    http: &ureq::Agent,
    target: &Target,
    gz: &[u8],
    from: u64,
    until: u64,
) -> Result<(), SendError> {
    match &target.endpoint {
        Endpoint::Pyroscope { url, name } => {
            let labels: Vec<String> = target
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let app = format!("{name}{{{}}}", labels.join(","));
            let url = format!(
                "{}/ingest?name={}&from={from}&until={until}&format=pprof&sampleRate={}&spyName=perfkit&units=samples&aggregationType=sum",
                url.trim_end_matches('/'),
                percent_encode(&app),
                target.rate_hz,
            );
            http.post(&url)
                .set("Content-Type", "application/octet-stream")
                .send_bytes(gz)
                .map_err(|e| http_failure(&url, e))?;
        }
        Endpoint::Parca { url, name } => {
            let mut labels = vec![parca::Label {
                name: "__name__".into(),
                value: name.clone(),
            }];
            labels.extend(target.labels.iter().map(|(k, v)| parca::Label {
                name: k.clone(),
                value: v.clone(),
            }));
            let req = parca::WriteRawRequest {
                series: vec![parca::RawProfileSeries {
                    labels: Some(parca::LabelSet { labels }),
                    samples: vec![parca::RawSample {
                        raw_profile: gz.to_vec(),
                        executable_info: Vec::new(),
                    }],
                }],
                normalized: false,
                ..Default::default()
            };
            let url = format!(
                "{}/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw",
                url.trim_end_matches('/')
            );
            let resp = http
                .post(&url)
                .set("Content-Type", "application/grpc-web+proto")
                .set("Accept", "application/grpc-web+proto")
                .set("X-Grpc-Web", "1")
                .send_bytes(&grpc_web::frame(&req.encode_to_vec()))
                .map_err(|e| http_failure(&url, e))?;
            let header = resp.header("grpc-status").map(str::to_string);
            let header_msg = resp.header("grpc-message").unwrap_or("").to_string();
            let mut body = Vec::new();
            resp.into_reader()
                .take(1 << 20)
                .read_to_end(&mut body)
                .map_err(|e| SendError::Retry(format!("{url}: reading the answer: {e}")))?;
            let status = match header {
                Some(code) => Some((code.trim().parse().unwrap_or(2), header_msg)),
                None => grpc_web::trailer_status(&body),
            };
            match status {
                Some((0, _)) => {}
                // INVALID_ARGUMENT: this profile will never do.
                Some((3, m)) => return Err(SendError::Rejected(format!("{url}: {m}"))),
                Some((c, m)) => {
                    return Err(SendError::Retry(format!("{url}: gRPC status {c}: {m}")));
                }
                None => {
                    return Err(SendError::Retry(format!(
                        "{url}: the answer has no grpc-status: is this Parca's port?"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// gRPC-Web framing: one flag byte (0x80: trailers), a big-endian u32 length, the data.
pub mod grpc_web {
    /// A message as one data frame.
    pub fn frame(msg: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(msg.len() + 5);
        out.push(0);
        out.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        out.extend_from_slice(msg);
        out
    }

    /// The frames of a body: (flag, payload); None when one is cut short.
    pub fn frames(mut body: &[u8]) -> Option<Vec<(u8, &[u8])>> {
        let mut out = Vec::new();
        while !body.is_empty() {
            let len = u32::from_be_bytes(body.get(1..5)?.try_into().ok()?) as usize;
            let data = body.get(5..5 + len)?;
            out.push((body[0], data));
            body = &body[5 + len..];
        }
        Some(out)
    }

    /// `grpc-status` and `grpc-message` of the trailer frame of a body.
    pub fn trailer_status(body: &[u8]) -> Option<(u32, String)> {
        let (_, t) = frames(body)?.into_iter().find(|(f, _)| f & 0x80 != 0)?;
        let text = String::from_utf8_lossy(t);
        let field = |name: &str| {
            text.split("\r\n").find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_string())
            })
        };
        Some((
            field("grpc-status")?.parse().ok()?,
            field("grpc-message").unwrap_or_default(),
        ))
    }
}

/// Percent-encode a query value (RFC 3986 unreserved characters stay).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Parca's `parca.profilestore.v1alpha1` messages (field numbers as in its
/// `profilestore.proto`).
pub mod parca {
    /// `WriteRawRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WriteRawRequest {
        /// Deprecated tenant.
        #[prost(string, tag = "1")]
        pub tenant: String,
        /// The series.
        #[prost(message, repeated, tag = "2")]
        pub series: Vec<RawProfileSeries>,
        /// Whether addresses are already relative to their files.
        #[prost(bool, tag = "3")]
        pub normalized: bool,
    }
    /// `RawProfileSeries`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct RawProfileSeries {
        /// Its labels.
        #[prost(message, optional, tag = "1")]
        pub labels: Option<LabelSet>,
        /// Its profiles.
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<RawSample>,
    }
    /// `LabelSet`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LabelSet {
        /// Labels.
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
    }
    /// `Label`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        /// Name.
        #[prost(string, tag = "1")]
        pub name: String,
        /// Value.
        #[prost(string, tag = "2")]
        pub value: String,
    }
    /// `RawSample`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct RawSample {
        /// A gzipped pprof profile.
        #[prost(bytes = "vec", tag = "1")]
        pub raw_profile: Vec<u8>,
        /// One per mapping when given (the agent gives none).
        #[prost(message, repeated, tag = "2")]
        pub executable_info: Vec<ExecutableInfo>,
    }
    /// `ExecutableInfo`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExecutableInfo {
        /// ELF `e_type`.
        #[prost(uint32, tag = "1")]
        pub elf_type: u32,
        /// The executable segment.
        #[prost(message, optional, tag = "2")]
        pub load_segment: Option<LoadSegment>,
    }
    /// `LoadSegment`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LoadSegment {
        /// File offset.
        #[prost(uint64, tag = "1")]
        pub offset: u64,
        /// Virtual address.
        #[prost(uint64, tag = "2")]
        pub vaddr: u64,
    }
}

/// Where the spool goes by default: beside the output directory, else under /var/spool.
pub fn default_spool(out_dir: Option<&Path>) -> PathBuf {
    match out_dir {
        Some(d) => d.join(".spool"),
        None => PathBuf::from("/var/spool/perfkit-agent"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};

    /// One HTTP request on a local port: (request line, headers, body); answers with
    /// `answer` (status line onwards).
    fn one_request(
        answer: &'static [u8],
    ) -> (String, std::thread::JoinHandle<(String, String, Vec<u8>)>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let (mut headers, mut len) = (String::new(), 0);
            loop {
                let mut h = String::new();
                r.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                headers.push_str(&h);
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            s.write_all(answer).unwrap();
            (line, headers, body)
        });
        (url, h)
    }

    fn target(endpoint: Endpoint) -> Target {
        Target {
            endpoint,
            labels: vec![
                ("host".into(), "web-1".into()),
                ("env".into(), "prod".into()),
            ],
            rate_hz: 19,
        }
    }

    #[test]
    fn parca_write_raw_is_one_grpc_web_frame_with_the_profile_and_labels() {
        let trailer = b"HTTP/1.1 200 OK\r\nContent-Type: application/grpc-web+proto\r\nContent-Length: 35\r\n\r\n\x80\x00\x00\x00\x1egrpc-status:0\r\ngrpc-message:\r\n";
        let (url, h) = one_request(trailer);
        let t = target(Endpoint::Parca {
            url,
            name: "parca_agent_cpu".into(),
        });
        send(&http_client(None).unwrap(), &t, b"\x1f\x8bprofile", 1, 2).unwrap();
        let (line, headers, body) = h.join().unwrap();
        assert!(
            line.starts_with(
                "POST /parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw HTTP/1.1"
            ),
            "{line}"
        );
        assert!(
            headers
                .to_ascii_lowercase()
                .contains("content-type: application/grpc-web+proto"),
            "{headers}"
        );
        let frames = grpc_web::frames(&body).unwrap();
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].0, 0);
        let req = parca::WriteRawRequest::decode(frames[0].1).unwrap();
        let series = &req.series[0];
        assert_eq!(series.samples[0].raw_profile, b"\x1f\x8bprofile");
        let labels: Vec<(&str, &str)> = series
            .labels
            .as_ref()
            .unwrap()
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        assert_eq!(
            labels,
            [
                ("__name__", "parca_agent_cpu"),
                ("host", "web-1"),
                ("env", "prod")
            ]
        );
    }

    #[test]
    fn parca_status_decides_retry_or_refusal() {
        // gRPC status in the headers (a trailers-only answer): INVALID_ARGUMENT.
        let (url, h) = one_request(
            b"HTTP/1.1 200 OK\r\ngrpc-status: 3\r\ngrpc-message: invalid profile\r\nContent-Length: 0\r\n\r\n",
        );
        let t = target(Endpoint::Parca {
            url,
            name: "x".into(),
        });
        let e = send(&http_client(None).unwrap(), &t, b"p", 1, 2).unwrap_err();
        h.join().unwrap();
        assert!(
            matches!(&e, SendError::Rejected(m) if m.contains("invalid profile")),
            "{e:?}"
        );
        // A 200 without any grpc-status (Parca's UI page, another server): not sent.
        let (url, h) = one_request(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n<html>");
        let t = target(Endpoint::Parca {
            url,
            name: "x".into(),
        });
        let e = send(&http_client(None).unwrap(), &t, b"p", 1, 2).unwrap_err();
        h.join().unwrap();
        assert!(matches!(e, SendError::Retry(_)), "{e:?}");
    }

    #[test]
    fn pyroscope_ingest_is_the_raw_profile_with_its_query() {
        let (url, h) = one_request(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        let t = target(Endpoint::Pyroscope {
            url,
            name: "perfkit.cpu".into(),
        });
        send(
            &http_client(None).unwrap(),
            &t,
            b"\x1f\x8bx",
            1700000000,
            1700000010,
        )
        .unwrap();
        let (line, headers, body) = h.join().unwrap();
        assert!(
            line.starts_with(
                "POST /ingest?name=perfkit.cpu%7Bhost%3Dweb-1%2Cenv%3Dprod%7D&from=1700000000&until=1700000010&format=pprof&sampleRate=19&spyName=perfkit&units=samples&aggregationType=sum HTTP/1.1"
            ),
            "{line}"
        );
        assert!(
            headers
                .to_ascii_lowercase()
                .contains("content-type: application/octet-stream")
        );
        assert_eq!(body, b"\x1f\x8bx");
    }

    #[test]
    fn http_statuses_decide_retry_or_refusal() {
        for (answer, rejected) in [
            (&b"HTTP/1.1 422 X\r\nContent-Length: 3\r\n\r\nbad"[..], true),
            (b"HTTP/1.1 400 X\r\nContent-Length: 0\r\n\r\n", true),
            (b"HTTP/1.1 503 X\r\nContent-Length: 0\r\n\r\n", false),
            (b"HTTP/1.1 429 X\r\nContent-Length: 0\r\n\r\n", false),
            (b"HTTP/1.1 401 X\r\nContent-Length: 0\r\n\r\n", false),
        ] {
            let (url, h) = one_request(answer);
            let t = target(Endpoint::Pyroscope {
                url,
                name: "app".into(),
            });
            let e = send(&http_client(None).unwrap(), &t, b"x", 1, 2).unwrap_err();
            h.join().unwrap();
            assert_eq!(
                matches!(e, SendError::Rejected(_)),
                rejected,
                "{}: {e:?}",
                String::from_utf8_lossy(answer)
            );
        }
    }

    #[test]
    fn names_and_labels_the_stores_refuse_are_refused_here() {
        let py = |name: &str, k: &str, v: &str| Target {
            endpoint: Endpoint::Pyroscope {
                url: "http://h:4040".into(),
                name: name.into(),
            },
            labels: vec![(k.into(), v.into())],
            rate_hz: 19,
        };
        assert!(py("my-app/cpu.x", "host", "a.b-c").check().is_ok());
        assert!(py("my app", "host", "a").check().is_err());
        assert!(py("app", "ho-st", "a").check().is_err());
        assert!(py("app", "host", "a,b").check().is_err());
        assert!(py("app", "__name__", "a").check().is_err());
        let mut p = py("app", "host", "a");
        p.endpoint = Endpoint::Parca {
            url: "https://h".into(),
            name: "x".into(),
        };
        assert!(p.check().is_ok());
        p.labels = vec![("host.name".into(), "a".into())];
        assert!(p.check().is_err(), "a dot is no Prometheus label name");
        p.labels = vec![("a".into(), "1".into()), ("a".into(), "2".into())];
        assert!(p.check().is_err());
        p.endpoint = Endpoint::Parca {
            url: "ftp://h".into(),
            name: "x".into(),
        };
        assert!(p.check().is_err());
    }

    #[test]
    fn a_ca_file_without_certificates_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("ca.pem");
        std::fs::write(&f, "not pem\n").unwrap();
        let e = http_client(Some(&f)).unwrap_err().to_string();
        assert!(e.contains("no CERTIFICATE block"), "{e}");
        let e = http_client(Some(&dir.path().join("missing.pem")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read"), "{e}");
    }

    #[test]
    fn spool_names_give_the_window() {
        assert_eq!(
            window_of(Path::new("/x/spool-001700000000123-001700000010456.pb.gz")),
            Some((1_700_000_000, 1_700_000_010))
        );
        assert_eq!(window_of(Path::new("/x/other.pb.gz")), None);
        assert_eq!(percent_encode("cpu{host=a b}"), "cpu%7Bhost%3Da%20b%7D");
    }
}
