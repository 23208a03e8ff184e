//! Profiles the agent makes, sent the way Pyroscope and Parca take them: checked by
//! stand-ins that apply the real servers' rules (`common/stores.rs` says which and why no
//! real server runs here), over plain HTTP and over TLS with a self-signed certificate.

mod common;

use common::stores::{self, Accepted, Answer, Request};
use perfkit_fleet::upload::{Endpoint, SendError, Target, Uploader, http_client, send};
use perfkit_fleet::{Agent, AgentOptions, WindowProfile};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One window of the agent (1 s, a busy thread in this process so that it has samples);
/// None (after a skip) where sampling the whole system is not allowed.
fn one_window(symbolize: bool) -> Option<WindowProfile> {
    let opts = AgentOptions {
        window: Duration::from_secs(1),
        symbolize,
        host: "test-host".into(),
        scratch_dir: std::env::temp_dir(),
        ..AgentOptions::default()
    };
    let mut agent = match Agent::new(opts) {
        Ok(a) => a,
        Err(e) => {
            common::skip(&format!("cannot sample the whole system: {e}"));
            return None;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let spin = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut x = 1.0f64;
            while !stop.load(Ordering::Relaxed) {
                x = std::hint::black_box(x * 1.000_000_1 + 0.5);
            }
        })
    };
    let mut got = None;
    agent
        .run(|p| {
            let more = p.samples == 0;
            got = Some(p);
            Ok(more)
        })
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    spin.join().unwrap();
    got
}

/// Serve `handle` on a local port (TLS with `tls` when given); its address.
fn serve(
    handle: impl Fn(&Request) -> Answer + Send + Sync + 'static,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let handle = Arc::new(handle);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            let (handle, tls) = (handle.clone(), tls.clone());
            std::thread::spawn(move || match tls {
                Some(cfg) => {
                    let conn = rustls::ServerConnection::new(cfg).unwrap();
                    stores::serve_connection(rustls::StreamOwned::new(conn, s), &*handle);
                }
                None => stores::serve_connection(s, &*handle),
            });
        }
    });
    addr.to_string()
}

/// The URL of a server at `addr`.
fn url(addr: &str, tls: bool) -> String {
    format!("{}://{addr}", if tls { "https" } else { "http" })
}

/// A Pyroscope stand-in: keeps what it accepts.
fn pyroscope(got: &Arc<Mutex<Vec<Accepted>>>) -> impl Fn(&Request) -> Answer + use<> {
    let got = got.clone();
    move |r: &Request| {
        let (a, acc) = stores::pyroscope_ingest(r);
        got.lock().unwrap().extend(acc);
        a
    }
}

/// A Parca stand-in: keeps what it accepts.
fn parca(got: &Arc<Mutex<Vec<Accepted>>>) -> impl Fn(&Request) -> Answer + use<> {
    let got = got.clone();
    move |r: &Request| {
        let (a, acc) = stores::parca_write_raw(r);
        got.lock().unwrap().extend(acc);
        a
    }
}

/// A self-signed certificate for 127.0.0.1 and localhost: the server's TLS config and
/// the certificate's PEM file.
fn self_signed(dir: &std::path::Path) -> (Arc<rustls::ServerConfig>, std::path::PathBuf) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let pem = dir.join("store.pem");
    std::fs::write(&pem, ck.cert.pem()).unwrap();
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(ck.key_pair.serialize_der().into());
    let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![ck.cert.der().clone()], key)
    .unwrap();
    (Arc::new(cfg), pem)
}

fn target(endpoint: Endpoint) -> Target {
    Target {
        endpoint,
        labels: vec![
            ("host".into(), "test-host".into()),
            ("env".into(), "ci".into()),
        ],
        rate_hz: 19,
    }
}

fn secs(p: &WindowProfile) -> (u64, u64) {
    p.unix_secs()
}

