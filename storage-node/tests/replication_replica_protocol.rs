//! The replica's side of the replication protocol, byte by byte, against a master played
//! by the test: the handshake it sends (AUTH with `masterauth`, REPLCONF listening-port,
//! ip-address and capa, PSYNC), the EOF-mark snapshot after keepalive newlines, the
//! offset that waits for an open MULTI's EXEC, REPLCONF GETACK, `repl-timeout`, and the
//! PSYNC after a drop with `+CONTINUE <new id>` switching the replication ids.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use slotproxy::resp::Frame;
use test_harness::{RawClient, ServerProcess};

mod persistence_fixture;
mod replication_fixture;
use persistence_fixture::find_info;
use replication_fixture::{info, wait_for, DEADLINE};

const MASTER_ID: &str = "1111111111111111111111111111111111111111";
const PROMOTED_ID: &str = "2222222222222222222222222222222222222222";
const MARK: &str = "abcdefghijabcdefghijabcdefghijabcdefghij";

fn words(frame: &Frame) -> Vec<String> {
    match frame {
        Frame::Array(items) => items
            .iter()
            .map(|item| match item {
                Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                other => panic!("not a bulk string: {other:?}"),
            })
            .collect(),
        other => panic!("not a command: {other:?}"),
    }
}

/// The next command the replica sends, periodic `REPLCONF ACK`s skipped unless `acks`.
fn next_command(master: &mut RawClient, acks: bool) -> Vec<String> {
    loop {
        let command = words(&master.read_reply().0);
        let is_ack = command.len() == 3 && command[0] == "REPLCONF" && command[1] == "ACK";
        if acks || !is_ack {
            return command;
        }
    }
}

/// Waits (bounded) for the next `REPLCONF ACK` carrying `offset`.
fn wait_ack(master: &mut RawClient, offset: u64) {
    let start = Instant::now();
    loop {
        assert!(start.elapsed() < DEADLINE, "no REPLCONF ACK {offset}");
        let command = next_command(master, true);
        assert_eq!(command[..2], ["REPLCONF", "ACK"], "{command:?}");
        if command[2] == offset.to_string() {
            return;
        }
    }
}

fn accept(listener: &TcpListener) -> RawClient {
    listener.set_nonblocking(true).unwrap();
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).unwrap();
                return RawClient::from_stream(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(start.elapsed() < DEADLINE, "the replica never connected");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

fn expect(master: &mut RawClient, want: &[&str], reply: &str) {
    assert_eq!(next_command(master, false), want);
    master.send_raw(reply.as_bytes());
}

/// What the replica announces in its handshake: its listening port, and the password
/// (`masterauth`) and address (`replica-announce-ip`) it was given, if any.
struct Handshake<'a> {
    port: &'a str,
    auth: Option<&'a str>,
    announce_ip: Option<&'a str>,
}

impl Handshake<'_> {
    /// Checks the replica's handshake up to (not including) PSYNC, answering `ping_reply`
    /// to PING and `+OK` to the rest.
    fn answer(&self, master: &mut RawClient, ping_reply: &str) {
        expect(master, &["PING"], ping_reply);
        if let Some(password) = self.auth {
            expect(master, &["AUTH", password], "+OK\r\n");
        }
        expect(
            master,
            &["REPLCONF", "listening-port", self.port],
            "+OK\r\n",
        );
        if let Some(ip) = self.announce_ip {
            expect(master, &["REPLCONF", "ip-address", ip], "+OK\r\n");
        }
        expect(
            master,
            &["REPLCONF", "capa", "eof", "capa", "psync2"],
            "+OK\r\n",
        );
    }
}

/// Waits (bounded) until INFO replication shows `name` with the value `want`.
fn wait_info(client: &mut RawClient, name: &str, want: &str) {
    wait_for(&format!("{name} to become {want}"), || {
        find_info(client, "replication", name).as_deref() == Some(want)
    });
}

/// An RDB file holding `k` = `v` in database 0 (no checksum: a zero trailer).
fn snapshot() -> Vec<u8> {
    let mut rdb = b"REDIS0010".to_vec();
    rdb.extend_from_slice(&[0xfe, 0x00, 0x00, 0x01, b'k', 0x01, b'v', 0xff]);
    rdb.extend_from_slice(&[0; 8]);
    rdb
}

fn request(args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    RawClient::encode(&args)
}

