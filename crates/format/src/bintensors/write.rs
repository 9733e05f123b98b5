//! Writing BinTensors files, byte-identical to the reference serializer.

use std::collections::BTreeMap;
use std::path::Path;

use super::read::{MAX_HEADER_SIZE, PAD};
use super::varint;
use crate::error::At;
use crate::io::write::{canonical_order, file_len, write_atomic};
use crate::tensor::TensorView;
use crate::{Error, LayoutError, Result};

/// The 8-byte prefix and the header, and the tensors in file order.
fn plan<'a>(
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<(Vec<u8>, Vec<TensorView<'a>>)> {
    let tensors = canonical_order(tensors)?;
    let header = encode(metadata, &tensors)?;
    let mut head = Vec::with_capacity(8 + header.len());
    head.extend_from_slice(&(header.len() as u64).to_le_bytes());
    head.extend_from_slice(&header);
    Ok((head, tensors))
}

/// Serializes tensors and optional metadata to an owned buffer, exactly as
/// `bintensors::serialize` does. `None` metadata and an empty map differ on disk.
pub fn serialize<'a>(
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<Vec<u8>> {
    let (head, tensors) = plan(tensors, metadata)?;
    let mut out = Vec::with_capacity(file_len(&head, &tensors) as usize);
    out.extend_from_slice(&head);
    for tensor in &tensors {
        out.extend_from_slice(tensor.data());
    }
    Ok(out)
}

/// Writes a BinTensors file atomically, streaming each tensor's bytes from
/// where they already are (no second copy in memory). `progress` is called
/// with (bytes written, total bytes). Returns the file size.
pub fn write_file<'a>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    let (head, tensors) = plan(tensors, metadata)?;
    write_atomic(path.as_ref(), &head, &tensors, progress)
}

/// Encodes the header payload plus padding for tensors already in file order.
pub(crate) fn encode(
    metadata: Option<&BTreeMap<String, String>>,
    tensors: &[TensorView<'_>],
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match metadata {
        None => out.push(0),
        Some(map) => {
            out.push(1);
            varint::write(&mut out, map.len() as u64);
            for (key, value) in map {
                write_string(&mut out, key);
                write_string(&mut out, value);
            }
        }
    }
    varint::write(&mut out, tensors.len() as u64);
    let mut offset = 0u64;
    for tensor in tensors {
        write_string(&mut out, tensor.name());
        varint::write(&mut out, u64::from(tensor.dtype().bintensors_code()));
        varint::write(&mut out, tensor.shape().len() as u64);
        for &dim in tensor.shape() {
            varint::write(&mut out, dim as u64);
        }
        let end = offset
            .checked_add(tensor.data().len() as u64)
            .ok_or_else(|| {
                Error::Layout(LayoutError::Overflow {
                    what: "total tensor data size".into(),
                    at: At(None),
                })
            })?;
        varint::write(&mut out, offset);
        varint::write(&mut out, end);
        offset = end;
    }
    out.resize(out.len().next_multiple_of(8), PAD);
    if out.len() as u64 > MAX_HEADER_SIZE {
        return Err(Error::Layout(LayoutError::HeaderTooLarge {
            size: out.len() as u64,
            limit: MAX_HEADER_SIZE,
        }));
    }
    Ok(out)
}

fn write_string(out: &mut Vec<u8>, s: &str) {
    varint::write(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}
