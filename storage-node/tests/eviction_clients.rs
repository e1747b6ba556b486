//! Client buffers and `maxmemory`: a client counts for the bytes it actually sent, never
//! for a bulk length it only announced (a deliberate difference from Redis 7.0, which
//! reserves the announced size and then evicts every key), and `maxmemory-clients` closes
//! the client holding the most memory.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::{info_field, wait_until, RawClient, ServerProcess};

/// How many clients announce a bulk they never send.
const ANNOUNCERS: usize = 1000;

fn stat(client: &mut RawClient, section: &str, name: &str) -> u64 {
    info_field(client, section, name).parse().unwrap()
}

#[test]
fn a_thousand_announced_512mb_bulks_evict_nothing() {
    let node = ServerProcess::storage_node(&["--maxmemory-policy", "allkeys-lru"]);
    let mut client = RawClient::connect(node.port);
    let keys = 1000;
    for n in 0..keys {
        let key = format!("k:{n}");
        assert_eq!(
            client.call(&["SET", &key, "some value"]),
            Frame::Simple("OK".into())
        );
    }
    // Room for the connections themselves (their socket buffers, some tens of KB each),
    // nowhere near the 500 GB the announcements add up to.
    let before = stat(&mut client, "memory", "used_memory");
    let limit = before + 256 * 1024 * 1024;
    client.call(&["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    let announce = b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$536870912\r\nabc";
    let mut announcers = Vec::with_capacity(ANNOUNCERS);
    for _ in 0..ANNOUNCERS {
        let mut stream = TcpStream::connect(("127.0.0.1", node.port)).unwrap();
        stream.write_all(announce).unwrap();
        announcers.push(stream);
    }
    wait_until(Duration::from_secs(30), "every announcer connected", || {
        stat(&mut client, "clients", "connected_clients") > ANNOUNCERS as u64
    });
    // Every announcer's partial bulk has arrived once the node's input counters have seen
    // all of them; a command after that is checked against the memory they hold.
    let sent = (ANNOUNCERS * announce.len()) as u64;
    wait_until(Duration::from_secs(30), "the announcements read", || {
        stat(&mut client, "stats", "total_net_input_bytes") >= sent
    });
    assert_eq!(client.call(&["PING"]), Frame::Simple("PONG".into()));
    assert_eq!(
        client.call(&["SET", "after", "v"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(stat(&mut client, "stats", "evicted_keys"), 0);
    assert_eq!(client.call(&["DBSIZE"]), Frame::Integer(keys + 1));
    let grown = stat(&mut client, "memory", "used_memory").saturating_sub(before);
    let per_client = grown / ANNOUNCERS as u64;
    assert!(
        per_client < 128 * 1024,
        "{per_client} bytes per announcing client"
    );
    assert!(stat(&mut client, "memory", "mem_clients_normal") < 128 * 1024 * 1024);
    drop(announcers);
}

#[test]
fn maxmemory_clients_closes_the_biggest_client_but_not_a_no_evict_one() {
    let node = ServerProcess::storage_node(&["--maxmemory-clients", "1mb"]);
    let mut admin = RawClient::connect(node.port);
    assert_eq!(
        admin.call(&["CLIENT", "NO-EVICT", "on"]),
        Frame::Simple("OK".into())
    );
    // 2 MB of a 3 MB bulk, really sent: the query buffer holds them.
    let mut hog = TcpStream::connect(("127.0.0.1", node.port)).unwrap();
    let head = b"*3\r\n$3\r\nSET\r\n$3\r\nhog\r\n$3145728\r\n";
    hog.write_all(head).unwrap();
    hog.write_all(&vec![b'x'; 2 * 1024 * 1024]).unwrap();
    wait_until(Duration::from_secs(30), "the hog evicted", || {
        stat(&mut admin, "stats", "evicted_clients") == 1
    });
    wait_until(Duration::from_secs(30), "the hog gone", || {
        stat(&mut admin, "clients", "connected_clients") == 1
    });
    assert_eq!(admin.call(&["PING"]), Frame::Simple("PONG".into()));
}

/// The limit is checked when a query buffer grows, not only from the cron: with `hz 1` the
/// cron runs once a second, yet the hog is already evicted when the next command of another
/// client runs after the node has read the hog's bytes.
#[test]
fn a_query_buffer_past_maxmemory_clients_is_closed_before_the_next_command() {
    let node = ServerProcess::storage_node(&["--maxmemory-clients", "1mb", "--hz", "1"]);
    let mut admin = RawClient::connect(node.port);
    assert_eq!(
        admin.call(&["CLIENT", "NO-EVICT", "on"]),
        Frame::Simple("OK".into())
    );
    let read_before = stat(&mut admin, "stats", "total_net_input_bytes");
    let mut hog = TcpStream::connect(("127.0.0.1", node.port)).unwrap();
    let head = b"*3\r\n$3\r\nSET\r\n$3\r\nhog\r\n$3145728\r\n";
    hog.write_all(head).unwrap();
    // The node closes the hog once it holds over 1 MB, before it took everything: the
    // write is expected to fail.
    let _ = hog.write_all(&vec![b'x'; 2 * 1024 * 1024]);
    // Once the input counter shows the hog's head and a megabyte of its bulk (the admin's
    // own requests, counted too, taken off), the hog's query buffer has passed the limit.
    let info_stats = b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n".len() as u64;
    let past_limit = (head.len() + 1024 * 1024) as u64;
    let mut admin_bytes = 0;
    wait_until(Duration::from_secs(30), "the hog's megabyte read", || {
        admin_bytes += info_stats;
        let read = stat(&mut admin, "stats", "total_net_input_bytes") - read_before;
        read.saturating_sub(admin_bytes) >= past_limit
    });
    assert_eq!(stat(&mut admin, "stats", "evicted_clients"), 1);
    wait_until(Duration::from_secs(30), "the hog gone", || {
        stat(&mut admin, "clients", "connected_clients") == 1
    });
}
