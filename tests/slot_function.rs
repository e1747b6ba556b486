//! The shared slot function agrees with a real redis-server's `CLUSTER KEYSLOT` on 10,000
//! random keys, with and without hash tags (braces anywhere, empty tags, nested braces,
//! binary bytes). The DOMAIN.md examples and the 0x31C3 check value are unit tests in
//! `src/cluster/slot.rs`.

use rand::{Rng, SeedableRng};
use slotproxy::cluster::key_slot;
use slotproxy::resp::Frame;
use test_harness::{RawClient, ServerProcess};

fn random_key(rng: &mut rand::rngs::StdRng) -> Vec<u8> {
    let len = rng.gen_range(0..24);
    let alphabet: &[u8] = if rng.gen_bool(0.3) {
        // Binary keys, braces included.
        &[0u8, 1, 0x7b, 0x7d, 0xff, b'a', b'\r', b'\n', 0x80]
    } else {
        b"ab{}{}{}xyz:0123"
    };
    (0..len)
        .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
        .collect()
}

#[test]
fn slot_function_matches_cluster_keyslot_on_10000_keys() {
    let redis = ServerProcess::redis_server(&["--cluster-enabled", "yes"]);
    let mut client = RawClient::connect(redis.port);
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5107);
    let mut keys: Vec<Vec<u8>> = (0..10_000).map(|_| random_key(&mut rng)).collect();
    keys.extend(
        [
            &b"{user1000}.following"[..],
            b"foo{}{bar}",
            b"foo{{bar}}zap",
            b"foo{bar}{zap}",
            b"{}abc",
            b"",
        ]
        .iter()
        .map(|k| k.to_vec()),
    );
    let with_braces = keys
        .iter()
        .filter(|k| k.contains(&b'{') && k.contains(&b'}'))
        .count();
    assert!(
        with_braces > 2_000,
        "the sample exercises hash tags ({with_braces})"
    );
    for chunk in keys.chunks(500) {
        let mut batch = Vec::new();
        for key in chunk {
            batch.extend(RawClient::encode(&[b"CLUSTER", b"KEYSLOT", key]));
        }
        client.send_raw(&batch);
        for key in chunk {
            let (reply, _) = client.read_reply();
            assert_eq!(
                reply,
                Frame::Integer(key_slot(key) as i64),
                "key {:?}",
                String::from_utf8_lossy(key)
            );
        }
    }
}
