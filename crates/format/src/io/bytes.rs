//! A bounds-checked little-endian cursor over untrusted bytes.
//!
//! Every read returns a [`Result`] whose error names the field and its
//! absolute byte offset, so parsers never index out of bounds.

use crate::LayoutError;
use crate::{Error, Result};

/// A cursor over a byte slice that knows where the slice sits in its file.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> ByteReader<'a> {
    /// A cursor at the start of `buf`, whose first byte is at `base` in the file.
    pub fn new(buf: &'a [u8], base: u64) -> Self {
        ByteReader { buf, pos: 0, base }
    }

    /// Absolute file offset of the next byte to be read.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Position relative to the start of the slice.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The unread bytes, without consuming them.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Reads `len` bytes, borrowed from the input.
    pub fn bytes(&mut self, len: u64, what: &'static str) -> Result<&'a [u8]> {
        let available = self.remaining();
        match usize::try_from(len) {
            Ok(n) if n <= available => {
                let out = &self.buf[self.pos..self.pos + n];
                self.pos += n;
                Ok(out)
            }
            _ => Err(Error::Layout(LayoutError::Truncated {
                what,
                offset: self.offset(),
                needed: len,
                available: available as u64,
            })),
        }
    }

    /// Reads a fixed-size array.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let bytes = self.bytes(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// Reads one byte.
    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// Reads a little-endian `u16`.
    pub fn u16_le(&mut self, what: &'static str) -> Result<u16> {
        self.array(what).map(u16::from_le_bytes)
    }

    /// Reads a little-endian `u32`.
    pub fn u32_le(&mut self, what: &'static str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// Reads a little-endian `u64`.
    pub fn u64_le(&mut self, what: &'static str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// Reads a little-endian `i32`.
    pub fn i32_le(&mut self, what: &'static str) -> Result<i32> {
        self.array(what).map(i32::from_le_bytes)
    }

    /// Reads a little-endian IEEE-754 `f32`.
    pub fn f32_le(&mut self, what: &'static str) -> Result<f32> {
        self.array(what).map(f32::from_le_bytes)
    }

    /// Reads `len` bytes that must be UTF-8.
    pub fn str(&mut self, len: u64, what: &'static str) -> Result<&'a str> {
        let offset = self.offset();
        let bytes = self.bytes(len, what)?;
        std::str::from_utf8(bytes)
            .map_err(|_| Error::Layout(LayoutError::InvalidUtf8 { what, offset }))
    }
}

/// The header of a file that starts with its size (BinTensors and
/// safetensors: a little-endian u64 `n`, then `n` header bytes): the size and
/// the header's bytes, refused when `n` is above `limit` or past the end.
pub fn size_prefixed_header(file: &[u8], limit: u64) -> Result<(u64, &[u8])> {
    let mut prefix = ByteReader::new(file, 0);
    let header_len = prefix.u64_le("header size")?;
    if header_len > limit {
        return Err(Error::Layout(LayoutError::HeaderTooLarge {
            size: header_len,
            limit,
        }));
    }
    let header = prefix.bytes(header_len, "header").map_err(|_| {
        Error::Layout(LayoutError::HeaderPastEnd {
            size: header_len,
            file_len: file.len() as u64,
        })
    })?;
    Ok((header_len, header))
}

/// The capacity to reserve for `count` items read from untrusted input, each at
/// least `min_item_len` bytes long, when `remaining` bytes are left: never more
/// items than the bytes could hold.
pub fn bounded_capacity(count: u64, remaining: usize, min_item_len: usize) -> usize {
    let fit = remaining / min_item_len.max(1);
    usize::try_from(count).map_or(fit, |count| count.min(fit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_fields_and_tracks_offsets() {
        let data = [1, 2, 0, 3, 0, 0, 0, 0, 0, 0x80, 0x3f, 0xff];
        let mut r = ByteReader::new(&data, 100);
        assert_eq!(r.u8("a").unwrap(), 1);
        assert_eq!(r.u16_le("b").unwrap(), 2);
        assert_eq!(r.u32_le("c").unwrap(), 3);
        assert_eq!(r.offset(), 107);
        assert_eq!(r.f32_le("d").unwrap(), 1.0);
        assert_eq!(r.remaining(), 1);
        match r.u16_le("tail") {
            Err(Error::Layout(LayoutError::Truncated {
                what,
                offset,
                needed,
                available,
            })) => {
                assert_eq!((what, offset, needed, available), ("tail", 111, 2, 1));
            }
            other => panic!("expected Truncated, got {other:?}"),
        }
        // A failed read consumes nothing.
        assert_eq!(r.u8("last").unwrap(), 0xff);
    }

    #[test]
    fn huge_lengths_are_truncation_errors_not_panics() {
        let mut r = ByteReader::new(&[0u8; 4], 0);
        assert!(matches!(
            r.bytes(u64::MAX, "blob"),
            Err(Error::Layout(LayoutError::Truncated { .. }))
        ));
        assert!(matches!(
            r.str(5, "name"),
            Err(Error::Layout(LayoutError::Truncated { needed: 5, .. }))
        ));
    }

    #[test]
    fn invalid_utf8_names_the_offset() {
        let mut r = ByteReader::new(&[b'a', 0xff], 10);
        assert!(matches!(
            r.str(2, "name"),
            Err(Error::Layout(LayoutError::InvalidUtf8 {
                what: "name",
                offset: 10
            }))
        ));
    }

    #[test]
    fn bounded_capacity_never_exceeds_what_bytes_can_hold() {
        assert_eq!(bounded_capacity(u64::MAX, 100, 5), 20);
        assert_eq!(bounded_capacity(3, 100, 5), 3);
        assert_eq!(bounded_capacity(3, 100, 0), 3);
    }
}
