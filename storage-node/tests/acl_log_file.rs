//! The ACL log and the ACL file against a real redis-server 7.0, and issue 22's end to end
//! check: a user with `~app:* +@read` reads `app:1`, is refused `other:1` and SET, and
//! ACL LOG records both, seen through raw RESP and through redis-py.

mod acl_fixture;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use acl_fixture::normalize_rules;
use slotproxy::resp::Frame;
use test_harness::{run_logged, Differential, RawClient, ServerProcess};

/// ACL LOG entries with `age-seconds` and `client-info` checked for shape and set aside
/// (times and ports differ between the servers; the rest must not).
fn comparable_log(log: &Frame) -> Frame {
    let Some(entries) = log.as_array() else {
        return log.clone();
    };
    let pairs = |entry: &Frame| -> Vec<(Frame, Frame)> {
        match entry {
            Frame::Map(pairs) => pairs.clone(),
            Frame::Array(flat) => flat
                .chunks(2)
                .map(|pair| (pair[0].clone(), pair[1].clone()))
                .collect(),
            other => panic!("an ACL LOG entry is a map: {other:?}"),
        }
    };
    Frame::Array(
        entries
            .iter()
            .map(|entry| {
                let kept = pairs(entry)
                    .into_iter()
                    .filter(|(field, value)| match field.as_bytes() {
                        Some(b"age-seconds") => {
                            let age = match value {
                                Frame::Double(age) => *age,
                                other => {
                                    String::from_utf8_lossy(other.as_bytes().unwrap_or_default())
                                        .parse()
                                        .unwrap_or(-1.0)
                                }
                            };
                            assert!((0.0..600.0).contains(&age), "age-seconds {value:?}");
                            false
                        }
                        Some(b"client-info") => {
                            let info =
                                String::from_utf8_lossy(value.as_bytes().unwrap_or_default())
                                    .into_owned();
                            assert!(info.starts_with("id=") && info.contains(" user="), "{info}");
                            false
                        }
                        _ => true,
                    })
                    .collect();
                Frame::Map(kept)
            })
            .collect(),
    )
}

fn compare_log(d: &mut Differential, args: &[&str]) {
    let (node, redis) = d.both(args);
    assert_eq!(comparable_log(&node), comparable_log(&redis), "{args:?}");
}

#[test]
fn acl_log_entries_match_redis() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["ACL", "LOG", "RESET"],
            &[
                "ACL", "SETUSER", "app", "on", ">pw", "~app:*", "&news", "+@read", "+publish",
                "+multi", "+exec", "+eval", "+auth",
            ],
            &["AUTH", "app", "wrong"],
            &["AUTH", "app", "pw"],
            &["GET", "other:1"],
            &["GET", "other:1"],
            &["SET", "app:1", "v"],
            &["PUBLISH", "sports", "x"],
            &["MULTI"],
            &["GET", "other:2"],
            &["DEL", "app:1"],
            &["EXEC"],
            &["EVAL", "return redis.pcall('get','other:3')", "0"],
            &["HELLO", "2", "AUTH", "nobody", "x"],
            &["AUTH", "default", "x"],
        ]);
        compare_log(&mut d, &["ACL", "LOG"]);
        compare_log(&mut d, &["ACL", "LOG", "3"]);
        compare_log(&mut d, &["ACL", "LOG", "-1"]);
        compare_log(&mut d, &["ACL", "LOG", "0"]);
        d.check_all(&[
            &["ACL", "LOG", "x"],
            &["ACL", "LOG", "1", "2"],
            &["ACL", "LOG", "RESET"],
            &["ACL", "LOG"],
        ]);
    }
    // `acllog-max-len` bounds the entries kept.
    d.check_all(&[
        &["CONFIG", "SET", "acllog-max-len", "2"],
        &["CONFIG", "GET", "acllog-max-len"],
        &["AUTH", "app", "pw"],
        &["GET", "k1"],
        &["SET", "app:x", "1"],
        &["PUBLISH", "other", "x"],
    ]);
    compare_log(&mut d, &["ACL", "LOG"]);
}

