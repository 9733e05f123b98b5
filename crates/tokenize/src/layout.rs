//! Tables laid out as bytes by `build.rs` and read in place at run time: a
//! sequence of arrays, each written as its element count (one little-endian
//! `u64`) and its little-endian elements, padded to eight bytes. A reader
//! borrows each array from the blob without copying; it gives `None` when
//! the blob is shorter than it claims or misaligned, and the caller then
//! builds the tables instead.

/// Appends arrays to a blob.
#[allow(dead_code, reason = "build.rs lays out the tables with it")]
#[derive(Debug, Default)]
pub struct Writer {
    bytes: Vec<u8>,
}

#[allow(dead_code, reason = "build.rs lays out the tables with it")]
impl Writer {
    /// Appends an array of `u32`.
    pub fn u32s(&mut self, values: &[u32]) {
        self.array(values.len(), values.iter().flat_map(|v| v.to_le_bytes()));
    }

    /// Appends an array of `u64`.
    pub fn u64s(&mut self, values: &[u64]) {
        self.array(values.len(), values.iter().flat_map(|v| v.to_le_bytes()));
    }

    /// Appends an array of `count` elements, given as their bytes.
    fn array(&mut self, count: usize, bytes: impl Iterator<Item = u8>) {
        self.header(count);
        self.bytes.extend(bytes);
        self.pad();
    }

    /// The blob.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }

    /// An array's element count.
    fn header(&mut self, count: usize) {
        self.bytes.extend((count as u64).to_le_bytes());
    }

    /// Zeros up to the next multiple of eight bytes.
    fn pad(&mut self) {
        self.bytes.resize(self.bytes.len().next_multiple_of(8), 0);
    }
}

/// Reads the arrays of a blob in the order they were written.
#[derive(Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader of `blob`, or `None` on a big-endian target (the blob is
    /// little-endian).
    pub fn new(blob: &'a [u8]) -> Option<Self> {
        cfg!(target_endian = "little").then_some(Reader { rest: blob })
    }

    /// The next array, as `u32`; advances past its padding.
    pub fn u32s(&mut self) -> Option<&'a [u32]> {
        self.array()
    }

    /// The next array, as `u64`.
    pub fn u64s(&mut self) -> Option<&'a [u64]> {
        self.array()
    }

    /// The next array, of `T`; advances past its padding.
    fn array<T: bytemuck::Pod>(&mut self) -> Option<&'a [T]> {
        let (count, rest) = self.rest.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*count))
            .ok()?
            .checked_mul(size_of::<T>())?;
        let data = rest.get(..len)?;
        self.rest = rest.get(len.next_multiple_of(8)..).unwrap_or_default();
        bytemuck::try_cast_slice(data).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Aligned storage for a blob in a test.
    fn aligned(blob: &[u8]) -> Vec<u64> {
        let mut words = vec![0u64; blob.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut words)[..blob.len()].copy_from_slice(blob);
        words
    }

    #[test]
    fn arrays_come_back_in_order() {
        let mut w = Writer::default();
        w.u32s(&[1, 2, 3]);
        w.u32s(&[]);
        w.u32s(&[u32::MAX]);
        w.u64s(&[u64::MAX, 5]);
        w.u32s(&[4]);
        let words = aligned(&w.finish());
        let mut r = Reader::new(bytemuck::cast_slice(&words)).unwrap();
        assert_eq!(r.u32s(), Some(&[1, 2, 3][..]));
        assert_eq!(r.u32s(), Some(&[][..]));
        assert_eq!(r.u32s(), Some(&[u32::MAX][..]));
        assert_eq!(r.u64s(), Some(&[u64::MAX, 5][..]));
        assert_eq!(r.u32s(), Some(&[4][..]));
        assert_eq!(r.u32s(), None);
    }

    #[test]
    fn a_short_blob_reads_as_none() {
        let mut w = Writer::default();
        w.u32s(&[1, 2, 3]);
        let blob = w.finish();
        let words = aligned(&blob[..blob.len() - 8]);
        let mut r = Reader::new(&bytemuck::cast_slice(&words)[..blob.len() - 8]).unwrap();
        assert_eq!(r.u32s(), None);
        let huge = aligned(&u64::MAX.to_le_bytes());
        assert_eq!(
            Reader::new(bytemuck::cast_slice(&huge)).unwrap().u32s(),
            None
        );
    }
}
