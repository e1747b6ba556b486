//! Keyspace notifications compared between a storage-node and a real redis-server: a
//! subscriber per server on every keyspace event, and a sentinel message published after
//! each command so the events it caused can be read without waiting on a clock.

pub use crate::show;
use crate::{Differential, RawClient};

/// Reads messages until the sentinel published after the command arrives.
pub fn messages_until_sentinel(subscriber: &mut RawClient) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..1000 {
        let raw = subscriber.read_reply().1;
        if show(&raw).contains("__sentinel__") {
            return seen;
        }
        seen.push(show(&raw));
    }
    panic!("no sentinel");
}

/// Subscribes to every keyspace event and the sentinel, reading both confirmations (the
/// second names the sentinel, so leaving it unread would end the first wait at once).
pub fn subscribe(subscriber: &mut RawClient) {
    subscriber.call(&["PSUBSCRIBE", "__key*__:*", "__sentinel__"]);
    subscriber.read_reply();
}

/// Runs each command on both servers (with `notify-keyspace-events` set to `flags`, the
/// subscribers in RESP3 when `resp3`) and compares the reply and the notifications it
/// caused. SPOP's reply is random, so only its events are compared.
pub fn compare_notifications(d: &Differential, flags: &str, resp3: bool, commands: &[&[&str]]) {
    let (mut node, mut redis) = d.clients();
    let (mut node_sub, mut redis_sub) = d.clients();
    for (client, subscriber) in [(&mut node, &mut node_sub), (&mut redis, &mut redis_sub)] {
        client.call(&["FLUSHALL"]);
        client.call(&["CONFIG", "SET", "notify-keyspace-events", flags]);
        if resp3 {
            subscriber.call(&["HELLO", "3"]);
        }
        subscribe(subscriber);
    }
    for command in commands {
        let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
        let mut events = Vec::new();
        for (client, subscriber) in [(&mut node, &mut node_sub), (&mut redis, &mut redis_sub)] {
            let mut reply = show(&client.call_raw(&args));
            if command[0] == "SPOP" {
                reply = "(random)".into();
            }
            client.call(&["PUBLISH", "__sentinel__", "end"]);
            events.push((reply, messages_until_sentinel(subscriber)));
        }
        assert_eq!(events[0], events[1], "{command:?} with flags {flags:?}");
    }
    for client in [&mut node, &mut redis] {
        client.call(&["CONFIG", "SET", "notify-keyspace-events", ""]);
    }
}
