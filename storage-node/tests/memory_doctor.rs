//! MEMORY DOCTOR against a real redis-server 7.0: byte for byte on an empty instance (the
//! deterministic case, in RESP2 and RESP3, with its arity error), and the "Big client
//! buffers" finding on both once a client holds 32 MB of an unfinished command in its
//! query buffer (the other findings depend on each process's RSS, so only that paragraph
//! and the report's frame are compared there).

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::{wait_until, Differential, RawClient};

const BIG_CLIENT_BUFFERS: &str = " * Big client buffers: The clients output buffers";

fn text(frame: &Frame) -> String {
    match frame {
        Frame::Verbatim { text, .. } | Frame::Bulk(text) => {
            String::from_utf8_lossy(text).into_owned()
        }
        other => panic!("MEMORY DOCTOR answered {other:?}"),
    }
}

#[test]
fn an_empty_instance_gets_redis_report() {
    let mut d = Differential::start();
    let report = d.check(&["MEMORY", "DOCTOR"]);
    assert!(text(&report).starts_with("Hi Sam, this instance is empty"));
    d.set_resp3(true);
    d.check(&["MEMORY", "DOCTOR"]);
    d.set_resp3(false);
    d.check(&["MEMORY", "DOCTOR", "extra"]);
    d.check(&["MEMORY", "HELP"]);
}

fn doctor(client: &mut RawClient) -> String {
    text(&client.call(&["MEMORY", "DOCTOR"]))
}

#[test]
fn a_client_holding_a_big_query_buffer_is_reported() {
    let d = Differential::start();
    let (mut node, mut redis) = d.clients();
    let mut hogs = Vec::new();
    for port in [d.node.port, d.redis.port] {
        // 32 MB of a 64 MB bulk: both count the query buffer as the client's memory.
        let mut hog = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        hog.write_all(b"*3\r\n$3\r\nSET\r\n$3\r\nhog\r\n$67108864\r\n")
            .expect("send");
        hog.write_all(&vec![b'x'; 32 << 20]).expect("send");
        hogs.push(hog);
    }
    for (name, client) in [("node", &mut node), ("redis", &mut redis)] {
        wait_until(Duration::from_secs(30), "the big buffer reported", || {
            doctor(client).contains(BIG_CLIENT_BUFFERS)
        });
        let report = doctor(client);
        assert!(
            report.starts_with(
                "Sam, I detected a few issues in this Redis instance memory implants:\n\n"
            ),
            "{name}: {report}"
        );
        assert!(
            report.ends_with("\n\nI'm here to keep you safe, Sam. I want to help you.\n"),
            "{name}: {report}"
        );
    }
    let paragraph = |report: String| {
        report
            .split("\n\n")
            .find(|p| p.starts_with(BIG_CLIENT_BUFFERS))
            .map(str::to_owned)
    };
    assert_eq!(paragraph(doctor(&mut node)), paragraph(doctor(&mut redis)));
    drop(hogs);
}
