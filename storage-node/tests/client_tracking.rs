//! CLIENT TRACKING against a real redis-server 7.0: the same script of commands, run by the
//! same set of clients on both servers, must produce the same replies and the same
//! invalidation messages (RESP3 pushes on the tracking connection, `__redis__:invalidate`
//! messages on a RESP2 redirect target), the same CLIENT TRACKINGINFO / GETREDIR / INFO
//! figures and CLIENT LIST flags.
//!
//! After every step each client is sent `PING <marker>`; what it receives before the
//! marker's reply is what the step made the server send it (a server writes a push for a
//! connection before it runs that connection's next command).

use test_harness::{show, wait_until, Differential, RawClient};

const MARKER: &str = "step-done-marker";

/// One server's clients for a script.
struct Side {
    clients: Vec<RawClient>,
    /// Each client's CLIENT ID, shown as `$N` (N = its index) in arguments and transcripts.
    ids: Vec<String>,
    /// The client inside MULTI, whose marker PING would only be queued.
    in_multi: Option<usize>,
}

impl Side {
    fn connect(port: u16, count: usize) -> Side {
        let mut clients: Vec<RawClient> = (0..count).map(|_| RawClient::connect(port)).collect();
        let ids = clients
            .iter_mut()
            .map(|c| match c.call(&["CLIENT", "ID"]) {
                slotproxy::resp::Frame::Integer(id) => id.to_string(),
                other => panic!("CLIENT ID answered {other:?}"),
            })
            .collect();
        Side {
            clients,
            ids,
            in_multi: None,
        }
    }

    /// Runs `args` (with `$N` replaced by client N's id) on client `who`, then collects what
    /// every client received, in order, with ids shown as `$N` again.
    fn step(&mut self, who: usize, args: &[&str]) -> Vec<String> {
        let args: Vec<String> = args
            .iter()
            .map(
                |a| match a.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                    Some(n) => self.ids[n].clone(),
                    None => a.to_string(),
                },
            )
            .collect();
        let names_ids = args
            .iter()
            .any(|a| a.eq_ignore_ascii_case("getredir") || a.eq_ignore_ascii_case("trackinginfo"));
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.clients[who].send(&args);
        // The reply first, so that the marker PING is not pipelined behind the command (a
        // server may send what the step caused after the replies of one read's batch).
        let reply = show(&self.clients[who].read_reply().1);
        match args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
        {
            Some(name) if name == "MULTI" => self.in_multi = Some(who),
            Some(name) if name == "EXEC" || name == "DISCARD" => self.in_multi = None,
            _ => {}
        }
        let mut seen = Vec::new();
        // The issuing client first: its reply is in, so the step has run.
        let others = (0..self.clients.len()).filter(|&i| i != who);
        for index in std::iter::once(who).chain(others) {
            let mut received = if self.in_multi == Some(index) {
                Vec::new()
            } else {
                self.drain(index)
            };
            if index == who {
                received.insert(0, reply.clone());
            }
            for received in received {
                let received = if names_ids || received.contains("redir") {
                    self.ids_as_names(received)
                } else {
                    received
                };
                seen.push(format!("{index}: {received}"));
            }
        }
        seen
    }

    /// What client `index` received up to the reply to `PING <marker>`.
    fn drain(&mut self, index: usize) -> Vec<String> {
        let client = &mut self.clients[index];
        client.send(&[b"PING", MARKER.as_bytes()]);
        let mut seen = Vec::new();
        for _ in 0..100 {
            let raw = show(&client.read_reply().1);
            if raw.contains(MARKER) {
                return seen;
            }
            seen.push(raw);
        }
        panic!("no reply to the marker PING");
    }

    fn ids_as_names(&self, mut text: String) -> String {
        // Longest ids first, so that id 12 is not half-replaced by id 1.
        let mut ids: Vec<(usize, &String)> = self.ids.iter().enumerate().collect();
        ids.sort_by_key(|(_, id)| std::cmp::Reverse(id.len()));
        for (n, id) in ids {
            // An integer frame, or CLIENT LIST's field.
            for (before, after) in [("\\r\\n:", "\\r\\n"), ("redir=", " ")] {
                text = text.replace(
                    &format!("{before}{id}{after}"),
                    &format!("{before}${n}{after}"),
                );
            }
            if text == format!(":{id}\\r\\n") {
                text = format!(":${n}\\r\\n");
            }
        }
        text
    }
}

