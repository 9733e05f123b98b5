//! The word-embedding table, looked up one token's row at a time: float
//! (read in place when a mapped file stores it as aligned F32) or int8
//! rows with their scales (the int8 bytes read in place from a mapped
//! file), so opening a model reads only the rows its texts use.

use std::sync::Arc;

use modelbin_format::DType;
use modelbin_format::embd::Embd;
use modelbin_format::embd::int8::{self, WORD_EMBEDDINGS};
use modelbin_format::io::source::MappedFile;
use modelbin_format::tensor::TensorStore;

use crate::Result;
use crate::nn::f32_tensor::{F32Tensor, MappedBytes};

/// A word-embedding table of rows of `h` values.
#[derive(Debug, Clone)]
pub(crate) enum WordTable {
    /// Float values, in f32.
    Float(F32Tensor),
    /// Int8 values `q`, each row's blocks of `block` values scaled:
    /// `E[t, i] = q[t, i] · scales[t · blocks + i / block]`.
    Int8 {
        values: Int8Values,
        scales: Vec<f32>,
        h: usize,
        block: usize,
    },
}

/// The int8 values of a table.
#[derive(Debug, Clone)]
pub(crate) enum Int8Values {
    /// Copied into memory.
    Owned(Vec<i8>),
    /// In place in a mapped file.
    Mapped(MappedBytes),
}

impl WordTable {
    /// The table of any EMBD file, in memory.
    pub(crate) fn load<B: AsRef<[u8]>>(embd: &Embd<B>) -> Result<WordTable> {
        if embd.tensor(WORD_EMBEDDINGS)?.dtype() != DType::I8 {
            return F32Tensor::load(embd, WORD_EMBEDDINGS).map(WordTable::Float);
        }
        let weight = int8::weight_and_scales(embd, WORD_EMBEDDINGS)?;
        Ok(WordTable::Int8 {
            values: Int8Values::Owned(weight.values.to_vec()),
            scales: weight.scales,
            h: weight.k,
            block: weight.block,
        })
    }

    /// The table of a mapped file, in place when it can be.
    pub(crate) fn of(file: &Arc<Embd<MappedFile>>) -> Result<WordTable> {
        let tensor = file.tensor(WORD_EMBEDDINGS)?;
        if tensor.dtype() != DType::I8 {
            return F32Tensor::of(file, WORD_EMBEDDINGS).map(WordTable::Float);
        }
        let weight = int8::weight_and_scales(&**file, WORD_EMBEDDINGS)?;
        Ok(WordTable::Int8 {
            values: Int8Values::Mapped(MappedBytes::of(file, &tensor)),
            scales: weight.scales,
            h: weight.k,
            block: weight.block,
        })
    }

    /// Writes row `id` (below the table's row count) into `out`, a row's
    /// length.
    pub(crate) fn row(&self, id: usize, out: &mut [f32]) {
        let width = out.len();
        match self {
            WordTable::Float(values) => {
                out.copy_from_slice(&values.values()[id * width..(id + 1) * width]);
            }
            WordTable::Int8 {
                values,
                scales,
                h,
                block,
            } => {
                let values: &[i8] = match values {
                    Int8Values::Owned(values) => values,
                    Int8Values::Mapped(bytes) => bytemuck::cast_slice(bytes.bytes()),
                };
                let blocks = h.div_ceil(*block);
                let row = &values[id * h..(id + 1) * h];
                let row_scales = &scales[id * blocks..(id + 1) * blocks];
                for ((out, q), &scale) in out
                    .chunks_mut(*block)
                    .zip(row.chunks(*block))
                    .zip(row_scales)
                {
                    for (o, &q) in out.iter_mut().zip(q) {
                        *o = f32::from(q) * scale;
                    }
                }
            }
        }
    }
}
