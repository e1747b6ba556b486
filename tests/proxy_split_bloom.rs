//! Split Bloom filters through slotproxy in front of three storage-nodes: `BF.*` on a
//! configured name goes to part filters `name{i}` spread over every node, each item to the
//! part its own hash names; BF.RESERVE sizes the parts, BF.INFO/BF.CARD add them up, and
//! the filter keeps its false-positive rate with a million items.

use slotproxy::cluster::key_slot;
use slotproxy::proxy::split_bloom::part::{part_capacity, part_key, part_of};
use slotproxy::resp::Frame;
use test_harness::cluster::start_proxy_with_config;
use test_harness::{Cluster, RawClient, ServerProcess};

const CONFIG: &str = "split_bloom:\n  - { prefix: \"bf:small\", parts: 8 }\n  - { prefix: \"bf:ins\", parts: 8 }\n  - { prefix: \"bf:users\", parts: 1024 }\n  - { prefix: \"bf:full\", parts: 8 }\n";

fn raw(client: &mut RawClient, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    String::from_utf8_lossy(&client.call_raw(&args)).into_owned()
}

fn setup() -> (Cluster, ServerProcess, RawClient) {
    let cluster = Cluster::storage_nodes(3);
    let (proxy, _path) = start_proxy_with_config(&cluster.seeds(), "", CONFIG);
    let client = RawClient::connect(proxy.port);
    (cluster, proxy, client)
}

/// A client straight to the node serving `key`.
fn node_client(cluster: &Cluster, key: &[u8]) -> RawClient {
    RawClient::connect(cluster.nodes[cluster.node_for_slot(key_slot(key))].port)
}

fn part_name(name: &str, n: u32) -> String {
    String::from_utf8(part_key(name.as_bytes(), n)).expect("ascii")
}

/// BF.INFO of one part, read on its node: the five figures by name.
fn part_info(cluster: &Cluster, name: &str, n: u32) -> Vec<(String, Frame)> {
    let key = part_name(name, n);
    let reply = node_client(cluster, key.as_bytes()).call(&["BF.INFO", &key]);
    let items = reply
        .as_array()
        .unwrap_or_else(|| panic!("{key}: {reply:?}"));
    items
        .chunks(2)
        .map(|kv| {
            (
                String::from_utf8_lossy(kv[0].as_bytes().expect("name")).into_owned(),
                kv[1].clone(),
            )
        })
        .collect()
}

fn figure(info: &[(String, Frame)], name: &str) -> i64 {
    info.iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| v.as_integer())
        .unwrap_or_else(|| panic!("{name} in {info:?}"))
}

/// BF.INFO through the proxy equals the parts' figures read on their nodes: sums, and the
/// expansion of part 0.
fn assert_info_aggregates(cluster: &Cluster, client: &mut RawClient, name: &str, parts: u32) {
    let infos: Vec<_> = (0..parts).map(|n| part_info(cluster, name, n)).collect();
    let sum = |field: &str| infos.iter().map(|i| figure(i, field)).sum::<i64>();
    let expected = format!(
        "*10\r\n+Capacity\r\n:{}\r\n+Size\r\n:{}\r\n+Number of filters\r\n:{}\r\n+Number of items inserted\r\n:{}\r\n+Expansion rate\r\n:{}\r\n",
        sum("Capacity"),
        sum("Size"),
        sum("Number of filters"),
        sum("Number of items inserted"),
        figure(&infos[0], "Expansion rate"),
    );
    assert_eq!(raw(client, &["BF.INFO", name]), expected);
    let items = sum("Number of items inserted");
    assert_eq!(raw(client, &["BF.CARD", name]), format!(":{items}\r\n"));
    assert_eq!(
        raw(client, &["BF.INFO", name, "items"]),
        format!("*1\r\n:{items}\r\n")
    );
    assert_eq!(
        raw(client, &["BF.INFO", name, "CAPACITY"]),
        format!("*1\r\n:{}\r\n", sum("Capacity"))
    );
    assert_eq!(
        raw(client, &["BF.INFO", name, "EXPANSION"]),
        format!("*1\r\n:{}\r\n", figure(&infos[0], "Expansion rate"))
    );
}

