//! The cluster bus: garbage and strangers are ignored, and a node that was down catches up
//! with slot moves made while it was away.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use storage_node::cluster::bus::codec::{self, Body, Decoded, Header, Message};
use storage_node::cluster::node::{Flags, NodeId};
use test_harness::cluster::start_storage_node;
use test_harness::{Cluster, RawClient};

fn text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).into_owned()
}

fn cluster_info(port: u16) -> String {
    let mut c = RawClient::connect(port);
    text(c.call(&["CLUSTER", "INFO"]).as_bytes().unwrap_or(b""))
}

fn slots_reply(port: u16) -> Vec<u8> {
    RawClient::connect(port).call_raw(&[b"CLUSTER", b"SLOTS"])
}

/// Sends bytes to a bus port and returns what came back before the node closed the
/// connection or went quiet for a second.
fn throw(bus_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", bus_port)).expect("connect to the bus");
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    let _ = stream.write_all(payload);
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = stream.read(&mut chunk) {
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
    }
    answer
}

/// A PING from a node nobody knows, claiming every slot with a huge config epoch.
fn stranger_ping() -> Vec<u8> {
    codec::encode(&Message {
        header: Header {
            sender: NodeId::random(),
            current_epoch: 1_000_000,
            config_epoch: 1_000_000,
            flags: Flags::MASTER,
            port: 1,
            cport: 2,
            ip: "127.0.0.1".into(),
            slots: [0xff; 2048],
            primary: None,
            repl_offset: 0,
        },
        body: Body::Ping(vec![]),
    })
}

#[test]
fn garbage_and_strangers_on_the_bus_change_nothing() {
    let cluster = Cluster::storage_nodes(3);
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let bus = ports[0] + 10000;
    let before = slots_reply(ports[0]);

    let mut random = vec![0u8; 100_000];
    let mut state = 0x1234_5678u32;
    for byte in random.iter_mut() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        *byte = state as u8;
    }
    let ping = stranger_ping();
    let mut unknown_type = ping.clone();
    unknown_type[7] = 77;
    let mut bad_version = ping.clone();
    bad_version[5] = 9;
    let mut garbled_body = ping.clone();
    garbled_body[12] = b'!';
    let payloads: Vec<&[u8]> = vec![
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        b"*1\r\n$4\r\nPING\r\n",
        &random,
        b"SNcb\x00\x01\x00\x00\xff\xff\xff\xff",
        &bad_version,
        &garbled_body,
        &ping[..ping.len() / 2],
        &unknown_type,
        b"",
    ];
    for payload in payloads {
        throw(bus, payload);
    }
    // A stranger's PING is answered (so handshakes can finish) but not believed.
    let answer = throw(bus, &ping);
    let mut buf = BytesMut::from(&answer[..]);
    match codec::decode(&mut buf) {
        Ok(Some(Decoded::Message(m))) => assert!(matches!(m.body, Body::Pong(_))),
        other => panic!("expected a PONG, got {other:?}"),
    }

    let mut client = RawClient::connect(ports[0]);
    assert_eq!(client.call_raw(&[b"PING"]), b"+PONG\r\n");
    let info = cluster_info(ports[0]);
    assert!(info.contains("cluster_known_nodes:3\r\n"), "{info}");
    assert!(info.contains("cluster_state:ok"), "{info}");
    assert_eq!(slots_reply(ports[0]), before);
}

#[test]
fn a_node_that_was_down_learns_what_moved() {
    let mut cluster = Cluster::storage_nodes(3);
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    let ids: Vec<String> = ports
        .iter()
        .map(|&p| {
            text(
                RawClient::connect(p)
                    .call(&["CLUSTER", "MYID"])
                    .as_bytes()
                    .expect("id"),
            )
        })
        .collect();
    let slot = (0..16384u16)
        .find(|&s| cluster.node_for_slot(s) == 0)
        .expect("node 0 serves a slot")
        .to_string();

    cluster.nodes[2].kill();
    let mut c0 = RawClient::connect(ports[0]);
    let mut c1 = RawClient::connect(ports[1]);
    c1.call(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &ids[0]]);
    c0.call(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &ids[1]]);
    c1.call(&["CLUSTER", "SETSLOT", &slot, "NODE", &ids[1]]);
    c0.call(&["CLUSTER", "SETSLOT", &slot, "NODE", &ids[1]]);

    cluster.nodes[2] = start_storage_node(ports[2]);
    let expected = slots_reply(ports[0]);
    let deadline = Instant::now() + Duration::from_secs(30);
    // Like Redis, a master that just started keeps the cluster down for two seconds.
    while slots_reply(ports[2]) != expected || !cluster_info(ports[2]).contains("cluster_state:ok")
    {
        assert!(Instant::now() < deadline, "node 2 did not learn the move");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut c2 = RawClient::connect(ports[2]);
    let key_in_slot = (0..)
        .map(|i| format!("k{i}"))
        .find(|k| slotproxy::cluster::key_slot(k.as_bytes()).to_string() == slot)
        .expect("a key in the slot");
    let moved = text(&c2.call_raw(&[b"GET", key_in_slot.as_bytes()]));
    assert_eq!(moved, format!("-MOVED {slot} 127.0.0.1:{}\r\n", ports[1]));
}
