//! Reading a whole RDB file, as Redis 7.0's `rdbLoadRio` does, into a list of keys ready
//! to be put in the keyspace.
//!
//! Accepted: RDB versions 1 to 10; AUX fields (all skipped, unknown ones included);
//! `SELECTDB`, `RESIZEDB`; expiry in seconds or milliseconds; the LRU/LFU hints (skipped:
//! the node never evicts); function libraries (`FUNCTION2`); every object type the DUMP
//! decoder of [`super::rdb`] knows. Refused, with what and where: module data, the
//! pre-release function format, object types the node does not hold, a database index
//! beyond `databases`, data that ends early, and a CRC-64 trailer that does not match
//! (unless the trailer is zero, as written with `rdbchecksum no`, or the check is off).
//!
//! Nothing is applied until the whole file has been read and checked, so a bad file never
//! leaves half its keys behind.

use std::fmt;

use super::crc64::crc64;
use super::rdb::{self, Encodings, Reader, RDB_VERSION};
use super::rdb_file::*;
use crate::types::Value;

/// One key of the file.
pub struct LoadedKey {
    pub db: usize,
    pub key: Vec<u8>,
    pub value: Value,
    /// Unix milliseconds; 0 for no expiry.
    pub expire_at_ms: u64,
    /// The IDLE hint before the key (seconds; Redis reads it into a signed long long).
    pub idle_seconds: Option<i64>,
    /// The FREQ hint before the key.
    pub frequency: Option<u8>,
}

/// A whole file's contents.
#[derive(Default)]
pub struct LoadedRdb {
    pub keys: Vec<LoadedKey>,
    /// Each function library's code, in file order.
    pub libraries: Vec<Vec<u8>>,
    /// Whether a non-zero trailer was present but not checked (check turned off) or the
    /// trailer was zero (file saved without a checksum).
    pub checksum_skipped: bool,
}

/// Why a file was refused, and the byte offset where reading stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub offset: usize,
    pub what: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte offset {})", self.what, self.offset)
    }
}

impl std::error::Error for LoadError {}

/// How to read a file.
pub struct LoadParams {
    pub encodings: Encodings,
    /// `rdbchecksum`: whether the CRC-64 trailer is checked.
    pub checksum: bool,
    pub databases: usize,
}

