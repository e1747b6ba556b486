//! The admin API under hostile calls: mutating calls without (or with a wrong) token, the
//! wrong method, a 10 MB body; and its default address.
//!
//! Targets: 401, 405 and 413 respectively, the proxy unharmed; loopback by default.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use test_harness::http::request;
use test_harness::Cluster;

use crate::common::*;

/// Sends `method path` with a body of `body_len` bytes (written by another thread, so a
/// server that answers before reading it all is still heard) and returns the status.
fn status_with_body(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body_len: usize,
) -> u16 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {body_len}\r\n\r\n"
    );
    let mut writer = stream.try_clone().expect("clone");
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(head.as_bytes());
        let chunk = vec![b' '; 64 * 1024];
        let mut sent = 0;
        while sent < body_len {
            let n = chunk.len().min(body_len - sent);
            if writer.write_all(&chunk[..n]).is_err() {
                return;
            }
            sent += n;
        }
    });
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    drop(stream);
    let _ = sender.join();
    String::from_utf8_lossy(&head)
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

pub fn admin_api() -> Row {
    let mut row = Row::new("admin_api");
    let cluster = Cluster::storage_nodes(3);
    let mut proxy = proxy_with_config(&cluster.seeds(), "");
    let admin = proxy.admin_port().expect("admin port in the log");
    let rounds = scaled(3, 50);
    let mut samples = Vec::new();
    let mut wrong = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        for (method, path, token, body, want) in [
            ("POST", "/v1/rebalance", None, 2, 401),
            ("DELETE", "/v1/nodes/abc", None, 0, 401),
            ("POST", "/v1/reshard", Some("wrong-token"), 2, 401),
            ("POST", "/metrics", Some("fault-token"), 0, 405),
            ("PUT", "/health", Some("fault-token"), 0, 405),
            (
                "POST",
                "/v1/reshard",
                Some("fault-token"),
                10 * 1024 * 1024,
                413,
            ),
            // Without the token the body is never read: 401, not 413.
            ("POST", "/v1/reshard", None, 10 * 1024 * 1024, 401),
        ] {
            let status = status_with_body(admin, method, path, token, body);
            if status == want {
                row.acked += 1;
            } else {
                row.errors += 1;
                wrong.push(format!(
                    "{method} {path} (token {token:?}, {body} bytes): {status}, want {want}"
                ));
            }
        }
        samples.push(started.elapsed());
    }
    // Still serving afterwards, on both sides.
    assert_eq!(request(admin, "GET", "/health", None, "").status, 200);
    let mut client = test_harness::RawClient::connect(proxy.port);
    assert_eq!(
        client.call(&["PING"]),
        slotproxy::resp::Frame::Simple("PONG".into())
    );
    row.p99_ms = p99_ms(&mut samples);
    row.peak_rss_mb = peak_rss_mb(proxy.pid());
    row.crashes = crashed(&mut proxy);
    row.print();
    // Without an `admin.listen`, the admin API binds to loopback.
    let default = slotproxy::config::ProxyConfig::default().admin.listen;
    assert!(default.starts_with("127.0.0.1:"), "{default}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(row.crashes, 0);
    row
}
