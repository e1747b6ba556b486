//! DUMP payloads: what DUMP returns and RESTORE (and MIGRATE) accept.
//!
//! ```text
//! type byte | RDB object | RDB version (2 bytes, LE) | CRC-64 of everything before (8 bytes, LE)
//! ```
//!
//! Redis 7.0 always checks the CRC, and refuses payloads from a newer RDB version. It then
//! reads the object from the start of the whole payload, footer included, and ignores
//! whatever it did not read; [`restore`] does the same, so both accept the same inputs.

use super::crc64::crc64;
use super::rdb::{self, Encodings, RdbError, Reader, RDB_VERSION};
use crate::types::Value;

/// Bytes after the object: RDB version and CRC-64.
const FOOTER_LEN: usize = 10;

/// Why a payload was refused; each maps to one of RESTORE's error replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadError {
    /// Too short, from a newer RDB version, or the checksum does not match.
    VersionOrChecksum,
    /// The footer is fine but the object is not readable.
    BadData(RdbError),
}

/// The DUMP payload of `value`.
pub fn dump(value: &Value, encodings: &Encodings) -> Vec<u8> {
    let mut out = vec![rdb::object_type(value)];
    rdb::save_object(&mut out, value, encodings);
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks the footer of a payload (Redis's `verifyDumpPayload`).
pub fn verify(payload: &[u8]) -> Result<(), PayloadError> {
    if payload.len() < FOOTER_LEN {
        return Err(PayloadError::VersionOrChecksum);
    }
    let footer = &payload[payload.len() - FOOTER_LEN..];
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return Err(PayloadError::VersionOrChecksum);
    }
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&footer[2..]);
    if crc64(0, &payload[..payload.len() - 8]) != u64::from_le_bytes(stored) {
        return Err(PayloadError::VersionOrChecksum);
    }
    Ok(())
}

/// Verifies a payload and decodes its value.
pub fn restore(payload: &[u8], encodings: &Encodings) -> Result<Value, PayloadError> {
    verify(payload)?;
    let mut reader = Reader::new(payload);
    let type_byte = reader.read_u8().map_err(PayloadError::BadData)?;
    if !rdb::is_object_type(type_byte) {
        return Err(PayloadError::BadData(RdbError("unknown object type")));
    }
    rdb::load_object(type_byte, &mut reader, encodings).map_err(PayloadError::BadData)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::StringValue;

    const E: Encodings = Encodings {
        list_fill: -2,
        hash: crate::types::HashLimits {
            max_listpack_entries: 512,
            max_listpack_value: 64,
        },
        compress: true,
    };

    fn string(bytes: &[u8]) -> Value {
        Value::Str(StringValue::new(bytes))
    }

    fn content(value: &Value) -> Vec<u8> {
        match value {
            Value::Str(s) => s.as_slice().to_vec(),
            other => panic!("expected a string, got a {}", other.type_name()),
        }
    }

    /// A payload with a valid footer around `body`.
    fn sealed(body: &[u8], version: u16) -> Vec<u8> {
        let mut out = body.to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        let crc = crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn dump_matches_redis_bytes() {
        // Taken from redis-server 7.0.15.
        assert_eq!(
            dump(&string(b"hello"), &E),
            b"\x00\x05hello\x0a\x00cr\xdfve4 \x0a"
        );
        assert_eq!(
            dump(&string(b"5"), &E),
            b"\x00\xc0\x05\x0a\x00c/_f\x83/\xb3Q"
        );
        assert_eq!(
            dump(&string(b"123456789012"), &E),
            b"\x00\x0c123456789012\x0a\x00\x91\x10\x01\xb1\xd1\x16\xe7\xac"
        );
        assert_eq!(
            dump(&string(&[b'a'; 50]), &E),
            b"\x00\xc3\x092\x01aa\xe0%\x00\x01aa\x0a\x00\x09\xacH\xb9\xab\x15\xfb\xc9"
        );
    }

    #[test]
    fn dump_and_restore_round_trip() {
        for bytes in [
            &b""[..],
            b"42",
            b"-7",
            b"text",
            &[0u8, 1, 2, 255],
            &[b'z'; 300],
        ] {
            let value = restore(&dump(&string(bytes), &E), &E).unwrap();
            assert_eq!(content(&value), bytes);
        }
    }

    #[test]
    fn footer_problems_are_version_or_checksum_errors() {
        let good = dump(&string(b"hello"), &E);
        assert_eq!(
            restore(b"short", &E).err(),
            Some(PayloadError::VersionOrChecksum)
        );
        let mut flipped = good.clone();
        flipped[2] ^= 1;
        assert_eq!(
            restore(&flipped, &E).err(),
            Some(PayloadError::VersionOrChecksum)
        );
        assert_eq!(
            restore(&sealed(b"\x00\x05hello", 11), &E).err(),
            Some(PayloadError::VersionOrChecksum)
        );
        // Older versions are accepted.
        assert!(restore(&sealed(b"\x00\x05hello", 9), &E).is_ok());
    }

    #[test]
    fn object_problems_are_bad_data() {
        for body in [
            &b""[..],
            b"\x00",
            b"\x08\x05hello",
            b"\x14\x05hello",
            b"\x00\xc4",
        ] {
            assert!(
                matches!(
                    restore(&sealed(body, 10), &E),
                    Err(PayloadError::BadData(_))
                ),
                "{body:?}"
            );
        }
    }

    #[test]
    fn reads_run_into_the_footer_like_redis() {
        // A string length one too long takes the first footer byte, as Redis does.
        let value = restore(&sealed(b"\x00\x06hello", 10), &E).unwrap();
        assert_eq!(content(&value), b"hello\x0a");
        // Unread bytes before the footer are ignored.
        let value = restore(&sealed(b"\x00\x05helloXX", 10), &E).unwrap();
        assert_eq!(content(&value), b"hello");
    }
}