/// Runs a script on both servers with `count` fresh clients each (client N speaks RESP3 if
/// `resp3[N]`) and asserts identical transcripts, step by step.
fn compare_script(d: &Differential, count: usize, resp3: &[usize], steps: &[(usize, &[&str])]) {
    let mut node = Side::connect(d.node.port, count);
    let mut redis = Side::connect(d.redis.port, count);
    for side in [&mut node, &mut redis] {
        side.clients[0].call(&["FLUSHALL"]);
        for &n in resp3 {
            side.clients[n].call(&["HELLO", "3"]);
        }
    }
    for (who, args) in steps {
        let on_node = node.step(*who, args);
        let on_redis = redis.step(*who, args);
        assert_eq!(on_node, on_redis, "client {who} ran {args:?}");
    }
}

#[test]
fn default_mode_invalidates_keys_once_in_resp3() {
    let d = Differential::start();
    compare_script(
        &d,
        2,
        &[0],
        &[
            (0, &["CLIENT", "TRACKING", "on"]),
            (0, &["GET", "a"]),
            (1, &["SET", "a", "1"]),
            // The row was dropped: no second message until the key is read again.
            (1, &["SET", "a", "2"]),
            (0, &["MGET", "a", "b", "c"]),
            (1, &["MSET", "a", "1", "b", "2"]),
            (1, &["DEL", "c", "nosuch"]),
            (0, &["STRLEN", "a"]),
            // A write that changes nothing invalidates nothing.
            (1, &["SET", "a", "x", "NX"]),
            (1, &["APPEND", "a", "y"]),
            (0, &["GET", "a"]),
            // The client's own write: the message follows its reply.
            (0, &["SET", "a", "mine"]),
            (0, &["HGETALL", "h"]),
            (1, &["HSET", "h", "f", "v"]),
            (0, &["EXISTS", "h"]),
            (1, &["EXPIRE", "h", "100"]),
            (0, &["TTL", "h"]),
            (1, &["PERSIST", "h"]),
            // Inside a transaction the own message follows EXEC's whole reply.
            (0, &["GET", "t"]),
            (0, &["MULTI"]),
            (0, &["SET", "t", "1"]),
            (0, &["GET", "t"]),
            (0, &["EXEC"]),
            (1, &["SET", "t", "2"]),
            (0, &["GET", "a"]),
            (0, &["GET", "b"]),
            (1, &["FLUSHALL"]),
            (0, &["GET", "a"]),
            (0, &["FLUSHDB"]),
            (0, &["CLIENT", "TRACKINGINFO"]),
            (0, &["CLIENT", "GETREDIR"]),
            (0, &["CLIENT", "TRACKING", "off"]),
            (0, &["CLIENT", "TRACKINGINFO"]),
            (0, &["CLIENT", "GETREDIR"]),
            (1, &["SET", "a", "after-off"]),
        ],
    );
}

/// The node skips all tracking work while no client tracks and the table is empty; changes
/// made then (another database, a FLUSHALL) must not surface once tracking starts again.
#[test]
fn tracking_resumes_cleanly_after_a_time_without_trackers() {
    let d = Differential::start();
    compare_script(
        &d,
        2,
        &[0],
        &[
            (1, &["SELECT", "3"]),
            (0, &["CLIENT", "TRACKING", "on"]),
            (0, &["GET", "a"]),
            (1, &["SET", "x", "1"]),
            (0, &["CLIENT", "TRACKING", "off"]),
            // The table's last row goes: nothing is tracked from here on.
            (1, &["SET", "a", "1"]),
            (1, &["SET", "y", "1"]),
            (1, &["FLUSHALL"]),
            (1, &["SET", "b", "0"]),
            (0, &["CLIENT", "TRACKING", "on"]),
            (0, &["GET", "b"]),
            (1, &["SET", "b", "1"]),
            (1, &["SET", "x", "2"]),
            (0, &["GET", "x"]),
            (1, &["FLUSHDB"]),
        ],
    );
}

#[test]
fn redirect_to_a_resp2_subscriber_and_broken_redirects() {
    let d = Differential::start();
    compare_script(
        &d,
        4,
        &[3],
        &[
            (2, &["SUBSCRIBE", "__redis__:invalidate"]),
            (0, &["CLIENT", "TRACKING", "on", "REDIRECT", "$2"]),
            (0, &["CLIENT", "GETREDIR"]),
            (0, &["CLIENT", "TRACKINGINFO"]),
            (0, &["GET", "k"]),
            (1, &["SET", "k", "v"]),
            (0, &["GET", "k"]),
            (0, &["DEL", "k"]),
            (0, &["GET", "k"]),
            (1, &["FLUSHALL"]),
            // A RESP2 client without redirect gets nothing on its own connection.
            (1, &["CLIENT", "TRACKING", "on"]),
            (1, &["GET", "plain"]),
            (0, &["SET", "plain", "v"]),
            // RESP3 client redirecting to a client that then goes away.
            (3, &["CLIENT", "TRACKING", "on", "REDIRECT", "$2"]),
            (3, &["GET", "r"]),
            (1, &["SET", "r", "1"]),
            (2, &["UNSUBSCRIBE"]),
            (3, &["GET", "r"]),
            (1, &["SET", "r", "2"]),
            (0, &["GET", "r"]),
            (1, &["SET", "r", "3"]),
        ],
    );
}

