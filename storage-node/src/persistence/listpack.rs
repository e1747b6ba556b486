//! Listpack, the compact list encoding Redis 7.0 puts inside RDB payloads of small hashes,
//! sorted sets and every list node (quicklist).
//!
//! Layout: total bytes (u32 LE) · element count (u16 LE, 65535 = unknown) · entries · 0xFF.
//! Each entry is an encoding byte (and length or value bytes), the data, and a "backlen"
//! that stores the entry's size backwards in 7-bit groups. Elements that are canonical
//! integers are stored as integers in the smallest form, as Redis's `lpAppend` does, so the
//! bytes match what Redis writes for the same elements.

use slotproxy::numbers::parse_i64;

/// A listpack that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListpackError(pub &'static str);

impl std::fmt::Display for ListpackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad listpack: {}", self.0)
    }
}

const HEADER: usize = 6;
const END: u8 = 0xFF;

fn push_backlen(out: &mut Vec<u8>, len: usize) {
    let l = len as u64;
    let groups: &[u64] = if l <= 127 {
        &[l]
    } else if l < 16383 {
        &[l >> 7, (l & 127) | 128]
    } else if l < 2_097_151 {
        &[l >> 14, ((l >> 7) & 127) | 128, (l & 127) | 128]
    } else if l < 268_435_455 {
        &[
            l >> 21,
            ((l >> 14) & 127) | 128,
            ((l >> 7) & 127) | 128,
            (l & 127) | 128,
        ]
    } else {
        &[
            l >> 28,
            ((l >> 21) & 127) | 128,
            ((l >> 14) & 127) | 128,
            ((l >> 7) & 127) | 128,
            (l & 127) | 128,
        ]
    };
    out.extend(groups.iter().map(|&g| g as u8));
}

/// Bytes of an element's encoding byte(s) and data, without its back length: what
/// `encode_entry` writes before the back length.
pub fn encoded_entry_len(element: &[u8]) -> usize {
    match parse_i64(element).filter(|_| element.len() <= 21) {
        Some(v) if (0..=127).contains(&v) => 1,
        Some(v) if (-4096..=4095).contains(&v) => 2,
        Some(v) if (-32768..=32767).contains(&v) => 3,
        Some(v) if (-8_388_608..=8_388_607).contains(&v) => 4,
        Some(v) if i32::try_from(v).is_ok() => 5,
        Some(_) => 9,
        None if element.len() < 64 => 1 + element.len(),
        None if element.len() < 4096 => 2 + element.len(),
        None => 5 + element.len(),
    }
}

