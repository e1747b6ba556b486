//! Hostile input a client controls, compared with a real redis-server: script results that
//! nest without end (a table containing itself), deep JSON and MessagePack, glob patterns
//! built to explode, hostile SORT patterns and deeply nested requests. Each must get
//! Redis's answer, byte for byte, and leave the node serving with its keys intact.

use test_harness::{Differential, RawClient};

/// The result of a table that contains itself: Redis runs out of Lua stack while
/// converting it and answers an error in place of the innermost value.
const RECURSIVE_TABLE: &str = "local a = {}; local b = {a}; a[1] = b; return a";

fn eval(script: &str) -> Vec<&str> {
    vec!["EVAL", script, "0"]
}

/// A Differential with a key on each side that every hostile input must leave alone.
fn start() -> Differential {
    let mut d = Differential::start();
    d.check(&["SET", "canary", "still here"]);
    d
}

/// The node still answers and still has its key.
fn assert_alive(d: &mut Differential) {
    d.check(&["PING"]);
    d.check(&["GET", "canary"]);
}

/// Sends a command to both servers and compares the raw replies without parsing them into
/// frames (they may nest deeper than the test client's parser accepts). Returns the node's.
fn check_deep(d: &mut Differential, args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    d.node_client.send(&args);
    d.redis_client.send(&args);
    let node = d.node_client.read_raw_reply();
    let redis = d.redis_client.read_raw_reply();
    assert!(
        node == redis,
        "replies differ for {:?}: node {} bytes ending {:?}, redis {} bytes ending {:?}",
        &args[..args.len().min(2)]
            .iter()
            .map(|a| String::from_utf8_lossy(a))
            .collect::<Vec<_>>(),
        node.len(),
        String::from_utf8_lossy(&node[node.len().saturating_sub(60)..]),
        redis.len(),
        String::from_utf8_lossy(&redis[redis.len().saturating_sub(60)..]),
    );
    node
}

#[test]
fn a_table_containing_itself_answers_the_lua_stack_error() {
    let mut d = start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        let reply = check_deep(&mut d, &eval(RECURSIVE_TABLE));
        assert!(reply.ends_with(b"-ERR reached lua stack limit\r\n"));
        assert_alive(&mut d);
    }
    d.set_resp3(false);
}

#[test]
fn nested_script_results_stop_where_redis_stops() {
    let mut d = start();
    let scripts = [
        // Right at the limit: the innermost string still fits, one more level does not.
        "local a = {}; local t = a; for i = 1, 7993 do local n = {} t[1] = n t = n end; \
         t[1] = 'x' return a"
            .to_string(),
        "local a = {}; local t = a; for i = 1, 7994 do local n = {} t[1] = n t = n end; \
         t[1] = 'x' return a"
            .to_string(),
        // Maps and sets take more of the Lua stack per level.
        "redis.setresp(3) local a = {} a[1] = {map = {k = a}} return a".to_string(),
        "redis.setresp(3) local a = {} a[1] = {set = {}} a[1].set[a] = true return a".to_string(),
        "local a = {} a[1] = a return {map = {x = a}}".to_string(),
        // Status and error tables inside, an error table at the top.
        "local a = {} a[1] = {err = 'x'} a[2] = {ok = 'y'} a[3] = {double = 1.5} return a"
            .to_string(),
        "return {err = 'boom'}".to_string(),
        // Long results are not cut short.
        "local t = {} for i = 1, 20000 do t[i] = 'x' .. i end return t".to_string(),
        "redis.setresp(3) local t = {} for i = 1, 20000 do t['k' .. i] = 'v' .. i end \
         return {map = t}"
            .to_string(),
    ];
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        for script in &scripts {
            check_deep(&mut d, &eval(script));
            assert_alive(&mut d);
        }
    }
    d.set_resp3(false);
}

