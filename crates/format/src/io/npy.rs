//! Streaming writer of NumPy `.npy` files (format version 1.0) holding a
//! float32 matrix whose row count is known only at the end.
//!
//! The header has a fixed size (128 bytes), written once with a
//! placeholder row count and rewritten with the real one before the file
//! is committed (atomically, as every output). A stream (standard output,
//! a FIFO) cannot go back to its header: its rows are kept in memory and
//! written after the header at the end.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use crate::io::output::OutputFile;

/// Magic, version, header length and the padded dictionary: a multiple of
/// 64 bytes, as NumPy aligns data, and room for any `u64` row count.
const HEADER_BYTES: usize = 128;

/// A `.npy` file of float32 rows being written.
pub struct NpyWriter {
    file: OutputFile,
    columns: usize,
    rows: u64,
    /// The rows' bytes, held until the end when the output is a stream.
    held: Option<Vec<u8>>,
}

impl NpyWriter {
    /// Starts `path`, a matrix of `columns` float32 columns.
    pub fn create(path: &Path, columns: usize) -> crate::Result<Self> {
        let mut file = OutputFile::create(path)?;
        let held = file.is_stream().then(Vec::new);
        if held.is_none() {
            file.write_all(&header(0, columns))
                .map_err(|e| crate::Error::io(path, e))?;
        }
        Ok(NpyWriter {
            file,
            columns,
            rows: 0,
            held,
        })
    }

    /// Appends one row (`columns` values).
    pub fn push(&mut self, row: &[f32]) -> std::io::Result<()> {
        debug_assert_eq!(row.len(), self.columns);
        let out: &mut dyn Write = match &mut self.held {
            Some(held) => held,
            None => &mut self.file,
        };
        for value in row {
            out.write_all(&value.to_le_bytes())?;
        }
        self.rows += 1;
        Ok(())
    }

    /// Writes the final header and commits the file.
    pub fn finish(mut self) -> crate::Result<()> {
        let target = self.file.target().to_path_buf();
        let io = |e| crate::Error::io(&target, e);
        if self.held.is_none() {
            self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        }
        self.file
            .write_all(&header(self.rows, self.columns))
            .map_err(io)?;
        if let Some(rows) = &self.held {
            self.file.write_all(rows).map_err(io)?;
        }
        self.file.commit()
    }
}

/// The header of a C-ordered little-endian float32 `[rows, columns]` array.
fn header(rows: u64, columns: usize) -> Vec<u8> {
    let dict =
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {columns}), }}");
    let mut out = Vec::with_capacity(HEADER_BYTES);
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&((HEADER_BYTES - 10) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(HEADER_BYTES - 1, b' ');
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_numpy_version_1_padded_to_128_bytes() {
        let h = header(3, 384);
        assert_eq!(h.len(), HEADER_BYTES);
        assert_eq!(&h[..10], b"\x93NUMPY\x01\x00\x76\x00");
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(text.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 384), }"));
        assert!(text.ends_with(" \n"));
        assert_eq!(header(u64::MAX, usize::MAX).len(), HEADER_BYTES);
    }

    #[test]
    fn rows_are_counted_into_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let mut writer = NpyWriter::create(&path, 2).unwrap();
        writer.push(&[1.0, 2.0]).unwrap();
        writer.push(&[3.0, -4.5]).unwrap();
        writer.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..HEADER_BYTES], &header(2, 2)[..]);
        let values: Vec<f32> = bytes[HEADER_BYTES..]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(values, [1.0, 2.0, 3.0, -4.5]);
    }
}