/// Encoding byte(s) and data of an integer element, in the smallest form.
fn encode_int_body(out: &mut Vec<u8>, v: i64) {
    match v {
        0..=127 => out.push(v as u8),
        -4096..=4095 => {
            let u = (v as u64) & 0x1FFF;
            out.push(0xC0 | (u >> 8) as u8);
            out.push(u as u8);
        }
        -32768..=32767 => {
            out.push(0xF1);
            out.extend_from_slice(&(v as i16).to_le_bytes());
        }
        -8_388_608..=8_388_607 => {
            out.push(0xF2);
            out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
        }
        _ if i32::try_from(v).is_ok() => {
            out.push(0xF3);
            out.extend_from_slice(&(v as i32).to_le_bytes());
        }
        _ => {
            out.push(0xF4);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

fn encode_entry(out: &mut Vec<u8>, element: &[u8]) {
    let start = out.len();
    match parse_i64(element).filter(|_| element.len() <= 21) {
        Some(v) => encode_int_body(out, v),
        None => {
            let len = element.len();
            if len < 64 {
                out.push(0x80 | len as u8);
            } else if len < 4096 {
                out.push(0xE0 | (len >> 8) as u8);
                out.push(len as u8);
            } else {
                out.push(0xF0);
                out.extend_from_slice(&(len as u32).to_le_bytes());
            }
            out.extend_from_slice(element);
        }
    }
    let entry_len = out.len() - start;
    debug_assert_eq!(entry_len, encoded_entry_len(element));
    push_backlen(out, entry_len);
}

fn encode_int_entry(out: &mut Vec<u8>, v: i64) {
    let start = out.len();
    encode_int_body(out, v);
    let entry_len = out.len() - start;
    push_backlen(out, entry_len);
}

/// A listpack with no elements.
pub fn empty() -> Vec<u8> {
    let mut lp = vec![0u8; HEADER];
    lp.push(END);
    set_total(&mut lp);
    lp
}

fn set_total(lp: &mut [u8]) {
    let total = lp.len() as u32;
    lp[..4].copy_from_slice(&total.to_le_bytes());
}

/// Counts one more element in the header, as `lpInsert` does (65535 stays "unknown").
fn count_one_more(lp: &mut [u8]) {
    let count = u16::from_le_bytes([lp[4], lp[5]]);
    if count != u16::MAX {
        lp[4..6].copy_from_slice(&(count + 1).to_le_bytes());
    }
}

/// Appends an element (a canonical integer is stored as one), as `lpAppend` does.
pub fn push(lp: &mut Vec<u8>, element: &[u8]) {
    lp.pop();
    encode_entry(lp, element);
    lp.push(END);
    set_total(lp);
    count_one_more(lp);
}

/// Appends an integer element.
pub fn push_int(lp: &mut Vec<u8>, v: i64) {
    lp.pop();
    encode_int_entry(lp, v);
    lp.push(END);
    set_total(lp);
    count_one_more(lp);
}

/// Replaces the element at `pos` with the integer `v` (`lpReplaceInteger`); returns the
/// position after the new element.
pub fn replace_int(lp: &mut Vec<u8>, pos: usize, v: i64) -> Result<usize, ListpackError> {
    let (_, old_end) = read_element(lp, pos)?;
    let mut encoded = Vec::with_capacity(10);
    encode_int_entry(&mut encoded, v);
    let new_end = pos + encoded.len();
    lp.splice(pos..old_end, encoded);
    set_total(lp);
    Ok(new_end)
}

/// Bytes an integer element takes, back length included.
pub fn int_size(v: i64) -> usize {
    let mut encoded = Vec::with_capacity(10);
    encode_int_entry(&mut encoded, v);
    encoded.len()
}

/// One element as stored: an integer, or a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl Element<'_> {
    /// The element as Redis returns it (integers as decimal text).
    pub fn to_bytes(self) -> Vec<u8> {
        match self {
            Element::Int(v) => v.to_string().into_bytes(),
            Element::Str(s) => s.to_vec(),
        }
    }
}

/// Position of the first element (or of the terminator).
pub const FIRST: usize = HEADER;

/// Whether `pos` is the terminator.
pub fn at_end(lp: &[u8], pos: usize) -> bool {
    lp.get(pos).is_none_or(|&b| b == END)
}

/// Reads the element at `pos`; returns it and the position after its back length.
pub fn read_element(data: &[u8], pos: usize) -> Result<(Element<'_>, usize), ListpackError> {
    let start = pos;
    let mut pos = pos;
    let first = *data.get(pos).ok_or(ListpackError("missing terminator"))?;
    if first == END {
        return Err(ListpackError("read past the last element"));
    }
    pos += 1;
    let element = if first & 0x80 == 0 {
        Element::Int(first as i64)
    } else if first & 0xC0 == 0x80 {
        Element::Str(take(data, &mut pos, (first & 0x3F) as usize)?)
    } else if first & 0xE0 == 0xC0 {
        let low = take(data, &mut pos, 1)?[0];
        let raw = (((first & 0x1F) as u64) << 8) | low as u64;
        Element::Int(sign_extend(raw, 13))
    } else if first & 0xF0 == 0xE0 {
        let low = take(data, &mut pos, 1)?[0];
        let len = (((first & 0x0F) as usize) << 8) | low as usize;
        Element::Str(take(data, &mut pos, len)?)
    } else if first == 0xF0 {
        let len = take(data, &mut pos, 4)?;
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        Element::Str(take(data, &mut pos, len)?)
    } else {
        let int_bytes = match first {
            0xF1 => 2,
            0xF2 => 3,
            0xF3 => 4,
            0xF4 => 8,
            _ => return Err(ListpackError("unknown entry encoding")),
        };
        let bytes = take(data, &mut pos, int_bytes)?;
        let mut raw = [0u8; 8];
        raw[..int_bytes].copy_from_slice(bytes);
        Element::Int(sign_extend(u64::from_le_bytes(raw), 8 * int_bytes as u32))
    };
    let entry_len = pos - start;
    take(data, &mut pos, backlen_size(entry_len))?;
    Ok((element, pos))
}

/// Encodes elements as a listpack.
pub fn encode<'a>(elements: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = vec![0u8; HEADER];
    let mut count: usize = 0;
    for element in elements {
        encode_entry(&mut out, element);
        count += 1;
    }
    out.push(END);
    let total = out.len() as u32;
    out[..4].copy_from_slice(&total.to_le_bytes());
    let count = u16::try_from(count).unwrap_or(u16::MAX);
    out[4..6].copy_from_slice(&count.to_le_bytes());
    out
}

fn take<'a>(data: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], ListpackError> {
    let end = pos.checked_add(n).ok_or(ListpackError("length overflow"))?;
    let slice = data
        .get(*pos..end)
        .ok_or(ListpackError("entry runs past the end"))?;
    *pos = end;
    Ok(slice)
}

