//! CLIENT subcommands compared with a real redis-server. CLIENT LIST / INFO lines differ
//! between servers (ids, ports, ages), so they are checked by parsing.

use std::collections::BTreeMap;

use proptest::prelude::*;
use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient};

fn text_of(frame: &Frame) -> String {
    String::from_utf8_lossy(frame.as_bytes().expect("a string reply")).into_owned()
}

/// One CLIENT LIST line as (field, value) pairs in order.
fn parse_line(line: &str) -> Vec<(String, String)> {
    line.split(' ')
        .map(|pair| {
            let (k, v) = pair.split_once('=').expect("field=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn lines(frame: &Frame) -> Vec<BTreeMap<String, String>> {
    let text = text_of(frame);
    assert!(text.is_empty() || text.ends_with('\n'), "{text:?}");
    text.lines()
        .map(|l| parse_line(l).into_iter().collect())
        .collect()
}

#[test]
fn client_errors_and_simple_replies_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["CLIENT"],
        &["CLIENT", "NOSUCH"],
        &["CLIENT", "ID", "x"],
        &["CLIENT", "GETNAME"],
        &["CLIENT", "GETNAME", "x"],
        &["CLIENT", "SETNAME", "a b"],
        &["CLIENT", "SETNAME", "a\nb"],
        &["CLIENT", "SETNAME", "good-name"],
        &["CLIENT", "GETNAME"],
        &["CLIENT", "SETNAME", ""],
        &["CLIENT", "GETNAME"],
        &["CLIENT", "SETNAME"],
        &["CLIENT", "INFO", "x"],
        &["CLIENT", "LIST", "TYPE", "foo"],
        &["CLIENT", "LIST", "TYPE", "master"],
        &["CLIENT", "LIST", "TYPE", "replica"],
        &["CLIENT", "LIST", "TYPE", "slave"],
        &["CLIENT", "LIST", "TYPE", "PUBSUB"],
        &["CLIENT", "LIST", "ID", "1", "2", "abc"],
        &["CLIENT", "LIST", "ID"],
        &["CLIENT", "LIST", "ID", "0"],
        &["CLIENT", "LIST", "ID", "99999"],
        &["CLIENT", "LIST", "foo"],
        &["CLIENT", "LIST", "TYPE", "normal", "ID", "3"],
        &["CLIENT", "KILL"],
        &["CLIENT", "KILL", "1.2.3.4:5"],
        &["CLIENT", "KILL", "addr"],
        &["CLIENT", "KILL", "1.2.3.4:5", "x"],
        &["CLIENT", "KILL", "ID", "99999"],
        &["CLIENT", "KILL", "ID", "0"],
        &["CLIENT", "KILL", "ID", "-1"],
        &["CLIENT", "KILL", "ID", "abc"],
        &["CLIENT", "KILL", "foo", "bar"],
        &["CLIENT", "KILL", "SKIPME", "maybe"],
        &["CLIENT", "KILL", "TYPE", "foo"],
        &["CLIENT", "KILL", "TYPE", "master"],
        &["CLIENT", "KILL", "TYPE", "pubsub"],
        &["CLIENT", "KILL", "USER", "nobody"],
        &["CLIENT", "KILL", "USER", "default"],
        &["CLIENT", "KILL", "LADDR", "1.2.3.4:5"],
        &["CLIENT", "KILL", "ADDR", "1.2.3.4:5", "SKIPME", "no"],
        &["CLIENT", "KILL", "ID", "99999", "TYPE"],
        &["CLIENT", "KILL", "MAXAGE", "10"],
        &["CLIENT", "NO-EVICT", "maybe"],
        &["CLIENT", "NO-EVICT", "on"],
        &["CLIENT", "NO-EVICT", "OFF"],
        &["CLIENT", "NO-EVICT"],
        &["CLIENT", "REPLY", "foo"],
        &["CLIENT", "REPLY", "on"],
        &["CLIENT", "REPLY"],
        // Redis 7.0 has no SETINFO (it came in 7.2).
        &["CLIENT", "SETINFO", "lib-name", "x"],
    ]);
}

