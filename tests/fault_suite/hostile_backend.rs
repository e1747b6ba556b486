//! A hostile backend: a tiny RESP server written here, seeded as the proxy's only node. It
//! claims every slot, answers some keys with `-MOVED` to an address outside the cluster
//! (a listener of ours that counts connections), one with an array announcing
//! 4,294,967,296 elements that never come and one with a 4 GB bulk that never comes.
//!
//! Targets: the proxy opens no connection to the unknown address, answers the client an
//! error (not a hang), stays bounded in memory and keeps serving. The never-ending replies
//! are over the proxy's cap on one reply (`limits.max_reply_bytes`,
//! `limits.max_reply_elements`): the client gets that error, not the operation timeout, and
//! the proxy closes the connection that carried it (the fake node sees it closed).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use slotproxy::resp::{Frame, Limits, RequestDecoder};
use test_harness::RawClient;

use crate::common::*;

const OPERATION_MS: u64 = 500;
/// Elements of the huge reply that do arrive, to see the proxy does not keep them all.
const HUGE_TAIL: usize = 256 * 1024;

/// The fake node's answer to one request.
fn answer(args: &[bytes::Bytes], port: u16, trap: u16) -> Vec<u8> {
    let upper: Vec<String> = args
        .iter()
        .take(2)
        .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
        .collect();
    let words: Vec<&str> = upper.iter().map(String::as_str).collect();
    let key = args.get(1).map(|k| String::from_utf8_lossy(k).into_owned());
    match words.as_slice() {
        ["CLUSTER", "SLOTS"] => format!(
            "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:{port}\r\n$40\r\n{}\r\n",
            "f".repeat(40)
        )
        .into_bytes(),
        ["PING", ..] => b"+PONG\r\n".to_vec(),
        ["GET", _] if key.as_deref().is_some_and(|k| k.starts_with("moved")) => {
            let slot = slotproxy::cluster::key_slot(args[1].as_ref());
            format!("-MOVED {slot} 127.0.0.1:{trap}\r\n").into_bytes()
        }
        ["GET", _] if key.as_deref().is_some_and(|k| k.starts_with("ask")) => {
            let slot = slotproxy::cluster::key_slot(args[1].as_ref());
            format!("-ASK {slot} 127.0.0.1:{trap}\r\n").into_bytes()
        }
        // The same redirects for a blocking command and inside a transaction (the proxy
        // runs both on dedicated connections, with their own redirect handling).
        ["BLPOP", _] if key.as_deref().is_some_and(|k| k.starts_with("moved")) => {
            let slot = slotproxy::cluster::key_slot(args[1].as_ref());
            format!("-MOVED {slot} 127.0.0.1:{trap}\r\n").into_bytes()
        }
        ["BLPOP", _] | ["SET", _] if key.as_deref().is_some_and(|k| k.starts_with("ask")) => {
            let slot = slotproxy::cluster::key_slot(args[1].as_ref());
            format!("-ASK {slot} 127.0.0.1:{trap}\r\n").into_bytes()
        }
        ["MULTI"] => b"+OK\r\n".to_vec(),
        ["EXEC"] => b"-EXECABORT Transaction discarded because of previous errors.\r\n".to_vec(),
        ["GET", _] if key.as_deref() == Some("hugebulk") => {
            let mut reply = b"$4294967296\r\n".to_vec();
            reply.extend_from_slice(&[b'x'; HUGE_TAIL]);
            reply
        }
        ["GET", _] if key.as_deref() == Some("huge") => {
            let mut reply = b"*4294967296\r\n".to_vec();
            for _ in 0..HUGE_TAIL {
                reply.extend_from_slice(b":1\r\n");
            }
            reply
        }
        _ => b"-ERR unknown command\r\n".to_vec(),
    }
}

/// What the fake node saw of its connections.
#[derive(Default)]
struct FakeCounts {
    /// Never-ending replies sent.
    endless: AtomicUsize,
    /// Connections that had one of those and that the proxy then closed.
    closed_after_endless: AtomicUsize,
}

fn serve_fake(
    mut stream: TcpStream,
    port: u16,
    trap: u16,
    stop: Arc<AtomicBool>,
    counts: Arc<FakeCounts>,
) {
    let mut sent_endless = false;
    let ended_by_proxy =
        answer_until_closed(&mut stream, port, trap, &stop, &counts, &mut sent_endless);
    if ended_by_proxy && sent_endless {
        counts.closed_after_endless.fetch_add(1, Ordering::Relaxed);
    }
}

/// Answers requests until `stop` (false) or until the proxy ends the connection (true): a
/// close, or a reset (a socket closed with our unread reply in it resets), seen by a read
/// or by a write that fails.
fn answer_until_closed(
    stream: &mut TcpStream,
    port: u16,
    trap: u16,
    stop: &AtomicBool,
    counts: &FakeCounts,
    sent_endless: &mut bool,
) -> bool {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut decoder = RequestDecoder::new(Limits::default());
    let mut input = BytesMut::new();
    let mut chunk = [0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut chunk) {
            Ok(0) => return true,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return true,
        }
        while let Ok(Some(args)) = decoder.decode(&mut input) {
            if args.get(1).is_some_and(|k| k.starts_with(b"huge")) {
                *sent_endless = true;
                counts.endless.fetch_add(1, Ordering::Relaxed);
            }
            if stream.write_all(&answer(&args, port, trap)).is_err() {
                return true;
            }
        }
    }
    false
}

