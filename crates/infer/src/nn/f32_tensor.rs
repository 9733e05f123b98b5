//! A float tensor's values as f32: read in place from a mapped file when the
//! file stores them as aligned little-endian F32, decoded into memory
//! otherwise (F16, BF16, or an unaligned or in-memory file).

use std::sync::Arc;

use modelbin_format::DType;
use modelbin_format::embd::Embd;
use modelbin_format::io::source::MappedFile;
use modelbin_format::tensor::{TensorStore, TensorView};

use crate::Result;

/// The f32 values of one tensor.
#[derive(Debug, Clone)]
pub(crate) enum F32Tensor {
    /// Decoded into memory.
    Owned(Vec<f32>),
    /// In place in a mapped file (4-byte aligned).
    Mapped(MappedBytes),
}

/// A tensor's bytes in place in a mapped file, which stays open while this
/// lives.
#[derive(Debug, Clone)]
pub(crate) struct MappedBytes {
    file: Arc<Embd<MappedFile>>,
    /// Byte offset of the data in the file.
    start: usize,
    /// Bytes of data.
    len: usize,
}

impl MappedBytes {
    /// The data of `tensor`, one of `file`'s tensors.
    pub(crate) fn of(file: &Arc<Embd<MappedFile>>, tensor: &TensorView<'_>) -> MappedBytes {
        MappedBytes {
            file: Arc::clone(file),
            start: tensor.data().as_ptr() as usize - file.file_bytes().as_ptr() as usize,
            len: tensor.data().len(),
        }
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.file.file_bytes()[self.start..self.start + self.len]
    }
}

/// The float tensor `name` (F32, F16 or BF16) as f32 values in memory.
pub(crate) fn decoded<B: AsRef<[u8]>>(embd: &Embd<B>, name: &str) -> Result<Vec<f32>> {
    Ok(embd.tensor(name)?.to_f32()?.into_owned())
}

impl F32Tensor {
    /// The float tensor `name` of any EMBD file, decoded into memory.
    pub(crate) fn load<B: AsRef<[u8]>>(embd: &Embd<B>, name: &str) -> Result<F32Tensor> {
        decoded(embd, name).map(F32Tensor::Owned)
    }

    /// The float tensor `name` of a mapped file, in place when it can be.
    pub(crate) fn of(file: &Arc<Embd<MappedFile>>, name: &str) -> Result<F32Tensor> {
        let tensor = file.tensor(name)?;
        let in_place = cfg!(target_endian = "little")
            && tensor.dtype() == DType::F32
            && bytemuck::try_cast_slice::<u8, f32>(tensor.data()).is_ok();
        if !in_place {
            return Ok(F32Tensor::Owned(tensor.to_f32()?.into_owned()));
        }
        Ok(F32Tensor::Mapped(MappedBytes::of(file, &tensor)))
    }

    /// The values.
    pub(crate) fn values(&self) -> &[f32] {
        match self {
            F32Tensor::Owned(values) => values,
            // Aligned: checked when the tensor was taken, and the mapping
            // does not move.
            F32Tensor::Mapped(bytes) => bytemuck::cast_slice(bytes.bytes()),
        }
    }
}
