//! Writing BinTensors files, byte-identical to the reference serializer.

use std::collections::BTreeMap;
use std::path::Path;

use super::header;
use crate::Result;
use crate::tensor::TensorView;
use crate::write::{canonical_order, file_len, write_atomic};

/// The 8-byte prefix and the header, and the tensors in file order.
fn plan<'a>(
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<(Vec<u8>, Vec<TensorView<'a>>)> {
    let tensors = canonical_order(tensors)?;
    let header = header::encode(metadata, &tensors)?;
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
