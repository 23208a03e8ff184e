//! The exporter's HTTP endpoint: `GET /metrics` answers the text exposition, `GET /` a
//! short page that links to it, anything else 404. One request at a time (a scrape reads
//! a few hundred counters: there is nothing to gain from threads), so the exporter's cost
//! is one thread asleep in `accept` between scrapes.

use crate::exporter::Exporter;
use crate::exposition::CONTENT_TYPE;

/// Serve `exporter` on `addr` (`host:port`; port 0 picks a free one) until `stop` is set.
/// `ready` is called with the address bound.
pub fn serve(
    mut exporter: Exporter,
    addr: &str,
    stop: &std::sync::atomic::AtomicBool,
    ready: impl FnOnce(std::net::SocketAddr),
) -> std::io::Result<()> {
    let server = tiny_http::Server::http(addr)
        .map_err(|e| std::io::Error::other(format!("cannot listen on {addr}: {e}")))?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| std::io::Error::other(format!("{addr} is not an IP address")))?;
    ready(bound);
    let content_type = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE)
        .map_err(|_| std::io::Error::other("bad header"))?;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Some(req) = server.recv_timeout(std::time::Duration::from_millis(500))? else {
            continue;
        };
        let path = req.url().split('?').next().unwrap_or("");
        let resp = match (req.method(), path) {
            (tiny_http::Method::Get, "/metrics") => {
                let page = exporter.scrape().to_owned();
                tiny_http::Response::from_string(page).with_header(content_type.clone())
            }
            (tiny_http::Method::Get, "/") => tiny_http::Response::from_string(
                "<html><body><h1>perfkit exporter</h1><a href=\"/metrics\">metrics</a></body></html>",
            )
            .with_header(
                tiny_http::Header::from_bytes("Content-Type", "text/html")
                    .map_err(|_| std::io::Error::other("bad header"))?,
            ),
            _ => tiny_http::Response::from_string("not found: try /metrics\n").with_status_code(404),
        };
        let _ = req.respond(resp);
    }
    Ok(())
}