/// A file in a directory of the test's own.
fn scratch_file(name: &str, contents: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("slotproxy-acl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join("users.acl");
    std::fs::write(&path, contents).expect("write the ACL file");
    path
}

fn normalized_list(client: &mut RawClient) -> Vec<String> {
    let list = client.call(&["ACL", "LIST"]);
    list.as_array()
        .unwrap_or_else(|| panic!("ACL LIST: {list:?}"))
        .iter()
        .map(|line| {
            normalize_rules(&String::from_utf8_lossy(
                line.as_bytes().unwrap_or_default(),
            ))
        })
        .collect()
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn acl_files_written_by_either_server_load_in_the_other() {
    let redis_file = scratch_file("redis", "user default on nopass ~* &* +@all\n");
    let redis = ServerProcess::redis_server(&["--aclfile", &path_arg(&redis_file)]);
    let mut redis_client = RawClient::connect(redis.port);
    for rules in [
        &[
            "ACL", "SETUSER", "reader", "on", ">pw", "~app:*", "+@read", "-keys",
        ][..],
        &[
            "ACL",
            "SETUSER",
            "writer",
            "on",
            "#5e884898da28047151d0e56f8dc6292773603d0d6a05fac09c8b0baba40d9ed4",
            "%W~w:*",
            "&ch*",
            "+@write",
            "+client|list",
        ],
        &[
            "ACL",
            "SETUSER",
            "selective",
            "off",
            "(+get ~g:*)",
            "(+set %W~s:*)",
            "+select|0",
        ],
        &["ACL", "SAVE"],
    ] {
        assert_eq!(
            redis_client.call(rules).as_bytes(),
            Some(&b"OK"[..]),
            "{rules:?}"
        );
    }
    // The file redis-server wrote starts a node with the same users.
    let node_file = scratch_file("node", &std::fs::read_to_string(&redis_file).expect("read"));
    let node = ServerProcess::storage_node(&["--aclfile", &path_arg(&node_file)]);
    let mut node_client = RawClient::connect(node.port);
    assert_eq!(
        normalized_list(&mut node_client),
        normalized_list(&mut redis_client)
    );
    // What the node saves, redis-server loads to the same users.
    node_client.call(&[
        "ACL",
        "SETUSER",
        "added",
        "on",
        "nopass",
        "allkeys",
        "+@all",
        "-@dangerous",
    ]);
    node_client.call(&["ACL", "DELUSER", "writer"]);
    assert_eq!(
        node_client.call(&["ACL", "SAVE"]).as_bytes(),
        Some(&b"OK"[..])
    );
    std::fs::copy(&node_file, &redis_file).expect("copy the node's file");
    assert_eq!(
        redis_client.call(&["ACL", "LOAD"]).as_bytes(),
        Some(&b"OK"[..])
    );
    assert_eq!(
        normalized_list(&mut node_client),
        normalized_list(&mut redis_client)
    );
    // A broken file changes nothing, and both say why in the same words.
    let broken = "user ok on\nnot-a-user line\nuser bad +nosuch\nuser ok off\n";
    std::fs::write(&node_file, broken).expect("write");
    std::fs::write(&redis_file, broken).expect("write");
    let node_error = node_client.call(&["ACL", "LOAD"]);
    let redis_error = redis_client.call(&["ACL", "LOAD"]);
    let shown = |frame: &Frame, path: &Path| match frame {
        Frame::Error(text) => String::from_utf8_lossy(text).replace(&path_arg(path), "<file>"),
        other => panic!("ACL LOAD of a broken file: {other:?}"),
    };
    assert_eq!(
        shown(&node_error, &node_file),
        shown(&redis_error, &redis_file)
    );
    assert_eq!(
        normalized_list(&mut node_client),
        normalized_list(&mut redis_client)
    );
}

#[test]
fn load_and_save_without_an_acl_file_are_refused() {
    let mut d = Differential::start();
    d.check_all(&[
        &["ACL", "LOAD"],
        &["ACL", "SAVE"],
        &["CONFIG", "GET", "aclfile"],
    ]);
}

/// Issue 22, must-show 4.
#[test]
fn a_read_only_app_user_end_to_end() {
    let node = ServerProcess::storage_node(&[]);
    let mut admin = RawClient::connect(node.port);
    admin.call(&["ACL", "SETUSER", "app", "on", ">apppw", "~app:*", "+@read"]);
    admin.call(&["SET", "app:1", "hello"]);
    let mut app = RawClient::connect(node.port);
    assert_eq!(
        app.call(&["AUTH", "app", "apppw"]).as_bytes(),
        Some(&b"OK"[..])
    );
    assert_eq!(app.call(&["GET", "app:1"]).as_bytes(), Some(&b"hello"[..]));
    let noperm = |frame: Frame, text: &str| match frame {
        Frame::Error(e) => assert_eq!(String::from_utf8_lossy(&e), text),
        other => panic!("expected -NOPERM, got {other:?}"),
    };
    noperm(
        app.call(&["GET", "other:1"]),
        "NOPERM this user has no permissions to access one of the keys used as arguments",
    );
    noperm(
        app.call(&["SET", "app:1", "changed"]),
        "NOPERM this user has no permissions to run the 'set' command",
    );
    assert_eq!(
        admin.call(&["GET", "app:1"]).as_bytes(),
        Some(&b"hello"[..])
    );
    let log = comparable_log(&admin.call(&["ACL", "LOG"]));
    let field = |entry: &Frame, name: &str| -> Vec<u8> {
        entry
            .map_get(name)
            .and_then(|v| {
                v.as_bytes()
                    .map(<[u8]>::to_vec)
                    .or_else(|| v.as_integer().map(|n| n.to_string().into_bytes()))
            })
            .unwrap_or_default()
    };
    let entries = log.as_array().expect("entries");
    let seen: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = entries
        .iter()
        .map(|e| (field(e, "reason"), field(e, "object"), field(e, "username")))
        .collect();
    assert_eq!(
        seen,
        vec![
            (b"command".to_vec(), b"set".to_vec(), b"app".to_vec()),
            (b"key".to_vec(), b"other:1".to_vec(), b"app".to_vec()),
        ]
    );
    // And as a redis-py user sees it, against the node and against redis-server alike.
    let redis = ServerProcess::redis_server(&[]);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acl_fixture/redis_py_app_user.py");
    for port in [node.port, redis.port] {
        let mut python = Command::new("python3");
        python.arg(&script).arg(port.to_string());
        let (status, output) =
            run_logged(python, "slotproxy-acl-redis-py", Duration::from_secs(120));
        assert!(
            status.success(),
            "redis-py against port {port} ({status}):\n{output}"
        );
    }
}
