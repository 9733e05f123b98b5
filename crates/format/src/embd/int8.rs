//! Int8 storage of an encoder's linear weights.
//!
//! `convert --dtype int8` stores each linear layer's weight `W[n, k]` (query,
//! key, value, attention output, intermediate, output) as INT8 `q[n, k]`
//! beside an F32 tensor of scales named `<weight>_scale`. Each row's inputs
//! are cut into blocks of [`BLOCK`] (32) consecutive inputs, the last one
//! possibly shorter, and every block of every row has its own scale: the
//! scale tensor has shape `[n, ceil(k / 32)]` and
//! `W[j, i] ≈ q[j, i] · scale[j, i / 32]`, every `q` in −127..=127. This
//! module holds the storage rules (names, shapes, checks, reading back);
//! the numbers come from a [`Quantizer`] the conversion is given
//! (modelbin-infer's is symmetric: a block's scale is its largest
//! magnitude over 127 and `q = round(W / scale)`, halves away from zero; a
//! block of zeros has scale 0).
//!
//! The word-embedding table `E[vocab, h]` is stored the same way with one
//! scale per row (a token's vector): INT8 `q[vocab, h]` beside an F32
//! `embeddings.word_embeddings.weight_scale` of shape `[vocab]`. Position
//! and token-type embeddings, biases and LayerNorm parameters stay in
//! float.
//!
//! A scale tensor of shape `[n]` (one scale per row: the word embeddings,
//! and the linear weights of the first int8 converter's files) is read as
//! one block spanning the whole row.

use super::Embd;
use crate::tensor::TensorStore;
use crate::{DType, Error, ModelError, Result};

/// What a weight's scale tensor adds to the weight's name.
pub const SCALE_SUFFIX: &str = "_scale";

/// The largest magnitude a quantized value takes.
pub const QMAX: f32 = 127.0;

/// The linear layers of an encoder layer, by name suffix.
const LINEAR_SUFFIXES: [&str; 6] = [
    "attention.self.query.weight",
    "attention.self.key.weight",
    "attention.self.value.weight",
    "attention.output.dense.weight",
    "intermediate.dense.weight",
    "output.dense.weight",
];

/// The name of the scale tensor of `weight`.
pub fn scale_name(weight: &str) -> String {
    format!("{weight}{SCALE_SUFFIX}")
}

/// The name of the word-embedding table, which `--dtype int8` stores as
/// INT8 with one scale per row.
pub const WORD_EMBEDDINGS: &str = "embeddings.word_embeddings.weight";

/// Whether `--dtype int8` stores the tensor `name` as INT8: a linear
/// layer's weight (a scale per block of [`BLOCK`] inputs) or the word
/// embeddings (a scale per row).
pub fn is_quantized(name: &str) -> bool {
    is_linear_weight(name) || name == WORD_EMBEDDINGS
}

/// The inputs one scale covers when `--dtype int8` stores the tensor
/// `name` with rows of `k` values: `k` for the word embeddings, [`BLOCK`]
/// otherwise.
pub fn block_for(name: &str, k: usize) -> usize {
    if name == WORD_EMBEDDINGS {
        k.max(1)
    } else {
        BLOCK
    }
}

/// Whether `name` is the weight of one of the encoder's linear layers.
pub fn is_linear_weight(name: &str) -> bool {
    name.strip_prefix("encoder.layer.")
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(layer, suffix)| {
            !layer.is_empty()
                && layer.bytes().all(|b| b.is_ascii_digit())
                && LINEAR_SUFFIXES.contains(&suffix)
        })
}

/// How many consecutive inputs of a row share one scale.
pub const BLOCK: usize = 32;

/// The number of scales each row of `k` inputs has: `ceil(k / BLOCK)`.
pub fn blocks_per_row(k: usize) -> usize {
    k.div_ceil(BLOCK)
}

/// The quantizer a conversion to int8 storage calls: given rows of `k`
/// float values, it returns their INT8 values (within ±[`QMAX`]) and one
/// scale per `block` consecutive values of a row (the last block of a row
/// possibly shorter), `ceil(k / block)` scales per row, such that
/// `value ≈ q · scale`. This crate stores the result and holds no
/// quantization math: `modelbin_infer::quantize_weight_blocks` is the
/// quantizer the CLI and Python pass.
pub type Quantizer = fn(values: &[f32], k: usize, block: usize) -> (Vec<i8>, Vec<f32>);

/// An int8 weight as a file stores it, with its scales checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Int8Weight<'a> {
    /// `q[n, k]`, row-major.
    pub values: &'a [i8],
    /// `n` rows of `ceil(k / block)` scales.
    pub scales: Vec<f32>,
    /// Inputs per row.
    pub k: usize,
    /// Consecutive inputs sharing a scale: [`BLOCK`], or `k` for a file
    /// with one scale per row.
    pub block: usize,
}

impl Int8Weight<'_> {
    /// The float values: `q[j, i] · scale[j, i / block]`.
    pub fn dequantize(&self) -> Vec<f32> {
        dequantize(self.values, &self.scales, self.k, self.block)
    }
}

