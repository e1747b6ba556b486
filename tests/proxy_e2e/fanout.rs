//! Multi-key commands split by slot and merged, and commands sent to every master.

use std::collections::HashSet;

use slotproxy::resp::Frame;
use test_harness::RawClient;

fn words(frame: &Frame) -> Vec<String> {
    frame
        .as_array()
        .unwrap_or(&[])
        .iter()
        .map(|f| {
            f.as_bytes()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_else(|| "<nil>".into())
        })
        .collect()
}

pub fn mget_of_1000_keys_over_all_slots(port: u16) {
    let mut c = RawClient::connect(port);
    let mut mset: Vec<String> = vec!["MSET".into()];
    for i in 0..1000 {
        mset.push(format!("fan:{i}"));
        mset.push(format!("v{i}"));
    }
    let refs: Vec<&str> = mset.iter().map(String::as_str).collect();
    assert_eq!(c.call(&refs), Frame::Simple("OK".into()));
    let mut mget: Vec<String> = vec!["MGET".into()];
    mget.extend((0..1000).map(|i| format!("fan:{i}")));
    mget.push("fan:missing".into());
    let refs: Vec<&str> = mget.iter().map(String::as_str).collect();
    let values = words(&c.call(&refs));
    assert_eq!(values.len(), 1001);
    for (i, v) in values.iter().take(1000).enumerate() {
        assert_eq!(v, &format!("v{i}"));
    }
    assert_eq!(values[1000], "<nil>");
}

pub fn split_commands_merge_like_one_server(port: u16) {
    let mut c = RawClient::connect(port);
    let keys: Vec<String> = (0..50).map(|i| format!("split:{i}")).collect();
    let mut args = vec!["EXISTS"];
    args.extend(keys.iter().map(String::as_str));
    assert_eq!(c.call(&args), Frame::Integer(0));
    for k in &keys[..30] {
        c.call(&["SET", k, "x"]);
    }
    assert_eq!(c.call(&args), Frame::Integer(30));
    args[0] = "TOUCH";
    assert_eq!(c.call(&args), Frame::Integer(30));
    let mut dup = vec!["EXISTS", "split:0", "split:0", "split:1"];
    assert_eq!(c.call(&dup), Frame::Integer(3));
    dup[0] = "UNLINK";
    assert_eq!(c.call(&dup), Frame::Integer(2));
    args[0] = "DEL";
    assert_eq!(c.call(&args), Frame::Integer(28));
    assert_eq!(c.call(&["DEL", "split:0"]), Frame::Integer(0));
}

pub fn all_master_commands(port: u16) {
    let mut c = RawClient::connect(port);
    assert_eq!(c.call(&["FLUSHALL"]), Frame::Simple("OK".into()));
    assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(0));
    assert_eq!(c.call(&["RANDOMKEY"]), Frame::Null);
    let expected: HashSet<String> = (0..300).map(|i| format!("all:{i}")).collect();
    for k in &expected {
        c.call(&["SET", k, "1"]);
    }
    assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(300));
    let keys: HashSet<String> = words(&c.call(&["KEYS", "all:*"])).into_iter().collect();
    assert_eq!(keys, expected);
    assert!(expected.contains(&words(&Frame::Array(vec![c.call(&["RANDOMKEY"])]))[0]));
    let mut cursor = "0".to_string();
    let mut seen = HashSet::new();
    for _ in 0..10_000 {
        let reply = c.call(&["SCAN", &cursor, "COUNT", "37"]);
        let items = reply.as_array().expect("scan reply");
        cursor = String::from_utf8_lossy(items[0].as_bytes().expect("cursor")).into_owned();
        seen.extend(words(&items[1]));
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(cursor, "0", "SCAN finished");
    assert_eq!(seen, expected);
    // Cursors are read as Redis reads them (strtoul): empty, signed and NUL-cut zeros start
    // the iteration like "0"; leading blanks are refused.
    let first = c.call(&["SCAN", "0", "COUNT", "37"]);
    for start in ["", "+0", "-0", "0\0junk"] {
        assert_eq!(c.call(&["SCAN", start, "COUNT", "37"]), first, "{start:?}");
    }
    assert_eq!(
        c.call(&["SCAN", " 0"]),
        Frame::Error("ERR invalid cursor".into())
    );
    let sha = c.call(&["SCRIPT", "LOAD", "return redis.call('GET', KEYS[1])"]);
    let sha = String::from_utf8_lossy(sha.as_bytes().expect("sha")).into_owned();
    assert_eq!(
        c.call(&["SCRIPT", "EXISTS", &sha, "0000"]),
        Frame::Array(vec![Frame::Integer(1), Frame::Integer(0)])
    );
    for k in expected.iter().take(20) {
        assert_eq!(c.call(&["EVALSHA", &sha, "1", k]), Frame::bulk("1"));
    }
    assert_eq!(c.call(&["FLUSHALL"]), Frame::Simple("OK".into()));
    assert_eq!(c.call(&["DBSIZE"]), Frame::Integer(0));
}