#[test]
fn handshake_snapshot_stream_acks_timeout_and_continue() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let master_port = listener.local_addr().unwrap().port().to_string();
    // Started as a replica: no history to offer (`PSYNC ? -1` below).
    let node = ServerProcess::storage_node(&[
        "--masterauth",
        "secret",
        "--replica-announce-ip",
        "10.1.2.3",
        "--repl-timeout",
        "2",
        "--replicaof",
        "127.0.0.1",
        &master_port,
    ]);
    let mut replica = RawClient::connect(node.port);
    let mut master = accept(&listener);
    let port = node.port.to_string();
    let handshake = Handshake {
        port: &port,
        auth: Some("secret"),
        announce_ip: Some("10.1.2.3"),
    };
    handshake.answer(&mut master, "-NOAUTH Authentication required.\r\n");
    assert_eq!(next_command(&mut master, false), ["PSYNC", "?", "-1"]);
    // Keepalive newlines may come before any reply while a master prepares.
    master.send_raw(format!("\n\n+FULLRESYNC {MASTER_ID} 1000\r\n\n").as_bytes());
    let mut payload = format!("$EOF:{MARK}\r\n").into_bytes();
    payload.extend(snapshot());
    payload.extend_from_slice(MARK.as_bytes());
    master.send_raw(&payload);
    // The first ACK comes once the snapshot is loaded; the snapshot, received to disk,
    // became the RDB file.
    wait_ack(&mut master, 1000);
    assert_eq!(rdb_files(node.port), ["dump.rdb"]);
    assert_eq!(replica.call(&["GET", "k"]), Frame::Bulk("v".into()));
    assert_eq!(
        info(&mut replica, "replication", "master_link_status"),
        "up"
    );
    assert_eq!(
        info(&mut replica, "replication", "master_replid"),
        MASTER_ID
    );
    assert_eq!(
        info(&mut replica, "replication", "slave_repl_offset"),
        "1000"
    );

    // An open MULTI counts only once its EXEC ran; what was read counts at once.
    let opened = [request(&["MULTI"]), request(&["SET", "a", "1"])].concat();
    master.send_raw(&opened);
    let read = 1000 + opened.len() as u64;
    wait_info(&mut replica, "slave_read_repl_offset", &read.to_string());
    assert_eq!(
        info(&mut replica, "replication", "slave_repl_offset"),
        "1000"
    );
    assert_eq!(replica.call(&["GET", "a"]), Frame::Null);
    // GETACK is answered with the offset before it. Sent in one write with the EXEC, both
    // are applied in one batch: no periodic ACK can carry the offset between them.
    let exec = request(&["EXEC"]);
    let getack = request(&["REPLCONF", "GETACK", "*"]);
    master.send_raw(&[exec.clone(), getack.clone()].concat());
    let applied = read + exec.len() as u64;
    wait_ack(&mut master, applied);
    assert_eq!(replica.call(&["GET", "a"]), Frame::Bulk("1".into()));
    let offset = applied + getack.len() as u64;
    wait_info(&mut replica, "slave_repl_offset", &offset.to_string());

    // Silent past repl-timeout: the replica drops the link and asks to continue.
    let mut master = accept(&listener);
    handshake.answer(&mut master, "+PONG\r\n");
    let next = (offset + 1).to_string();
    assert_eq!(
        next_command(&mut master, false),
        ["PSYNC", MASTER_ID, next.as_str()]
    );
    // The master was promoted meanwhile: its history goes on under a new id.
    master.send_raw(format!("+CONTINUE {PROMOTED_ID}\r\n").as_bytes());
    wait_ack(&mut master, offset);
    assert_eq!(
        info(&mut replica, "replication", "master_replid"),
        PROMOTED_ID
    );
    assert_eq!(
        info(&mut replica, "replication", "master_replid2"),
        MASTER_ID
    );
    assert_eq!(
        info(&mut replica, "replication", "second_repl_offset"),
        next
    );
    master.send_raw(&request(&["SET", "b", "2"]));
    wait_info(&mut replica, "master_link_status", "up");
    wait_for("the stream after +CONTINUE", || {
        replica.call(&["GET", "b"]) == Frame::Bulk("2".into())
    });
    // The data of before the drop is still there: no full sync happened.
    assert_eq!(replica.call(&["GET", "k"]), Frame::Bulk("v".into()));

    // Expiry times already past when the stream brings them (a write applied late) hide
    // the keys but leave them for the master's DEL, as on a redis-server replica.
    let late = [
        request(&["SET", "p", "1"]),
        request(&["PEXPIREAT", "p", "1"]),
        request(&["SET", "q", "1"]),
        request(&["GETEX", "q", "PXAT", "1"]),
        request(&["SET", "done", "1"]),
    ]
    .concat();
    master.send_raw(&late);
    wait_for("the late writes", || {
        replica.call(&["GET", "done"]) == Frame::Bulk("1".into())
    });
    assert_eq!(replica.call(&["EXISTS", "p", "q"]), Frame::Integer(0));
    // k, a, b, p, q, done.
    assert_eq!(replica.call(&["DBSIZE"]), Frame::Integer(6));
}

