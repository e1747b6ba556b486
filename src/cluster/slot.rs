//! Hash slots: `CRC16/XMODEM(hash_part(key)) mod 16384`, with Redis's hash-tag rule.

/// Number of hash slots in a Redis Cluster.
pub const SLOT_COUNT: usize = 16384;

/// CRC16/XMODEM (poly 0x1021, init 0, no reflection), the checksum Redis Cluster uses.
///
/// Every keyed command computes it (the keyspace is sharded by slot), so it is table-driven
/// and takes eight bytes at a time (see [`crc16_block`]).
pub fn crc16(data: &[u8]) -> u16 {
    let mut blocks = data.chunks_exact(8);
    let mut crc = 0;
    for chunk in &mut blocks {
        let mut block = [0u8; 8];
        block.copy_from_slice(chunk);
        crc = crc16_block(crc, block);
    }
    blocks
        .remainder()
        .iter()
        .fold(crc, |crc, &byte| crc16_step(crc, byte))
}

/// Feeds one byte to the CRC.
fn crc16_step(crc: u16, byte: u8) -> u16 {
    (crc << 8) ^ CRC16_TABLES[0][usize::from((crc >> 8) as u8 ^ byte)]
}

/// Feeds eight bytes to the CRC at once ("slicing by 8"). The CRC is linear: the running
/// value folds into the first two bytes, and each byte's share of the result is looked up
/// on its own, so the eight lookups do not wait for one another as byte steps do.
fn crc16_block(crc: u16, block: [u8; 8]) -> u16 {
    let [b0, b1, b2, b3, b4, b5, b6, b7] = block;
    let t = &CRC16_TABLES;
    t[7][usize::from(b0 ^ (crc >> 8) as u8)]
        ^ t[6][usize::from(b1 ^ crc as u8)]
        ^ t[5][usize::from(b2)]
        ^ t[4][usize::from(b3)]
        ^ t[3][usize::from(b4)]
        ^ t[2][usize::from(b5)]
        ^ t[1][usize::from(b6)]
        ^ t[0][usize::from(b7)]
}

/// `CRC16_TABLES[k][x]` is the CRC of the byte `x` followed by `k` zero bytes, computed at
/// compile time. `CRC16_TABLES[0]` is the classic one-byte table (Redis's `crc16tab`).
const CRC16_TABLES: [[u16; 256]; 8] = {
    let mut tables = [[0u16; 256]; 8];
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
        tables[0][i] = crc;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let previous = tables[k - 1][i];
            tables[k][i] = (previous << 8) ^ tables[0][(previous >> 8) as usize];
            i += 1;
        }
        k += 1;
    }
    tables
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
    const MASK: u16 = SLOT_COUNT as u16 - 1;
    // Most keys have no `{`: checksum them in the same pass that looks for one.
    let mut blocks = key.chunks_exact(8);
    let mut crc = 0;
    for chunk in &mut blocks {
        let mut block = [0u8; 8];
        block.copy_from_slice(chunk);
        if has_byte(u64::from_le_bytes(block), b'{') {
            return crc16(hash_part(key)) & MASK;
        }
        crc = crc16_block(crc, block);
    }
    for &byte in blocks.remainder() {
        if byte == b'{' {
            return crc16(hash_part(key)) & MASK;
        }
        crc = crc16_step(crc, byte);
    }
    crc & MASK
}

/// Whether any of the eight bytes of `word` is `byte` (the classic test for a zero byte,
/// applied to `word` with `byte` XORed out of every position).
fn has_byte(word: u64, byte: u8) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let x = word ^ (u64::from(byte) * ONES);
    x.wrapping_sub(ONES) & !x & (ONES << 7) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
        // Entries of Redis's crc16tab.
        assert_eq!(CRC16_TABLES[0][1], 0x1021);
        assert_eq!(CRC16_TABLES[0][255], 0x1ef0);
        // Eight bytes at a time agrees with one byte at a time, at every length.
        let data: Vec<u8> = (0u32..64).map(|i| (i * 73 + 11) as u8).collect();
        for len in 0..data.len() {
            let bytewise = data[..len].iter().fold(0, |crc, &b| crc16_step(crc, b));
            assert_eq!(crc16(&data[..len]), bytewise, "length {len}");
        }
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
        for key in [
            &b"foo{bar}"[..],
            b"{a",
            b"a{}b",
            b"x{y}z",
            b"plain-key:0001",
            b"counter:000000123456",
            b"12345678{tag}",
            b"1234567{tag}",
            b"123456789abcdefgh{x}",
        ] {
            assert_eq!(key_slot(key), crc16(hash_part(key)) % 16384);
        }
        for byte in 0..=255u8 {
            for at in 0..8 {
                let mut word = [0u8; 8];
                word[at] = byte;
                let expected = byte == b'{';
                assert_eq!(has_byte(u64::from_le_bytes(word), b'{'), expected);
            }
        }
    }
}
