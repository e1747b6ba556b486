//! RedisBloom 2.6's Bloom filter commands, one submodule per theme:
//!
//! - `reserve`: BF.RESERVE.
//! - `add`: BF.ADD, BF.MADD, BF.INSERT.
//! - `exists`: BF.EXISTS, BF.MEXISTS.
//! - `info`: BF.INFO, BF.CARD.
//! - `scandump`: BF.SCANDUMP, BF.LOADCHUNK.
//!
//! The value is `types::bloom::BloomValue`. Replies and error texts are RedisBloom's,
//! including the ones without an `ERR` prefix it sends as they are. As in any module, Redis
//! checks no arity (the table says -1): each command checks its own and answers
//! `wrong number of arguments for '<name as sent>' command` (`RedisModule_WrongArity`).

mod add;
mod exists;
mod info;
mod reserve;
mod scandump;

use bytes::Bytes;

use super::errors::{CmdError, WRONGTYPE};
use super::Handler;
use crate::keyspace::Db;
use crate::types::bloom::filter::SizeError;
use crate::types::{BloomValue, Value};

pub const COMMANDS: &[(&str, Handler)] = &[
    ("bf.reserve", reserve::reserve),
    ("bf.add", add::add),
    ("bf.madd", add::madd),
    ("bf.insert", add::insert),
    ("bf.exists", exists::exists),
    ("bf.mexists", exists::mexists),
    ("bf.info", info::info),
    ("bf.card", info::card),
    ("bf.scandump", scandump::scandump),
    ("bf.loadchunk", scandump::loadchunk),
];

/// A missing key where a filter must exist.
const NOT_FOUND: &str = "ERR not found";
/// BF.RESERVE (and a first chunk) on an existing filter.
const ITEM_EXISTS: &str = "ERR item exists";
const NONSCALING_FULL: &str = "ERR non scaling filter is full";
/// RedisBloom's reply when a filter cannot be allocated (here: larger than
/// `types::bloom::filter::MAX_FILTER_BYTES`).
const CANNOT_CREATE: &str = "ERR could not create filter";

/// `RedisModule_WrongArity`: the command name as the client sent it.
fn wrong_arity(args: &[Bytes]) -> CmdError {
    format!(
        "ERR wrong number of arguments for '{}' command",
        String::from_utf8_lossy(&args[0])
    )
    .into()
}

/// A filter for reading: None if the key is missing, WRONGTYPE for another type.
fn read_bloom<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d BloomValue>, CmdError> {
    match db.get(key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Bloom(b)) => Ok(Some(b)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// A filter for writing: None if the key is missing, WRONGTYPE for another type.
fn write_bloom<'d>(db: &'d mut Db, key: &[u8]) -> Result<Option<&'d mut BloomValue>, CmdError> {
    match db.get_mut(key).map(|e| &mut e.value) {
        None => Ok(None),
        Some(Value::Bloom(b)) => Ok(Some(b)),
        Some(_) => Err(WRONGTYPE.into()),
    }
}

/// A new chain, or RedisBloom's error when its first filter cannot be built.
fn new_chain(
    capacity: u64,
    error_rate: f64,
    expansion: u32,
    nonscaling: bool,
) -> Result<BloomValue, CmdError> {
    BloomValue::new(capacity, error_rate, expansion, nonscaling).map_err(|e| match e {
        SizeError::Invalid | SizeError::TooLarge => CANNOT_CREATE.into(),
    })
}

/// `RMUtil_ArgIndex`: the first argument (the command name and key included, as
/// RedisBloom searches them) equal to `word` ignoring case.
fn arg_index(args: &[Bytes], word: &str) -> Option<usize> {
    args.iter()
        .position(|a| a.eq_ignore_ascii_case(word.as_bytes()))
}
