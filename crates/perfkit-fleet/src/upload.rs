//! Sending profiles to a profile store, from a bounded on-disk spool.
//!
//! Every profile is first written to the spool directory (a [`DirSink`]: bounded in bytes
//! and files, the oldest dropped first when the endpoint stays down longer than the spool
//! holds). A sender thread sends the spooled files oldest first and removes each once the
//! endpoint accepted it (2xx); on a failure it waits (1 s, doubling up to a minute, or
//! until a new profile arrives) and tries again. A profile is thus sent once the endpoint
//! is back, also after an agent restart (the spool is on disk).
//!
//! Endpoints:
//!
//! * Pyroscope: `POST BASE/ingest?name=APP{host=...}&from=S&until=S&format=pprof&sampleRate=HZ&spyName=perfkit`
//!   with the profile as the `profile` part of a `multipart/form-data` body;
//! * Parca: `POST BASE/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw` (the
//!   Connect protocol, `application/proto`), a `WriteRawRequest` with one series labelled
//!   `__name__` and `host`, the profile as its raw sample.

use crate::sink::DirSink;
use prost::Message;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Where profiles go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// Pyroscope's `/ingest` (also Grafana Alloy's / Grafana Cloud's pyroscope receivers).
    Pyroscope {
        /// Base URL, `http://host:4040`.
        url: String,
        /// Application name.
        name: String,
    },
    /// Parca's `WriteRaw`.
    Parca {
        /// Base URL, `http://host:7070`.
        url: String,
        /// The series' `__name__`.
        name: String,
    },
}

/// What the sender did so far.
#[derive(Debug, Default)]
pub struct UploadStats {
    /// Profiles the endpoint accepted.
    pub sent: AtomicU64,
    /// Attempts that failed (each retried later).
    pub failures: AtomicU64,
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
    /// Spool in `dir` (at most `max_bytes`) and start sending to `endpoint`. `host` and
    /// `rate_hz` go into Pyroscope's query string.
    pub fn start(
        endpoint: Endpoint,
        dir: &Path,
        max_bytes: u64,
        host: &str,
        rate_hz: u64,
    ) -> std::io::Result<Uploader> {
        let spool = DirSink::new(dir, "spool", max_bytes, usize::MAX)?;
        let (wake, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(UploadStats::default());
        let thread = {
            let (spool, stop, stats, host) =
                (spool.clone(), stop.clone(), stats.clone(), host.to_string());
            std::thread::Builder::new()
                .name("perfkit-upload".into())
                .spawn(move || sender(&endpoint, &spool, &rx, &stop, &stats, &host, rate_hz))?
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
    endpoint: &Endpoint,
    spool: &DirSink,
    rx: &mpsc::Receiver<()>,
    stop: &AtomicBool,
    stats: &UploadStats,
    host: &str,
    rate_hz: u64,
) {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    let mut backoff = Duration::from_secs(1);
    let mut wait = Duration::ZERO;
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
            match send(&agent, endpoint, &bytes, from, until, host, rate_hz) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&path);
                    stats.sent.fetch_add(1, Ordering::Relaxed);
                    backoff = Duration::from_secs(1);
                }
                Err(_) => {
                    stats.failures.fetch_add(1, Ordering::Relaxed);
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

/// Send one gzipped pprof profile.
pub fn send(
    agent: &ureq::Agent,
    endpoint: &Endpoint,
    gz: &[u8],
    from: u64,
    until: u64,
    host: &str,
    rate_hz: u64,
) -> Result<(), Box<ureq::Error>> {
    match endpoint {
        Endpoint::Pyroscope { url, name } => {
            let app = format!("{name}{{host={host}}}");
            let target = format!(
                "{}/ingest?name={}&from={from}&until={until}&format=pprof&sampleRate={rate_hz}&spyName=perfkit",
                url.trim_end_matches('/'),
                percent_encode(&app),
            );
            let boundary = "perfkit-profile-boundary-7f3a9c";
            let mut body = Vec::with_capacity(gz.len() + 256);
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                )
                .as_bytes(),
            );
            body.extend_from_slice(gz);
            body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
            agent
                .post(&target)
                .set(
                    "Content-Type",
                    &format!("multipart/form-data; boundary={boundary}"),
                )
                .send_bytes(&body)
                .map_err(Box::new)?;
        }
        Endpoint::Parca { url, name } => {
            let req = parca::WriteRawRequest {
                series: vec![parca::RawProfileSeries {
                    labels: Some(parca::LabelSet {
                        labels: vec![
                            parca::Label {
                                name: "__name__".into(),
                                value: name.clone(),
                            },
                            parca::Label {
                                name: "host".into(),
                                value: host.to_string(),
                            },
                        ],
                    }),
                    samples: vec![parca::RawSample {
                        raw_profile: gz.to_vec(),
                    }],
                }],
                normalized: false,
                ..Default::default()
            };
            agent
                .post(&format!(
                    "{}/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw",
                    url.trim_end_matches('/')
                ))
                .set("Content-Type", "application/proto")
                .set("Connect-Protocol-Version", "1")
                .send_bytes(&req.encode_to_vec())
                .map_err(Box::new)?;
        }
    }
    Ok(())
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
    use std::io::{BufRead, BufReader, Read, Write};

    /// One HTTP request on a local port: (request line, headers, body); answers `status`.
    fn one_request(status: u16) -> (String, std::thread::JoinHandle<(String, String, Vec<u8>)>) {
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
            write!(s, "HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n").unwrap();
            (line, headers, body)
        });
        (url, h)
    }

    #[test]
    fn parca_write_raw_carries_the_profile_and_labels() {
        let (url, h) = one_request(200);
        let agent = ureq::AgentBuilder::new().build();
        let ep = Endpoint::Parca {
            url,
            name: "parca_agent_cpu".into(),
        };
        send(&agent, &ep, b"\x1f\x8bprofile", 1, 2, "web-1", 19).unwrap();
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
                .contains("content-type: application/proto")
        );
        let req = parca::WriteRawRequest::decode(&body[..]).unwrap();
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
        assert_eq!(labels, [("__name__", "parca_agent_cpu"), ("host", "web-1")]);
    }

    #[test]
    fn a_refusing_endpoint_is_an_error() {
        let (url, h) = one_request(503);
        let agent = ureq::AgentBuilder::new().build();
        let ep = Endpoint::Pyroscope {
            url,
            name: "app".into(),
        };
        assert!(send(&agent, &ep, b"x", 1, 2, "h", 19).is_err());
        let (line, _, body) = h.join().unwrap();
        assert!(line.contains("/ingest?name=app%7Bhost%3Dh%7D&from=1&until=2&format=pprof"));
        assert!(body.windows(1).any(|w| w == b"x"));
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