/// Parses `data`, a whole RDB file.
pub fn parse(data: &[u8], params: &LoadParams) -> Result<LoadedRdb, LoadError> {
    let mut reader = Reader::new(data);
    let at = |reader: &Reader<'_>| data.len() - reader.remaining();
    let fail = |reader: &Reader<'_>, what: String| LoadError {
        offset: at(reader),
        what,
    };
    let rdb_err = |reader: &Reader<'_>, e: rdb::RdbError| fail(reader, e.0.to_string());

    let header = reader
        .read_bytes(9)
        .map_err(|_| fail(&reader, "file too short for the RDB header".into()))?;
    if &header[..5] != MAGIC {
        return Err(LoadError {
            offset: 0,
            what: "wrong signature, not an RDB file".into(),
        });
    }
    let version = std::str::from_utf8(&header[5..])
        .ok()
        .and_then(|v| v.parse::<u16>().ok())
        .filter(|v| (1..=RDB_VERSION).contains(v))
        .ok_or_else(|| LoadError {
            offset: 5,
            what: format!(
                "can't handle RDB format version {}",
                String::from_utf8_lossy(&header[5..])
            ),
        })?;

    let mut loaded = LoadedRdb::default();
    let mut db = 0usize;
    let mut expire_at_ms = 0u64;
    // The hints before the next key (Redis resets them after every key, as the expiry).
    let (mut idle_seconds, mut frequency) = (None, None);
    loop {
        let opcode = reader.read_u8().map_err(|e| rdb_err(&reader, e))?;
        match opcode {
            OPCODE_EOF => break,
            OPCODE_AUX => {
                // Every AUX field is informational for a loader like this one.
                reader.read_string().map_err(|e| rdb_err(&reader, e))?;
                reader.read_string().map_err(|e| rdb_err(&reader, e))?;
            }
            OPCODE_RESIZEDB => {
                reader.read_len().map_err(|e| rdb_err(&reader, e))?;
                reader.read_len().map_err(|e| rdb_err(&reader, e))?;
            }
            OPCODE_SELECTDB => {
                let index = reader.read_len().map_err(|e| rdb_err(&reader, e))?;
                if index >= params.databases as u64 {
                    return Err(fail(
                        &reader,
                        format!(
                            "the file uses database {index}, but this node has only {} \
                             (databases setting)",
                            params.databases
                        ),
                    ));
                }
                db = index as usize;
            }
            OPCODE_EXPIRETIME => {
                let bytes = reader.read_bytes(4).map_err(|e| rdb_err(&reader, e))?;
                let seconds = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                expire_at_ms = u64::from(seconds) * 1000;
            }
            OPCODE_EXPIRETIME_MS => {
                let bytes = reader.read_bytes(8).map_err(|e| rdb_err(&reader, e))?;
                let mut array = [0u8; 8];
                array.copy_from_slice(bytes);
                expire_at_ms = u64::from_le_bytes(array);
            }
            OPCODE_IDLE => {
                let idle = reader.read_len().map_err(|e| rdb_err(&reader, e))?;
                idle_seconds = Some(idle as i64);
            }
            OPCODE_FREQ => {
                frequency = Some(reader.read_u8().map_err(|e| rdb_err(&reader, e))?);
            }
            OPCODE_FUNCTION2 => {
                let code = reader.read_string().map_err(|e| rdb_err(&reader, e))?;
                loaded.libraries.push(code);
            }
            OPCODE_FUNCTION_PRE_GA => {
                return Err(fail(
                    &reader,
                    "functions in the pre-release 7.0 format are not supported".into(),
                ))
            }
            OPCODE_MODULE_AUX => {
                return Err(fail(&reader, "module data is not supported".into()));
            }
            type_byte if rdb::is_object_type(type_byte) => {
                let key = reader.read_string().map_err(|e| rdb_err(&reader, e))?;
                let value =
                    rdb::load_object(type_byte, &mut reader, &params.encodings).map_err(|e| {
                        fail(
                            &reader,
                            format!(
                                "bad value of type {type_byte} for key '{}': {e}",
                                String::from_utf8_lossy(&key)
                            ),
                        )
                    })?;
                loaded.keys.push(LoadedKey {
                    db,
                    key,
                    value,
                    expire_at_ms,
                    idle_seconds: idle_seconds.take(),
                    frequency: frequency.take(),
                });
                expire_at_ms = 0;
            }
            other => {
                return Err(LoadError {
                    offset: at(&reader) - 1,
                    what: format!("unknown RDB opcode or type {other}"),
                })
            }
        }
    }

    // Version 5 added the CRC-64 trailer.
    if version >= 5 {
        let body_len = at(&reader);
        let bytes = reader
            .read_bytes(8)
            .map_err(|_| fail(&reader, "the CRC-64 trailer is missing".into()))?;
        let mut array = [0u8; 8];
        array.copy_from_slice(bytes);
        let stored = u64::from_le_bytes(array);
        if stored == 0 || !params.checksum {
            loaded.checksum_skipped = true;
        } else if crc64(0, &data[..body_len]) != stored {
            return Err(LoadError {
                offset: body_len,
                what: "wrong RDB checksum".into(),
            });
        }
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(databases: usize) -> LoadParams {
        LoadParams {
            encodings: Encodings::default(),
            checksum: true,
            databases,
        }
    }

    /// `body` after an RDB header of `version`, then EOF and a correct CRC-64.
    fn file(version: &str, body: &[u8]) -> Vec<u8> {
        let mut out = format!("REDIS{version}").into_bytes();
        out.extend_from_slice(body);
        out.push(OPCODE_EOF);
        let crc = crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Opcodes a loader must step over: unknown AUX, RESIZEDB, LRU and LFU hints, expiry
    /// in seconds (older files), and a version before 10.
    fn mixed_body() -> Vec<u8> {
        let mut body = vec![OPCODE_AUX];
        rdb::save_string(&mut body, b"some-future-field");
        rdb::save_string(&mut body, b"whatever");
        body.extend_from_slice(&[OPCODE_SELECTDB, 2, OPCODE_RESIZEDB, 2, 1]);
        body.extend_from_slice(&[OPCODE_IDLE, 5, 0]);
        rdb::save_string(&mut body, b"k1");
        rdb::save_string(&mut body, b"v1");
        body.extend_from_slice(&[OPCODE_FREQ, 3, OPCODE_EXPIRETIME]);
        body.extend_from_slice(&2_000_000_000u32.to_le_bytes());
        body.push(0);
        rdb::save_string(&mut body, b"k2");
        rdb::save_string(&mut body, b"12345");
        body
    }

    #[test]
    fn keeps_each_keys_hints_skips_unknown_aux_and_reads_both_expiry_forms() {
        let loaded = parse(&file("0009", &mixed_body()), &params(16)).unwrap();
        assert!(!loaded.checksum_skipped);
        let keys: Vec<_> = loaded
            .keys
            .iter()
            .map(|k| {
                (
                    k.db,
                    k.key.clone(),
                    k.expire_at_ms,
                    k.idle_seconds,
                    k.frequency,
                )
            })
            .collect();
        // Each hint belongs to the key after it only.
        assert_eq!(
            keys,
            vec![
                (2, b"k1".to_vec(), 0, Some(5), None),
                (2, b"k2".to_vec(), 2_000_000_000_000, None, Some(3))
            ]
        );
    }

    #[test]
    fn refuses_what_it_cannot_load_faithfully() {
        let error = |data: &[u8], databases| parse(data, &params(databases)).err().unwrap();
        let good = file("0010", &mixed_body());
        assert!(error(&good, 2).what.contains("database 2"));
        assert!(error(b"RODIS0010\xff", 16).what.contains("signature"));
        assert!(error(&file("0011", b""), 16).what.contains("version 0011"));
        assert!(error(&good[..good.len() - 3], 16).what.contains("CRC-64"));
        assert!(error(&good[..good.len() - 12], 16)
            .what
            .contains("unexpected end"));
        let mut flipped = good.clone();
        flipped[12] ^= 1;
        assert_eq!(error(&flipped, 16).what, "wrong RDB checksum");
        let mut module = file("0010", &[OPCODE_MODULE_AUX]);
        module.truncate(module.len() - 9);
        assert!(error(&module, 16).what.contains("module"));
    }

    #[test]
    fn a_zero_trailer_or_checksum_off_skips_the_check() {
        let mut zeroed = file("0010", &mixed_body());
        let len = zeroed.len();
        zeroed[len - 8..].fill(0);
        assert!(parse(&zeroed, &params(16)).unwrap().checksum_skipped);
        let mut wrong = file("0010", &mixed_body());
        wrong[len - 1] ^= 1;
        let unchecked = LoadParams {
            checksum: false,
            ..params(16)
        };
        assert_eq!(parse(&wrong, &unchecked).unwrap().keys.len(), 2);
    }
}