#[test]
fn call_replies_of_every_resp3_type_convert_as_in_redis() {
    let mut d = start();
    d.check_all(&[
        &["HSET", "h", "a", "1", "b", "2"],
        &["ZADD", "z", "1.5", "m", "2", "n"],
        &["SADD", "s", "only"],
        &["RPUSH", "l", "x", "y"],
    ]);
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        for script in [
            "redis.setresp(3) return {redis.call('HGETALL', 'h'), \
             redis.call('ZRANGE', 'z', 0, -1, 'WITHSCORES'), redis.call('SMEMBERS', 's'), \
             redis.call('LRANGE', 'l', 0, -1), redis.call('CONFIG', 'GET', 'maxmemory'), \
             redis.call('ZSCORE', 'z', 'm'), redis.call('EXISTS', 'nokey') == 1}",
            "local r = redis.pcall('HSET', 'l', 'f', 'v') return {r.err ~= nil, \
             redis.call('LRANGE', 'l', 0, -1)}",
        ] {
            d.check(&eval(script));
        }
        assert_alive(&mut d);
    }
    d.set_resp3(false);
}

#[test]
fn deep_and_self_referencing_json() {
    let mut d = start();
    for script in [
        "local a = {} a[1] = a return cjson.encode(a)",
        "local a = {} a.x = a return cjson.encode(a)",
        "return cjson.decode(string.rep('[', 100000))",
        "return cjson.decode(string.rep('{\"a\":', 100000))",
        // The limit itself: 1000 levels round-trip, 1001 do not.
        "return cjson.encode(cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)))",
        "return cjson.encode(cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001)))",
        "local a = {} local t = a for i = 1, 999 do local n = {} t[1] = n t = n end \
         return cjson.encode(a)",
        "local a = {} local t = a for i = 1, 1000 do local n = {} t[1] = n t = n end \
         return cjson.encode(a)",
        // A long number token: every prefix was tried in turn (minutes of work).
        "return cjson.decode('[' .. string.rep('1e', 20000) .. ']')",
        "local t = {} for i = 1, 20000 do t['k' .. i] = {i} end \
         return #cjson.encode(cjson.decode(cjson.encode(t)))",
    ] {
        d.check(&eval(script));
        assert_alive(&mut d);
    }
}

#[test]
fn deep_and_self_referencing_msgpack() {
    let mut d = start();
    for script in [
        // Arrays: two Lua stack slots a level, 3999 levels fit.
        "return {cmsgpack.unpack(string.rep('\\145', 3999) .. '\\1')}",
        "return {cmsgpack.unpack(string.rep('\\145', 4000) .. '\\1')}",
        "return {cmsgpack.unpack(string.rep('\\145', 100000) .. '\\1')}",
        "return {cmsgpack.unpack(string.rep('\\220\\0\\1', 100000) .. '\\1')}",
        // Map values, and map keys (one slot a level).
        "return {cmsgpack.unpack(string.rep('\\129\\1', 4000) .. '\\1')}",
        "return {cmsgpack.unpack(string.rep('\\129', 7997) .. '\\1' .. string.rep('\\1', 7997))}",
        "return {cmsgpack.unpack(string.rep('\\129', 7998) .. '\\1' .. string.rep('\\1', 7998))}",
        "return {cmsgpack.unpack(string.rep('\\145', 10))}",
        // Packing stops at 16 levels.
        "local a = {} a[1] = a return cmsgpack.pack(a)",
        "local a = {} a.x = a return cmsgpack.pack(a)",
    ] {
        check_deep(&mut d, &eval(script));
        assert_alive(&mut d);
    }
}

#[test]
fn glob_patterns_built_to_explode() {
    let mut d = start();
    let long_key = "a".repeat(2000);
    d.check(&["SET", &long_key, "1"]);
    let patterns = [
        // Exponential without Redis's "skip longer matches" rule.
        format!("{}b", "a*".repeat(40)),
        // Redis's nesting limit: more than 1000 stars entered never match.
        "*a".repeat(1000),
        "*a".repeat(1001),
        "a*".repeat(1001),
        "a*".repeat(1002),
        "*a".repeat(100_000),
        format!("{}*", "*a".repeat(1001)),
    ];
    for pattern in &patterns {
        d.check(&["KEYS", pattern]);
        d.check(&["SCAN", "0", "MATCH", pattern, "COUNT", "1000"]);
        assert_alive(&mut d);
    }
}