/// Accepts connections on its own thread until `stop`, running `each` on every one.
fn listen(
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    each: impl Fn(TcpStream) + Send + Sync + 'static,
) -> std::thread::JoinHandle<()> {
    listener.set_nonblocking(true).expect("nonblocking");
    let each = Arc::new(each);
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(600);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            match listener.accept() {
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let each = each.clone();
                    std::thread::spawn(move || each(stream));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    })
}

fn bind() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    (listener, port)
}

pub fn hostile_backend() -> Row {
    let mut row = Row::new("hostile_backend");
    let stop = Arc::new(AtomicBool::new(false));
    let trapped = Arc::new(AtomicUsize::new(0));
    let trap_count = trapped.clone();
    let (trap_listener, trap) = bind();
    let trap_thread = listen(trap_listener, stop.clone(), move |_| {
        trap_count.fetch_add(1, Ordering::Relaxed);
    });
    let (fake_listener, fake) = bind();
    let fake_stop = stop.clone();
    let counts = Arc::new(FakeCounts::default());
    let fake_counts = counts.clone();
    let fake_thread = listen(fake_listener, stop.clone(), move |stream| {
        serve_fake(stream, fake, trap, fake_stop.clone(), fake_counts.clone())
    });
    let mut proxy = proxy_with_config(
        &[format!("127.0.0.1:{fake}")],
        &format!("timeouts:\n  operation_ms: {OPERATION_MS}\n"),
    );
    let rss_before = rss_kb(proxy.pid());
    let mut client = RawClient::connect(proxy.port);
    let rounds = scaled(5, 20);
    let mut samples = Vec::new();
    let mut endless_answers = Vec::new();
    for i in 0..rounds {
        for key in [
            format!("moved{i}"),
            format!("ask{i}"),
            "huge".to_string(),
            "hugebulk".to_string(),
        ] {
            let started = Instant::now();
            let reply = client.call(&["GET", &key]);
            samples.push(started.elapsed());
            if key.starts_with("huge") {
                endless_answers.push(reply.clone());
                // The proxy closes the connection of each endless reply; the next one
                // then comes on a fresh connection (polled: the close is asynchronous).
                let sent = counts.endless.load(Ordering::Relaxed);
                wait_until(Duration::from_secs(10), || {
                    counts.closed_after_endless.load(Ordering::Relaxed) >= sent
                });
            }
            if reply.is_error() {
                row.errors += 1;
            } else {
                row.acked += 1;
            }
        }
        let blocking = [
            vec!["BLPOP".to_string(), format!("moved{i}"), "1".to_string()],
            vec!["BLPOP".to_string(), format!("ask{i}"), "1".to_string()],
        ];
        for command in &blocking {
            let args: Vec<&str> = command.iter().map(String::as_str).collect();
            let started = Instant::now();
            let reply = client.call(&args);
            samples.push(started.elapsed());
            if reply.is_error() {
                row.errors += 1;
            } else {
                row.acked += 1;
            }
        }
        let started = Instant::now();
        assert_eq!(client.call(&["MULTI"]), Frame::Simple("OK".into()));
        assert_eq!(
            client.call(&["SET", &format!("ask{i}"), "v"]),
            Frame::Simple("QUEUED".into())
        );
        let reply = client.call(&["EXEC"]);
        samples.push(started.elapsed());
        if reply.is_error() {
            row.errors += 1;
        } else {
            row.acked += 1;
        }
    }
    let rss_after = rss_kb(proxy.pid());
    row.p99_ms = p99_ms(&mut samples);
    row.max_unavailable_s = samples.last().copied().unwrap_or_default().as_secs_f64();
    // The proxy still answers what it answers itself.
    assert_eq!(client.call(&["PING"]), Frame::Simple("PONG".into()));
    row.peak_rss_mb = peak_rss_mb(proxy.pid());
    row.crashes = crashed(&mut proxy);
    stop.store(true, Ordering::Relaxed);
    drop(proxy);
    let _ = trap_thread.join();
    let _ = fake_thread.join();
    row.print();
    let growth_mb = rss_after.saturating_sub(rss_before) as f64 / 1024.0;
    assert_eq!(
        trapped.load(Ordering::Relaxed),
        0,
        "the proxy connected to the unknown address"
    );
    assert_eq!(row.acked, 0, "every hostile answer must end in an error");
    for reply in &endless_answers {
        assert!(
            error_contains(reply, "over the proxy's limit"),
            "an endless reply must be refused by the reply cap, not timed out: {reply:?}"
        );
    }
    assert_eq!(
        counts.closed_after_endless.load(Ordering::Relaxed),
        counts.endless.load(Ordering::Relaxed),
        "the proxy must close each connection that carried an endless reply"
    );
    assert!(growth_mb < 32.0, "RSS grew by {growth_mb:.1} MB");
    assert_eq!(row.crashes, 0);
    row
}
