//! OBJECT FREQ and IDLETIME under LRU and LFU `maxmemory-policy`, compared with a real
//! redis-server. `lfu-log-factor 0` makes every access count and `lfu-decay-time 0` stops
//! decay, so the counters are deterministic on both servers.

use test_harness::Differential;

#[test]
fn object_freq_counts_accesses_under_an_lfu_policy_only() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &[
            "CONFIG",
            "SET",
            "lfu-log-factor",
            "0",
            "lfu-decay-time",
            "0",
        ],
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
        &["SET", "before", "v"],
        &["OBJECT", "FREQ", "before"],
        &["OBJECT", "FREQ", "missing"],
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
        &["CONFIG", "GET", "maxmemory-policy"],
        &["SET", "k", "v"],
        &["OBJECT", "FREQ", "k"],
        &["GET", "k"],
        &["OBJECT", "FREQ", "k"],
        &["GET", "k"],
        &["APPEND", "k", "w"],
        &["STRLEN", "k"],
        &["OBJECT", "FREQ", "k"],
        // Reads that do not touch the key leave the counter alone.
        &["EXISTS", "k"],
        &["TYPE", "k"],
        &["TTL", "k"],
        &["OBJECT", "FREQ", "k"],
        // Overwriting keeps the frequency; a new key starts at 5.
        &["SET", "k", "other"],
        &["OBJECT", "FREQ", "k"],
        &["RPUSH", "list", "a"],
        &["LPUSH", "list", "b"],
        &["OBJECT", "FREQ", "list"],
        &["OBJECT", "IDLETIME", "k"],
        &["OBJECT", "FREQ", "missing"],
        &["CONFIG", "SET", "maxmemory-policy", "volatile-lfu"],
        &["OBJECT", "FREQ", "k"],
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
        &["OBJECT", "FREQ", "k"],
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    ]);
}

#[test]
fn restore_sets_freq_under_lfu_and_idletime_under_lru() {
    let mut d = Differential::start();
    d.check(&["SET", "src", "value"]);
    let payload = match d.node_client.call(&["DUMP", "src"]) {
        slotproxy::resp::Frame::Bulk(p) => String::from_utf8_lossy(&p).into_owned(),
        other => panic!("DUMP answered {other:?}"),
    };
    let payload = payload.as_str();
    d.check_all(&[
        &[
            "CONFIG",
            "SET",
            "lfu-log-factor",
            "0",
            "lfu-decay-time",
            "0",
        ],
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
        &["RESTORE", "a", "0", payload, "FREQ", "42"],
        &["OBJECT", "FREQ", "a"],
        &["RESTORE", "b", "0", payload, "IDLETIME", "1000"],
        &["OBJECT", "FREQ", "b"],
        &["RESTORE", "c", "0", payload],
        &["OBJECT", "FREQ", "c"],
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
        &["RESTORE", "d", "0", payload, "IDLETIME", "1000"],
        &["OBJECT", "IDLETIME", "d"],
        &["RESTORE", "e", "0", payload, "FREQ", "42"],
        &["OBJECT", "FREQ", "e"],
        &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
    ]);
}
