//! A linear layer's weight as the file stores it: float (F32, F16 or BF16,
//! computed in f32) or int8 with per-row scales.

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
            let (mut q, mut scales) = (Vec::new(), Vec::new());
            for name in names {
                let (values, row_scales) = int8::weight_and_scales(embd, name)?;
                q.extend_from_slice(values);
                scales.extend(row_scales);
            }
            let n = scales.len();
            return Ok(LinearWeights::Int8(QuantizedWeights::new(&q, scales, n, k)));
        }
        let mut w = Vec::new();
        for name in names {
            w.extend(int8::weight_f32(embd, name)?);
        }
        let n = w.len() / k.max(1);
        Ok(LinearWeights::Float(PackedWeights::new(w, n, k)))
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