#[test]
fn split_filter_routes_items_to_their_parts_and_aggregates() {
    let (cluster, proxy, mut c) = setup();
    assert_eq!(raw(&mut c, &["BF.INFO", "bf:small"]), "-ERR not found\r\n");
    assert_eq!(raw(&mut c, &["BF.CARD", "bf:small"]), ":0\r\n");
    assert_eq!(
        raw(
            &mut c,
            &["BF.RESERVE", "bf:small", "0.01", "1000", "EXPANSION", "4"]
        ),
        "+OK\r\n"
    );
    // Every part exists, on its own node, sized for its share plus headroom.
    for n in 0..8 {
        let info = part_info(&cluster, "bf:small", n);
        assert_eq!(figure(&info, "Capacity"), part_capacity(1000, 8) as i64);
        assert_eq!(figure(&info, "Expansion rate"), 4);
    }
    assert_eq!(part_capacity(1000, 8), 125 + 45);
    // Reserving again is refused as for one filter; the name itself was never a key.
    assert_eq!(
        raw(&mut c, &["BF.RESERVE", "bf:small", "0.01", "1000"]),
        "-ERR item exists\r\n"
    );
    assert_eq!(raw(&mut c, &["EXISTS", "bf:small"]), ":0\r\n");

    let items: Vec<String> = (0..200).map(|i| format!("user:{i}")).collect();
    let mut madd: Vec<&str> = vec!["BF.MADD", "bf:small"];
    madd.extend(items.iter().map(String::as_str));
    let added = c.call(&madd);
    assert_eq!(added.as_array().map(<[Frame]>::len), Some(200));
    assert_eq!(raw(&mut c, &["BF.ADD", "bf:small", "solo"]), ":1\r\n");
    assert_eq!(raw(&mut c, &["BF.EXISTS", "bf:small", "solo"]), ":1\r\n");
    // Each item is in its part (read on that part's node), and its part holds the count.
    let mut per_part = [0i64; 8];
    for item in items.iter().map(String::as_str).chain(["solo"]) {
        let n = part_of(item.as_bytes(), 8);
        per_part[n as usize] += 1;
        let key = part_name("bf:small", n);
        let mut node = node_client(&cluster, key.as_bytes());
        assert_eq!(
            raw(&mut node, &["BF.EXISTS", &key, item]),
            ":1\r\n",
            "{item}"
        );
    }
    for n in 0..8 {
        let key = part_name("bf:small", n);
        let mut node = node_client(&cluster, key.as_bytes());
        assert_eq!(
            raw(&mut node, &["BF.CARD", &key]),
            format!(":{}\r\n", per_part[n as usize])
        );
    }
    assert!(per_part.iter().all(|&n| n > 0), "{per_part:?}");
    // MEXISTS answers in the order asked, across parts, absent items included.
    let asked = [
        "user:5", "absent:1", "user:199", "solo", "absent:2", "user:0", "absent:3",
    ];
    let mut mexists = vec!["BF.MEXISTS", "bf:small"];
    mexists.extend(asked);
    let expected: String = asked
        .iter()
        .map(|item| {
            let key = part_name("bf:small", part_of(item.as_bytes(), 8));
            raw(
                &mut node_client(&cluster, key.as_bytes()),
                &["BF.EXISTS", &key, item],
            )
        })
        .collect();
    assert_eq!(raw(&mut c, &mexists), format!("*7\r\n{expected}"));
    assert_eq!(&expected[..4], ":1\r\n");
    assert_info_aggregates(&cluster, &mut c, "bf:small", 8);
    // RESP3 clients get the same figures and flags (the node answers arrays in both).
    let info = raw(&mut c, &["BF.INFO", "bf:small"]);
    let mut c3 = RawClient::connect(proxy.port);
    c3.call(&["HELLO", "3"]);
    assert_eq!(raw(&mut c3, &["BF.INFO", "bf:small"]), info);
    assert_eq!(raw(&mut c3, &mexists), format!("*7\r\n{expected}"));

    // Errors: what one filter's node says (arity), a clear refusal for dumps and MULTI.
    assert_eq!(
        raw(&mut c, &["BF.ADD", "bf:small"]),
        raw(&mut c, &["BF.ADD", "plain"])
    );
    let dump = raw(&mut c, &["BF.SCANDUMP", "bf:small", "0"]);
    assert!(
        dump.starts_with("-ERR slotproxy: 'bf:small' is a split Bloom filter"),
        "{dump}"
    );
    assert_eq!(raw(&mut c, &["MULTI"]), "+OK\r\n");
    let queued = raw(&mut c, &["BF.ADD", "bf:small", "x"]);
    assert!(queued.contains("split Bloom filter"), "{queued}");
    assert!(raw(&mut c, &["EXEC"]).starts_with("-EXECABORT"));
}

#[test]
fn insert_creates_the_parts_it_reaches_with_the_divided_capacity() {
    let (cluster, _proxy, mut c) = setup();
    let items: Vec<String> = (0..64).map(|i| format!("i{i}")).collect();
    let mut insert = vec![
        "BF.INSERT",
        "bf:ins",
        "CAPACITY",
        "800",
        "ERROR",
        "0.001",
        "ITEMS",
    ];
    insert.extend(items.iter().map(String::as_str));
    let reply = c.call(&insert);
    assert_eq!(reply.as_array().map(<[Frame]>::len), Some(64));
    assert_eq!(part_capacity(800, 8), 100 + 40);
    for n in 0..8 {
        let info = part_info(&cluster, "bf:ins", n);
        assert_eq!(figure(&info, "Capacity"), part_capacity(800, 8) as i64);
    }
    assert_info_aggregates(&cluster, &mut c, "bf:ins", 8);
    // NOCREATE on a name never used: the parts answer as one missing filter does.
    assert_eq!(
        raw(&mut c, &["BF.INSERT", "bf:small", "NOCREATE", "ITEMS", "a"]),
        raw(&mut c, &["BF.INSERT", "plain", "NOCREATE", "ITEMS", "a"])
    );
}

