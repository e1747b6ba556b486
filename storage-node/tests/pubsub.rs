//! Pub/sub compared with a real redis-server: confirmations, messages byte for byte to
//! several subscribers and patterns in RESP2 and RESP3, subscriber mode, shard channels,
//! introspection, and cleanup when subscribers leave.

use slotproxy::resp::Frame;
use test_harness::{show, Differential, RawClient};

/// A client on each server, compared byte for byte.
struct Pair {
    node: RawClient,
    redis: RawClient,
}

impl Pair {
    fn new(d: &Differential) -> Pair {
        let (node, redis) = d.clients();
        Pair { node, redis }
    }

    fn resp3(d: &Differential) -> Pair {
        let mut pair = Pair::new(d);
        pair.node.call(&["HELLO", "3"]);
        pair.redis.call(&["HELLO", "3"]);
        pair
    }

    fn send(&mut self, args: &[&str]) {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.node.send(&args);
        self.redis.send(&args);
    }

    /// Reads one frame from each and asserts identical bytes.
    fn expect_same(&mut self, what: &str) -> Frame {
        let (frame, node) = self.node.read_reply();
        let redis = self.redis.read_reply().1;
        assert_eq!(show(&node), show(&redis), "{what}");
        frame
    }

    fn check(&mut self, args: &[&str]) -> Frame {
        self.send(args);
        self.expect_same(&format!("{args:?}"))
    }

    /// A command answering several frames (one confirmation per name).
    fn check_n(&mut self, args: &[&str], frames: usize) {
        self.send(args);
        for _ in 0..frames {
            self.expect_same(&format!("{args:?}"));
        }
    }

    /// Both replies as frames, sorted when they are arrays (PUBSUB CHANNELS order is the
    /// hash table's in both servers).
    fn check_sorted(&mut self, args: &[&str]) {
        let node = self.node.call(args);
        let redis = self.redis.call(args);
        let sorted = |f: Frame| {
            let mut items: Vec<Vec<u8>> = f
                .as_array()
                .unwrap_or_default()
                .iter()
                .filter_map(|i| i.as_bytes().map(<[u8]>::to_vec))
                .collect();
            items.sort();
            items
        };
        assert_eq!(sorted(node), sorted(redis), "{args:?}");
    }
}

#[test]
fn confirmations_and_subscriber_mode_match_redis() {
    let d = Differential::start();
    for resp3 in [false, true] {
        let mut c = if resp3 {
            Pair::resp3(&d)
        } else {
            Pair::new(&d)
        };
        c.check(&["UNSUBSCRIBE"]);
        c.check(&["PUNSUBSCRIBE"]);
        c.check(&["SUNSUBSCRIBE"]);
        c.check(&["UNSUBSCRIBE", "never"]);
        c.check_n(&["SUBSCRIBE", "a", "b", "a"], 3);
        c.check_n(&["PSUBSCRIBE", "p*", "q?"], 2);
        c.check_n(&["SSUBSCRIBE", "s1", "s2"], 2);
        // Subscriber mode: RESP2 refuses other commands, RESP3 runs them.
        c.check(&["GET", "k"]);
        c.check(&["CONFIG", "GET", "maxclients"]);
        c.check(&["MULTI"]);
        c.check(&["DISCARD"]);
        c.check(&["PING"]);
        c.check(&["PING", "hello"]);
        c.check(&["PING", "a", "b"]);
        c.check(&["NOSUCHCOMMAND"]);
        c.check(&["SUBSCRIBE"]);
        c.check_n(&["UNSUBSCRIBE", "b", "zz"], 2);
        c.check_n(&["PUNSUBSCRIBE", "q?"], 1);
        c.check_n(&["SUNSUBSCRIBE", "s1"], 1);
        c.check_n(&["UNSUBSCRIBE"], 1);
        c.check_n(&["PUNSUBSCRIBE"], 1);
        c.check(&["GET", "k"]);
        c.check_n(&["SUNSUBSCRIBE"], 1);
        // Out of subscriber mode again.
        c.check(&["GET", "k"]);
        c.check(&["PING"]);
        c.check_n(&["SUBSCRIBE", "x"], 1);
        c.check(&["RESET"]);
        c.check(&["GET", "k"]);
    }
}

