//! Scripts and functions with several runtime threads (`io-threads 4`), compared with a
//! real redis-server over several connections. `io-threads 1` (the default) has the
//! same hand-over, with fewer threads.
//!
//! Each runtime thread runs scripts in its own Lua interpreter (see
//! `storage-node/src/scripting/scripts.rs`), and which thread serves a connection is up to
//! the scheduler. Sequential requests tend to stay on one thread; a script that runs for
//! more than a few milliseconds hands its worker's role to another thread (`busy.rs`), so
//! [`Connections::hand_over`] runs one between the steps to move later commands. The script cache (SCRIPT LOAD / EXISTS / FLUSH, EVALSHA) and the function
//! libraries (FUNCTION LOAD / DELETE / FLUSH / RESTORE, FCALL) must still behave as one per
//! server whichever connection, and so whichever thread, sends the command.

use test_harness::{Differential, RawClient};

/// Pairs of connections (node, redis); command `i` goes to pair `i % len`.
struct Connections {
    pairs: Vec<(RawClient, RawClient)>,
    next: usize,
}

impl Connections {
    fn open(d: &Differential, count: usize) -> Connections {
        Connections {
            pairs: (0..count).map(|_| d.clients()).collect(),
            next: 0,
        }
    }

    /// Sends `args` on the next pair and asserts identical replies; returns the reply.
    fn check(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let index = self.next % self.pairs.len();
        self.next += 1;
        let (node, redis) = &mut self.pairs[index];
        let node_reply = node.call_raw(args);
        let redis_reply = redis.call_raw(args);
        let shown: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        assert_eq!(
            String::from_utf8_lossy(&node_reply),
            String::from_utf8_lossy(&redis_reply),
            "replies differ for {shown:?} on connection {index}"
        );
        node_reply
    }

    /// [`check`](Self::check) on every pair in turn, with a [`hand_over`](Self::hand_over)
    /// before every other one.
    fn check_each(&mut self, args: &[&str]) {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        for i in 0..self.pairs.len() {
            if i % 2 == 1 {
                self.hand_over();
            }
            self.check(&args);
        }
    }

    /// Runs a script for about 20 ms (bounded by the server clock), which moves the
    /// node's later commands to another runtime thread.
    fn hand_over(&mut self) {
        self.check(&[b"EVAL", HAND_OVER.as_bytes(), b"0"]);
    }
}

/// Loops until the server clock has advanced by 20 ms; at most a million rounds.
const HAND_OVER: &str = "local function now() local t = redis.call('TIME') \
return t[1] * 1000000 + t[2] end local start = now() \
for _ = 1, 1000000 do if now() - start > 20000 then break end end return 1";

const LIB_V1: &str = "#!lua name=lib\nredis.register_function('f', function() return 'one' end)";
const LIB_V2: &str = "#!lua name=lib\nredis.register_function('f', function(keys, args) \
return redis.call('set', keys[1], args[1]) end)";
const OTHER: &str = "#!lua name=other\nredis.register_function('g', function() return 'g' end)";

#[test]
fn script_cache_is_one_per_server_across_threads() {
    let d = Differential::start_with(&["--io-threads", "4"], &[]);
    let mut c = Connections::open(&d, 6);
    // SHA1 of HAND_OVER's body is cached like any other: flushes forget it too.
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"; // SHA1 of "return 1"
    c.check_each(&["SCRIPT", "FLUSH"]);
    c.check_each(&["EVALSHA", sha, "0"]);
    c.check_each(&["SCRIPT", "LOAD", "return 1"]);
    c.check_each(&["EVALSHA", sha, "0"]);
    c.check_each(&[
        "SCRIPT",
        "EXISTS",
        sha,
        "ffffffffffffffffffffffffffffffffffffffff",
    ]);
    c.check_each(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "counter"]);
    c.check_each(&["SCRIPT", "FLUSH"]);
    c.check_each(&["SCRIPT", "EXISTS", sha]);
    c.check_each(&["EVALSHA", sha, "0"]);
    c.check_each(&["EVAL", "return 1", "0"]);
    c.check_each(&["EVALSHA", sha, "0"]);
    c.check_each(&["EVAL", "return 1 +", "0"]);
    c.check_each(&["EVAL", "#!lua flags=no-writes\nreturn 2", "0"]);
    c.check_each(&[
        "EVAL_RO",
        "return redis.call('get', KEYS[1])",
        "1",
        "counter",
    ]);
    // A script that flushes between the two uses on one connection.
    for _ in 0..3 {
        c.check(&[b"SCRIPT", b"LOAD", b"return 1"]);
        c.hand_over();
        c.check(&[b"EVALSHA", sha.as_bytes(), b"0"]);
        c.check(&[b"SCRIPT", b"FLUSH"]);
        c.hand_over();
        c.check(&[b"EVALSHA", sha.as_bytes(), b"0"]);
    }
}

#[test]
fn function_libraries_are_one_per_server_across_threads() {
    let d = Differential::start_with(&["--io-threads", "4"], &[]);
    let mut c = Connections::open(&d, 6);
    c.check_each(&["FUNCTION", "FLUSH"]);
    c.check_each(&["FCALL", "f", "0"]);
    c.check(&[b"FUNCTION", b"LOAD", LIB_V1.as_bytes()]);
    c.check_each(&["FCALL", "f", "0"]);
    c.check(&[b"FUNCTION", b"LOAD", b"REPLACE", LIB_V2.as_bytes()]);
    c.check_each(&["FCALL", "f", "1", "k", "v"]);
    c.check_each(&["FCALL_RO", "f", "1", "k", "v"]);
    c.check(&[b"FUNCTION", b"LOAD", OTHER.as_bytes()]);
    c.check_each(&["FCALL", "g", "0"]);
    c.check_each(&["FCALL", "f", "1", "k", "w"]);
    c.check(&[b"FUNCTION", b"DELETE", b"lib"]);
    c.check_each(&["FCALL", "f", "1", "k", "v"]);
    c.check_each(&["FCALL", "g", "0"]);
    c.check_each(&["FUNCTION", "STATS"]);
    let dump = c.check(&[b"FUNCTION", b"DUMP"]);
    let payload = bulk_payload(&dump);
    c.check(&[b"FUNCTION", b"FLUSH"]);
    c.check_each(&["FCALL", "g", "0"]);
    c.check(&[b"FUNCTION", b"RESTORE", &payload]);
    c.check_each(&["FCALL", "g", "0"]);
    c.check(&[b"FUNCTION", b"LOAD", LIB_V1.as_bytes()]);
    c.check(&[b"FUNCTION", b"RESTORE", &payload, b"FLUSH"]);
    c.check_each(&["FCALL", "f", "0"]);
    c.check_each(&["FCALL", "g", "0"]);
}

/// The bytes of a RESP bulk string reply.
fn bulk_payload(reply: &[u8]) -> Vec<u8> {
    let header_end = reply
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("bulk reply header");
    let len: usize = std::str::from_utf8(&reply[1..header_end])
        .expect("bulk length")
        .parse()
        .expect("bulk length");
    reply[header_end + 2..header_end + 2 + len].to_vec()
}
