//! Values held in the keyspace, one module per data type.
//!
//! Only strings exist so far; every other Redis type is added as a variant here, boxed so
//! that a [`Value`] stays 24 bytes.

pub mod bytes;
pub mod long_double;
pub mod string;

pub use self::bytes::CompactBytes;
pub use string::StringValue;

/// A value in the keyspace.
#[derive(Clone, Debug)]
pub enum Value {
    Str(StringValue),
}

impl Value {
    /// The name `TYPE` answers with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
        }
    }

    /// The name `OBJECT ENCODING` answers with.
    pub fn encoding_name(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding_name(),
        }
    }

    /// An estimate of the bytes this value uses, for `MEMORY USAGE` and INFO.
    pub fn memory_usage(&self) -> usize {
        match self {
            Value::Str(s) => s.heap_size(),
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
