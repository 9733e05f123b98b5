//! Reading NumPy `.npz` archives of floating-point arrays (what
//! `numpy.savez` and `savez_compressed` write: a zip of `.npy` files,
//! stored or deflated), as Gemma Scope ships its autoencoders'
//! `params.npz`.
//!
//! Every count in an archive is untrusted: the entries are at most
//! [`MAX_ARRAYS`]; an entry's declared size must fit in memory before it
//! is read, and its bytes are read up to that size only (a deflate stream
//! that inflates further is refused); the `.npy` header is at most
//! [`MAX_HEADER`] bytes and its shape must account for the data exactly.
//! Arrays are little-endian `float16`, `float32` or `float64` in C order,
//! widened or narrowed to f32 as NumPy's `astype(float32)` rounds.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::io::memory;

/// The most arrays an archive may hold.
pub const MAX_ARRAYS: usize = 256;

/// The longest `.npy` header read (NumPy writes under 200 bytes).
pub const MAX_HEADER: usize = 64 * 1024;

/// Why an `.npz` archive was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NpzError {
    /// Not a zip archive, or a damaged one.
    #[error("{path}: not a NumPy .npz archive: {reason}")]
    NotAnArchive {
        /// The archive.
        path: PathBuf,
        /// What the zip reader said.
        reason: String,
    },
    /// More entries than [`MAX_ARRAYS`].
    #[error("{path}: {entries} entries, over the limit of {MAX_ARRAYS}")]
    TooManyArrays {
        /// The archive.
        path: PathBuf,
        /// Entries in its directory.
        entries: usize,
    },
    /// An entry that is not a `.npy` array of the types read.
    #[error("{path}: entry `{entry}`: {reason}")]
    BadArray {
        /// The archive.
        path: PathBuf,
        /// The entry's name in the archive.
        entry: String,
        /// What is wrong.
        reason: String,
    },
    /// An entry larger than the memory this process may take.
    #[error("{path}: entry `{entry}` declares {bytes} bytes: {reason}")]
    TooLarge {
        /// The archive.
        path: PathBuf,
        /// The entry's name in the archive.
        entry: String,
        /// Its declared size.
        bytes: u64,
        /// The memory bound it exceeds.
        reason: String,
    },
}

/// One array of an archive.
#[derive(Debug, Clone, PartialEq)]
pub struct NpzArray {
    /// Its name (the entry's name without `.npy`).
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its values in C order, as f32.
    pub values: Vec<f32>,
}

/// Reads every array of the archive at `path`, in the archive's order.
///
/// # Errors
/// [`NpzError`] (within [`crate::Error::Npz`]) for an archive or an array
/// that is damaged, of another type, or too large; [`crate::Error::Io`]
/// when the file cannot be read.
pub fn read(path: &Path) -> crate::Result<Vec<NpzArray>> {
    let (file, _) = crate::io::source::open_regular(path)?;
    read_from(file, path)
}

/// Reads every array of the archive `reader` holds; `path` names it in
/// errors.
///
/// # Errors
/// As [`read`].
pub fn read_from(
    reader: impl std::io::Read + std::io::Seek,
    path: &Path,
) -> crate::Result<Vec<NpzArray>> {
    let not_archive = |e: zip::result::ZipError| NpzError::NotAnArchive {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut archive = zip::ZipArchive::new(reader).map_err(not_archive)?;
    if archive.len() > MAX_ARRAYS {
        return Err(NpzError::TooManyArrays {
            path: path.to_path_buf(),
            entries: archive.len(),
        }
        .into());
    }
    let mut arrays = Vec::with_capacity(archive.len());
    for index in 0..archive.len() {
        let entry = archive.by_index(index).map_err(not_archive)?;
        let entry_name = entry.name().map_err(not_archive)?.into_owned();
        let bad = |reason: &str| NpzError::BadArray {
            path: path.to_path_buf(),
            entry: entry_name.clone(),
            reason: reason.to_owned(),
        };
        let Some(name) = entry_name.strip_suffix(".npy") else {
            return Err(bad("not a .npy array").into());
        };
        let declared = entry.size();
        if let Err(shortfall) = memory::check(declared as f64 * 2.0, "an .npz array") {
            return Err(NpzError::TooLarge {
                path: path.to_path_buf(),
                entry: entry_name.clone(),
                bytes: declared,
                reason: shortfall.to_string(),
            }
            .into());
        }
        let mut bytes = Vec::new();
        entry
            .take(declared.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| bad(&format!("cannot be read: {e}")))?;
        if bytes.len() as u64 != declared {
            return Err(bad(&format!(
                "holds {} bytes where the archive declares {declared}",
                bytes.len()
            ))
            .into());
        }
        let (shape, values) = parse_npy(&bytes).map_err(|reason| bad(&reason))?;
        arrays.push(NpzArray {
            name: name.to_owned(),
            shape,
            values,
        });
    }
    Ok(arrays)
}

/// The element types read, by their `descr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    F16,
    F32,
    F64,
}

