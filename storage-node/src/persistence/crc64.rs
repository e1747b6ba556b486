//! The CRC-64 Redis puts at the end of RDB files and DUMP payloads.
//!
//! Jones polynomial (0xad93d23594c935a9), reflected input and output, initial value 0, no
//! final xor; `crc64(0, b"123456789") == 0xe9c6d914c4b8d9ca`. Computed a byte at a time from a
//! 256-entry table built at compile time.

/// The Jones polynomial, bit-reversed for the reflected (LSB-first) algorithm.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const TABLE: [u64; 256] = build_table();

const fn build_table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = byte as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[byte] = crc;
        byte += 1;
    }
    table
}

/// Continues a CRC over `data` (start with `crc = 0`).
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for &byte in data {
        crc = TABLE[((crc ^ byte as u64) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::crc64;

    #[test]
    fn check_value_matches_redis() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        assert_eq!(crc64(0, b""), 0);
    }

    #[test]
    fn can_be_computed_in_pieces() {
        let data = b"The quick brown fox jumps over the lazy dog";
        let whole = crc64(0, data);
        let (a, b) = data.split_at(17);
        assert_eq!(crc64(crc64(0, a), b), whole);
    }

    #[test]
    fn matches_a_dump_payload_from_redis() {
        // DUMP of "hello" taken from redis-server 7.0: the last 8 bytes are the CRC of the rest.
        let payload = b"\x00\x05hello\x0a\x00cr\xdfve4 \x0a";
        let (body, crc) = payload.split_at(payload.len() - 8);
        let mut expected = [0u8; 8];
        expected.copy_from_slice(crc);
        assert_eq!(crc64(0, body), u64::from_le_bytes(expected));
    }
}