#[test]
fn a_bad_snapshot_keeps_the_old_data() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let master_port = listener.local_addr().unwrap().port().to_string();
    let node = ServerProcess::storage_node(&["--repl-diskless-load", "disabled"]);
    let mut replica = RawClient::connect(node.port);
    assert_eq!(
        replica.call(&["SET", "mine", "1"]),
        Frame::Simple("OK".into())
    );
    let own_id = info(&mut replica, "replication", "master_replid");
    replica.call(&["REPLICAOF", "127.0.0.1", &master_port]);
    let mut master = accept(&listener);
    let port = node.port.to_string();
    let handshake = Handshake {
        port: &port,
        auth: None,
        announce_ip: None,
    };
    handshake.answer(&mut master, "+PONG\r\n");
    // A master turned replica offers its own history, empty as it is (as Redis 7.0 does).
    assert_eq!(
        next_command(&mut master, false),
        ["PSYNC", own_id.as_str(), "1"]
    );
    let mut bad = snapshot();
    // A value length past the end of the file.
    bad[14] = 0x30;
    master.send_raw(format!("+FULLRESYNC {MASTER_ID} 0\r\n${}\r\n", bad.len()).as_bytes());
    master.send_raw(&bad);
    // The replica gives up on this snapshot and connects again.
    drop(master);
    let mut master = accept(&listener);
    expect(&mut master, &["PING"], "+PONG\r\n");
    assert_eq!(replica.call(&["GET", "mine"]), Frame::Bulk("1".into()));
    assert_eq!(replica.call(&["GET", "k"]), Frame::Null);
    assert_eq!(
        info(&mut replica, "replication", "master_link_status"),
        "down"
    );
    // Neither the temp file nor a bad RDB file is left behind.
    assert_eq!(rdb_files(node.port), Vec::<String>::new());
}

/// The `.rdb` files in a harness node's directory.
fn rdb_files(port: u16) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("slotproxy-node-{port}"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rdb"))
        .collect();
    names.sort();
    names
}

/// `-NOMASTERLINK` and `-LOADING` to PSYNC mean "not now": the replica tries again.
#[test]
fn a_master_not_ready_is_asked_again() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let master_port = listener.local_addr().unwrap().port().to_string();
    let node = ServerProcess::storage_node(&["--replicaof", "127.0.0.1", &master_port]);
    let port = node.port.to_string();
    let handshake = Handshake {
        port: &port,
        auth: None,
        announce_ip: None,
    };
    for refusal in [
        "-NOMASTERLINK Can't SYNC while not connected with my master\r\n",
        "-LOADING Redis is loading the dataset in memory\r\n",
    ] {
        let mut master = accept(&listener);
        handshake.answer(&mut master, "+PONG\r\n");
        expect(&mut master, &["PSYNC", "?", "-1"], refusal);
    }
    let mut master = accept(&listener);
    expect(&mut master, &["PING"], "+PONG\r\n");
    let mut replica = RawClient::connect(node.port);
    assert_eq!(
        info(&mut replica, "replication", "master_link_status"),
        "down"
    );
}

/// How the test's master announces a snapshot.
#[derive(Clone, Copy, Debug)]
enum Announce {
    /// Not yet: `+FULLRESYNC` only.
    Nothing,
    Len(usize),
    EofMark,
}

/// Plays a master for `replica` up to the middle of a snapshot: announced as `announce`,
/// `sent` bytes of it sent. Returns the connection (the transfer stays open).
fn stop_mid_transfer(listener: &TcpListener, announce: Announce, sent: usize) -> RawClient {
    let mut master = accept(listener);
    loop {
        let command = next_command(&mut master, false);
        match command[0].as_str() {
            "PING" => master.send_raw(b"+PONG\r\n"),
            "PSYNC" => break,
            _ => master.send_raw(b"+OK\r\n"),
        }
    }
    master.send_raw(format!("+FULLRESYNC {MASTER_ID} 0\r\n").as_bytes());
    match announce {
        Announce::Nothing => return master,
        Announce::Len(len) => master.send_raw(format!("${len}\r\n").as_bytes()),
        Announce::EofMark => master.send_raw(format!("$EOF:{MARK}\r\n").as_bytes()),
    }
    master.send_raw(&vec![b'x'; sent]);
    master
}

