//! Differential testing: a storage-node and a real redis-server get the same commands and
//! must answer byte for byte the same.

use slotproxy::resp::Frame;

use crate::client::RawClient;
use crate::process::ServerProcess;

/// A storage-node and a redis-server side by side, with one client each.
pub struct Differential {
    pub node: ServerProcess,
    pub redis: ServerProcess,
    pub node_client: RawClient,
    pub redis_client: RawClient,
    resp3: bool,
}

fn show(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).replace("\r\n", "\\r\\n")
}

impl Differential {
    /// Starts both servers (RESP2 clients).
    pub fn start() -> Differential {
        Self::start_with(&[], &[])
    }

    /// Starts both servers with extra arguments for each.
    pub fn start_with(node_args: &[&str], redis_args: &[&str]) -> Differential {
        let node = ServerProcess::storage_node(node_args);
        let redis = ServerProcess::redis_server(redis_args);
        let node_client = RawClient::connect(node.port);
        let redis_client = RawClient::connect(redis.port);
        Differential {
            node,
            redis,
            node_client,
            redis_client,
            resp3: false,
        }
    }

    /// Switches both clients to RESP3 (or back to RESP2).
    pub fn set_resp3(&mut self, on: bool) {
        let version = if on { "3" } else { "2" };
        self.node_client.call(&["HELLO", version]);
        self.redis_client.call(&["HELLO", version]);
        self.resp3 = on;
    }

    /// Another pair of clients, one to each server.
    pub fn clients(&self) -> (RawClient, RawClient) {
        (
            RawClient::connect(self.node.port),
            RawClient::connect(self.redis.port),
        )
    }

    /// Sends `args` to both servers and asserts the replies are identical bytes.
    pub fn check_bytes(&mut self, args: &[&[u8]]) -> Frame {
        self.node_client.send(args);
        self.redis_client.send(args);
        let (frame, node_raw) = self.node_client.read_reply();
        let (_, redis_raw) = self.redis_client.read_reply();
        let shown: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        assert_eq!(
            show(&node_raw),
            show(&redis_raw),
            "replies differ for {:?} (RESP{})",
            shown,
            if self.resp3 { 3 } else { 2 }
        );
        frame
    }

    /// Sends a command to both servers and reports a difference instead of panicking (for
    /// property tests, which must return their failures to be shrunk).
    pub fn compare(&mut self, command: &[String]) -> Result<(), String> {
        let (node, redis) = self.both_raw(command);
        if node == redis {
            return Ok(());
        }
        Err(format!(
            "{command:?}: node {:?} redis {:?}",
            String::from_utf8_lossy(&node),
            String::from_utf8_lossy(&redis)
        ))
    }

    /// Sends a command to both servers and returns both raw replies.
    pub fn both_raw(&mut self, command: &[String]) -> (Vec<u8>, Vec<u8>) {
        let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
        self.node_client.send(&args);
        self.redis_client.send(&args);
        (
            self.node_client.read_reply().1,
            self.redis_client.read_reply().1,
        )
    }

    /// Sends a command given as words to both servers and asserts identical replies.
    pub fn check(&mut self, args: &[&str]) -> Frame {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.check_bytes(&args)
    }

    /// Runs each command, one per line of words, through [`check`](Self::check).
    pub fn check_all(&mut self, commands: &[&[&str]]) {
        for command in commands {
            self.check(command);
        }
    }

    /// Runs the same commands in RESP2 and then in RESP3, after FLUSHALL each time.
    pub fn check_both_protocols(&mut self, commands: &[&[&str]]) {
        for resp3 in [false, true] {
            self.set_resp3(resp3);
            self.check(&["FLUSHALL"]);
            self.check_all(commands);
        }
        self.set_resp3(false);
    }

    /// Runs a scenario (given the port of one server, it collects replies, e.g. of
    /// several clients around a blocked one) on the node and on redis-server, and asserts
    /// both collected the same replies.
    pub fn on_both(&self, scenario: impl Fn(u16) -> Vec<Vec<u8>>) {
        let show = |replies: Vec<Vec<u8>>| -> Vec<String> {
            replies
                .iter()
                .map(|r| String::from_utf8_lossy(r).into_owned())
                .collect()
        };
        assert_eq!(
            show(scenario(self.node.port)),
            show(scenario(self.redis.port))
        );
    }

    /// Sends `args` to both servers and asserts the replies are the same except that
    /// integers may differ by up to `tolerance` (idle times, delivery times: each server
    /// reads its own clock).
    pub fn check_within(&mut self, args: &[&str], tolerance: i64) -> Frame {
        let (node, redis) = self.both(args);
        assert!(
            same_within(&node, &redis, tolerance),
            "replies differ beyond {tolerance} for {args:?}: node {node:?} redis {redis:?}"
        );
        node
    }

    /// Sends `args` to both servers and returns both replies without comparing them, for
    /// replies that legitimately differ (ids, times, random members).
    pub fn both(&mut self, args: &[&str]) -> (Frame, Frame) {
        (self.node_client.call(args), self.redis_client.call(args))
    }
}

/// Whether two replies are equal, integers allowed to differ by up to `tolerance`.
pub fn same_within(a: &Frame, b: &Frame, tolerance: i64) -> bool {
    let all = |x: &[Frame], y: &[Frame]| {
        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_within(p, q, tolerance))
    };
    match (a, b) {
        (Frame::Integer(x), Frame::Integer(y)) => x.abs_diff(*y) <= tolerance.unsigned_abs(),
        (Frame::Array(x), Frame::Array(y)) => all(x, y),
        (Frame::Map(x), Frame::Map(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|((k1, v1), (k2, v2))| {
                    same_within(k1, k2, tolerance) && same_within(v1, v2, tolerance)
                })
        }
        _ => a == b,
    }
}

/// A command as owned words (property-test strategies build commands this way).
pub fn words(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}