#[test]
fn a_full_nonscaling_part_ends_the_reply_at_its_item() {
    let (_cluster, _proxy, mut c) = setup();
    // 8 items over 8 parts: each part holds 1 + 4 of headroom, and is then full.
    assert_eq!(
        raw(
            &mut c,
            &["BF.RESERVE", "bf:full", "0.01", "8", "NONSCALING"]
        ),
        "+OK\r\n"
    );
    let items: Vec<String> = (0..100).map(|i| format!("f{i}")).collect();
    let mut madd = vec!["BF.MADD", "bf:full"];
    madd.extend(items.iter().map(String::as_str));
    let reply = c.call(&madd);
    let elements = reply.as_array().expect("array");
    // Where one filter would stop: the first item whose part already holds 5 items (an
    // item answered 0 read as present, a collision, and took no room).
    let mut held = [0usize; 8];
    let stop = items
        .iter()
        .zip(elements)
        .position(|(item, answer)| {
            let n = part_of(item.as_bytes(), 8) as usize;
            if held[n] == 5 {
                return true;
            }
            held[n] += usize::from(answer.as_integer() == Some(1));
            false
        })
        .expect("some part overflows");
    assert_eq!(elements.len(), stop + 1, "{reply:?}");
    assert!(
        elements[..stop].iter().all(|e| e.as_integer().is_some()),
        "{reply:?}"
    );
    assert_eq!(
        elements[stop],
        Frame::Error(bytes::Bytes::from_static(b"ERR non scaling filter is full"))
    );
}

/// Sends `commands` pipelined (a bounded window) and returns the replies in order.
fn pipelined(client: &mut RawClient, commands: &[Vec<Vec<u8>>]) -> Vec<Frame> {
    let mut replies = Vec::with_capacity(commands.len());
    for window in commands.chunks(8) {
        for command in window {
            let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
            client.send(&args);
        }
        for _ in window {
            replies.push(client.read_reply().0);
        }
    }
    replies
}

fn batches(command: &str, name: &str, items: impl Iterator<Item = String>) -> Vec<Vec<Vec<u8>>> {
    let items: Vec<Vec<u8>> = items.map(String::into_bytes).collect();
    items
        .chunks(10_000)
        .map(|chunk| {
            let mut args = vec![command.as_bytes().to_vec(), name.as_bytes().to_vec()];
            args.extend(chunk.iter().cloned());
            args
        })
        .collect()
}

fn ones(replies: &[Frame]) -> usize {
    replies
        .iter()
        .flat_map(|r| r.as_array().unwrap_or_else(|| panic!("{r:?}")))
        .filter(|f| f.as_integer() == Some(1))
        .count()
}

#[test]
fn a_million_items_over_1024_parts_keep_the_false_positive_rate() {
    const ITEMS: usize = 1_000_000;
    const ABSENT: usize = 100_000;
    let (cluster, _proxy, mut c) = setup();
    // The parts spread over every node.
    let mut owners = std::collections::HashSet::new();
    for n in 0..1024 {
        owners.insert(cluster.node_for_slot(key_slot(&part_key(b"bf:users", n))));
    }
    assert_eq!(owners.len(), 3);
    assert_eq!(
        raw(
            &mut c,
            &["BF.RESERVE", "bf:users", "0.01", &ITEMS.to_string()]
        ),
        "+OK\r\n"
    );
    let added = pipelined(
        &mut c,
        &batches(
            "BF.MADD",
            "bf:users",
            (0..ITEMS).map(|i| format!("member:{i}")),
        ),
    );
    // An item new to the filter may still collide with earlier ones and answer 0.
    assert!(ones(&added) >= ITEMS - ITEMS / 100, "{}", ones(&added));
    let present = pipelined(
        &mut c,
        &batches(
            "BF.MEXISTS",
            "bf:users",
            (0..ITEMS).map(|i| format!("member:{i}")),
        ),
    );
    assert_eq!(ones(&present), ITEMS, "every added item exists");
    let absent = pipelined(
        &mut c,
        &batches(
            "BF.MEXISTS",
            "bf:users",
            (0..ABSENT).map(|i| format!("stranger:{i}")),
        ),
    );
    let false_positives = ones(&absent);
    println!("false positives: {false_positives} of {ABSENT}");
    assert!(
        false_positives <= ABSENT / 100,
        "{false_positives} of {ABSENT}"
    );
    // Each part is as the math sizes it, and no part outgrew its first sub-filter.
    let capacity = part_capacity(ITEMS as u64, 1024) as i64;
    assert_eq!(capacity, 977 + 126);
    for n in 0..1024 {
        let info = part_info(&cluster, "bf:users", n);
        assert_eq!(figure(&info, "Capacity"), capacity);
        assert_eq!(figure(&info, "Number of filters"), 1);
    }
    assert_info_aggregates(&cluster, &mut c, "bf:users", 1024);
}
