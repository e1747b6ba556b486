//! Hostile input through slotproxy in front of a 3-node storage-node cluster: script results
//! that nest without end, deep JSON and MessagePack, glob patterns built to explode (KEYS
//! fans out to every node) and deeply nested requests. The proxy must pass Redis's answers
//! through, and the proxy and every node must keep serving with their keys intact.

use slotproxy::resp::Frame;
use test_harness::{start_proxy, Cluster, RawClient, ServerProcess};

const CANARIES: usize = 12;

struct Setup {
    cluster: Cluster,
    proxy: ServerProcess,
    client: RawClient,
}

fn start() -> Setup {
    let cluster = Cluster::storage_nodes(3);
    let proxy = start_proxy(&cluster.seeds(), &[]);
    let mut client = RawClient::connect(proxy.port);
    // Keys in many slots, so every node holds some.
    for i in 0..CANARIES {
        let key = format!("canary:{i}");
        assert_eq!(
            client.call(&["SET", &key, "still here"]),
            Frame::Simple("OK".into())
        );
    }
    Setup {
        cluster,
        proxy,
        client,
    }
}

impl Setup {
    /// The proxy and every node still answer, and every key is still there.
    fn assert_alive(&mut self) {
        assert_eq!(self.client.call(&["PING"]), Frame::Simple("PONG".into()));
        for i in 0..CANARIES {
            let key = format!("canary:{i}");
            assert_eq!(self.client.call(&["GET", &key]), Frame::bulk("still here"));
        }
        for seed in self.cluster.seeds() {
            let port = seed
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("seed port");
            let mut node = RawClient::connect(port);
            assert_eq!(node.call(&["PING"]), Frame::Simple("PONG".into()));
        }
    }

    /// Runs a script with no keys through the proxy; its exact reply bytes.
    fn eval_raw(&mut self, script: &str) -> Vec<u8> {
        self.client.send(&[b"EVAL", script.as_bytes(), b"0"]);
        self.client.read_raw_reply()
    }
}

/// The reply Redis gives for a table containing itself: 7995 one-element arrays, then the
/// error where it ran out of Lua stack (see storage-node's hostile_input tests, which check
/// it against redis-server).
fn lua_stack_limit_reply() -> Vec<u8> {
    let mut reply = b"*1\r\n".repeat(7995);
    reply.extend_from_slice(b"-ERR reached lua stack limit\r\n");
    reply
}

#[test]
fn recursive_and_deep_script_results_pass_through() {
    let mut s = start();
    let reply = s.eval_raw("local a = {}; local b = {a}; a[1] = b; return a");
    assert!(reply == lua_stack_limit_reply(), "{} bytes", reply.len());
    s.assert_alive();
    let reply = s.eval_raw("local a = {} a[1] = a return {map = {x = a}}");
    assert!(reply.ends_with(b"-ERR reached lua stack limit\r\n"));
    s.assert_alive();
    let reply = s.eval_raw("local t = {} for i = 1, 20000 do t[i] = 'x' .. i end return t");
    assert!(reply.starts_with(b"*20000\r\n") && reply.ends_with(b"$6\r\nx20000\r\n"));
    s.assert_alive();
}

#[test]
fn deep_json_and_msgpack_are_errors() {
    let mut s = start();
    for (script, error) in [
        (
            "local a = {} a[1] = a return cjson.encode(a)",
            "Cannot serialise, excessive nesting (1001)",
        ),
        (
            "return cjson.decode(string.rep('[', 100000))",
            "Found too many nested data structures (1001) at character 1001",
        ),
        (
            "return cmsgpack.unpack(string.rep('\\145', 100000) .. '\\1')",
            "stack overflow (in function mp_decode_to_lua_array)",
        ),
        (
            "return cmsgpack.unpack(string.rep('\\129\\1', 100000) .. '\\1')",
            "stack overflow (too many return values at once",
        ),
    ] {
        let reply = s.eval_raw(script);
        let text = String::from_utf8_lossy(&reply);
        assert!(
            text.starts_with("-ERR") && text.contains(error),
            "{script}: {text}"
        );
        s.assert_alive();
    }
}

#[test]
fn glob_patterns_built_to_explode_fan_out_safely() {
    let mut s = start();
    let long_key = "a".repeat(2000);
    s.client.call(&["SET", &long_key, "1"]);
    let found = Frame::Array(vec![Frame::bulk(&long_key)]);
    let none = Frame::Array(vec![]);
    for (pattern, expected) in [
        (format!("{}b", "a*".repeat(40)), &none),
        ("*a".repeat(1000), &found),
        // Redis's nesting limit: more than 1000 stars entered never match.
        ("*a".repeat(1001), &none),
        ("*a".repeat(100_000), &none),
    ] {
        assert_eq!(&s.client.call(&["KEYS", &pattern]), expected);
        s.assert_alive();
    }
}

#[test]
fn deeply_nested_requests_are_protocol_errors() {
    let mut s = start();
    let mut request = b"*1\r\n".repeat(100_000);
    request.extend_from_slice(b"$4\r\nPING\r\n");
    let mut hostile = RawClient::connect(s.proxy.port);
    hostile.send_raw(&request);
    let (reply, _) = hostile.read_reply();
    match reply {
        Frame::Error(text) => assert!(text.starts_with(b"ERR Protocol error"), "{text:?}"),
        other => panic!("expected a protocol error, got {other:?}"),
    }
    s.assert_alive();
}
