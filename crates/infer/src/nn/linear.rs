//! A linear layer's weight as the file stores it: float (F32, F16 or BF16,
//! computed in f32) or int8 with a scale per block of inputs.
//!
//! Float weights stored as aligned F32 in a mapped file are packed for the
//! register-tiled kernel on their second product, not at load: the first
//! packs one panel at a time as it goes ([`packed::linear_unpacked`], same
//! results), so that a process embedding one sentence never packs the
//! whole model, and the second call pays for packing (in parallel). Where
//! the packed kernel does not run, the portable path copies the weights on
//! the first product. Weights decoded into memory (F16, BF16, int8 mixed
//! with float, an unaligned or in-memory file) are packed at load.

use std::sync::OnceLock;

use modelbin_format::DType;
use modelbin_format::embd::{Embd, int8};
use modelbin_format::tensor::TensorStore;

use crate::Result;
use crate::nn::f32_tensor::F32Tensor;
use crate::nn::int8::Int8Kernel;
use crate::nn::int8::{MAX_INPUT_FEATURES, QuantizedWeights, quantize_weight_blocks};
use crate::nn::packed::{self, PackedWeights};

/// A weight matrix `W[n, k]` ready for `x · Wᵀ`.
#[derive(Debug, Clone)]
pub(crate) enum LinearWeights {
    /// Float weights, in f32.
    Float(FloatWeights),
    /// Int8 weights, packed for the integer kernels.
    Int8(QuantizedWeights),
}

impl LinearWeights {
    /// The weights `names` (each `[rows, k]`, the same `k`) stacked by rows.
    /// They stay int8 when all of them are stored so; a mix is computed in
    /// f32, the int8 parts dequantized.
    /// Float parts come through `floats` (in place from a mapped file).
    pub(crate) fn load<B: AsRef<[u8]>>(
        embd: &Embd<B>,
        floats: &dyn Fn(&str) -> Result<F32Tensor>,
        names: &[String],
        k: usize,
    ) -> Result<Self> {
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
                if embd.tensor(name)?.dtype() == DType::I8 {
                    Ok(F32Tensor::Owned(int8::weight_f32(embd, name)?))
                } else {
                    floats(name)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(LinearWeights::Float(FloatWeights::new(parts, k)))
    }

    /// Float weights held in memory: the rows of `parts` (each `[rows, k]`)
    /// stacked, packed now.
    pub(crate) fn float(parts: Vec<Vec<f32>>, k: usize) -> Self {
        let parts = parts.into_iter().map(F32Tensor::Owned).collect();
        LinearWeights::Float(FloatWeights::new(parts, k))
    }

    /// `out[m, n] = bias + x[m, k] · Wᵀ`; int8 weights use `kernel`.
    pub(crate) fn apply(&self, x: &[f32], bias: &[f32], out: &mut [f32], kernel: Int8Kernel) {
        match self {
            LinearWeights::Float(w) => w.apply(x, bias, out),
            LinearWeights::Int8(w) => w.linear(x, bias, out, kernel),
        }
    }

    /// The weights quantized to int8 with a scale per block of
    /// [`int8::BLOCK`] inputs of each row, as `convert --dtype int8` stores
    /// them; int8 weights, and rows too wide for the integer kernels, stay
    /// as they are.
    pub(crate) fn to_int8(&self) -> LinearWeights {
        match self {
            LinearWeights::Float(w) if w.k <= MAX_INPUT_FEATURES => {
                let (values, scales) = quantize_weight_blocks(&w.rows(), w.k, int8::BLOCK);
                LinearWeights::Int8(QuantizedWeights::new(&[&values], &scales, w.k, int8::BLOCK))
            }
            other => other.clone(),
        }
    }

    /// Whether the weights are int8.
    pub(crate) fn is_int8(&self) -> bool {
        matches!(self, LinearWeights::Int8(_))
    }
}

/// Float weights: in place in a mapped file until their second product
/// packs them; when any part was decoded into memory, all are packed at
/// once instead (the decoded copy is then dropped, so a model never holds
/// both).
#[derive(Debug, Clone)]
pub(crate) struct FloatWeights {
    /// `[rows, k]` each, stacked in order; empty once packed at load.
    parts: Vec<F32Tensor>,
    /// Input features.
    k: usize,
    /// The packed weights, once made.
    packed: OnceLock<PackedWeights>,
    /// Set by the first product.
    first_product: OnceLock<()>,
}

impl FloatWeights {
    /// The weights `parts` (each `[rows, k]`), packed now unless all are
    /// in place in a mapped file.
    fn new(parts: Vec<F32Tensor>, k: usize) -> Self {
        let in_place = parts.iter().all(|p| matches!(p, F32Tensor::Mapped(_)));
        let packed = OnceLock::new();
        if !in_place {
            let values: Vec<&[f32]> = parts.iter().map(F32Tensor::values).collect();
            let _ = packed.set(PackedWeights::new(&values, k));
        }
        FloatWeights {
            parts: if in_place { parts } else { Vec::new() },
            k,
            packed,
            first_product: OnceLock::new(),
        }
    }

    /// The weights `W[n, k]`, row-major.
    fn rows(&self) -> Vec<f32> {
        match self.packed.get() {
            Some(packed) => packed.rows(),
            None => self
                .parts
                .iter()
                .flat_map(|p| p.values().iter().copied())
                .collect(),
        }
    }

    /// `out[m, n] = bias + x[m, k] · Wᵀ`.
    fn apply(&self, x: &[f32], bias: &[f32], out: &mut [f32]) {
        let parts = || -> Vec<&[f32]> { self.parts.iter().map(F32Tensor::values).collect() };
        if let Some(packed) = self.packed.get() {
            return packed.linear(x, bias, out);
        }
        if packed::simd_available() && self.first_product.set(()).is_ok() {
            return packed::linear_unpacked(&parts(), self.k, x, bias, out);
        }
        // Packed outside the cell: packing runs on the pool, and a thread
        // waiting in it may take up another product of these weights, which
        // would block on a cell being filled below it on its own stack.
        // Threads racing here each pack; the first to finish is kept.
        let _ = self.packed.set(PackedWeights::new(&parts(), self.k));
        self.packed.get().expect("set above").linear(x, bias, out);
    }
}