#[test]
fn messages_reach_every_subscriber_identically() {
    let d = Differential::start();
    let mut publisher = Pair::new(&d);
    let mut plain2 = Pair::new(&d);
    let mut plain3 = Pair::resp3(&d);
    let mut pattern2 = Pair::new(&d);
    let mut pattern3 = Pair::resp3(&d);
    let mut shard3 = Pair::resp3(&d);
    plain2.check_n(&["SUBSCRIBE", "news", "sport"], 2);
    plain3.check_n(&["SUBSCRIBE", "news"], 1);
    pattern2.check_n(&["PSUBSCRIBE", "n*"], 1);
    pattern3.check_n(&["PSUBSCRIBE", "[ns]port", "news"], 2);
    shard3.check_n(&["SSUBSCRIBE", "news"], 1);

    publisher.check(&["PUBLISH", "news", "hello"]);
    plain2.expect_same("plain2 news");
    plain3.expect_same("plain3 news");
    pattern2.expect_same("pattern2 news");
    pattern3.expect_same("pattern3 news (pattern 'news')");

    publisher.check(&["PUBLISH", "sport", "x"]);
    plain2.expect_same("plain2 sport");
    pattern3.expect_same("pattern3 sport");

    let binary = "bin\r\n\0ary";
    publisher.check(&["PUBLISH", "news", binary]);
    plain2.expect_same("plain2 binary");
    plain3.expect_same("plain3 binary");
    pattern2.expect_same("pattern2 binary");
    pattern3.expect_same("pattern3 binary");

    publisher.check(&["PUBLISH", "nobody", "x"]);
    pattern2.expect_same("pattern2 nobody");
    publisher.check(&["PUBLISH", "", "empty channel"]);
    publisher.check(&["SPUBLISH", "news", "sharded"]);
    shard3.expect_same("shard3");
    publisher.check(&["SPUBLISH", "sport", "nobody"]);

    // A RESP3 client that publishes to itself gets the push before the reply.
    plain3.check(&["PUBLISH", "news", "self"]);
    plain3.expect_same("plain3 self reply");
    plain2.expect_same("plain2 self");
    pattern2.expect_same("pattern2 self");
    pattern3.expect_same("pattern3 self");

    // Introspection.
    publisher.check_sorted(&["PUBSUB", "CHANNELS"]);
    publisher.check_sorted(&["PUBSUB", "CHANNELS", "n*"]);
    publisher.check_sorted(&["PUBSUB", "SHARDCHANNELS"]);
    publisher.check(&["PUBSUB", "NUMSUB", "news", "sport", "none"]);
    publisher.check(&["PUBSUB", "NUMSUB"]);
    publisher.check(&["PUBSUB", "SHARDNUMSUB", "news", "none"]);
    publisher.check(&["PUBSUB", "NUMPAT"]);
    publisher.check(&["PUBSUB", "HELP"]);
    publisher.check(&["PUBSUB", "NUMPAT", "x"]);
    publisher.check(&["PUBSUB", "CHANNELS", "a", "b"]);
    publisher.check(&["PUBSUB", "NOSUCH"]);
    publisher.check(&["PUBLISH", "onlyone"]);
}

#[test]
fn resp3_subscribers_run_commands_between_pushes() {
    let d = Differential::start();
    let mut publisher = Pair::new(&d);
    let mut sub = Pair::resp3(&d);
    sub.check_n(&["SUBSCRIBE", "c"], 1);
    sub.check(&["SET", "k", "v"]);
    publisher.check(&["PUBLISH", "c", "m1"]);
    sub.expect_same("push");
    sub.check(&["GET", "k"]);
    // Switching to RESP2 while subscribed: messages become arrays.
    sub.node.call(&["HELLO", "2"]);
    sub.redis.call(&["HELLO", "2"]);
    publisher.check(&["PUBLISH", "c", "m2"]);
    sub.expect_same("array after HELLO 2");
    sub.check(&["GET", "k"]);
}

#[test]
fn client_list_counts_subscriptions() {
    let d = Differential::start();
    let mut sub = Pair::new(&d);
    let mut observer = Pair::new(&d);
    sub.check_n(&["SUBSCRIBE", "a", "b"], 2);
    sub.check_n(&["PSUBSCRIBE", "p*"], 1);
    sub.check_n(&["SSUBSCRIBE", "s"], 1);
    let fields = |client: &mut RawClient| {
        let frame = client.call(&["CLIENT", "LIST", "TYPE", "pubsub"]);
        let text = String::from_utf8_lossy(frame.as_bytes().unwrap_or_default()).into_owned();
        text.split(' ')
            .filter(|f| {
                ["flags=", "sub=", "psub=", "ssub="]
                    .iter()
                    .any(|p| f.starts_with(p))
            })
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(fields(&mut observer.node), fields(&mut observer.redis));
    observer.check(&["INFO", "NOSUCHSECTION"]);
}

/// Polls PUBSUB NUMSUB / NUMPAT (bounded) until the node has cleaned up after a client.
fn wait_for_cleanup(client: &mut RawClient, channel: &str) {
    for _ in 0..1000 {
        let numsub = client.call(&["PUBSUB", "NUMSUB", channel]);
        let count = numsub
            .as_array()
            .and_then(|a| a.get(1))
            .and_then(Frame::as_integer);
        let numpat = client.call(&["PUBSUB", "NUMPAT"]).as_integer();
        if count == Some(0) && numpat == Some(0) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("subscriptions of a closed client were never removed");
}

#[test]
fn disconnect_and_reset_leave_no_trace() {
    let d = Differential::start();
    let mut observer = Pair::new(&d);
    let mut sub = Pair::new(&d);
    sub.check_n(&["SUBSCRIBE", "gone"], 1);
    sub.check_n(&["PSUBSCRIBE", "g*"], 1);
    sub.check_n(&["SSUBSCRIBE", "gone"], 1);
    sub.check(&["RESET"]);
    observer.check(&["PUBSUB", "NUMSUB", "gone"]);
    observer.check(&["PUBSUB", "NUMPAT"]);
    observer.check(&["PUBSUB", "SHARDNUMSUB", "gone"]);
    observer.check(&["PUBLISH", "gone", "x"]);

    sub.check_n(&["SUBSCRIBE", "gone"], 1);
    sub.check_n(&["PSUBSCRIBE", "g*"], 1);
    drop(sub);
    wait_for_cleanup(&mut observer.node, "gone");
    wait_for_cleanup(&mut observer.redis, "gone");
    observer.check(&["PUBLISH", "gone", "x"]);
    observer.check_sorted(&["PUBSUB", "CHANNELS"]);
}

#[test]
fn quit_in_subscriber_mode_closes() {
    let d = Differential::start();
    let mut sub = Pair::new(&d);
    sub.check_n(&["SUBSCRIBE", "c"], 1);
    sub.check(&["QUIT"]);
    assert!(sub.node.try_read_reply().is_none());
}
