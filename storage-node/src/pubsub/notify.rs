//! Keyspace notifications (`notify-keyspace-events`).
//!
//! A write command announces what it did with `ctx.notify(class, event, key)`, e.g.
//! `ctx.notify(notify::STRING, "set", key)` after SET or `ctx.notify(notify::LIST, "lpush",
//! key)` after LPUSH, at the point where Redis calls `notifyKeyspaceEvent` (after the change,
//! only when something changed). If the class is enabled, the node publishes
//! `__keyspace@<db>__:<key>` with the event as message (flag `K`) and
//! `__keyevent@<db>__:<event>` with the key as message (flag `E`).
//!
//! The keyspace itself reports `new` (a key created, flag `n`) and `expired` (a key removed
//! by lazy or active expiry, flag `x`); those are queued by the database when they happen and
//! published before the next notification, so the order is Redis's.

/// `K`: publish on `__keyspace@<db>__:<key>`.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: keys removed by expiry.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: keys evicted by maxmemory.
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: key misses (not part of `A`).
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module key types.
pub const MODULE: u32 = 1 << 13;
/// `n`: new keys (not part of `A`).
pub const NEW: u32 = 1 << 14;
/// `A`: every class but `m` and `n`.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Reads the flag letters; Redis's error text for any other character.
pub fn parse_flags(text: &str) -> Result<u32, String> {
    let mut flags = 0;
    for c in text.chars() {
        flags |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
        };
    }
    Ok(flags)
}

/// The normalized form CONFIG GET shows (Redis's `keyspaceEventsFlagsToString`: `A` hides
/// the classes it covers, and `n` too).
pub fn show_flags(flags: u32) -> String {
    let mut text = String::new();
    if flags & ALL == ALL {
        text.push('A');
    } else {
        for (flag, letter) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if flags & flag != 0 {
                text.push(letter);
            }
        }
    }
    for (flag, letter) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if flags & flag != 0 {
            text.push(letter);
        }
    }
    text
}

/// The channels one event is published on, given the flags.
pub fn channels(flags: u32, db: usize, event: &str, key: &[u8]) -> [Option<(Vec<u8>, Vec<u8>)>; 2] {
    let keyspace = (flags & KEYSPACE != 0).then(|| {
        let mut channel = format!("__keyspace@{db}__:").into_bytes();
        channel.extend_from_slice(key);
        (channel, event.as_bytes().to_vec())
    });
    let keyevent = (flags & KEYEVENT != 0).then(|| {
        (
            format!("__keyevent@{db}__:{event}").into_bytes(),
            key.to_vec(),
        )
    });
    [keyspace, keyevent]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_normalize_as_redis() {
        for (given, shown) in [
            ("KEA", "AKE"),
            ("An", "A"),
            ("Kx", "xK"),
            ("", ""),
            ("KEAm", "AKEm"),
            ("K$gn", "g$nK"),
            ("gg", "g"),
            ("Kd", "dK"),
            ("KEt", "tKE"),
        ] {
            assert_eq!(show_flags(parse_flags(given).unwrap()), shown, "{given}");
        }
        assert!(parse_flags("Q").is_err());
    }
}
