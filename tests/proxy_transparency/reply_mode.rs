//! CLIENT REPLY through the proxy, against a standalone redis-server; CLIENT TRACKING is
//! refused until the proxy relays invalidations.

use test_harness::{show, RawClient, ServerProcess};

/// One pipeline mixing commands the proxy answers (PING, ECHO, CLIENT) and commands it
/// forwards (SET, GET, DEL), under every CLIENT REPLY mode. `ECHO end` is last, so reading
/// up to its reply reads everything the server chose to send.
const PIPELINE: &[&[&str]] = &[
    &["CLIENT", "REPLY", "OFF"],
    &["SET", "reply-mode-key", "1"],
    &["PING"],
    &["CLIENT", "REPLY", "SKIP"],
    &["GET", "reply-mode-key"],
    &["CLIENT", "REPLY", "ON"],
    &["GET", "reply-mode-key"],
    &["CLIENT", "REPLY", "SKIP"],
    &["PING", "skipped"],
    &["ECHO", "after-skip"],
    &["CLIENT", "REPLY", "SKIP"],
    &["GET", "reply-mode-key"],
    &["DEL", "reply-mode-key"],
    &["CLIENT", "REPLY", "SKIP"],
    &["NOSUCH"],
    &["CLIENT", "REPLY", "MAYBE"],
    &["CLIENT", "REPLY"],
    &["ECHO", "end"],
];

/// Sends the pipeline in one write and returns every reply up to `ECHO end`'s.
fn run(port: u16) -> Vec<String> {
    let mut client = RawClient::connect(port);
    let mut bytes = Vec::new();
    for command in PIPELINE {
        let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
        bytes.extend(RawClient::encode(&args));
    }
    client.send_raw(&bytes);
    let mut replies = Vec::new();
    for _ in 0..PIPELINE.len() {
        let reply = show(&client.read_reply().1);
        let last = reply == "$3\\r\\nend\\r\\n";
        replies.push(reply);
        if last {
            return replies;
        }
    }
    panic!("no reply to ECHO end among {replies:?}");
}

pub fn client_reply_matches_redis(port: u16) {
    let redis = ServerProcess::redis_server(&[]);
    let expected = run(redis.port);
    assert_eq!(run(port), expected);
    // The silenced replies really were silenced: two GETs, ECHO, DEL's count, errors, end.
    assert_eq!(expected.len(), 7, "{expected:?}");
}

pub fn client_tracking_is_refused(port: u16) {
    let mut client = RawClient::connect(port);
    for command in [
        &["CLIENT", "TRACKING", "ON"][..],
        &["CLIENT", "CACHING", "YES"],
        &["CLIENT", "GETREDIR"],
    ] {
        let reply =
            show(&client.call_raw(&command.iter().map(|a| a.as_bytes()).collect::<Vec<_>>()));
        assert!(
            reply.starts_with("-ERR slotproxy: 'client|") && reply.contains("not supported"),
            "{command:?}: {reply}"
        );
    }
}
