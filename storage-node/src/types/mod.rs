//! Values held in the keyspace, one module per data type.
//!
//! Every Redis type is a variant here; collections are boxed so that a [`Value`] stays small.

pub mod bloom;
pub mod bytes;
pub mod geo;
pub mod hash;
pub mod hll;
pub mod list;
pub mod long_double;
pub mod murmur;
pub mod set;
pub mod stream;
pub mod string;
pub mod zset;

pub use self::bytes::CompactBytes;
pub use bloom::BloomValue;
pub use hash::{HashLimits, HashValue};
pub use list::ListValue;
pub use set::SetValue;
pub use stream::StreamValue;
pub use string::StringValue;
pub use zset::ZSetValue;

/// A value in the keyspace.
#[derive(Clone, Debug)]
pub enum Value {
    Str(StringValue),
    Set(Box<SetValue>),
    ZSet(Box<ZSetValue>),
    List(Box<ListValue>),
    Hash(Box<HashValue>),
    /// A RedisBloom scalable Bloom filter (a module type in Redis).
    Bloom(Box<BloomValue>),
    Stream(Box<StreamValue>),
}

impl Value {
    /// The name `TYPE` answers with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            // The name RedisBloom registers its type under.
            Value::Bloom(_) => "MBbloom--",
            Value::Stream(_) => "stream",
        }
    }

    /// The name `OBJECT ENCODING` answers with.
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding_name(),
            Value::Set(s) => s.encoding_name(),
            Value::ZSet(z) => z.encoding_name(),
            // Redis 7.0 stores every list as a quicklist, however short.
            Value::List(_) => "quicklist",
            Value::Hash(h) => h.encoding_name(),
            // Redis reports every module value as `raw`.
            Value::Bloom(_) => "raw",
            Value::Stream(_) => "stream",
        }
    }

    /// Re-chooses a loaded value's encoding for the node's settings (RESTORE).
    pub fn refit_encoding(&mut self, max_intset_entries: usize, zset_limits: zset::ZSetLimits) {
        match self {
            Value::Str(_)
            | Value::List(_)
            | Value::Hash(_)
            | Value::Bloom(_)
            | Value::Stream(_) => {}
            Value::Set(s) => s.refit(max_intset_entries),
            Value::ZSet(z) => z.refit(zset_limits),
        }
    }

    /// An estimate of the bytes this value uses, for `MEMORY USAGE` and INFO.
    pub fn memory_usage(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
            Value::Set(s) => std::mem::size_of::<SetValue>() + s.heap_size(),
            Value::ZSet(z) => std::mem::size_of::<ZSetValue>() + z.heap_size(),
            Value::List(l) => std::mem::size_of::<ListValue>() + l.memory_usage(),
            Value::Hash(h) => std::mem::size_of::<HashValue>() + h.memory_usage(),
            // What RedisBloom's `mem_usage` callback answers, which Redis reports as is.
            Value::Bloom(b) => b.memory_usage(),
            Value::Stream(s) => s.memory_usage(),
        }
    }
}

// 24 bytes keeps a key's entry at 48 (see `keyspace::entry`): every variant but `Str`
// is a thin box, and `StringValue` leaves the tag values it does not use for them.
const _: () = assert!(std::mem::size_of::<Value>() == 24);
