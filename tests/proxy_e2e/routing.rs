//! Routing by slot, pipelining, local commands, RESP3 and the same-slot rules.

use slotproxy::cluster::key_slot;
use slotproxy::resp::Frame;
use test_harness::{Cluster, RawClient};

fn bulk(frame: &Frame) -> Option<String> {
    frame
        .as_bytes()
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

pub fn single_keys_reach_their_slot_owner(cluster: &Cluster, port: u16) {
    let mut proxy = RawClient::connect(port);
    let mut direct: Vec<RawClient> = cluster
        .nodes
        .iter()
        .map(|n| RawClient::connect(n.port))
        .collect();
    for i in 0..200 {
        let key = format!("route:{i}");
        assert_eq!(
            proxy.call(&["SET", &key, &i.to_string()]),
            Frame::Simple("OK".into())
        );
        let owner = cluster.node_for_slot(key_slot(key.as_bytes()));
        let stored = direct[owner].call(&["GET", &key]);
        assert_eq!(bulk(&stored), Some(i.to_string()), "{key} on its owner");
        assert_eq!(bulk(&proxy.call(&["GET", &key])), Some(i.to_string()));
    }
}

pub fn pipeline_of_10000_mixed_commands(port: u16) {
    let mut client = RawClient::connect(port);
    let mut batch = Vec::new();
    for i in 0..2500 {
        let key = format!("pipe:{i}");
        batch.extend(RawClient::encode(&[
            b"SET",
            key.as_bytes(),
            i.to_string().as_bytes(),
        ]));
        batch.extend(RawClient::encode(&[b"GET", key.as_bytes()]));
        batch.extend(RawClient::encode(&[b"INCR", key.as_bytes()]));
        batch.extend(RawClient::encode(&[
            b"MGET",
            key.as_bytes(),
            b"pipe:nosuch",
            key.as_bytes(),
        ]));
    }
    client.send_raw(&batch);
    for i in 0..2500i64 {
        assert_eq!(client.read_reply().0, Frame::Simple("OK".into()), "SET {i}");
        assert_eq!(bulk(&client.read_reply().0), Some(i.to_string()), "GET {i}");
        assert_eq!(client.read_reply().0, Frame::Integer(i + 1), "INCR {i}");
        let mget = client.read_reply().0;
        let items = mget.as_array().expect("MGET array");
        assert_eq!(items.len(), 3);
        assert_eq!(bulk(&items[0]), Some((i + 1).to_string()));
        assert_eq!(items[1], Frame::Null);
    }
}

pub fn local_commands_and_errors(port: u16) {
    let mut c = RawClient::connect(port);
    assert_eq!(c.call(&["PING"]), Frame::Simple("PONG".into()));
    assert_eq!(bulk(&c.call(&["ECHO", "hi"])), Some("hi".into()));
    assert_eq!(c.call(&["SELECT", "0"]), Frame::Simple("OK".into()));
    assert_eq!(
        c.call(&["SELECT", "1"]),
        Frame::Error("ERR SELECT is not allowed in cluster mode".into())
    );
    assert_eq!(
        c.call(&["NOSUCH", "a"]),
        Frame::Error("ERR unknown command 'NOSUCH', with args beginning with: 'a' ".into())
    );
    assert_eq!(
        c.call(&["GET"]),
        Frame::Error("ERR wrong number of arguments for 'get' command".into())
    );
    assert_eq!(
        c.call(&["CLIENT", "SETNAME", "tester"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(bulk(&c.call(&["CLIENT", "GETNAME"])), Some("tester".into()));
    assert!(matches!(c.call(&["CLIENT", "ID"]), Frame::Integer(id) if id > 0));
    let list = bulk(&c.call(&["CLIENT", "LIST"])).unwrap_or_default();
    assert!(list.contains("name=tester"), "{list}");
    // The proxy lists the Redis 7.0 commands it serves: all but those it refuses.
    let served = c.call(&["COMMAND"]).as_array().map_or(0, <[Frame]>::len) as i64;
    assert_eq!(c.call(&["COMMAND", "COUNT"]), Frame::Integer(served));
    assert!((200..240).contains(&served), "{served}");
    assert_eq!(
        c.call(&["CLUSTER", "KEYSLOT", "foo"]),
        Frame::Integer(12182)
    );
    let slots = c.call(&["CLUSTER", "SLOTS"]);
    let range = &slots.as_array().expect("slots")[0];
    assert_eq!(range.as_array().expect("range")[1], Frame::Integer(16383));
    let config = c.call(&["CONFIG", "GET", "save"]);
    assert_eq!(config.as_array().map(<[Frame]>::len), Some(2));
    let info = bulk(&c.call(&["INFO"])).unwrap_or_default();
    assert!(
        info.contains("# Keyspace") && info.contains("connected_clients:"),
        "{info}"
    );
    assert!(c.call(&["SHUTDOWN"]).is_error());
    assert_eq!(
        c.call(&["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"]),
        Frame::Array(vec![Frame::bulk("a"), Frame::bulk("b")])
    );
}

pub fn resp3_through_the_proxy(port: u16) {
    let mut c = RawClient::connect(port);
    let hello = c.call(&["HELLO", "3"]);
    assert!(matches!(hello, Frame::Map(_)), "{hello:?}");
    assert_eq!(c.call(&["GET", "resp3:nosuch"]), Frame::Null);
    c.call(&["HSET", "resp3:h", "f", "v"]);
    assert_eq!(
        c.call(&["HGETALL", "resp3:h"]),
        Frame::Map(vec![(Frame::bulk("f"), Frame::bulk("v"))])
    );
    let mget = c.call(&["MGET", "resp3:h2", "resp3:other", "x"]);
    assert_eq!(
        mget,
        Frame::Array(vec![Frame::Null, Frame::Null, Frame::Null])
    );
    assert_eq!(
        c.call(&["HELLO", "2"]).as_array().map(<[Frame]>::len),
        Some(14)
    );
    assert_eq!(c.call(&["GET", "resp3:nosuch"]), Frame::Null);
}

pub fn same_slot_rules(port: u16) {
    let crossslot = Frame::Error("CROSSSLOT Keys in request don't hash to the same slot".into());
    let mut c = RawClient::connect(port);
    c.call(&["SET", "a", "1"]);
    assert_eq!(c.call(&["RENAME", "a", "b"]), crossslot);
    assert_eq!(c.call(&["MSETNX", "a", "1", "b", "2"]), crossslot);
    assert_eq!(c.call(&["SINTERSTORE", "d", "a", "b"]), crossslot);
    assert_eq!(c.call(&["EVAL", "return 1", "2", "a", "b"]), crossslot);
    assert_eq!(c.call(&["SET", "{t}a", "1"]), Frame::Simple("OK".into()));
    assert_eq!(
        c.call(&["RENAME", "{t}a", "{t}b"]),
        Frame::Simple("OK".into())
    );
    assert_eq!(
        c.call(&["EVAL", "return redis.call('GET', KEYS[1])", "1", "{t}b"]),
        Frame::bulk("1")
    );
    assert_eq!(c.call(&["EVAL", "return 7", "0"]), Frame::Integer(7));
    assert_eq!(
        c.call(&["MSETNX", "{t}x", "1", "{t}y", "2"]),
        Frame::Integer(1)
    );
    // A GEO search's STORE destination is a key like its source.
    assert_eq!(
        c.call(&["GEOADD", "{g}src", "13.361389", "38.115556", "p"]),
        Frame::Integer(1)
    );
    let georadius = ["GEORADIUS", "{g}src", "13", "38", "100", "km", "STORE"];
    assert_eq!(c.call(&[&georadius[..], &["dst"]].concat()), crossslot);
    assert_eq!(
        c.call(&[&georadius[..6], &["STOREDIST", "dst"]].concat()),
        crossslot
    );
    let search = ["{g}src", "FROMMEMBER", "p", "BYRADIUS", "1", "km"];
    assert_eq!(
        c.call(&[&["GEOSEARCHSTORE", "dst"][..], &search].concat()),
        crossslot
    );
    assert_eq!(
        c.call(&[&georadius[..], &["{g}dst"]].concat()),
        Frame::Integer(1)
    );
    assert_eq!(
        c.call(&[&["GEOSEARCHSTORE", "{g}d2"][..], &search].concat()),
        Frame::Integer(1)
    );
    assert_eq!(
        c.call(&["GEORADIUSBYMEMBER_RO", "{g}dst", "p", "1", "km"]),
        Frame::Array(vec![Frame::bulk("p")])
    );
}
