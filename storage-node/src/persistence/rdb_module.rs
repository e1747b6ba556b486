//! Values of module types in RDB (`RDB_TYPE_MODULE_2`), as Redis writes them for a module:
//! the type byte 7, the module type id as an RDB length, then the module's own fields, each
//! preceded by an opcode (`UINT 2` + length-encoded integer, `DOUBLE 4` + 8 bytes little
//! endian, `STRING 5` + RDB string), and `EOF 0`.
//!
//! The one module type this node has is RedisBloom's `MBbloom--` (encoding version 4),
//! written field by field as RedisBloom's `BFRdbSave` does, so DUMP payloads and RDB files
//! move filters between this node and a Redis with RedisBloom 2.6 loaded.

use super::rdb::{save_len, save_string_with, RdbError, Reader};
use crate::types::bloom::filter::Filter;
use crate::types::{BloomValue, Value};

pub const TYPE_MODULE_2: u8 = 7;

const OPCODE_EOF: u64 = 0;
const OPCODE_UINT: u64 = 2;
const OPCODE_DOUBLE: u64 = 4;
const OPCODE_STRING: u64 = 5;

/// RedisBloom's `BF_MIN_GROWTH_ENC`, the encoding version its Bloom type is registered with.
const BLOOM_ENCODING_VERSION: u64 = 4;
/// From version 2 on the chain's options are saved.
const BLOOM_MIN_OPTIONS_ENC: u64 = 2;

/// The characters of a module type name, each worth 6 bits of the id.
const NAME_CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// A module type id: the 9-character name in 6-bit digits, then a 10-bit encoding version.
fn module_type_id(name: &[u8; 9], encoding_version: u64) -> u64 {
    let mut id = 0u64;
    for &c in name {
        let digit = NAME_CHARSET.iter().position(|&x| x == c).unwrap_or(0) as u64;
        id = (id << 6) | digit;
    }
    (id << 10) | encoding_version
}

fn bloom_type_id(encoding_version: u64) -> u64 {
    module_type_id(b"MBbloom--", encoding_version)
}

fn save_uint(out: &mut Vec<u8>, value: u64) {
    save_len(out, OPCODE_UINT);
    save_len(out, value);
}

fn save_double(out: &mut Vec<u8>, value: f64) {
    save_len(out, OPCODE_DOUBLE);
    out.extend_from_slice(&value.to_le_bytes());
}

/// Appends a filter (without the type byte), as `BFRdbSave` writes it.
pub fn save_bloom(out: &mut Vec<u8>, bloom: &BloomValue, compress: bool) {
    save_len(out, bloom_type_id(BLOOM_ENCODING_VERSION));
    save_uint(out, bloom.size);
    save_uint(out, bloom.filters.len() as u64);
    save_uint(out, bloom.options as u64);
    save_uint(out, bloom.growth as u64);
    for f in &bloom.filters {
        save_uint(out, f.entries);
        save_double(out, f.error);
        save_uint(out, f.hashes as u64);
        save_double(out, f.bpe);
        save_uint(out, f.bits);
        save_uint(out, f.n2 as u64);
        save_len(out, OPCODE_STRING);
        save_string_with(out, &f.data, compress);
        save_uint(out, f.size);
    }
    save_len(out, OPCODE_EOF);
}

fn expect_opcode(reader: &mut Reader<'_>, opcode: u64) -> Result<(), RdbError> {
    if reader.read_len()? != opcode {
        return Err(RdbError("module value field of an unexpected kind"));
    }
    Ok(())
}

fn load_uint(reader: &mut Reader<'_>) -> Result<u64, RdbError> {
    expect_opcode(reader, OPCODE_UINT)?;
    reader.read_len()
}

fn load_double(reader: &mut Reader<'_>) -> Result<f64, RdbError> {
    expect_opcode(reader, OPCODE_DOUBLE)?;
    let bytes = reader.read_bytes(8)?;
    let mut array = [0u8; 8];
    array.copy_from_slice(bytes);
    Ok(f64::from_le_bytes(array))
}

fn small<T: TryFrom<u64>>(value: u64) -> Result<T, RdbError> {
    T::try_from(value).map_err(|_| RdbError("module value field out of range"))
}

/// Reads a module value after its type byte: a Bloom filter of encoding version 2 to 4.
pub fn load_module(reader: &mut Reader<'_>) -> Result<Value, RdbError> {
    let id = reader.read_len()?;
    let version = id & 1023;
    if id >> 10 != bloom_type_id(0) >> 10 {
        return Err(RdbError("value of a module type this node does not have"));
    }
    if !(BLOOM_MIN_OPTIONS_ENC..=BLOOM_ENCODING_VERSION).contains(&version) {
        return Err(RdbError("MBbloom-- encoding version not supported"));
    }
    let size = load_uint(reader)?;
    let count = load_uint(reader)?;
    if count == 0 || count >= crate::types::bloom::MAX_FILTERS as u64 {
        return Err(RdbError("bad Bloom filter count"));
    }
    let options = small(load_uint(reader)?)?;
    let growth = if version >= BLOOM_ENCODING_VERSION {
        small(load_uint(reader)?)?
    } else {
        2
    };
    let mut filters = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let entries = load_uint(reader)?;
        let error = load_double(reader)?;
        let hashes = small(load_uint(reader)?)?;
        let bpe = load_double(reader)?;
        let bits = load_uint(reader)?;
        let n2 = small(load_uint(reader)?)?;
        expect_opcode(reader, OPCODE_STRING)?;
        let data = reader.read_string()?;
        let filter_size = load_uint(reader)?;
        filters.push(Filter {
            entries,
            error,
            bpe,
            hashes,
            n2,
            bits,
            data,
            size: filter_size,
        });
    }
    expect_opcode(reader, OPCODE_EOF)?;
    let bloom = BloomValue::loaded(size, options, growth, filters)
        .ok_or(RdbError("inconsistent Bloom filter"))?;
    Ok(Value::Bloom(Box::new(bloom)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bloom_type_id_spells_its_name() {
        // "MBbloom--" in 6-bit digits: M=12 B=1 b=27 l=37 o=40 o=40 m=38 -=62 -=62.
        let digits = [12u64, 1, 27, 37, 40, 40, 38, 62, 62];
        let expected = digits.iter().fold(0u64, |id, d| (id << 6) | d);
        assert_eq!(bloom_type_id(4), (expected << 10) | 4);
    }

    #[test]
    fn filters_round_trip() {
        let mut bloom = BloomValue::new(500, 0.001, 3, false).unwrap();
        for i in 0..1200u32 {
            bloom.add(&i.to_le_bytes()).unwrap();
        }
        for compress in [false, true] {
            let mut out = Vec::new();
            save_bloom(&mut out, &bloom, compress);
            let mut reader = Reader::new(&out);
            match load_module(&mut reader) {
                Ok(Value::Bloom(loaded)) => assert_eq!(*loaded, bloom),
                other => panic!("{other:?}"),
            }
            assert_eq!(reader.remaining(), 0);
        }
    }
}
