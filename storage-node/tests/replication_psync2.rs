//! PSYNC2 across a promotion, and chained replication: tests that need a storage-node to
//! act as a master too (the master side of issue 16), so they pass once both sides are
//! merged.
//!
//! - A node replica of a redis-server master is promoted (`REPLICAOF NO ONE`); a sibling
//!   (another node, and a redis-server) pointed to it continues with `+CONTINUE`: the
//!   promoted node counts partial syncs and no full one, and the data matches.
//! - redis-server master → node replica → redis-server sub-replica: the sub-replica gets
//!   the master's stream through the node, unchanged, and holds the same data.
//! - ROLE on a node replica.

use slotproxy::resp::Frame;
use test_harness::{RawClient, ServerProcess};

mod persistence_fixture;
mod replication_fixture;
use persistence_fixture::{ok, populate, state_of};
use replication_fixture::{
    assert_same_data, info, info_u64, redis_master, replica_of, wait_in_sync,
};

/// Writes of several types, pipelined.
fn write_some(client: &mut RawClient, tag: &str, count: usize) {
    for i in 0..count {
        let key = format!("{tag}:{}", i % 40);
        ok(client, &["SET", &format!("{key}:s"), &i.to_string()]);
        ok(client, &["RPUSH", &format!("{key}:l"), &i.to_string()]);
        ok(client, &["HSET", &format!("{key}:h"), "f", &i.to_string()]);
        ok(client, &["ZADD", &format!("{key}:z"), &i.to_string(), "m"]);
        ok(
            client,
            &["SADD", &format!("{key}:set"), "x", &i.to_string()],
        );
        ok(client, &["PEXPIRE", &format!("{key}:h"), "500000"]);
    }
}

#[test]
fn a_promoted_node_lets_its_siblings_continue() {
    let master_process = redis_master(&[]);
    let mut master = RawClient::connect(master_process.port);
    populate(&mut master);
    let port = master_process.port.to_string();
    // A stops its expiry cycle before the comparison (DEBUG SET-ACTIVE-EXPIRE).
    let a = ServerProcess::storage_node(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--enable-debug-command",
        "yes",
    ]);
    let b = ServerProcess::storage_node(&["--replicaof", "127.0.0.1", &port]);
    let c = replica_of(&master_process);
    let (mut ca, mut cb, mut cc) = (
        RawClient::connect(a.port),
        RawClient::connect(b.port),
        RawClient::connect(c.port),
    );
    write_some(&mut master, "before", 300);
    // The old master's stream ends in database 5: the promoted node's must start with
    // SELECT, or its siblings would apply its writes there.
    ok(&mut master, &["SELECT", "5"]);
    ok(&mut master, &["SET", "last-in-db5", "1"]);
    // Nothing more, not even its PING, may reach one replica and not another: a replica
    // ahead of A would need a full sync.
    ok(&mut master, &["CLIENT", "PAUSE", "600000", "WRITE"]);
    for replica in [&mut ca, &mut cb, &mut cc] {
        wait_in_sync(&mut master, replica);
    }
    // The old master goes away; A takes over and the others follow it.
    drop(master);
    drop(master_process);
    ok(&mut ca, &["REPLICAOF", "NO", "ONE"]);
    let a_port = a.port.to_string();
    ok(&mut cb, &["REPLICAOF", "127.0.0.1", &a_port]);
    ok(&mut cc, &["REPLICAOF", "127.0.0.1", &a_port]);
    write_some(&mut ca, "after", 300);
    wait_in_sync(&mut ca, &mut cb);
    wait_in_sync(&mut ca, &mut cc);
    assert_eq!(
        info_u64(&mut ca, "stats", "sync_full"),
        0,
        "a full sync happened"
    );
    assert_eq!(info_u64(&mut ca, "stats", "sync_partial_ok"), 2);
    ok(&mut ca, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    assert_same_data(&state_of(&mut ca), &state_of(&mut cb));
    assert_same_data(&state_of(&mut ca), &state_of(&mut cc));
}

#[test]
fn a_chained_replica_stays_consistent() {
    let master_process = redis_master(&[]);
    let mut master = RawClient::connect(master_process.port);
    populate(&mut master);
    let port = master_process.port.to_string();
    let node = ServerProcess::storage_node(&["--replicaof", "127.0.0.1", &port]);
    let sub = replica_of(&node);
    let mut cn = RawClient::connect(node.port);
    let mut cs = RawClient::connect(sub.port);
    write_some(&mut master, "chain", 500);
    ok(&mut master, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    wait_in_sync(&mut master, &mut cn);
    wait_in_sync(&mut master, &mut cs);
    // The node passes the master's stream on unchanged: the same ids and offsets.
    assert_eq!(
        info(&mut cs, "replication", "master_replid"),
        info(&mut master, "replication", "master_replid")
    );
    assert_same_data(&state_of(&mut master), &state_of(&mut cs));
    // ROLE on the node replica.
    let role = cn.call(&["ROLE"]);
    let offset = info_u64(&mut cn, "replication", "slave_repl_offset") as i64;
    assert_eq!(
        role,
        Frame::Array(vec![
            Frame::Bulk("slave".into()),
            Frame::Bulk("127.0.0.1".into()),
            Frame::Integer(master_process.port.into()),
            Frame::Bulk("connected".into()),
            Frame::Integer(offset),
        ])
    );
}
