//! Reads that start inside a node, compared with a real redis-server byte for byte: the
//! node walks entry by entry from the start id, steps over tombstones and entries before
//! the start without decoding them, and finds the last live id from the node's last id
//! unless the node holds a tombstone. Small nodes (4 entries) put every boundary case in a
//! few dozen entries: starts on a node's first, middle and last entry, tombstones at a
//! node's tail, a node's head and the stream's end, and field lists that differ from the
//! node's master fields.

use test_harness::Differential;

/// Entries 1-1 .. 30-1 in nodes of 4: every third with other fields than the master's, every
/// fifth with integer values (stored as listpack integers), then tombstones.
fn fill(d: &mut Differential) {
    d.check(&["CONFIG", "SET", "stream-node-max-entries", "4"]);
    for n in 1..=30 {
        let id = format!("{n}-1");
        let value = if n % 5 == 0 {
            format!("{}", n * 1000)
        } else {
            format!("v{n}")
        };
        if n % 3 == 0 {
            d.check(&["XADD", "s", &id, "other", &value, "x", "-7"]);
        } else {
            d.check(&["XADD", "s", &id, "a", &value, "b", "12345678901"]);
        }
    }
    // A node's tail (4-1 ends the first node), a node's head (9-1), a middle, and the last
    // entry (its node keeps 29-1: the stream ends in a tombstone).
    d.check(&["XDEL", "s", "4-1", "9-1", "14-1", "30-1"]);
}

#[test]
fn ranges_starting_inside_nodes_match_redis() {
    let mut d = Differential::start();
    fill(&mut d);
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        for n in 0..=31 {
            let start = format!("{n}-1");
            let exclusive = format!("({n}-1");
            let ms = format!("{n}");
            for count in ["1", "3", "6"] {
                d.check_all(&[
                    &["XRANGE", "s", &start, "+", "COUNT", count],
                    &["XRANGE", "s", &exclusive, "+", "COUNT", count],
                    &["XRANGE", "s", &ms, &ms],
                    &["XREVRANGE", "s", &start, "-", "COUNT", count],
                ]);
            }
        }
    }
    d.set_resp3(false);
    d.check_all(&[
        &["XRANGE", "s", "-", "+"],
        &["XRANGE", "s", "10-1", "20-1"],
        &["XINFO", "STREAM", "s"],
    ]);
}

#[test]
fn group_reads_step_across_nodes_and_tombstones_like_redis() {
    let mut d = Differential::start();
    fill(&mut d);
    d.check_all(&[
        &["XGROUP", "CREATE", "s", "g", "0"],
        &["XGROUP", "CREATE", "s", "late", "29-1"],
    ]);
    // One entry a read until nothing is left: each read seeks past the group's last id.
    for _ in 0..30 {
        d.check(&split("XREADGROUP GROUP g c COUNT 1 STREAMS s >"));
    }
    for line in [
        // The stream's last entry is a tombstone: nothing new for either group.
        "XREADGROUP GROUP late c STREAMS s >",
        "XREADGROUP GROUP g c COUNT 2 STREAMS s 0",
        "XADD s 31-1 a new",
        "XREADGROUP GROUP late c STREAMS s >",
        "XREADGROUP GROUP g c COUNT 5 STREAMS s >",
    ] {
        d.check(&split(line));
    }
    d.check_all(&[
        &["XPENDING", "s", "g"],
        &["XACK", "s", "g", "1-1", "5-1", "31-1", "4-1"],
        &["XINFO", "GROUPS", "s"],
    ]);
}

/// A command written as one line of words.
fn split(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}
