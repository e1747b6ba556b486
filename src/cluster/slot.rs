//! Hash slots: `CRC16/XMODEM(hash_part(key)) mod 16384`, with Redis's hash-tag rule.

/// Number of hash slots in a Redis Cluster.
pub const SLOT_COUNT: usize = 16384;

/// CRC16/XMODEM (poly 0x1021, init 0, no reflection), the checksum Redis Cluster uses.
///
/// Table-driven, one lookup per byte, like Redis's `crc16.c`: every keyed command computes
/// it (the keyspace is sharded by slot), so it must not cost more than hashing the key.
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &byte| crc16_step(crc, byte))
}

fn crc16_step(crc: u16, byte: u8) -> u16 {
    (crc << 8) ^ CRC16_TABLE[usize::from((crc >> 8) as u8 ^ byte)]
}

/// `CRC16_TABLE[i]` is the CRC of the single byte `i`, computed at compile time.
const CRC16_TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The part of the key that is hashed: the bytes between the first `{` and the first `}`
/// after it, if there is at least one byte between them; otherwise the whole key.
pub fn hash_part(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// The hash slot of a key.
pub fn key_slot(key: &[u8]) -> u16 {
    // Most keys have no `{`: checksum them in the same pass that looks for one.
    let mut crc = 0u16;
    for &byte in key {
        if byte == b'{' {
            return crc16(hash_part(key)) & (SLOT_COUNT as u16 - 1);
        }
        crc = crc16_step(crc, byte);
    }
    crc & (SLOT_COUNT as u16 - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
        // Entries of Redis's crc16tab.
        assert_eq!(CRC16_TABLE[1], 0x1021);
        assert_eq!(CRC16_TABLE[255], 0x1ef0);
    }

    #[test]
    fn hash_tags_follow_domain_examples() {
        assert_eq!(hash_part(b"{user1000}.following"), b"user1000");
        assert_eq!(hash_part(b"{user1000}.followers"), b"user1000");
        assert_eq!(
            key_slot(b"{user1000}.following"),
            key_slot(b"{user1000}.followers")
        );
        assert_eq!(hash_part(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_part(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_part(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_part(b"{}abc"), b"{}abc");
        assert_eq!(hash_part(b"{abc"), b"{abc");
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b""), 0);
        for key in [&b"foo{bar}"[..], b"{a", b"a{}b", b"x{y}z", b"plain-key:0001"] {
            assert_eq!(key_slot(key), crc16(hash_part(key)) % 16384);
        }
    }
}