#[test]
fn sort_with_hostile_patterns() {
    let mut d = start();
    d.check_all(&[
        &["RPUSH", "list", "3", "1", "2"],
        &["SET", "w_1", "30"],
        &["SET", "w_2", "20"],
        &["SET", "w_3", "10"],
        &["HSET", "h_1", "f", "c"],
        &["HSET", "h_2", "f", "b"],
    ]);
    let stars = "*".repeat(10_000);
    let arrows = "->".repeat(10_000);
    let by_arrows = format!("w_*{arrows}");
    let get_arrows = format!("h_*{arrows}f");
    let deep = format!("{}*{}", "[".repeat(5000), "]".repeat(5000));
    for command in [
        vec!["SORT", "list", "BY", "w_*"],
        vec!["SORT", "list", "BY", stars.as_str()],
        vec!["SORT", "list", "BY", by_arrows.as_str()],
        vec![
            "SORT",
            "list",
            "BY",
            "nosort",
            "GET",
            "#",
            "GET",
            get_arrows.as_str(),
        ],
        vec![
            "SORT",
            "list",
            "GET",
            stars.as_str(),
            "GET",
            "h_*->f",
            "ALPHA",
        ],
        vec!["SORT", "list", "BY", deep.as_str(), "GET", deep.as_str()],
        vec![
            "SORT",
            "list",
            "BY",
            "h_*->f",
            "ALPHA",
            "LIMIT",
            "0",
            "-9223372036854775808",
        ],
        vec![
            "SORT",
            "list",
            "LIMIT",
            "9223372036854775807",
            "9223372036854775807",
        ],
    ] {
        d.check(&command);
        assert_alive(&mut d);
    }
}

#[test]
fn deeply_nested_requests_are_protocol_errors() {
    let mut d = start();
    let mut request = b"*1\r\n".repeat(100_000);
    request.extend_from_slice(b"$4\r\nPING\r\n");
    // Each server closes the connection after its error; compare on fresh connections.
    let (mut node, mut redis) = d.clients();
    node.send_raw(&request);
    redis.send_raw(&request);
    assert_eq!(node.read_reply().1, redis.read_reply().1);
    assert_alive(&mut d);
    let mut node = RawClient::connect(d.node.port);
    assert_eq!(
        node.call_raw(&[b"GET", b"canary"]),
        b"$10\r\nstill here\r\n"
    );
}

#[test]
fn sorted_set_scores_chosen_to_unbalance_the_tree() {
    // The sorted set's treap once took its priorities from xorshift32 with a fixed seed:
    // scores equal to those priorities, in the same order, built a chain as deep as the
    // set, and its recursive insert overflowed the stack (100,000 members suffice).
    // Priorities are unpredictable now.
    let mut d = start();
    let mut pipeline = Vec::new();
    let mut x: u32 = 0x9E37_79B9;
    let members = 100_000;
    for i in 0..members {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let (score, member) = (x.to_string(), format!("m{i}"));
        pipeline.extend(RawClient::encode(&[
            b"ZADD",
            b"z",
            score.as_bytes(),
            member.as_bytes(),
        ]));
    }
    d.node_client.send_raw(&pipeline);
    d.redis_client.send_raw(&pipeline);
    for _ in 0..members {
        assert_eq!(d.node_client.read_reply().1, d.redis_client.read_reply().1);
    }
    d.check(&["ZCARD", "z"]);
    d.check(&["ZRANGE", "z", "0", "4", "WITHSCORES"]);
    d.check(&["ZRANK", "z", "m99999"]);
    d.check(&["ZREM", "z", "m0", "m50000"]);
    assert_alive(&mut d);
}

#[test]
fn pcall_of_a_function_returning_many_values() {
    // Lua 5.1's pcall pushes its status into the stack's reserved slack; a Lua built with
    // API checks (debug builds) aborted the node there.
    let mut d = start();
    for script in [
        "local t = {} for i = 1, 30 do t[i] = i end return {pcall(function() return unpack(t) end)}",
        "local t = {} for i = 1, 30 do t[i] = i end \
         return {xpcall(function() return unpack(t) end, function(e) return e end)}",
    ] {
        d.check(&eval(script));
        assert_alive(&mut d);
    }
    // Nested until Lua's C call limit; the node's own call adds a level, so only the end of
    // the reply is compared.
    let script = "local function f() return pcall(f) end return {f()}";
    let reply = d.node_client.call_raw(&[b"EVAL", script.as_bytes(), b"0"]);
    assert!(reply.ends_with(b"$-1\r\n$16\r\nC stack overflow\r\n"));
    assert_alive(&mut d);
}
