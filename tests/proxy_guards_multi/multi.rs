//! Every route class of `src/proxy/router.rs` inside MULTI: queued where a one-node
//! transaction gives the answer one server would, refused at queue time otherwise.

use slotproxy::resp::Frame;
use test_harness::RawClient;

use crate::{ok, queued, text};

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// Commands of every class a transaction can carry: the proxy's replies, QUEUED and EXEC's
/// array included, equal a standalone redis-server's.
pub fn queued_like_one_server(proxy_port: u16, redis_port: u16) {
    let transcript: &[&[&str]] = &[
        &["MULTI"],
        &["SET", "{t}a", "1"],         // Slot
        &["MGET", "{t}a", "{t}b"],     // SplitKeys, one slot
        &["EVAL", "return 1", "0"],    // AnyMaster
        &["BLPOP", "{t}list", "1"],    // Blocking(slot): never blocks in MULTI
        &["PING"],                     // Local, queued to the node
        &["ECHO", "hi"],               // Local, queued to the node
        &["UNWATCH"],                  // Transaction
        &["SPUBLISH", "{t}chan", "m"], // Slot of a shard channel
        &["EXEC"],
    ];
    let mut proxy = RawClient::connect(proxy_port);
    let mut redis = RawClient::connect(redis_port);
    for command in transcript {
        let expected = redis.call(command);
        let got = proxy.call(command);
        assert_eq!(got, expected, "{command:?}");
    }
    let exec = redis.call(&["GET", "{t}a"]);
    assert_eq!(proxy.call(&["GET", "{t}a"]), exec);
    // TIME in a transaction is the transaction node's clock.
    assert_eq!(proxy.call(&["MULTI"]), ok());
    assert_eq!(proxy.call(&["TIME"]), queued());
    let exec = proxy.call(&["EXEC"]);
    let items = exec.as_array().expect("EXEC array");
    assert_eq!(items.len(), 1, "{exec:?}");
    assert_eq!(items[0].as_array().map(<[Frame]>::len), Some(2), "{exec:?}");
}

/// MULTI, a queued command, the refused one (its error must contain `expected`), EXEC →
/// EXECABORT, and the queued command did not run.
fn refused(c: &mut RawClient, command: &[&str], expected: &str) {
    assert_eq!(c.call(&["MULTI"]), ok(), "{command:?}");
    assert_eq!(c.call(&["SET", "{r}x", "1"]), queued(), "{command:?}");
    let reply = c.call(command);
    assert!(
        reply.is_error() && text(&reply).contains(expected),
        "{command:?}: {reply:?}"
    );
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Error(EXECABORT.into()),
        "{command:?}"
    );
    assert_eq!(c.call(&["GET", "{r}x"]), Frame::Null, "{command:?}");
}

pub fn refused_at_queue_time(port: u16) {
    let mut c = RawClient::connect(port);
    let every_node = "runs on every node and cannot be part of a transaction";
    let proxy_itself = "is answered by the proxy itself and cannot be part of a transaction";
    // AllMasters: one node's DBSIZE inside EXEC would pass for the whole keyspace.
    refused(
        &mut c,
        &["DBSIZE"],
        "ERR slotproxy: DBSIZE runs on every node",
    );
    refused(&mut c, &["FLUSHALL"], every_node);
    refused(&mut c, &["KEYS", "*"], every_node);
    refused(&mut c, &["SCRIPT", "LOAD", "return 1"], every_node);
    refused(&mut c, &["SLOWLOG", "LEN"], every_node);
    // SplitKeys across slots.
    refused(
        &mut c,
        &["MGET", "a", "b"],
        "CROSSSLOT Keys in request don't hash to the same slot",
    );
    // Config.
    refused(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
        every_node,
    );
    refused(&mut c, &["CONFIG", "GET", "maxmemory"], every_node);
    // Local: the node would answer for itself, not for the proxy.
    refused(&mut c, &["CLIENT", "SETNAME", "x"], proxy_itself);
    refused(&mut c, &["CLIENT", "KILL", "ID", "1"], proxy_itself);
    refused(&mut c, &["INFO"], proxy_itself);
    refused(&mut c, &["CLUSTER", "INFO"], proxy_itself);
    // CLIENT and CLUSTER subcommands the proxy does not serve: the refusal they get
    // outside MULTI.
    let not_served = "is not supported through the proxy";
    refused(&mut c, &["CLIENT", "PAUSE", "10"], not_served);
    refused(&mut c, &["CLUSTER", "MEET", "127.0.0.1", "1"], not_served);
    refused(&mut c, &["CLUSTER", "FORGET", "abc"], not_served);
    refused(&mut c, &["CLUSTER", "SETSLOT", "1", "STABLE"], not_served);
    refused(&mut c, &["CLUSTER", "RESET"], not_served);
    // PubSub and PubSubHome.
    refused(
        &mut c,
        &["SUBSCRIBE", "c"],
        "cannot be part of a transaction",
    );
    refused(
        &mut c,
        &["PUBLISH", "c", "m"],
        "cannot be part of a transaction",
    );
    // Reject: the same refusal as outside MULTI.
    let outside = c.call(&["MEMORY", "STATS"]);
    refused(&mut c, &["MEMORY", "STATS"], &text(&outside));
    refused(&mut c, &["DEBUG", "SLEEP", "0"], "describes a single node");
    refused(&mut c, &["MONITOR"], "is not supported through the proxy");
    // Redis's own rule comes first.
    refused(
        &mut c,
        &["SHUTDOWN"],
        "ERR Command not allowed inside a transaction",
    );
}

pub fn deny_list_holds_inside_multi(port: u16) {
    let mut c = RawClient::connect(port);
    let denied = "ERR slotproxy: command 'getset' is denied by configuration";
    assert_eq!(
        c.call(&["GETSET", "{t}a", "1"]),
        Frame::Error(denied.into())
    );
    refused(&mut c, &["GETSET", "{r}x", "2"], denied);
    refused(&mut c, &["getset", "{r}x", "2"], denied);
}
