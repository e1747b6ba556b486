//! The replication tests' shared fixture: INFO fields, bounded polling, a redis-server
//! master or replica, waiting until a replica has applied its master's whole stream, and
//! the comparison of a master's data with its replica's.
//!
//! Used with `mod persistence_fixture;` next to `mod replication_fixture;`: the data and
//! its snapshot (`populate`, `state_of`) come from the persistence fixture.

#![allow(dead_code)]

use std::time::Duration;

use test_harness::{wait_until, RawClient, ServerProcess};

use crate::persistence_fixture::{find_info, ServerState};

/// How long a replication step may take under a loaded machine.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// A field of an INFO section; panics if the server does not show it.
pub fn info(client: &mut RawClient, section: &str, name: &str) -> String {
    find_info(client, section, name).unwrap_or_else(|| panic!("no {name} in INFO {section}"))
}

pub fn info_u64(client: &mut RawClient, section: &str, name: &str) -> u64 {
    find_info(client, section, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric {name} in INFO {section}"))
}

/// [`wait_until`] bounded by [`DEADLINE`].
pub fn wait_for(what: &str, condition: impl FnMut() -> bool) {
    wait_until(DEADLINE, what, condition);
}

/// A redis-server master that sends its snapshot at once (no diskless delay) and takes
/// DEBUG commands, with the given extra settings.
pub fn redis_master(extra: &[&str]) -> ServerProcess {
    let mut args = vec![
        "--repl-diskless-sync-delay",
        "0",
        "--enable-debug-command",
        "yes",
    ];
    args.extend_from_slice(extra);
    ServerProcess::redis_server(&args)
}

/// A redis-server replicating from `master`.
pub fn replica_of(master: &ServerProcess) -> ServerProcess {
    ServerProcess::redis_server(&["--replicaof", "127.0.0.1", &master.port.to_string()])
}

/// Waits until the replica's link is up and it has applied everything the master has fed.
pub fn wait_in_sync(master: &mut RawClient, replica: &mut RawClient) {
    wait_for("the replica to catch up with the master", || {
        let master_offset = info_u64(master, "replication", "master_repl_offset");
        find_info(replica, "replication", "master_link_status").as_deref() == Some("up")
            && info_u64(replica, "replication", "slave_repl_offset") == master_offset
    });
}

/// Asserts that a master's data (`want`) and its replica's (`got`) hold the same keys
/// with the same contents, PTTL and DUMP payload, and the same function libraries;
/// returns how many DUMPs were compared.
///
/// Encodings may differ where redis-server replicas differ too (a key that came in the
/// snapshot is loaded in its most compact form: `embstr` for a short `raw` string, an
/// `intset` for a `hashtable` set of integers); DUMP is compared unless one side is a
/// `hashtable`, whose DUMP order is its dictionary's.
pub fn assert_same_data(want: &ServerState, got: &ServerState) -> usize {
    let ((want, want_functions), (got, got_functions)) = (want, got);
    let named = |keys: Vec<&(usize, Vec<u8>)>| -> Vec<String> {
        keys.into_iter()
            .map(|(db, key)| format!("{db}:{}", String::from_utf8_lossy(key)))
            .collect()
    };
    let missing = named(want.keys().filter(|k| !got.contains_key(*k)).collect());
    let extra = named(got.keys().filter(|k| !want.contains_key(*k)).collect());
    assert!(
        missing.is_empty() && extra.is_empty(),
        "different key sets: missing {missing:?}, extra {extra:?}"
    );
    let mut dumps = 0;
    for (id, w) in want {
        let g = &got[id];
        let name = format!("db {} key {}", id.0, String::from_utf8_lossy(&id.1));
        assert!(w.contents == g.contents, "contents of {name} differ");
        if w.encoding != b"hashtable" && g.encoding != b"hashtable" {
            assert_eq!(w.dump, g.dump, "DUMP of {name}");
            dumps += 1;
        }
        assert!(
            (w.pttl < 0 && w.pttl == g.pttl) || (w.pttl >= 0 && (w.pttl - g.pttl).abs() < 60_000),
            "PTTL of {name}: {} vs {}",
            w.pttl,
            g.pttl
        );
    }
    assert_eq!(want_functions, got_functions, "FUNCTION DUMP");
    dumps
}