#[test]
fn a_closed_redirect_target_breaks_the_redirect() {
    let d = Differential::start();
    let mut sides = [
        Side::connect(d.node.port, 3),
        Side::connect(d.redis.port, 3),
    ];
    let mut transcripts = Vec::new();
    for side in &mut sides {
        side.clients[0].call(&["HELLO", "3"]);
        let mut seen = side.step(0, &["CLIENT", "TRACKING", "on", "REDIRECT", "$2"]);
        seen.extend(side.step(0, &["GET", "gone"]));
        // Client 2 leaves; wait until the server has noticed.
        side.clients.pop();
        let mut watcher = side.clients.pop().expect("client 1");
        let target = side.ids[2].clone();
        wait_until(
            std::time::Duration::from_secs(10),
            "the target to leave",
            || {
                let list = watcher.call(&["CLIENT", "LIST"]);
                let list =
                    String::from_utf8_lossy(list.as_bytes().unwrap_or_default()).into_owned();
                !list.contains(&format!("id={target} "))
            },
        );
        watcher.call(&["SET", "gone", "1"]);
        side.clients.push(watcher);
        seen.extend(side.step(0, &["CLIENT", "TRACKINGINFO"]));
        seen.extend(side.step(0, &["CLIENT", "GETREDIR"]));
        transcripts.push(seen);
    }
    assert_eq!(transcripts[0], transcripts[1]);
    assert!(
        transcripts[0]
            .iter()
            .any(|m| m.contains("tracking-redir-broken")),
        "{transcripts:?}"
    );
}

#[test]
fn bcast_prefixes_and_noloop() {
    let d = Differential::start();
    compare_script(
        &d,
        3,
        &[0, 2],
        &[
            (
                0,
                &[
                    "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "obj:",
                    "NOLOOP",
                ],
            ),
            (2, &["CLIENT", "TRACKING", "on", "BCAST"]),
            (1, &["SET", "user:1", "a"]),
            (1, &["MSET", "user:2", "b", "obj:1", "c", "other", "d"]),
            (1, &["DEL", "user:1", "user:2", "none:1"]),
            (0, &["SET", "user:3", "mine"]),
            (2, &["SET", "obj:2", "x"]),
            (0, &["CLIENT", "TRACKINGINFO"]),
            (0, &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "us"]),
            (
                0,
                &[
                    "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "x:", "PREFIX", "x:y",
                ],
            ),
            (0, &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "z:"]),
            (0, &["CLIENT", "TRACKINGINFO"]),
            (0, &["CLIENT", "TRACKING", "on"]),
            (1, &["FLUSHDB"]),
            (0, &["CLIENT", "TRACKING", "off"]),
            (1, &["SET", "user:4", "late"]),
        ],
    );
}

#[test]
fn optin_and_optout_follow_client_caching() {
    let d = Differential::start();
    compare_script(
        &d,
        3,
        &[0, 2],
        &[
            (0, &["CLIENT", "CACHING", "yes"]),
            (0, &["CLIENT", "TRACKING", "on", "OPTIN"]),
            (0, &["CLIENT", "CACHING", "no"]),
            (0, &["CLIENT", "CACHING", "maybe"]),
            (0, &["GET", "a"]),
            (1, &["SET", "a", "1"]),
            (0, &["CLIENT", "CACHING", "yes"]),
            (0, &["CLIENT", "TRACKINGINFO"]),
            (0, &["GET", "a"]),
            (0, &["CLIENT", "TRACKINGINFO"]),
            (0, &["GET", "b"]),
            (1, &["MSET", "a", "2", "b", "2"]),
            (0, &["CLIENT", "TRACKING", "on", "OPTOUT"]),
            (2, &["CLIENT", "TRACKING", "on", "OPTOUT", "NOLOOP"]),
            (2, &["GET", "c"]),
            (2, &["CLIENT", "CACHING", "no"]),
            (2, &["GET", "d"]),
            (1, &["MSET", "c", "1", "d", "1"]),
            (2, &["GET", "c"]),
            (2, &["SET", "c", "own"]),
            (2, &["CLIENT", "TRACKINGINFO"]),
        ],
    );
}

