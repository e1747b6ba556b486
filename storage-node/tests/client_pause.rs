//! CLIENT PAUSE / UNPAUSE against redis-server 7.0: paused commands wait (they are not
//! refused) and run in order once the pause ends; reads pass a WRITE pause; keys do not
//! expire meanwhile. No timing is asserted: a held command is seen through another
//! client (the old value still there) and through INFO's `blocked_clients`.

use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::client::wait_blocked;
use test_harness::{Differential, RawClient};

#[test]
fn client_pause_errors_and_replies_match_redis() {
    let mut d = Differential::start();
    d.check_all(&[
        &["CLIENT", "PAUSE", "abc"],
        &["CLIENT", "PAUSE", "-1"],
        &["CLIENT", "PAUSE", "1.5"],
        &["CLIENT", "PAUSE", "99999999999999999999"],
        &["CLIENT", "PAUSE", "10", "sometimes"],
        &["CLIENT", "PAUSE", "10", "write", "extra"],
        &["CLIENT", "PAUSE"],
        &["CLIENT", "UNPAUSE", "x"],
        &["CLIENT", "PAUSE", "0"],
        &["CLIENT", "PAUSE", "0", "WRITE"],
        &["CLIENT", "UNPAUSE"],
    ]);
}

/// On `port`: SET behind a WRITE pause waits while GET answers the old value; UNPAUSE lets
/// the SET run. Returns what the paused client and a second reader saw.
fn write_pause_holds_a_set(port: u16) -> Vec<Vec<u8>> {
    let mut writer = RawClient::connect(port);
    let mut reader = RawClient::connect(port);
    let mut admin = RawClient::connect(port);
    let mut seen = vec![reader.call_raw(&[b"SET", b"k", b"old"])];
    // PAUSE and SET in one pipeline: once PAUSE's reply is read, the server has looked at
    // the SET (held it, or run it if pauses did not work).
    writer.send_raw(
        &[
            RawClient::encode(&[b"CLIENT", b"PAUSE", b"100000", b"WRITE"]),
            RawClient::encode(&[b"SET", b"k", b"new"]),
        ]
        .concat(),
    );
    seen.push(writer.read_raw_reply());
    wait_blocked(&mut admin, 1);
    seen.push(reader.call_raw(&[b"GET", b"k"]));
    seen.push(reader.call_raw(&[b"PING"]));
    seen.push(reader.call_raw(&[b"EVAL_RO", b"return redis.call('GET','k')", b"1", b"k"]));
    seen.push(admin.call_raw(&[b"CLIENT", b"UNPAUSE"]));
    seen.push(writer.read_raw_reply());
    seen.push(reader.call_raw(&[b"GET", b"k"]));
    seen
}

#[test]
fn a_write_pause_holds_writes_until_unpause_and_lets_reads_through() {
    let d = Differential::start();
    let node = write_pause_holds_a_set(d.node.port);
    let redis = write_pause_holds_a_set(d.redis.port);
    assert_eq!(node, redis);
    assert_eq!(node[2], b"$3\r\nold\r\n");
    assert_eq!(node[7], b"$3\r\nnew\r\n");
}

/// On `port`: under a WRITE pause, commands that may be propagated (PUBLISH, PFCOUNT,
/// EVAL, a queued write inside MULTI) wait too; read-only EXEC does not.
fn write_pause_holds_may_replicate_commands(port: u16) -> Vec<Vec<u8>> {
    let mut admin = RawClient::connect(port);
    let mut seen = vec![admin.call_raw(&[b"PFADD", b"hll", b"a"])];
    let mut reader = RawClient::connect(port);
    seen.push(reader.call_raw(&[b"MULTI"]));
    seen.push(reader.call_raw(&[b"GET", b"hll"]));
    seen.push(admin.call_raw(&[b"CLIENT", b"PAUSE", b"100000", b"WRITE"]));
    seen.push(reader.call_raw(&[b"EXEC"]));
    let held: &[&[&[u8]]] = &[
        &[b"PUBLISH", b"ch", b"m"],
        &[b"PFCOUNT", b"hll"],
        &[b"EVAL", b"return 1", b"0"],
    ];
    let mut clients = Vec::new();
    for (n, command) in held.iter().enumerate() {
        let mut c = RawClient::connect(port);
        c.send(command);
        wait_blocked(&mut admin, n + 1);
        clients.push(c);
    }
    let mut in_multi = RawClient::connect(port);
    seen.push(in_multi.call_raw(&[b"MULTI"]));
    in_multi.send(&[b"SET", b"x", b"1"]);
    wait_blocked(&mut admin, held.len() + 1);
    seen.push(admin.call_raw(&[b"CLIENT", b"UNPAUSE"]));
    for c in &mut clients {
        seen.push(c.read_raw_reply());
    }
    seen.push(in_multi.read_raw_reply());
    wait_blocked(&mut admin, 0);
    seen
}