#[test]
fn https_endpoints_with_a_self_signed_certificate() {
    let Some(p) = one_window(true) else { return };
    let dir = tempfile::tempdir().unwrap();
    let (tls, pem) = self_signed(dir.path());
    let got = Arc::new(Mutex::new(Vec::new()));
    let base = serve(pyroscope(&got), Some(tls.clone()));
    let t = target(Endpoint::Pyroscope {
        url: url(&base, true),
        name: "fleet.test".into(),
    });
    let (from, until) = secs(&p);
    // Without the certificate: the server is not trusted, nothing is sent.
    let e = send(&http_client(None).unwrap(), &t, &p.gz, from, until).unwrap_err();
    assert!(
        matches!(&e, SendError::Retry(m) if m.to_lowercase().contains("certificate")),
        "{e:?}"
    );
    assert!(got.lock().unwrap().is_empty());
    // With it (--ca-cert): accepted by Pyroscope's rules.
    let http = http_client(Some(&pem)).unwrap();
    send(&http, &t, &p.gz, from, until).unwrap();
    {
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 1);
        let a = &got[0];
        assert_eq!(
            a.labels,
            [
                ("__name__".to_string(), "fleet.test".to_string()),
                ("host".into(), "test-host".into()),
                ("env".into(), "ci".into())
            ]
        );
        assert_eq!(a.query["from"], from.to_string());
        assert_eq!(a.query["until"], until.to_string());
        assert_eq!(a.query["sampleRate"], "19");
        assert_eq!(a.query["spyName"], "perfkit");
        assert!(!a.profile.sample.is_empty());
    }
    // Parca over TLS too.
    let got = Arc::new(Mutex::new(Vec::new()));
    let base = serve(parca(&got), Some(tls));
    let t = target(Endpoint::Parca {
        url: url(&base, true),
        name: "parca_agent_cpu".into(),
    });
    send(&http, &t, &p.gz, from, until).unwrap();
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].labels[0],
        ("__name__".into(), "parca_agent_cpu".into())
    );
}

#[test]
fn symbolized_and_unsymbolized_profiles_pass_both_stores_rules() {
    for symbolize in [true, false] {
        let Some(p) = one_window(symbolize) else {
            return;
        };
        let (from, until) = secs(&p);
        let http = http_client(None).unwrap();
        for parca_store in [false, true] {
            let got = Arc::new(Mutex::new(Vec::new()));
            let t = if parca_store {
                target(Endpoint::Parca {
                    url: url(&serve(parca(&got), None), false),
                    name: "parca_agent_cpu".into(),
                })
            } else {
                target(Endpoint::Pyroscope {
                    url: url(&serve(pyroscope(&got), None), false),
                    name: "fleet.test".into(),
                })
            };
            send(&http, &t, &p.gz, from, until)
                .unwrap_or_else(|e| panic!("symbolize {symbolize}, parca {parca_store}: {e}"));
            let got = got.lock().unwrap();
            assert_eq!(got.len(), 1);
            let prof = &got[0].profile;
            let s = |i: i64| prof.string_table[i as usize].as_str();
            assert_eq!(s(prof.sample_type[1].r#type), "cpu");
            if !symbolize {
                assert!(
                    prof.mapping.iter().any(|m| m.build_id != 0),
                    "--no-symbolize mappings carry build ids"
                );
            }
        }
    }
}

#[test]
fn the_uploader_sends_what_stores_take_and_drops_what_they_refuse() {
    let Some(p) = one_window(true) else { return };
    let dir = tempfile::tempdir().unwrap();
    // Accepted: the spool empties, sent counts it.
    let got = Arc::new(Mutex::new(Vec::new()));
    let t = target(Endpoint::Parca {
        url: url(&serve(parca(&got), None), false),
        name: "parca_agent_cpu".into(),
    });
    let up = Uploader::start(
        t,
        http_client(None).unwrap(),
        &dir.path().join("a"),
        1 << 20,
    )
    .unwrap();
    up.push(&p).unwrap();
    let t0 = Instant::now();
    while up.stats.sent.load(Ordering::Relaxed) < 1 {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "sent within 2 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(up.pending(), 0);
    assert_eq!(got.lock().unwrap().len(), 1);
    up.finish(Duration::ZERO);
    // Refused (a name the store does not take, 400): dropped and counted, not retried
    // forever, and the next profile goes through the same spool.
    let got = Arc::new(Mutex::new(Vec::new()));
    let base = serve(pyroscope(&got), None);
    let bad = Target {
        endpoint: Endpoint::Pyroscope {
            url: url(&base, false),
            name: "has space".into(),
        },
        ..target(Endpoint::Parca {
            url: String::new(),
            name: String::new(),
        })
    };
    assert!(bad.check().is_err(), "the CLI refuses it before it starts");
    let up = Uploader::start(
        bad,
        http_client(None).unwrap(),
        &dir.path().join("b"),
        1 << 20,
    )
    .unwrap();
    up.push(&p).unwrap();
    let t0 = Instant::now();
    while up.stats.rejected.load(Ordering::Relaxed) < 1 {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "refused within 2 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(up.pending(), 0, "the refused profile left the spool");
    assert!(got.lock().unwrap().is_empty());
    let e = up.stats.last_error.lock().unwrap().clone().unwrap();
    assert!(e.contains("HTTP 400"), "{e}");
    up.finish(Duration::ZERO);
}