/// A fresh `kind` server ("storage-node" or "redis-server") made a replica of a master
/// the test plays on the returned listener, and a client of it.
fn replica_of_the_test(kind: &str) -> (TcpListener, ServerProcess, RawClient) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let master_port = listener.local_addr().unwrap().port().to_string();
    let server = if kind == "redis-server" {
        ServerProcess::redis_server(&[])
    } else {
        ServerProcess::storage_node(&[])
    };
    let mut replica = RawClient::connect(server.port);
    replica.call(&["REPLICAOF", "127.0.0.1", &master_port]);
    (listener, server, replica)
}

/// INFO's replica lines while a snapshot is half received, compared with a redis-server
/// replica in the same state (the seconds since the last byte may differ by one).
#[test]
fn info_during_a_transfer_matches_redis() {
    for (announce, read) in [
        (Announce::Len(1000), "400"),
        (Announce::EofMark, "400"),
        (Announce::Nothing, "0"),
    ] {
        info_during_a_transfer(announce, read);
    }
}

fn info_during_a_transfer(announce: Announce, read: &str) {
    let mut lines = Vec::new();
    for kind in ["storage-node", "redis-server"] {
        let (listener, _server, mut replica) = replica_of_the_test(kind);
        let _master = stop_mid_transfer(&listener, announce, 400);
        wait_info(&mut replica, "master_sync_in_progress", "1");
        wait_info(&mut replica, "master_sync_read_bytes", read);
        lines.push(replica_lines(&mut replica));
    }
    assert_eq!(lines[0], lines[1], "{announce:?}");
    assert!(lines[0]
        .iter()
        .any(|l| *l == format!("master_sync_read_bytes:{read}")));
}

/// INFO's replica lines without the ones that count seconds.
fn replica_lines(replica: &mut RawClient) -> Vec<String> {
    let Frame::Bulk(text) = replica.call(&["INFO", "replication"]) else {
        panic!("INFO is not a bulk string")
    };
    String::from_utf8_lossy(&text)
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("connected_slaves"))
        .filter(|l| !l.starts_with("master_port") && !l.contains("seconds"))
        .map(str::to_string)
        .collect()
}

/// INFO's replica lines with the link up and after it dropped, compared with a
/// redis-server replica fed the same bytes.
#[test]
fn info_with_the_link_up_and_down_matches_redis() {
    let mut shown = Vec::new();
    for kind in ["storage-node", "redis-server"] {
        let (listener, _server, mut replica) = replica_of_the_test(kind);
        let rdb = snapshot();
        let mut master = stop_mid_transfer(&listener, Announce::Len(rdb.len()), 0);
        master.send_raw(&rdb);
        // The snapshot is at offset 0 (see `stop_mid_transfer`).
        wait_ack(&mut master, 0);
        let stream = request(&["SET", "a", "1"]);
        master.send_raw(&stream);
        let offset = stream.len().to_string();
        wait_info(&mut replica, "slave_repl_offset", &offset);
        let up = replica_lines(&mut replica);
        drop(master);
        wait_info(&mut replica, "master_link_status", "down");
        let down = replica_lines(&mut replica);
        shown.push((up, down));
    }
    assert_eq!(shown[0].0, shown[1].0, "link up");
    assert_eq!(shown[0].1, shown[1].1, "link down");
}

/// `repl-diskless-load on-empty-db`: an empty node loads the snapshot from memory (no
/// file appears), a node holding data goes through the disk (the snapshot becomes
/// `dump.rdb`), as Redis decides.
#[test]
fn on_empty_db_loads_from_memory_only_when_empty() {
    let node = ServerProcess::storage_node(&["--repl-diskless-load", "on-empty-db"]);
    let mut replica = RawClient::connect(node.port);
    for (round, want_files) in [(0, Vec::<String>::new()), (1, vec!["dump.rdb".to_string()])] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let master_port = listener.local_addr().unwrap().port().to_string();
        assert_eq!(
            replica.call(&["REPLICAOF", "127.0.0.1", &master_port]),
            Frame::Simple("OK".into()),
            "round {round}"
        );
        let rdb = snapshot();
        let mut master = stop_mid_transfer(&listener, Announce::Len(rdb.len()), 0);
        master.send_raw(&rdb);
        wait_ack(&mut master, 0);
        assert_eq!(replica.call(&["GET", "k"]), Frame::Bulk("v".into()));
        assert_eq!(rdb_files(node.port), want_files, "round {round}");
        assert_eq!(
            replica.call(&["REPLICAOF", "NO", "ONE"]),
            Frame::Simple("OK".into())
        );
    }
}
