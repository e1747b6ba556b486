//! A compact byte string for keys and small string values.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Longest string stored inside the value itself, without a heap allocation.
pub const INLINE_CAPACITY: usize = 22;

/// A byte string that keeps up to 22 bytes inline (24 bytes in all), so that most keys and
/// small values cost no allocation of their own. Longer strings live in an exact-size box.
#[derive(Clone)]
pub enum CompactBytes {
    Inline {
        len: u8,
        data: [u8; INLINE_CAPACITY],
    },
    Heap(Box<[u8]>),
}

impl CompactBytes {
    pub fn new(bytes: &[u8]) -> CompactBytes {
        if bytes.len() <= INLINE_CAPACITY {
            let mut data = [0u8; INLINE_CAPACITY];
            data[..bytes.len()].copy_from_slice(bytes);
            CompactBytes::Inline {
                len: bytes.len() as u8,
                data,
            }
        } else {
            CompactBytes::Heap(bytes.into())
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            CompactBytes::Inline { len, data } => &data[..*len as usize],
            CompactBytes::Heap(b) => b,
        }
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes allocated on the heap for this string (0 when inline).
    pub fn heap_size(&self) -> usize {
        match self {
            CompactBytes::Inline { .. } => 0,
            CompactBytes::Heap(b) => b.len(),
        }
    }
}

impl From<&[u8]> for CompactBytes {
    fn from(bytes: &[u8]) -> Self {
        CompactBytes::new(bytes)
    }
}

impl std::ops::Deref for CompactBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for CompactBytes {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for CompactBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for CompactBytes {}

impl Hash for CompactBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl std::fmt::Debug for CompactBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_small_and_round_trips() {
        assert_eq!(std::mem::size_of::<CompactBytes>(), 24);
        for len in [0, 1, 22, 23, 100] {
            let data: Vec<u8> = (0..len as u8).collect();
            assert_eq!(CompactBytes::new(&data).as_slice(), &data[..]);
        }
    }
}