#[test]
fn option_errors_match() {
    let mut d = Differential::start();
    d.check_all(&[
        &["CLIENT", "TRACKING", "maybe"],
        &["CLIENT", "TRACKING", "on", "BOGUS"],
        &["CLIENT", "TRACKING", "on", "REDIRECT"],
        &["CLIENT", "TRACKING", "on", "REDIRECT", "x"],
        &["CLIENT", "TRACKING", "on", "REDIRECT", "999999"],
        &["CLIENT", "TRACKING", "on", "PREFIX", "a"],
        &["CLIENT", "TRACKING", "on", "BCAST", "OPTIN"],
        &["CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"],
        &[
            "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a",
        ],
        &["CLIENT", "TRACKING", "off", "BCAST"],
        &["CLIENT", "TRACKING", "on", "OPTIN"],
        &["CLIENT", "TRACKING", "on", "OPTOUT"],
        &["CLIENT", "TRACKING", "on", "BCAST"],
        &["CLIENT", "CACHING", "no"],
        &["CLIENT", "CACHING"],
        &["CLIENT", "GETREDIR", "extra"],
        &["CLIENT", "TRACKINGINFO", "extra"],
        &["CONFIG", "GET", "tracking-table-max-keys"],
        &["CONFIG", "SET", "tracking-table-max-keys", "-1"],
    ]);
}

/// The INFO fields and CLIENT LIST flags other clients see.
#[test]
fn info_fields_and_client_list_flags_match() {
    let d = Differential::start();
    let fields = |client: &mut RawClient| -> Vec<String> {
        let info = client.call(&["INFO"]);
        let info = String::from_utf8_lossy(info.as_bytes().expect("INFO is text")).into_owned();
        let mut wanted: Vec<String> = info
            .lines()
            .filter(|line| line.starts_with("tracking_"))
            .map(str::to_string)
            .collect();
        let list = client.call(&["CLIENT", "LIST"]);
        let list = String::from_utf8_lossy(list.as_bytes().expect("text")).into_owned();
        for line in list.lines() {
            let pick = |name: &str| {
                line.split(' ')
                    .find(|f| f.starts_with(name))
                    .unwrap_or("")
                    .to_string()
            };
            let redir = pick("redir=");
            wanted.push(format!(
                "{} {}",
                pick("flags="),
                if redir == "redir=-1" { "-1" } else { "set" }
            ));
        }
        wanted
    };
    let mut results = Vec::new();
    for port in [d.node.port, d.redis.port] {
        let mut side = Side::connect(port, 4);
        side.clients[3].call(&["CONFIG", "SET", "tracking-table-max-keys", "3"]);
        side.step(0, &["CLIENT", "TRACKING", "on", "REDIRECT", "$3"]);
        side.step(
            1,
            &[
                "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p", "PREFIX", "q",
            ],
        );
        side.step(2, &["CLIENT", "TRACKING", "on", "BCAST"]);
        side.step(0, &["MGET", "a", "b"]);
        side.step(3, &["HELLO", "3"]);
        side.step(3, &["CLIENT", "TRACKING", "on"]);
        side.step(3, &["MGET", "c", "g"]);
        let mut seen = fields(&mut side.clients[3]);
        // Over the limit: the table shrinks back to it, sending invalidations.
        side.step(3, &["MGET", "d", "e", "f"]);
        side.step(3, &["PING"]);
        seen.extend(fields(&mut side.clients[3]));
        side.step(1, &["CLIENT", "TRACKING", "off"]);
        seen.extend(fields(&mut side.clients[3]));
        results.push(seen);
    }
    assert_eq!(results[0], results[1]);
}

/// A key that expires is invalidated (node only: when Redis's lazy or active expiry finds
/// it is a matter of timing).
#[test]
fn an_expired_key_is_invalidated() {
    let d = Differential::start();
    let mut tracker = RawClient::connect(d.node.port);
    let mut writer = RawClient::connect(d.node.port);
    tracker.call(&["HELLO", "3"]);
    tracker.call(&["CLIENT", "TRACKING", "on"]);
    writer.call(&["SET", "soon", "v", "PX", "50"]);
    tracker.call(&["GET", "soon"]);
    wait_until(
        std::time::Duration::from_secs(10),
        "the key to expire",
        || writer.call(&["EXISTS", "soon"]) == slotproxy::resp::Frame::Integer(0),
    );
    tracker.send(&[b"PING", MARKER.as_bytes()]);
    let push = show(&tracker.read_reply().1);
    assert_eq!(
        push,
        ">2\\r\\n$10\\r\\ninvalidate\\r\\n*1\\r\\n$4\\r\\nsoon\\r\\n"
    );
}
