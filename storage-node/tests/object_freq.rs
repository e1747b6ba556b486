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
        slotproxy::resp::Frame::Bulk(p) => p.to_vec(),
        other => panic!("DUMP answered {other:?}"),
    };
    let restore = |key: &str, option: &[&str]| -> Vec<Vec<u8>> {
        let mut args = vec![b"RESTORE".to_vec(), key.as_bytes().to_vec(), b"0".to_vec()];
        args.push(payload.clone());
        args.extend(option.iter().map(|o| o.as_bytes().to_vec()));
        args
    };
    let steps: Vec<Vec<Vec<u8>>> = vec![
        words(&[
            "CONFIG",
            "SET",
            "lfu-log-factor",
            "0",
            "lfu-decay-time",
            "0",
        ]),
        words(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]),
        restore("a", &["FREQ", "42"]),
        words(&["OBJECT", "FREQ", "a"]),
        restore("b", &["IDLETIME", "1000"]),
        words(&["OBJECT", "FREQ", "b"]),
        restore("c", &[]),
        words(&["OBJECT", "FREQ", "c"]),
        words(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        restore("d", &["IDLETIME", "1000"]),
        words(&["OBJECT", "IDLETIME", "d"]),
        restore("e", &["FREQ", "42"]),
        words(&["OBJECT", "FREQ", "e"]),
        words(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]),
    ];
    for step in &steps {
        let args: Vec<&[u8]> = step.iter().map(Vec::as_slice).collect();
        d.check_bytes(&args);
    }
    // The counter really was set (not an error answered alike by both servers).
    assert_eq!(
        d.node_client.call(&["EXISTS", "a", "b", "c", "d", "e"]),
        slotproxy::resp::Frame::Integer(5)
    );
}

fn words(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}