#[test]
fn client_help_is_redis_help() {
    let mut d = Differential::start();
    d.check(&["CLIENT", "HELP"]);
}

#[test]
fn client_list_and_info_have_redis_fields_in_order() {
    let mut d = Differential::start();
    d.node_client.call(&["CLIENT", "SETNAME", "me"]);
    d.redis_client.call(&["CLIENT", "SETNAME", "me"]);
    for args in [&["CLIENT", "INFO"][..], &["CLIENT", "LIST"]] {
        let (node, redis) = d.both(args);
        let node_line = text_of(&node);
        let redis_line = text_of(&redis);
        let node_fields: Vec<String> = parse_line(node_line.lines().next().expect("a line"))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let redis_fields: Vec<String> = parse_line(redis_line.lines().next().expect("a line"))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(node_fields, redis_fields, "{args:?}");
    }
    let id = match d.node_client.call(&["CLIENT", "ID"]) {
        Frame::Integer(id) => id,
        other => panic!("CLIENT ID answered {other:?}"),
    };
    let info = &lines(&d.node_client.call(&["CLIENT", "INFO"]))[0];
    assert_eq!(info["id"], id.to_string());
    assert_eq!(info["name"], "me");
    assert_eq!(info["cmd"], "client|info");
    assert_eq!(info["db"], "0");
    assert_eq!(info["resp"], "2");
    assert_eq!(info["flags"], "N");
    assert_eq!(info["user"], "default");
    assert!(info["fd"].parse::<i32>().expect("fd") > 2);
    assert_eq!(info["laddr"], format!("127.0.0.1:{}", d.node.port));

    d.node_client.call(&["SELECT", "3"]);
    d.node_client.call(&["CLIENT", "NO-EVICT", "on"]);
    d.node_client.call(&["HELLO", "3"]);
    let info = &lines(&d.node_client.call(&["CLIENT", "INFO"]))[0];
    assert_eq!(info["db"], "3");
    assert_eq!(info["flags"], "e");
    assert_eq!(info["resp"], "3");
    // CLIENT LIST is verbatim text in RESP3, as in Redis.
    assert!(matches!(
        d.node_client.call(&["CLIENT", "LIST"]),
        Frame::Verbatim { .. }
    ));
    d.node_client.call(&["HELLO", "2"]);

    // Two more clients: LIST shows all of them, ID filters, TYPE normal shows all.
    let mut other = RawClient::connect(d.node.port);
    let other_id = match other.call(&["CLIENT", "ID"]) {
        Frame::Integer(id) => id,
        f => panic!("{f:?}"),
    };
    let all = lines(&d.node_client.call(&["CLIENT", "LIST"]));
    assert!(all.iter().any(|c| c["id"] == other_id.to_string()));
    assert!(all.iter().any(|c| c["id"] == id.to_string()));
    let ids: Vec<u64> = all.iter().map(|c| c["id"].parse().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "CLIENT LIST is in id order");
    let picked =
        lines(
            &d.node_client
                .call(&["CLIENT", "LIST", "ID", &other_id.to_string(), "99999"]),
        );
    assert_eq!(picked.len(), 1);
    assert_eq!(picked[0]["id"], other_id.to_string());
    assert_eq!(picked[0]["cmd"], "client|id");
    let normal = lines(&d.node_client.call(&["CLIENT", "LIST", "TYPE", "normal"]));
    assert_eq!(normal.len(), all.len());
}