/// The float values of quantized rows of `k` inputs whose scales cover
/// `block` inputs each: `q[j, i] · scales[j, i / block]`.
pub fn dequantize(q: &[i8], scales: &[f32], k: usize, block: usize) -> Vec<f32> {
    let per_row = k.div_ceil(block.max(1));
    q.chunks_exact(k.max(1))
        .zip(scales.chunks_exact(per_row.max(1)))
        .flat_map(|(row, scales)| {
            row.chunks(block.max(1))
                .zip(scales)
                .flat_map(|(values, &scale)| values.iter().map(move |&v| f32::from(v) * scale))
        })
        .collect()
}

/// The inputs each scale covers for a weight of `n` rows of `k` inputs
/// whose scale tensor has shape `scale_shape`: [`BLOCK`] for
/// `[n, ceil(k / BLOCK)]`, `k` for `[n]`, `None` for any other shape.
pub fn block_of(scale_shape: &[usize], n: usize, k: usize) -> Option<usize> {
    match *scale_shape {
        [rows] if rows == n => Some(k.max(1)),
        [rows, blocks] if rows == n && blocks == blocks_per_row(k) => Some(BLOCK),
        _ => None,
    }
}

/// The int8 weight `name` with its scales, checked: with `n` and `k` the
/// weight's first two dimensions (the model check has already made it
/// `[n, k]`), its scale tensor is F32, of shape `[n, ceil(k / 32)]` (or
/// `[n]`), and holds finite values that are not negative.
pub fn weight_and_scales<'a, B: AsRef<[u8]>>(
    embd: &'a Embd<B>,
    name: &str,
) -> Result<Int8Weight<'a>> {
    let weight = embd.tensor(name)?;
    let rows = weight.shape().first().copied().unwrap_or(0);
    let k = weight.shape().get(1).copied().unwrap_or(1);
    let scale_name = scale_name(name);
    let scale = embd.get(&scale_name).ok_or_else(|| {
        Error::Model(ModelError::MissingTensor {
            name: scale_name.clone(),
        })
    })?;
    if scale.dtype() != DType::F32 {
        return Err(Error::Model(ModelError::WrongDtype {
            name: scale_name,
            dtype: scale.dtype(),
            expected: "int8 weight scales must be F32",
        }));
    }
    let Some(block) = block_of(scale.shape(), rows, k) else {
        return Err(Error::Model(ModelError::WrongShape {
            name: scale_name,
            expected: vec![rows, blocks_per_row(k)],
            found: scale.shape().to_vec(),
        }));
    };
    let scales = scale.to_f32()?.into_owned();
    let per_row = k.div_ceil(block).max(1);
    if let Some((at, &value)) = scales
        .iter()
        .enumerate()
        .find(|(_, v)| !v.is_finite() || **v < 0.0)
    {
        return Err(Error::Model(ModelError::InvalidScale {
            name: scale_name,
            row: at / per_row,
            value,
        }));
    }
    Ok(Int8Weight {
        values: bytemuck::cast_slice(weight.data()),
        scales,
        k,
        block,
    })
}

/// A weight as f32 values: float weights decoded, int8 ones dequantized
/// with their (checked) scales.
pub fn weight_f32<B: AsRef<[u8]>>(embd: &Embd<B>, name: &str) -> Result<Vec<f32>> {
    let tensor = embd.tensor(name)?;
    if tensor.dtype() == DType::I8 {
        return Ok(weight_and_scales(embd, name)?.dequantize());
    }
    Ok(tensor.to_f32()?.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_weights_are_named_by_layer_and_suffix() {
        assert!(is_linear_weight(
            "encoder.layer.0.attention.self.query.weight"
        ));
        assert!(is_linear_weight("encoder.layer.11.output.dense.weight"));
        assert!(!is_linear_weight("encoder.layer.0.output.dense.bias"));
        assert!(!is_linear_weight("encoder.layer.x.output.dense.weight"));
        assert!(!is_linear_weight("encoder.layer..output.dense.weight"));
        assert!(!is_linear_weight("embeddings.word_embeddings.weight"));
        assert!(is_quantized("embeddings.word_embeddings.weight"));
        assert!(is_quantized("encoder.layer.3.intermediate.dense.weight"));
        assert!(!is_quantized("embeddings.position_embeddings.weight"));
        assert_eq!(block_for(WORD_EMBEDDINGS, 384), 384);
        assert_eq!(
            block_for("encoder.layer.0.output.dense.weight", 1536),
            BLOCK
        );
        assert!(!is_linear_weight("pooler.dense.weight"));
    }

    #[test]
    fn a_scale_tensor_of_one_scale_per_row_covers_the_whole_row() {
        assert_eq!(block_of(&[4], 4, 40), Some(40));
        assert_eq!(block_of(&[4, 2], 4, 40), Some(BLOCK));
        assert_eq!(block_of(&[4, 1], 4, 40), None);
        assert_eq!(block_of(&[3, 2], 4, 40), None);
        assert_eq!(block_of(&[4, 2, 1], 4, 40), None);
        let q = [1i8, 2, 3, -4];
        assert_eq!(dequantize(&q, &[0.5, 2.0], 2, 2), [0.5, 1.0, 6.0, -8.0]);
    }
}
