//! `BF.SCANDUMP`/`BF.LOADCHUNK`'s encoding, byte for byte RedisBloom's (packed C structs,
//! little endian), so a dump taken from RedisBloom loads here and the other way round.
//!
//! - The header (iterator 0 → 1): `size u64, nfilters u32, options u32, growth u32`, then
//!   per filter `bytes u64, bits u64, size u64, error f64, bpe f64, hashes u32,
//!   entries u64, n2 u8` (53 bytes).
//! - The data: the filters' bit arrays seen as one run of bytes; iterator `i` (from 1)
//!   starts at byte `i - 1`, a chunk never crosses a filter's end and is at most
//!   [`MAX_CHUNK`] bytes, and the next iterator is `i + chunk length`. Past the end the
//!   iterator is 0.

use super::filter::{zeroed, Filter, MAX_FILTER_BYTES};
use super::BloomValue;

/// RedisBloom's `MAX_SCANDUMP_SIZE`.
pub const MAX_CHUNK: usize = 16 * 1024 * 1024;

const HEADER_BYTES: usize = 20;
const LINK_BYTES: usize = 53;

/// RedisBloom's one error text for a header or chunk it cannot use.
pub const BAD_DATA: &str = "ERR received bad data";

pub fn encode_header(bloom: &BloomValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + LINK_BYTES * bloom.filters.len());
    out.extend_from_slice(&bloom.size.to_le_bytes());
    out.extend_from_slice(&(bloom.filters.len() as u32).to_le_bytes());
    out.extend_from_slice(&bloom.options.to_le_bytes());
    out.extend_from_slice(&bloom.growth.to_le_bytes());
    for f in &bloom.filters {
        out.extend_from_slice(&(f.data.len() as u64).to_le_bytes());
        out.extend_from_slice(&f.bits.to_le_bytes());
        out.extend_from_slice(&f.size.to_le_bytes());
        out.extend_from_slice(&f.error.to_le_bytes());
        out.extend_from_slice(&f.bpe.to_le_bytes());
        out.extend_from_slice(&f.hashes.to_le_bytes());
        out.extend_from_slice(&f.entries.to_le_bytes());
        out.push(f.n2);
    }
    out
}

/// Little-endian fields read off a byte slice; the caller checked the length.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut bytes = [0u8; N];
        let (head, rest) = self.0.split_at(N.min(self.0.len()));
        bytes[..head.len()].copy_from_slice(head);
        self.0 = rest;
        bytes
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
}

/// A chain with the header's parameters and all-zero filters, waiting for its chunks.
pub fn decode_header(buf: &[u8]) -> Result<BloomValue, &'static str> {
    if buf.len() < HEADER_BYTES {
        return Err(BAD_DATA);
    }
    let mut fields = Fields(buf);
    let size = fields.u64();
    let nfilters = fields.u32() as usize;
    let options = fields.u32();
    let growth = fields.u32();
    if nfilters == 0 || buf.len() != HEADER_BYTES + LINK_BYTES * nfilters {
        return Err(BAD_DATA);
    }
    if nfilters >= super::MAX_FILTERS {
        return Err(BAD_DATA);
    }
    // Every filter's parameters first: the memory they ask for is checked before any of it
    // is allocated.
    let mut filters = Vec::with_capacity(nfilters);
    let mut total_bytes = 0u64;
    for _ in 0..nfilters {
        let bytes = fields.u64();
        let bits = fields.u64();
        let link_size = fields.u64();
        let error = fields.f64();
        let bpe = fields.f64();
        let hashes = fields.u32();
        let entries = fields.u64();
        let n2 = fields.u8();
        total_bytes = total_bytes.saturating_add(bytes);
        if bits != bytes.wrapping_mul(8) || bytes == 0 || total_bytes > MAX_FILTER_BYTES {
            return Err(BAD_DATA);
        }
        filters.push(Filter {
            entries,
            error,
            bpe,
            hashes,
            n2,
            bits,
            // The length stands in for the array until every check has passed.
            data: Vec::new(),
            size: link_size,
        });
    }
    for filter in &mut filters {
        filter.data = zeroed(filter.bits / 8).map_err(|_| BAD_DATA)?;
    }
    BloomValue::loaded(size, options, growth, filters).ok_or(BAD_DATA)
}

/// The filter holding byte `iter - 1` of the run, and the offset in it.
fn locate(bloom: &BloomValue, iter: i64) -> Option<(usize, usize)> {
    if iter < 1 {
        return None;
    }
    let mut offset = (iter - 1) as u64;
    for (index, f) in bloom.filters.iter().enumerate() {
        let len = f.data.len() as u64;
        if offset < len {
            return Some((index, offset as usize));
        }
        offset -= len;
    }
    None
}

/// The chunk at `iter` and the iterator after it; `(0, empty)` past the end.
pub fn chunk(bloom: &BloomValue, iter: i64) -> (i64, &[u8]) {
    match locate(bloom, iter) {
        Some((index, offset)) => {
            let data = &bloom.filters[index].data;
            let len = (data.len() - offset).min(MAX_CHUNK);
            (iter + len as i64, &data[offset..offset + len])
        }
        None => (0, &[]),
    }
}

/// Copies a chunk `BF.SCANDUMP` returned with iterator `iter` into place.
pub fn load_chunk(bloom: &mut BloomValue, iter: i64, buf: &[u8]) -> Result<(), &'static str> {
    if iter <= 0 || (iter as u64) < buf.len() as u64 {
        return Err(BAD_DATA);
    }
    let start = iter - buf.len() as i64;
    let Some((index, offset)) = locate(bloom, start) else {
        return Err("ERR invalid offset - no link found");
    };
    let data = &mut bloom.filters[index].data;
    if buf.len() > data.len() - offset {
        return Err("ERR invalid chunk - Too big for current filter");
    }
    data[offset..offset + buf.len()].copy_from_slice(buf);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_chunks_round_trip() {
        let mut bloom = BloomValue::new(1000, 0.01, 2, false).unwrap();
        for i in 0..3000u32 {
            bloom.add(&i.to_le_bytes()).unwrap();
        }
        let header = encode_header(&bloom);
        assert_eq!(header.len(), 20 + 53 * bloom.filters.len());
        let mut copy = decode_header(&header).unwrap();
        let mut iter = 1;
        loop {
            let (next, data) = chunk(&bloom, iter);
            if next == 0 {
                break;
            }
            load_chunk(&mut copy, next, data).unwrap();
            iter = next;
        }
        assert_eq!(copy, bloom);
    }

    #[test]
    fn headers_asking_for_too_much_memory_are_refused() {
        // Two sub-filters of 3 GiB each: refused before either is allocated.
        let mut bloom = BloomValue::new(10, 0.01, 2, false).unwrap();
        bloom.filters.push(bloom.filters[0].clone());
        let mut header = encode_header(&bloom);
        let three_gib = 3u64 << 30;
        for link in [20, 20 + 53] {
            header[link..link + 8].copy_from_slice(&three_gib.to_le_bytes());
            header[link + 8..link + 16].copy_from_slice(&(three_gib * 8).to_le_bytes());
        }
        assert_eq!(decode_header(&header), Err(BAD_DATA));
    }

    #[test]
    fn bad_headers_are_refused() {
        let bloom = BloomValue::new(10, 0.01, 2, false).unwrap();
        let header = encode_header(&bloom);
        assert_eq!(decode_header(&header[..30]), Err(BAD_DATA));
        let mut wrong_size = header.clone();
        wrong_size[0] = 5;
        assert_eq!(decode_header(&wrong_size), Err(BAD_DATA));
    }
}