impl Element {
    fn size(self) -> usize {
        match self {
            Element::F16 => 2,
            Element::F32 => 4,
            Element::F64 => 8,
        }
    }
}

/// The shape and values of the `.npy` bytes `bytes`.
pub fn parse_npy(bytes: &[u8]) -> Result<(Vec<usize>, Vec<f32>), String> {
    let rest = bytes.strip_prefix(b"\x93NUMPY").ok_or("no .npy magic")?;
    let (&major, rest) = rest.split_first().ok_or("truncated header")?;
    let rest = rest.get(1..).ok_or("truncated header")?;
    let (header_len, rest) = match major {
        1 => {
            let (len, rest) = rest.split_at_checked(2).ok_or("truncated header")?;
            (u16::from_le_bytes([len[0], len[1]]) as usize, rest)
        }
        2 | 3 => {
            let (len, rest) = rest.split_at_checked(4).ok_or("truncated header")?;
            (
                u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize,
                rest,
            )
        }
        v => return Err(format!(".npy format version {v} is not read")),
    };
    if header_len > MAX_HEADER {
        return Err(format!(
            "a header of {header_len} bytes, over the limit of {MAX_HEADER}"
        ));
    }
    let (header, data) = rest
        .split_at_checked(header_len)
        .ok_or("truncated header")?;
    let header = std::str::from_utf8(header).map_err(|_| "a header that is not text")?;
    let (element, shape) = parse_header(header)?;
    let count = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or("a shape whose size overflows")?;
    if count.checked_mul(element.size()) != Some(data.len()) {
        return Err(format!(
            "shape {shape:?} of {}-byte values needs {} bytes; the array holds {}",
            element.size(),
            count as u128 * element.size() as u128,
            data.len()
        ));
    }
    let values = match element {
        Element::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Element::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Element::F64 => data
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32)
            .collect(),
    };
    Ok((shape, values))
}

/// The element type and shape of a `.npy` header: the Python dict NumPy
/// writes, `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
fn parse_header(header: &str) -> Result<(Element, Vec<usize>), String> {
    let inner = header
        .trim_end_matches(['\n', ' '])
        .strip_prefix('{')
        .and_then(|h| h.strip_suffix('}'))
        .ok_or("a header that is not a dict")?;
    let value_of = |key: &str| -> Result<&str, String> {
        let quoted = format!("'{key}':");
        let at = inner
            .find(&quoted)
            .ok_or_else(|| format!("no '{key}' in the header"))?;
        Ok(inner[at + quoted.len()..].trim_start())
    };
    let descr = value_of("descr")?;
    let element = if descr.starts_with("'<f2'") {
        Element::F16
    } else if descr.starts_with("'<f4'") {
        Element::F32
    } else if descr.starts_with("'<f8'") {
        Element::F64
    } else {
        let shown: String = descr.chars().take(16).collect();
        return Err(format!(
            "dtype {shown}…: only little-endian float16, float32 and float64 are read"
        ));
    };
    if !value_of("fortran_order")?.starts_with("False") {
        return Err("a Fortran-ordered array is not read".into());
    }
    let shape = value_of("shape")?;
    let shape = shape
        .strip_prefix('(')
        .and_then(|s| s.split_once(')'))
        .ok_or("a shape that is not a tuple")?
        .0;
    let dims = shape
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse::<usize>().map_err(|_| format!("a dimension {d:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((element, dims))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn headers_numpy_writes_are_read_and_others_refused() {
        let data: Vec<u8> = [1.5f32, -2.0, 3.25, 0.0, 5.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }          \n";
        let (shape, values) = parse_npy(&npy(header, &data)).unwrap();
        assert_eq!(shape, [2, 3]);
        assert_eq!(values, [1.5, -2.0, 3.25, 0.0, 5.0, 6.0]);
        let vector = "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }\n";
        assert_eq!(parse_npy(&npy(vector, &data)).unwrap().0, [6]);
        for (header, data) in [
            (
                "{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }",
                &data[..],
            ),
            (
                "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }",
                &data[..],
            ),
            (
                "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                &data[..],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }",
                &data[..],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }",
                &data[..],
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
                &data[..],
            ),
            ("{'descr': '<f4', 'shape': (6,), }", &data[..]),
            ("'descr'", &data[..]),
        ] {
            assert!(parse_npy(&npy(header, data)).is_err(), "{header}");
        }
        assert!(parse_npy(b"\x93NUMPY\x01").is_err());
        assert!(parse_npy(b"\x93NUMPY\x01\x00\xff\xff{").is_err());
    }
}
