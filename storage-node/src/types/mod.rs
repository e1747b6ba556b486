//! Values held in the keyspace, one module per data type.
//!
//! Every Redis type is a variant here; collections are boxed so that a [`Value`] stays small.

pub mod bytes;
pub mod long_double;
pub mod set;
pub mod string;
pub mod zset;

pub use self::bytes::CompactBytes;
pub use set::SetValue;
pub use string::StringValue;
pub use zset::ZSetValue;

/// A value in the keyspace.
#[derive(Clone, Debug)]
pub enum Value {
    Str(StringValue),
    Set(Box<SetValue>),
    ZSet(Box<ZSetValue>),
}

impl Value {
    /// The name `TYPE` answers with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }

    /// The name `OBJECT ENCODING` answers with.
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding_name(),
            Value::Set(s) => s.encoding_name(),
            Value::ZSet(z) => z.encoding_name(),
        }
    }

    /// Re-chooses a loaded value's encoding for the node's settings (RESTORE).
    pub fn refit_encoding(&mut self, max_intset_entries: usize, zset_limits: zset::ZSetLimits) {
        match self {
            Value::Str(_) => {}
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
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn value_stays_small() {
        assert!(std::mem::size_of::<super::Value>() <= 32);
    }
}
