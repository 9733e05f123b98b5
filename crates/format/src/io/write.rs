//! Writing steps shared by the tensor-file writers.

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use crate::LayoutError;
use crate::error::At;
use crate::io::output::OutputFile;
use crate::tensor::TensorView;
use crate::{Error, Result};

/// Bytes written between two progress reports.
const PROGRESS_STEP: usize = 16 << 20;

/// Tensors in the order both BinTensors and safetensors writers use (dtype
/// descending, then name ascending); duplicate names are rejected.
pub(crate) fn canonical_order<'a>(
    tensors: impl IntoIterator<Item = TensorView<'a>>,
) -> Result<Vec<TensorView<'a>>> {
    let mut tensors: Vec<TensorView<'a>> = tensors.into_iter().collect();
    let mut seen = HashSet::with_capacity(tensors.len());
    if let Some(dup) = tensors.iter().find(|t| !seen.insert(t.name())) {
        return Err(Error::Layout(LayoutError::DuplicateTensorName {
            name: dup.name().to_owned(),
            at: At(None),
        }));
    }
    tensors.sort_by(|a, b| b.dtype().cmp(&a.dtype()).then(a.name().cmp(b.name())));
    Ok(tensors)
}

/// Total size of a file made of `head` followed by the tensors' bytes.
pub(crate) fn file_len(head: &[u8], tensors: &[TensorView<'_>]) -> u64 {
    head.len() as u64 + tensors.iter().map(|t| t.data().len() as u64).sum::<u64>()
}

/// Writes `head` then each tensor's bytes atomically, streaming them from
/// where they already are. `progress` gets (bytes written, total). Returns
/// the file size.
pub(crate) fn write_atomic(
    path: &Path,
    head: &[u8],
    tensors: &[TensorView<'_>],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    let total = file_len(head, tensors);
    let mut file = OutputFile::create(path)?;
    let mut written = 0u64;
    let chunks =
        std::iter::once(head).chain(tensors.iter().flat_map(|t| t.data().chunks(PROGRESS_STEP)));
    for chunk in chunks {
        file.write_all(chunk).map_err(|e| Error::io(path, e))?;
        written += chunk.len() as u64;
        progress(written, total);
    }
    file.commit()?;
    Ok(total)
}
