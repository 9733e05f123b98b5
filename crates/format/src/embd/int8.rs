//! Int8 storage of an encoder's linear weights.
//!
//! `convert --dtype int8` stores each linear layer's weight `W[n, k]` (query,
//! key, value, attention output, intermediate, output) as INT8 `q[n, k]`
//! beside an F32 tensor of per-output-row scales named `<weight>_scale`,
//! shape `[n]`, so that `W[j, i] ≈ q[j, i] · scale[j]`. The quantization is
//! symmetric: `scale[j] = max_i |W[j, i]| / 127` and
//! `q[j, i] = round(W[j, i] / scale[j])` (halves away from zero), so every
//! `q` lies in −127..=127. A row of zeros has scale 0. Embeddings, biases
//! and LayerNorm parameters stay in float.

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

/// Whether `name` is the weight of one of the encoder's linear layers, the
/// tensors `--dtype int8` stores as INT8.
pub fn is_linear_weight(name: &str) -> bool {
    name.strip_prefix("encoder.layer.")
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(layer, suffix)| {
            !layer.is_empty()
                && layer.bytes().all(|b| b.is_ascii_digit())
                && LINEAR_SUFFIXES.contains(&suffix)
        })
}

/// Quantizes the rows of `k` values of `w`: the INT8 values and one scale
/// per row.
pub fn quantize_rows(w: &[f32], k: usize) -> (Vec<i8>, Vec<f32>) {
    let mut q = Vec::with_capacity(w.len());
    let mut scales = Vec::with_capacity(w.len() / k.max(1));
    for row in w.chunks_exact(k.max(1)) {
        let max = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let scale = max / QMAX;
        scales.push(scale);
        q.extend(row.iter().map(|v| {
            if scale > 0.0 {
                (v / scale).round().clamp(-QMAX, QMAX) as i8
            } else {
                0
            }
        }));
    }
    (q, scales)
}

/// The float values of quantized rows: `q[j, i] · scales[j]`.
pub fn dequantize_rows(q: &[i8], scales: &[f32]) -> Vec<f32> {
    let k = q.len() / scales.len().max(1);
    q.chunks_exact(k.max(1))
        .zip(scales)
        .flat_map(|(row, &scale)| row.iter().map(move |&v| f32::from(v) * scale))
        .collect()
}

/// The INT8 values and scales of the int8 weight `name`, checked: the
/// weight is `[n, k]` and its scale tensor is F32 `[n]` of finite values
/// that are not negative.
pub fn weight_and_scales<'a, B: AsRef<[u8]>>(
    embd: &'a Embd<B>,
    name: &str,
) -> Result<(&'a [i8], Vec<f32>)> {
    let weight = embd.tensor(name)?;
    let rows = weight.shape().first().copied().unwrap_or(0);
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
    if scale.shape() != [rows] {
        return Err(Error::Model(ModelError::WrongShape {
            name: scale_name,
            expected: vec![rows],
            found: scale.shape().to_vec(),
        }));
    }
    let scales = scale.to_f32()?.into_owned();
    if let Some((row, &value)) = scales
        .iter()
        .enumerate()
        .find(|(_, v)| !v.is_finite() || **v < 0.0)
    {
        return Err(Error::Model(ModelError::InvalidScale {
            name: scale_name,
            row,
            value,
        }));
    }
    Ok((bytemuck::cast_slice(weight.data()), scales))
}

/// A weight as f32 values: float weights decoded, int8 ones dequantized
/// with their (checked) scales.
pub fn weight_f32<B: AsRef<[u8]>>(embd: &Embd<B>, name: &str) -> Result<Vec<f32>> {
    let tensor = embd.tensor(name)?;
    if tensor.dtype() == DType::I8 {
        let (q, scales) = weight_and_scales(embd, name)?;
        return Ok(dequantize_rows(q, &scales));
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
        assert!(!is_linear_weight("pooler.dense.weight"));
    }

    #[test]
    fn quantization_is_symmetric_per_row_and_round_trips_within_half_a_step() {
        let w = [0.6, -1.0, 0.25, 0.0, 0.0, 0.0, 3.0, 1.0, -2.0];
        let (q, scales) = quantize_rows(&w, 3);
        assert_eq!(scales, [1.0 / 127.0, 0.0, 3.0 / 127.0]);
        assert_eq!(q, [76, -127, 32, 0, 0, 0, 127, 42, -85]);
        let back = dequantize_rows(&q, &scales);
        for ((a, b), row) in w.iter().zip(&back).zip([0, 0, 0, 1, 1, 1, 2, 2, 2]) {
            assert!((a - b).abs() <= scales[row] / 2.0 + 1e-7, "{a} vs {b}");
        }
    }
}