/// Bytes the back length of an entry of `entry_len` bytes takes.
pub fn backlen_size(entry_len: usize) -> usize {
    match entry_len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

fn sign_extend(value: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((value << shift) as i64) >> shift
}

/// Decodes a listpack into its elements (integers as their decimal text).
pub fn decode(data: &[u8]) -> Result<Vec<Vec<u8>>, ListpackError> {
    if data.len() < HEADER + 1 {
        return Err(ListpackError("too short"));
    }
    let total = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
    if total != data.len() || data[total - 1] != END {
        return Err(ListpackError("size or terminator mismatch"));
    }
    let declared = u16::from_le_bytes([data[4], data[5]]);
    let mut elements = Vec::new();
    let mut pos = HEADER;
    while !at_end(data, pos) {
        let (element, next) = read_element(data, pos)?;
        elements.push(element.to_bytes());
        pos = next;
    }
    if pos >= total {
        return Err(ListpackError("missing terminator"));
    }
    if pos + 1 != total {
        return Err(ListpackError("bytes after the terminator"));
    }
    if declared != u16::MAX && declared as usize != elements.len() {
        return Err(ListpackError("element count mismatch"));
    }
    Ok(elements)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_encoding() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let elements: Vec<Vec<u8>> = vec![
            b"0".to_vec(),
            b"127".to_vec(),
            b"128".to_vec(),
            b"-1".to_vec(),
            b"-4096".to_vec(),
            b"4095".to_vec(),
            b"-32768".to_vec(),
            b"32767".to_vec(),
            b"8388607".to_vec(),
            b"-8388608".to_vec(),
            b"2147483647".to_vec(),
            b"-2147483649".to_vec(),
            b"9223372036854775807".to_vec(),
            b"-9223372036854775808".to_vec(),
            b"007".to_vec(),
            b"".to_vec(),
            b"hello".to_vec(),
            mid,
            long,
        ];
        let encoded = encode(elements.iter().map(Vec::as_slice));
        assert_eq!(decode(&encoded).unwrap(), elements);
    }

    #[test]
    fn matches_the_bytes_redis_7_0_dumps() {
        // From redis-server 7.0: DUMP of `HSET h a 1` and of `RPUSH l a 1 -5000 300000`.
        assert_eq!(
            encode([&b"a"[..], b"1"]),
            b"\x0c\x00\x00\x00\x02\x00\x81a\x02\x01\x01\xff"
        );
        assert_eq!(
            encode([&b"a"[..], b"1", b"-5000", b"300000"]),
            b"\x15\x00\x00\x00\x04\x00\x81a\x02\x01\x01\xf1x\xec\x03\xf2\xe0\x93\x04\x04\xff"
        );
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        assert!(decode(&[]).is_err());
        assert!(decode(&[7, 0, 0, 0, 1, 0, 0xFF]).is_err());
        assert!(decode(&[8, 0, 0, 0, 1, 0, 0x85, 0xFF]).is_err());
        for len in 0..40u8 {
            let mut data = vec![len, 0, 0, 0, 1, 0];
            data.extend(std::iter::repeat_n(0xF4, len as usize));
            let _ = decode(&data);
        }
    }
}