#[test]
fn client_kill_closes_the_matching_connections() {
    let d = Differential::start();
    let mut killer = RawClient::connect(d.node.port);
    let mut victim = RawClient::connect(d.node.port);
    let victim_id = match victim.call(&["CLIENT", "ID"]) {
        Frame::Integer(id) => id,
        f => panic!("{f:?}"),
    };
    assert_eq!(
        killer.call(&["CLIENT", "KILL", "ID", &victim_id.to_string()]),
        Frame::Integer(1)
    );
    assert!(victim.try_read_reply().is_none(), "victim still connected");
    // Killing it again finds nothing.
    assert_eq!(
        killer.call(&["CLIENT", "KILL", "ID", &victim_id.to_string()]),
        Frame::Integer(0)
    );

    // Old form, by address.
    let mut victim = RawClient::connect(d.node.port);
    let info = lines(&victim.call(&["CLIENT", "INFO"]));
    let addr = info[0]["addr"].clone();
    assert_eq!(
        killer.call(&["CLIENT", "KILL", &addr]),
        Frame::Simple("OK".into())
    );
    assert!(victim.try_read_reply().is_none());
    assert_eq!(
        killer.call(&["CLIENT", "KILL", &addr]),
        Frame::Error("ERR No such client".into())
    );

    // SKIPME: by default the caller survives a filter that matches it.
    let laddr = format!("127.0.0.1:{}", d.node.port);
    let mut a = RawClient::connect(d.node.port);
    a.call(&["PING"]);
    let killed = match killer.call(&["CLIENT", "KILL", "LADDR", &laddr]) {
        Frame::Integer(n) => n,
        f => panic!("{f:?}"),
    };
    assert!(killed >= 1);
    assert!(a.try_read_reply().is_none());
    assert_eq!(killer.call(&["PING"]), Frame::Simple("PONG".into()));
    // SKIPME no: the caller is killed too, after its reply.
    let reply = killer.call(&["CLIENT", "KILL", "USER", "default", "SKIPME", "no"]);
    assert!(matches!(reply, Frame::Integer(n) if n >= 1), "{reply:?}");
    assert!(killer.try_read_reply().is_none());
}

#[test]
fn client_reply_modes_match_redis() {
    let d = Differential::start();
    let (mut node, mut redis) = d.clients();
    // A pipeline whose replies depend on the reply mode; a final ECHO marks the end.
    let input: Vec<u8> = [
        &["CLIENT", "REPLY", "OFF"][..],
        &["PING"],
        &["CLIENT", "REPLY", "SKIP"],
        &["ECHO", "hidden"],
        &["CLIENT", "REPLY", "ON"],
        &["ECHO", "one"],
        &["CLIENT", "REPLY", "SKIP"],
        &["ECHO", "skipped"],
        &["ECHO", "two"],
        &["CLIENT", "REPLY", "SKIP"],
        &["CLIENT", "REPLY", "ON"],
        &["ECHO", "END"],
    ]
    .iter()
    .flat_map(|words| {
        let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        RawClient::encode(&args)
    })
    .collect();
    node.send_raw(&input);
    redis.send_raw(&input);
    loop {
        let (_, a) = node.read_reply();
        let (_, b) = redis.read_reply();
        assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
        if a == b"$3\r\nEND\r\n" {
            break;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random CLIENT subcommands with random arguments agree with Redis byte for byte
    /// (those whose replies do not carry ids, addresses or times).
    #[test]
    fn random_client_commands_match_redis(ops in prop::collection::vec((0usize..7, 0usize..8, 0usize..8), 1..10)) {
        thread_local! {
            static PAIR: std::cell::RefCell<Option<Differential>> = const { std::cell::RefCell::new(None) };
        }
        const SUBS: &[&str] = &["SETNAME", "GETNAME", "NO-EVICT", "KILL", "LIST", "REPLY", "NOSUCH"];
        const ARGS: &[&str] = &["on", "off", "ID", "TYPE", "x y", "nobody", "0", "SKIPME"];
        PAIR.with(|pair| {
            let mut pair = pair.borrow_mut();
            let d = pair.get_or_insert_with(Differential::start);
            d.check(&["CLIENT", "SETNAME", ""]);
            for (sub, a, b) in &ops {
                let mut args = vec!["CLIENT", SUBS[*sub]];
                match SUBS[*sub] {
                    "GETNAME" => {}
                    "SETNAME" | "NO-EVICT" => args.push(ARGS[*a]),
                    // Only the error paths of LIST (its success output differs).
                    "LIST" => args.extend([ARGS[*a], ARGS[*b], "zz"]),
                    "KILL" => args.extend([ARGS[*a], ARGS[*b], "ID"]),
                    // REPLY OFF/SKIP would hide replies: only the error path.
                    "REPLY" => args.push("bogus"),
                    _ => args.push(ARGS[*a]),
                }
                d.check(&args);
            }
        });
    }
}
