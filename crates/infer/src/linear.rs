//! A linear layer's weight as the file stores it: float (F32, F16 or BF16,
//! computed in f32) or int8 with a scale per block of inputs.

use std::borrow::Cow;

use modelbin_format::DType;
use modelbin_format::embd::{Embd, int8};
use modelbin_format::tensor::TensorStore;

use crate::Result;
use crate::int8_kernels::Int8Kernel;
use crate::packed::PackedWeights;
use crate::quantized::{MAX_INPUT_FEATURES, QuantizedWeights};

/// A weight matrix `W[n, k]` ready for `x · Wᵀ`.
#[derive(Debug, Clone)]
pub(crate) enum LinearWeights {
    /// Float weights, packed f32.
    Float(PackedWeights),
    /// Int8 weights, packed for the integer kernels.
    Int8(QuantizedWeights),
}

impl LinearWeights {
    /// The weights `names` (each `[rows, k]`, the same `k`) stacked by rows.
    /// They stay int8 when all of them are stored so; a mix is computed in
    /// f32, the int8 parts dequantized.
    pub(crate) fn load<B: AsRef<[u8]>>(embd: &Embd<B>, names: &[String], k: usize) -> Result<Self> {
        let all_int8 = names
            .iter()
            .all(|name| embd.get(name).is_some_and(|t| t.dtype() == DType::I8));
        if all_int8 && k <= MAX_INPUT_FEATURES {
            let weights = names
                .iter()
                .map(|name| int8::weight_and_scales(embd, name))
                .collect::<Result<Vec<_>, _>>()?;
            // Parts quantized in blocks of different lengths (files of
            // different converters) are computed in f32 below.
            if weights.iter().all(|w| w.block == weights[0].block) {
                let parts: Vec<&[i8]> = weights.iter().map(|w| w.values).collect();
                let scales: Vec<f32> = weights
                    .iter()
                    .flat_map(|w| w.scales.iter().copied())
                    .collect();
                return Ok(LinearWeights::Int8(QuantizedWeights::new(
                    &parts,
                    &scales,
                    k,
                    weights[0].block,
                )));
            }
        }
        let parts = names
            .iter()
            .map(|name| {
                let tensor = embd.tensor(name)?;
                Ok(if tensor.dtype() == DType::I8 {
                    Cow::Owned(int8::weight_f32(embd, name)?)
                } else {
                    tensor.to_f32()?
                })
            })
            .collect::<Result<Vec<Cow<'_, [f32]>>>>()?;
        let parts: Vec<&[f32]> = parts.iter().map(|p| p.as_ref()).collect();
        Ok(LinearWeights::Float(PackedWeights::new(&parts, k)))
    }

    /// `out[m, n] = bias + x[m, k] · Wᵀ`; int8 weights use `kernel`.
    pub(crate) fn apply(&self, x: &[f32], bias: &[f32], out: &mut [f32], kernel: Int8Kernel) {
        match self {
            LinearWeights::Float(w) => w.linear(x, bias, out),
            LinearWeights::Int8(w) => w.linear(x, bias, out, kernel),
        }
    }

    /// Whether the weights are int8.
    pub(crate) fn is_int8(&self) -> bool {
        matches!(self, LinearWeights::Int8(_))
    }
}