#[test]
fn a_write_pause_holds_commands_that_may_be_propagated() {
    let d = Differential::start();
    let node = write_pause_holds_may_replicate_commands(d.node.port);
    let redis = write_pause_holds_may_replicate_commands(d.redis.port);
    assert_eq!(node, redis);
}

/// On `port`: a pause ALL holds every client (none can look while it lasts, not even
/// to UNPAUSE), and a pause that times out releases them: the held commands then run.
fn pause_all_holds_reads_until_it_ends(port: u16) -> Vec<Vec<u8>> {
    let mut admin = RawClient::connect(port);
    let mut reader = RawClient::connect(port);
    let mut seen = vec![admin.call_raw(&[b"SET", b"k", b"v"])];
    seen.push(admin.call_raw(&[b"CLIENT", b"PAUSE", b"500", b"ALL"]));
    reader.send(&[b"GET", b"k"]);
    admin.send(&[b"CLIENT", b"UNPAUSE"]);
    seen.push(reader.read_raw_reply());
    seen.push(admin.read_raw_reply());
    seen
}

#[test]
fn a_pause_all_holds_reads_until_its_timeout() {
    let d = Differential::start();
    let node = pause_all_holds_reads_until_it_ends(d.node.port);
    let redis = pause_all_holds_reads_until_it_ends(d.redis.port);
    assert_eq!(node, redis);
    assert_eq!(node[2], b"$1\r\nv\r\n");
}

/// On `port`: a key whose time passes during a pause is hidden from reads but not
/// removed (no DEL, `expired_keys` unchanged) until the pause ends.
fn keys_do_not_expire_while_paused(port: u16) -> (Frame, u64, u64) {
    let mut admin = RawClient::connect(port);
    // One pipeline: the pause starts before the key's time can pass.
    admin.send_raw(
        &[
            RawClient::encode(&[b"SET", b"short", b"v", b"PX", b"50"]),
            RawClient::encode(&[b"CLIENT", b"PAUSE", b"100000", b"WRITE"]),
        ]
        .concat(),
    );
    assert_eq!(admin.read_raw_reply(), b"+OK\r\n");
    assert_eq!(admin.read_raw_reply(), b"+OK\r\n");
    let expired = |c: &mut RawClient| -> u64 {
        let Frame::Bulk(info) = c.call(&["INFO", "stats"]) else {
            panic!("INFO")
        };
        String::from_utf8_lossy(&info)
            .lines()
            .find_map(|l| l.strip_prefix("expired_keys:"))
            .and_then(|n| n.trim().parse().ok())
            .expect("expired_keys")
    };
    // Past the key's time, reads see it missing.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while admin.call(&["GET", "short"]) != Frame::Null {
        assert!(
            std::time::Instant::now() < deadline,
            "the key never expired"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Active expiry had several cycles to remove it by now; it did not.
    let during = expired(&mut admin);
    let dbsize = admin.call(&["DBSIZE"]);
    admin.call(&["CLIENT", "UNPAUSE"]);
    admin.call(&["GET", "short"]);
    (dbsize, during, expired(&mut admin))
}

#[test]
fn keys_do_not_expire_while_clients_are_paused() {
    let d = Differential::start();
    let node = keys_do_not_expire_while_paused(d.node.port);
    let redis = keys_do_not_expire_while_paused(d.redis.port);
    assert_eq!(node, redis);
    assert_eq!(node, (Frame::Integer(1), 0, 1));
}
