//! Writing safetensors files: the JSON header in the reference's key order,
//! then the tensor bytes streamed from where they are, atomically.

use std::collections::BTreeMap;
use std::path::Path;

use super::{FORMAT, METADATA_KEY};
use crate::LayoutError;
use crate::bintensors::MAX_HEADER_SIZE;
use crate::io::write::{canonical_order, write_atomic};
use crate::tensor::TensorView;
use crate::{Error, Result};

/// Encodes the prefix and JSON header for tensors in canonical order,
/// returning it with the tensors in that order.
fn plan<'a>(
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<(Vec<u8>, Vec<TensorView<'a>>)> {
    let tensors = canonical_order(tensors)?;
    let mut entries = Vec::with_capacity(tensors.len() + 1);
    if let Some(map) = metadata {
        entries.push(format!("{}:{}", json_string(METADATA_KEY), json_of(map)));
    }
    let mut offset = 0u64;
    for t in &tensors {
        if t.name() == METADATA_KEY {
            return Err(Error::Layout(LayoutError::ReservedName {
                name: METADATA_KEY.into(),
                format: FORMAT,
            }));
        }
        let end = offset + t.data().len() as u64;
        entries.push(format!(
            "{}:{{\"dtype\":\"{}\",\"shape\":{},\"data_offsets\":[{offset},{end}]}}",
            json_string(t.name()),
            t.dtype().name(),
            json_of(t.shape()),
        ));
        offset = end;
    }
    let mut header = format!("{{{}}}", entries.join(",")).into_bytes();
    header.resize(header.len().next_multiple_of(8), b' ');
    if header.len() as u64 > MAX_HEADER_SIZE {
        return Err(Error::Layout(LayoutError::HeaderTooLarge {
            size: header.len() as u64,
            limit: MAX_HEADER_SIZE,
        }));
    }
    let mut head = (header.len() as u64).to_le_bytes().to_vec();
    head.extend_from_slice(&header);
    Ok((head, tensors))
}

fn json_of<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("strings, maps of strings and integer lists serialize")
}

fn json_string(s: &str) -> String {
    json_of(&s)
}

/// A safetensors file in memory (the bytes [`write_file`] writes).
pub fn serialize<'a>(
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<Vec<u8>> {
    let (head, tensors) = plan(tensors, metadata)?;
    let mut out = head;
    for tensor in &tensors {
        out.extend_from_slice(tensor.data());
    }
    Ok(out)
}

/// Writes a safetensors file atomically, streaming tensor bytes from where
/// they are. `progress` gets (bytes written, total). Returns the file size.
pub fn write_file<'a>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    let (head, tensors) = plan(tensors, metadata)?;
    write_atomic(path.as_ref(), &head, &tensors, progress)
}
