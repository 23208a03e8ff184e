//! `perfkit exporter` scraped by a real Prometheus server: the rate of task-clock of a busy
//! cgroup that PromQL returns matches the cgroup's own CPU use (cpu.stat usage_usec) over
//! the same window within 5%; cgroups that appear and vanish are picked up and dropped.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A child process killed when dropped.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A cgroup removed when dropped (its processes are killed first).
struct Cgroup(PathBuf);
impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("cgroup.kill"), "1");
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn cgroup2_root() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
    })
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
    })
}

/// GET over HTTP/1.0; the body when the status is 200.
fn http_get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let (head, body) = resp.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| body.to_string())
        .or_else(|| head.starts_with("HTTP/1.0 200").then(|| body.to_string()))
}

fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn query(prom: &str, q: &str, time: f64) -> serde_json::Value {
    let body = http_get(
        prom,
        &format!("/api/v1/query?query={}&time={time:.3}", encode(q)),
    )
    .unwrap_or_else(|| panic!("Prometheus query failed: {q}"));
    serde_json::from_str(&body).expect("Prometheus answers JSON")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn usage_usec(cg: &Path) -> u64 {
    std::fs::read_to_string(cg.join("cpu.stat"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("usage_usec ")?.trim().parse().ok())
        .unwrap()
}

/// The exporter's address from its "listening on" line.
fn start_exporter(args: &[&str]) -> (Killed, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_perfkit"))
        .arg("exporter")
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .expect("perfkit exporter starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut addr = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(rest) = line.split("http://").nth(1) {
            addr = rest.strip_suffix("/metrics").map(str::to_string);
            break;
        }
        assert!(!line.contains("rror"), "exporter failed: {line}");
    }
    std::thread::spawn(move || lines.for_each(drop));
    (
        Killed(child),
        addr.expect("the exporter prints its address"),
    )
}

#[test]
fn prometheus_rate_of_a_busy_cgroup_matches_its_cpu_use() {
    if !is_root() {
        return common::skip("needs root (cgroups, system-wide counters)");
    }
    let Some(root) = cgroup2_root() else {
        return common::skip("no cgroup2 file system mounted");
    };
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        return common::skip("prometheus is not installed (Debian package prometheus)");
    }
    let name = format!("perfkit-exporter-test-{}", std::process::id());
    let cg = Cgroup(root.join(&name));
    std::fs::create_dir(&cg.0).expect("create a cgroup");
    // The busy loop, moved into the cgroup before it spins.
    let busy = Killed(
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {}/cgroup.procs && exec sh -c 'while :; do :; done'",
                cg.0.display()
            ))
            .spawn()
            .unwrap(),
    );
    let (_exporter, exporter_addr) = start_exporter(&[
        "-l",
        "127.0.0.1:0",
        "-e",
        "task-clock",
        "--cgroup-tree",
        &name,
        "--no-system-wide",
        "-I",
        "0",
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let prom = format!("127.0.0.1:{}", free_port());
    let config = tmp.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: perfkit\n    scrape_interval: 1s\n    static_configs:\n      - targets: ['{exporter_addr}']\n"
        ),
    )
    .unwrap();
    let _prometheus = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                tmp.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    let t = Instant::now();
    while http_get(&prom, "/-/ready").is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "Prometheus never got ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The cgroup's CPU use over time, sampled while Prometheus scrapes.
    let mut usage: Vec<(f64, u64)> = Vec::new();
    // A child cgroup that appears while the exporter runs, and vanishes later.
    let child_cg = cg.0.join("late");
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(14) {
        usage.push((now(), usage_usec(&cg.0)));
        if t.elapsed() > Duration::from_secs(3) && !child_cg.exists() {
            std::fs::create_dir(&child_cg).unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let metrics = http_get(&exporter_addr, "/metrics").unwrap();
    let late = format!("cgroup=\"/{name}/late\"");
    assert!(
        metrics.contains(&late),
        "a cgroup created under the tree is counted without a restart:\n{metrics}"
    );
    std::fs::remove_dir(&child_cg).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let metrics = http_get(&exporter_addr, "/metrics").unwrap();
    assert!(
        !metrics.contains(&late),
        "a vanished cgroup is dropped:\n{metrics}"
    );
    drop(busy);

    // The raw samples of the last 10 s: their first and last scrape times.
    let series = format!("perfkit_event_count_total{{event=\"task-clock\",cgroup=\"/{name}\"}}");
    let end = usage.last().unwrap().0;
    let raw = query(&prom, &format!("{series}[10s]"), end);
    let result = raw["data"]["result"].as_array().expect("a matrix").clone();
    assert!(
        !result.is_empty(),
        "Prometheus scraped the cgroup's series: {raw}"
    );
    let stamps: Vec<f64> = result[0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v[0].as_f64().unwrap())
        .collect();
    assert!(stamps.len() >= 5, "a few scrapes: {stamps:?}");
    let (t1, t2) = (stamps[0], *stamps.last().unwrap());
    // PromQL's rate over exactly those samples (window slightly wider than their span:
    // rate() then divides their increase by their span).
    let q = format!(
        "sum(rate({series}[{}ms]))",
        ((t2 - t1 + 0.5) * 1000.0) as u64
    );
    let rate = query(&prom, &q, t2);
    let rate_ns: f64 = rate["data"]["result"][0]["value"][1]
        .as_str()
        .unwrap_or_else(|| panic!("a rate: {rate}"))
        .parse()
        .unwrap();
    // The cgroup's own CPU use over the same window, interpolated between readings.
    let at = |t: f64| -> f64 {
        let i = usage
            .partition_point(|u| u.0 <= t)
            .clamp(1, usage.len() - 1);
        let (a, b) = (usage[i - 1], usage[i]);
        let f = ((t - a.0) / (b.0 - a.0)).clamp(0.0, 1.0);
        a.1 as f64 + f * (b.1 as f64 - a.1 as f64)
    };
    let cpu_ns_per_s = (at(t2) - at(t1)) * 1000.0 / (t2 - t1);
    eprintln!(
        "PromQL rate {rate_ns:.0} ns/s, cpu.stat {cpu_ns_per_s:.0} ns/s over {:.1} s",
        t2 - t1
    );
    assert!(cpu_ns_per_s > 1e7, "the busy loop ran: {cpu_ns_per_s}");
    let err = (rate_ns - cpu_ns_per_s).abs() / cpu_ns_per_s;
    assert!(
        err < 0.05,
        "PromQL rate {rate_ns} ns/s vs cpu.stat {cpu_ns_per_s} ns/s: {:.1}% apart",
        err * 100.0
    );
}

#[test]
fn exporter_refuses_bad_input_with_advice() {
    let out = Command::new(env!("CARGO_BIN_EXE_perfkit"))
        .args(["exporter", "-e", "no-such-event", "-l", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-event"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_perfkit"))
        .args(["exporter", "--no-system-wide", "-l", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cgroup-tree"));
}
