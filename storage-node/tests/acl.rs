//! ACL users against a real redis-server 7.0: rule strings (ordinary and hostile) give the
//! same ACL LIST / GETUSER / CAT answers and the same errors, refused commands the same
//! `-NOPERM` texts, DRYRUN and AUTH / HELLO the same replies.
//!
//! Redis lists the single commands of a user's rules in its hash table's order, which
//! changes from one process to the next, so those (and ACL CAT's command lists) are
//! compared as sets; everything else is compared as it is.

mod acl_fixture;

use acl_fixture::normalize_rules;
use slotproxy::resp::Frame;
use test_harness::{Differential, RawClient};

/// A reply with every string normalized by [`normalize_rules`].
fn normalize(frame: &Frame) -> Frame {
    match frame {
        Frame::Bulk(bytes) => {
            Frame::bulk(normalize_rules(&String::from_utf8_lossy(bytes)).as_bytes())
        }
        Frame::Array(items) => Frame::Array(items.iter().map(normalize).collect()),
        Frame::Set(items) => Frame::Set(items.iter().map(normalize).collect()),
        Frame::Map(pairs) => Frame::Map(
            pairs
                .iter()
                .map(|(k, v)| (normalize(k), normalize(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Sends a command to both servers and compares the replies with rules normalized.
fn check_rules(d: &mut Differential, args: &[&str]) -> Frame {
    let (node, redis) = d.both(args);
    assert_eq!(normalize(&node), normalize(&redis), "{args:?}");
    node
}

/// Rule strings a client might send, ordinary and hostile.
fn rule_sets() -> Vec<Vec<String>> {
    let long_pattern = format!("~{}", "a*".repeat(300));
    let long_password = format!(">{}", "p".repeat(5000));
    let sets: Vec<Vec<&str>> = vec![
        vec![],
        vec!["on", ">secret", "~app:*", "+@read"],
        vec!["on", "nopass", "allkeys", "allchannels", "allcommands"],
        vec![
            "+@all",
            "-@dangerous",
            "-flushall",
            "%R~r:*",
            "%W~w:*",
            "%RW~rw:*",
        ],
        vec![
            "+@read",
            "+@write",
            "-@string",
            "+get",
            "-hget",
            "+config|get",
            "+client",
            "-client|kill",
        ],
        vec!["-@all", "+select|0", "+select|1", "+debug|object"],
        vec![
            "+@hash",
            "+@list",
            "+@set",
            "+@sortedset",
            "+@stream",
            "+@geo",
            "+@bitmap",
        ],
        vec!["+@all", "-@keyspace", "-@admin", "+@slow", "-@fast"],
        vec![
            "~a",
            "~b",
            "%R~a",
            "&c1",
            "&c2",
            "&c1",
            "resetchannels",
            "&x*",
        ],
        vec![
            "#5e884898da28047151d0e56f8dc6292773603d0d6a05fac09c8b0baba40d9ed4",
            ">other",
        ],
        vec![">pw", "<pw"],
        vec!["(+get ~g*)", "(+set ~s* &ch)", "+ping"],
        vec![
            "(+get",
            "~g*)",
            "clearselectors",
            "(-@all +@pubsub &news.*)",
        ],
        vec!["reset", "on", "+@all", "~*"],
        vec!["skip-sanitize-payload", "sanitize-payload"],
        vec!["OFF", "NOPASS", "ALLKEYS", "+@ALL", "-GET"],
        vec![
            "+@scripting",
            "+@transaction",
            "+@connection",
            "+@pubsub",
            "+@blocking",
        ],
        vec!["resetkeys", "resetpass", "nocommands"],
        vec![],
    ];
    let mut sets: Vec<Vec<String>> = sets
        .into_iter()
        .map(|set| set.into_iter().map(String::from).collect())
        .collect();
    sets.push(vec![long_pattern, long_password]);
    sets
}

/// Rules Redis refuses, each with its own error.
const BAD_RULES: &[&[&str]] = &[
    &["bad"],
    &["+nosuchcommand"],
    &["+@nosuchcategory"],
    &["-@nosuchcategory"],
    &["+config|nosuch"],
    &["+config|get|x"],
    &["+select|"],
    &["-get|x"],
    &["%X~a"],
    &["%RR~a"],
    &["~*", "~x"],
    &["&*", "&x"],
    &["allkeys", "%R~x"],
    &["#abc"],
    &["#5E884898DA28047151D0E56F8DC6292773603D0D6A05FAC09C8B0BABA40D9ED4"],
    &["!0000"],
    &["<never-set"],
    &["(+get ~x"],
    &["(+get", "~x"],
    &["(+nosuch)"],
    &["(bad)"],
    &["~a b"],
    &["on", ">fine", "bad"],
];

#[test]
fn rules_show_in_list_and_getuser_as_redis_shows_them() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        for (i, rules) in rule_sets().iter().enumerate() {
            let name = format!("user{i}");
            let mut command = vec!["ACL", "SETUSER", name.as_str()];
            command.extend(rules.iter().map(String::as_str));
            check_rules(&mut d, &command);
            check_rules(&mut d, &["ACL", "GETUSER", &name]);
        }
        check_rules(&mut d, &["ACL", "LIST"]);
        d.check(&["ACL", "USERS"]);
        d.check(&["ACL", "GETUSER", "nobody"]);
        d.check(&["ACL", "DELUSER", "user1", "user2", "nobody"]);
        d.check(&["ACL", "DELUSER", "default"]);
        d.check(&["ACL", "USERS"]);
    }
}

#[test]
fn bad_rules_are_refused_with_redis_errors_and_change_nothing() {
    let mut d = Differential::start();
    d.check(&["ACL", "SETUSER", "alice", "on", ">pw", "~k*", "+get"]);
    for rules in BAD_RULES {
        let mut command = vec!["ACL", "SETUSER", "alice"];
        command.extend_from_slice(rules);
        d.check(&command);
        check_rules(&mut d, &["ACL", "GETUSER", "alice"]);
    }
    d.check(&["ACL", "SETUSER", "has space"]);
    d.check(&["ACL", "SETUSER", "nul\0name"]);
    check_rules(&mut d, &["ACL", "LIST"]);
}

#[test]
fn categories_and_their_commands_match() {
    let mut d = Differential::start();
    d.check(&["ACL", "CAT"]);
    for category in [
        "read",
        "write",
        "dangerous",
        "pubsub",
        "scripting",
        "ADMIN",
        "keyspace",
    ] {
        let (node, redis) = d.both(&["ACL", "CAT", category]);
        let sorted = |frame: &Frame| {
            let mut names: Vec<Vec<u8>> = frame
                .as_array()
                .unwrap_or_else(|| panic!("ACL CAT {category}: {frame:?}"))
                .iter()
                .filter_map(|f| f.as_bytes().map(<[u8]>::to_vec))
                .collect();
            names.sort();
            names
        };
        assert_eq!(sorted(&node), sorted(&redis), "ACL CAT {category}");
    }
    let long = "c".repeat(300);
    d.check(&["ACL", "CAT", "nosuch"]);
    d.check(&["ACL", "CAT", &long]);
    d.check(&["ACL", "CAT", "a", "b"]);
}

/// The refusals of a user with a key pattern, a channel pattern and a few commands.
#[test]
fn refused_commands_keys_and_channels_answer_noperm() {
    let mut d = Differential::start();
    d.check(&[
        "ACL",
        "SETUSER",
        "app",
        "on",
        ">pw",
        "~app:*",
        "%R~ro:*",
        "%W~wo:*",
        "&news.*",
        "+@read",
        "+@write",
        "+publish",
        "+subscribe",
        "+psubscribe",
        "-flushall",
        "+multi",
        "+exec",
        "+eval",
    ]);
    d.check(&["AUTH", "app", "pw"]);
    d.check_all(&[
        &["ACL", "WHOAMI"],
        &["SET", "app:1", "v"],
        &["GET", "app:1"],
        &["GET", "other:1"],
        &["SET", "other:1", "v"],
        &["GET", "ro:1"],
        &["SET", "ro:1", "v"],
        &["SET", "wo:1", "v"],
        &["GET", "wo:1"],
        &["COPY", "app:1", "wo:2"],
        &["COPY", "app:1", "ro:2"],
        &["MSET", "app:2", "x", "other:2", "y"],
        &["FLUSHALL"],
        &["CONFIG", "GET", "maxmemory"],
        &["PUBLISH", "news.today", "hi"],
        &["PUBLISH", "sports", "hi"],
        &["MULTI"],
        &["GET", "app:1"],
        &["GET", "other:3"],
        &["EXEC"],
        &["EVAL", "return redis.call('get','other:4')", "0"],
        &["EVAL", "return redis.pcall('flushall')", "0"],
        &["EVAL", "return redis.pcall('publish','sports','x')", "0"],
        &["EVAL", "return redis.call('get','app:1')", "0"],
        &["PSUBSCRIBE", "news.*"],
    ]);
    let (mut node, mut redis) = d.clients();
    for client in [&mut node, &mut redis] {
        client.call(&["AUTH", "app", "pw"]);
    }
    for command in [&["SUBSCRIBE", "sports"][..], &["PSUBSCRIBE", "news.x*"]] {
        assert_eq!(node.call(command), redis.call(command), "{command:?}");
    }
}

#[test]
fn dryrun_answers_as_redis() {
    let mut d = Differential::start();
    d.check(&[
        "ACL",
        "SETUSER",
        "dry",
        "on",
        "nopass",
        "~app:*",
        "&ch*",
        "+@read",
        "+publish",
        "+psubscribe",
        "+config|get",
        "(+set ~s:*)",
    ]);
    for command in [
        &["ACL", "DRYRUN", "dry", "GET", "app:1"][..],
        &["ACL", "DRYRUN", "dry", "get", "other"],
        &["ACL", "DRYRUN", "dry", "SET", "app:1", "v"],
        &["ACL", "DRYRUN", "dry", "SET", "s:1", "v"],
        &["ACL", "DRYRUN", "dry", "CONFIG", "GET", "x"],
        &["ACL", "DRYRUN", "dry", "CONFIG", "SET", "x", "y"],
        &["ACL", "DRYRUN", "dry", "CONFIG", "NOSUCH"],
        &["ACL", "DRYRUN", "dry", "PUBLISH", "chx", "m"],
        &["ACL", "DRYRUN", "dry", "PUBLISH", "other", "m"],
        &["ACL", "DRYRUN", "dry", "PSUBSCRIBE", "ch*", "c?"],
        &["ACL", "DRYRUN", "dry", "NOSUCH"],
        &["ACL", "DRYRUN", "dry", "GET"],
        &["ACL", "DRYRUN", "nobody", "GET", "x"],
        &["ACL", "DRYRUN", "dry"],
    ] {
        d.check(command);
    }
}

#[test]
fn auth_and_hello_as_users() {
    let mut d = Differential::start();
    d.check_all(&[
        &["AUTH", "nopassword-configured"],
        &["ACL", "SETUSER", "bob", "on", ">bobpw", "+@all", "~*"],
        &["ACL", "SETUSER", "off-user", "off", ">pw", "+@all"],
        &["AUTH", "bob", "wrong"],
        &["AUTH", "nobody", "x"],
        &["AUTH", "off-user", "pw"],
        &["AUTH", "a", "b", "c"],
        &["AUTH", "bob", "bobpw"],
        &["ACL", "WHOAMI"],
        &["HELLO", "2", "AUTH", "nobody", "x"],
        &["HELLO", "2", "AUTH", "bob"],
        &["ACL", "WHOAMI"],
        &["RESET"],
        &["ACL", "WHOAMI"],
        &["CONFIG", "SET", "requirepass", "s3cret"],
        &["ACL", "GETUSER", "default"],
    ]);
    // A new connection must log in now; AUTH <password> logs in as the default user.
    let (mut node, mut redis) = d.clients();
    for command in [
        &["GET", "k"][..],
        &["HELLO", "3"],
        &["AUTH", "wrong"],
        &["AUTH", "s3cret"],
        &["ACL", "WHOAMI"],
        &["CONFIG", "SET", "requirepass", ""],
    ] {
        assert_eq!(node.call(command), redis.call(command), "{command:?}");
    }
    d.check(&["ACL", "LIST"]);
}

/// Deleting a user closes its connections; CLIENT KILL USER finds them too.
#[test]
fn deleted_users_are_disconnected() {
    let d = Differential::start();
    let mut admin = RawClient::connect(d.node.port);
    admin.call(&["ACL", "SETUSER", "gone", "on", ">pw", "+@all", "~*"]);
    let mut victim = RawClient::connect(d.node.port);
    assert_eq!(
        victim.call(&["AUTH", "gone", "pw"]).as_bytes(),
        Some(&b"OK"[..])
    );
    let list = admin.call(&["CLIENT", "LIST"]);
    let list = String::from_utf8_lossy(list.as_bytes().unwrap_or_default()).into_owned();
    assert!(list.contains("user=gone"), "{list}");
    let refused = admin.call(&["CLIENT", "KILL", "USER", "nobody"]);
    assert!(
        matches!(&refused, Frame::Error(e) if e.as_ref() == b"ERR No such user 'nobody'"),
        "{refused:?}"
    );
    assert_eq!(admin.call(&["ACL", "DELUSER", "gone"]), Frame::Integer(1));
    assert!(
        victim.try_read_reply().is_none(),
        "the deleted user's connection is closed"
    );
}

/// Narrowing a user's channels closes its subscribers that lost one, as Redis does; a
/// subscriber whose channels are all still allowed stays.
#[test]
fn subscribers_that_lose_a_channel_are_disconnected() {
    let d = Differential::start();
    for port in [d.node.port, d.redis.port] {
        let mut admin = RawClient::connect(port);
        admin.call(&[
            "ACL",
            "SETUSER",
            "sub",
            "on",
            ">pw",
            "+@all",
            "~*",
            "resetchannels",
            "&news.*",
            "&sports",
        ]);
        let mut kept = RawClient::connect(port);
        let mut lost = RawClient::connect(port);
        for client in [&mut kept, &mut lost] {
            assert_eq!(
                client.call(&["AUTH", "sub", "pw"]).as_bytes(),
                Some(&b"OK"[..])
            );
        }
        kept.call(&["SUBSCRIBE", "sports"]);
        lost.call(&["SUBSCRIBE", "news.today"]);
        admin.call(&["ACL", "SETUSER", "sub", "resetchannels", "&sports"]);
        assert!(
            lost.try_read_reply().is_none(),
            "port {port}: the subscriber that lost its channel is closed"
        );
        admin.call(&["PUBLISH", "sports", "goal"]);
        let (message, _) = kept.read_reply();
        assert_eq!(
            message
                .as_array()
                .and_then(|m| m.last())
                .and_then(Frame::as_bytes),
            Some(&b"goal"[..]),
            "port {port}: {message:?}"
        );
    }
}

/// A connection's user changed under it applies at its very next command (the node
/// remembers an unrestricted user only until the rules change).
#[test]
fn rule_changes_apply_to_connected_clients_at_once() {
    let mut d = Differential::start();
    d.check_all(&[
        &["GET", "k"],
        &["ACL", "SETUSER", "default", "-get"],
        &["GET", "k"],
        &["ACL", "SETUSER", "default", "+get", "resetkeys", "~app:*"],
        &["GET", "k"],
        &["GET", "app:k"],
        &["ACL", "SETUSER", "default", "allkeys"],
        &["GET", "k"],
    ]);
}
