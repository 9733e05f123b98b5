//! Sparse autoencoders over activation vectors: TopK (Gao et al., 2024),
//! BatchTopK (Bussmann et al., 2024; encoded afterwards as JumpReLU) and
//! ReLU.
//!
//! For an input `x` of `d_in` values:
//!
//! ```text
//! pre = W_enc (x − b_dec) + b_enc          // d_sae pre-activations
//! z   = select(pre)                        // the latents that fire (see Activation)
//! x̂   = b_dec + Σ_j z_j W_dec[j]           // touches the firing rows only
//! ```
//!
//! Both matrices are stored here one row per latent (`[d_sae, d_in]`), so a
//! latent's encoder and decoder vectors are contiguous; SAELens's files
//! hold the encoder transposed (`W_enc [d_in, d_sae]`), see [`saelens`].
//! [`view`] reads a layer of a SAEV dataset in batches; [`run`] drives a
//! whole training run on it, [`evaluate`] measures an autoencoder there and
//! [`features`] finds the inputs each latent fires on most.
//! [`train`] fits one with Adam, unit-norm decoder rows and the AuxK loss on
//! dead latents (or L1 for ReLU); [`checkpoint`] saves a run's state;
//! [`splice`] measures a model's loss (a TLLM's, or a decoder language
//! model's at any site) with a reconstruction spliced in, as SAELens's
//! evals do; [`steer`] pushes a language model along latents' decoder
//! rows while it generates. The
//! arithmetic is generic over `f32` (training) and `f64` (gradient checks).

pub mod checkpoint;
pub mod config;
pub(crate) mod error;
pub mod evaluate;
pub mod features;
pub mod layouts;
pub mod run;
pub mod saelens;
pub mod splice;
pub mod steer;
pub mod train;
pub mod view;

pub use error::{SaeError, SaeSetting, SettingDifference};
use num_traits::Float;
use rayon::prelude::*;

use crate::nn::kernels::gemm_strided;
use crate::nn::packed::PackedWeights;

/// Refuses weights about to be saved that hold a NaN or an infinity
/// ([`crate::SaeError::NonFiniteWeights`], naming the first tensor and
/// element): a saved autoencoder or checkpoint must load again, and the
/// loaders refuse such values.
pub(crate) fn require_finite_weights<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a [f32])>,
) -> crate::Result<()> {
    for (name, values) in tensors {
        if let Some(index) = values.iter().position(|v| !v.is_finite()) {
            return Err(crate::SaeError::NonFiniteWeights {
                name: name.to_owned(),
                index,
                value: values[index],
            }
            .into());
        }
    }
    Ok(())
}

/// Which latents fire, given the pre-activations.
#[derive(Debug, Clone, PartialEq)]
pub enum Activation<T> {
    /// The `k` largest positive pre-activations of each input (SAELens's
    /// `topk`).
    TopK(usize),
    /// Latent `j` fires where its pre-activation is positive and above
    /// `threshold[j]` (SAELens's `jumprelu`; the inference form of a
    /// BatchTopK autoencoder, whose threshold is one value for all).
    JumpRelu(Vec<T>),
    /// Every positive pre-activation fires (SAELens's `standard`).
    Relu,
}

impl<T> Activation<T> {
    /// SAELens's name of the architecture.
    pub fn saelens_name(&self) -> &'static str {
        match self {
            Activation::TopK(_) => "topk",
            Activation::JumpRelu(_) => "jumprelu",
            Activation::Relu => "standard",
        }
    }
}

/// How each input is normalised before the encoder, and its
/// reconstruction restored after the decoder (SAELens's
/// `normalize_activations`, computed as its `SAE` computes it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Normalization {
    /// None: the weights act on the activations as they are. (SAELens's
    /// `expected_average_only_in` and `covariance_whitening` are this too
    /// inside the autoencoder: training folds them into the weights.)
    #[default]
    None,
    /// `layer_norm`: `(x − μ) / (σ + 1e-5)`, with `μ` the row's mean and `σ`
    /// the unbiased standard deviation of `x − μ`; a reconstruction `y`
    /// becomes `y · σ + μ`.
    LayerNorm,
    /// `constant_norm_rescale`: `x · c` with `c = √d_in / ‖x‖`; a
    /// reconstruction `y` becomes `y / c`.
    ConstantNormRescale,
}

impl Normalization {
    /// SAELens's name of it (`none`, `layer_norm`, `constant_norm_rescale`).
    pub fn saelens_name(&self) -> &'static str {
        match self {
            Normalization::None => "none",
            Normalization::LayerNorm => "layer_norm",
            Normalization::ConstantNormRescale => "constant_norm_rescale",
        }
    }
}

/// What an autoencoder does around its weights when it encodes and
/// decodes (SAELens's `cfg.json` keys of the same names). Training runs
/// on the default: `b_dec` subtracted, no normalisation, no rescaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    /// `apply_b_dec_to_input`: `b_dec` is subtracted from each input (after
    /// any normalisation) before the encoder.
    pub subtract_b_dec: bool,
    /// `normalize_activations`.
    pub normalization: Normalization,
    /// `rescale_acts_by_decoder_norm` (TopK): each pre-activation is
    /// multiplied by its latent's decoder-row norm before the selection,
    /// and each code multiplied by that norm's reciprocal before decoding.
    pub rescale_by_decoder_norm: bool,
}

impl Default for Io {
    fn default() -> Self {
        Io {
            subtract_b_dec: true,
            normalization: Normalization::None,
            rescale_by_decoder_norm: false,
        }
    }
}

/// A sparse autoencoder's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Sae<T> {
    /// Input width.
    pub d_in: usize,
    /// Latents.
    pub d_sae: usize,
    /// Which latents fire.
    pub activation: Activation<T>,
    /// Encoder, one row of `d_in` per latent: `[d_sae, d_in]`.
    pub w_enc: Vec<T>,
    /// Encoder bias, `[d_sae]`.
    pub b_enc: Vec<T>,
    /// Decoder, one row of `d_in` per latent: `[d_sae, d_in]`.
    pub w_dec: Vec<T>,
    /// Decoder bias, also subtracted from the input (unless `io` says
    /// otherwise): `[d_in]`.
    pub b_dec: Vec<T>,
    /// What is done around the weights.
    pub io: Io,
}

/// The sparse codes of a batch: per input, the (latent, value) pairs that
/// fire (value > 0), row `r` being entries `offsets[r]..offsets[r + 1]`.
/// TopK codes are in descending order of value, the others in latent order.
#[derive(Debug, Clone, PartialEq)]
pub struct Codes<T> {
    /// Where each input's entries start, and the end: `[batch + 1]`.
    pub offsets: Vec<usize>,
    /// Latent indices.
    pub latents: Vec<u32>,
    /// Their values.
    pub values: Vec<T>,
    /// Per input, what its normalisation took out (`(σ, μ)` for
    /// [`Normalization::LayerNorm`], `(c, 0)` for
    /// [`Normalization::ConstantNormRescale`]), which decoding puts back;
    /// empty without normalisation.
    pub norms: Vec<(T, T)>,
}

impl<T: Float> Codes<T> {
    fn with_rows(rows: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        Codes {
            offsets,
            latents: Vec::new(),
            values: Vec::new(),
            norms: Vec::new(),
        }
    }

    /// Ends the current input's entries.
    fn end_row(&mut self) {
        self.offsets.push(self.latents.len());
    }

    /// The codes of consecutive batches as one.
    pub fn concat(parts: Vec<Codes<T>>) -> Codes<T> {
        let mut all = Codes::with_rows(parts.iter().map(Codes::rows).sum());
        for part in parts {
            let base = all.latents.len();
            all.offsets
                .extend(part.offsets[1..].iter().map(|&o| base + o));
            all.latents.extend(part.latents);
            all.values.extend(part.values);
            all.norms.extend(part.norms);
        }
        all
    }

    /// Inputs coded.
    pub fn rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The (latent, value) pairs of input `row` that fire.
    pub fn active(&self, row: usize) -> impl Iterator<Item = (usize, T)> + '_ {
        let range = self.offsets[row]..self.offsets[row + 1];
        self.latents[range.clone()]
            .iter()
            .zip(&self.values[range])
            .map(|(&j, &v)| (j as usize, v))
    }
}

/// Inputs normalised, and what each row's normalisation took out.
type Normalized<T> = (Vec<T>, Vec<(T, T)>);

/// Rows from which an f32 batch's encoder product runs on the packed
/// kernel: packing the encoder copies it once, which fewer rows' products
/// would not repay.
const PACKED_ROWS: usize = 256;

/// Rows of pre-activations per selection task.
const SELECT_TASK_ROWS: usize = 64;

impl Sae<f32> {
    /// [`Sae::pre_activations_into`] for a batch of [`PACKED_ROWS`] or
    /// more, through the packed f32 kernel ([`PackedWeights`], packed here,
    /// once for the batch) on the rayon pool. The `gemm` crate's kernels
    /// use 256-bit registers, and on an AVX-512 CPU they ran this product at
    /// about half the packed kernel's rate (and on one thread). Each
    /// pre-activation is the same whatever the thread count (see
    /// [`PackedWeights::linear`]).
    fn pre_activations_packed(&self, x: &[f32], centered: &mut [f32], pre: &mut [f32]) {
        let per_task = self.d_in * 256;
        centered
            .par_chunks_mut(per_task)
            .zip(x.par_chunks(per_task))
            .for_each(|(centered, x)| self.center(x, centered));
        PackedWeights::new(&[&self.w_enc], self.d_in).linear(centered, &self.b_enc, pre);
    }
}

impl<T: Float + Send + Sync + 'static> Sae<T> {
    /// Pre-activations `W_enc (x − b_dec) + b_enc` of a batch `x` of
    /// `rows` inputs: `[rows, d_sae]`; also returns `x − b_dec`.
    pub fn pre_activations(&self, x: &[T], rows: usize) -> (Vec<T>, Vec<T>) {
        assert_eq!(
            x.len(),
            rows * self.d_in,
            "batch of {rows} rows of {}",
            self.d_in
        );
        let mut centered = vec![T::zero(); x.len()];
        let mut pre = vec![T::zero(); rows * self.d_sae];
        self.pre_activations_into(x, &mut centered, &mut pre);
        (pre, centered)
    }

    /// [`Sae::pre_activations`] into buffers of the batch's size:
    /// `centered` `[rows, d_in]`, `pre` `[rows, d_sae]`.
    pub fn pre_activations_into(&self, x: &[T], centered: &mut [T], pre: &mut [T]) {
        self.affine_pre_activations(x, centered, pre);
        self.rescale_pre_activations(pre);
    }

    /// `W_enc (x − b_dec) + b_enc` into `pre`, `x − b_dec` into `centered`.
    fn affine_pre_activations(&self, x: &[T], centered: &mut [T], pre: &mut [T]) {
        let (d_in, d_sae) = (self.d_in, self.d_sae);
        let rows = x.len() / d_in.max(1);
        // The GEMM below trusts these sizes.
        assert!(
            x.len() == rows * d_in
                && centered.len() == x.len()
                && pre.len() == rows * d_sae
                && self.w_enc.len() == d_sae * d_in
                && self.b_enc.len() == d_sae
                && self.b_dec.len() == d_in,
            "pre_activations_into: buffers or parameters of the wrong size"
        );
        if rows >= PACKED_ROWS
            && let Some((sae, x, centered, pre)) = as_f32(self, x, centered, pre)
        {
            return sae.pre_activations_packed(x, centered, pre);
        }
        self.center(x, centered);
        for row in pre.chunks_exact_mut(d_sae) {
            row.copy_from_slice(&self.b_enc);
        }
        // SAFETY: `centered` is rows×d_in (strides d_in, 1); `w_enc` read
        // with strides (1, d_in) is the d_in×d_sae transpose of the
        // d_sae×d_in matrix it holds; `pre` is rows×d_sae.
        unsafe {
            gemm_strided(
                (rows, d_in, d_sae),
                (&*centered, [d_in, 1]),
                (&self.w_enc, [1, d_in]),
                (pre, d_sae),
                true,
            );
        }
    }

    /// `centered = x − b_dec` row by row (`x` itself when the input keeps
    /// its `b_dec`).
    fn center(&self, x: &[T], centered: &mut [T]) {
        if !self.io.subtract_b_dec {
            centered.copy_from_slice(x);
            return;
        }
        for (c, x) in centered
            .chunks_exact_mut(self.d_in)
            .zip(x.chunks_exact(self.d_in))
        {
            c.iter_mut()
                .zip(x)
                .zip(&self.b_dec)
                .for_each(|((c, &x), &b)| *c = x - b);
        }
    }

    /// Each decoder row's Euclidean norm, `[d_sae]`.
    pub fn decoder_norms(&self) -> Vec<T> {
        self.w_dec
            .chunks_exact(self.d_in.max(1))
            .map(|row| row.iter().fold(T::zero(), |s, &w| s + w * w).sqrt())
            .collect()
    }

    /// Multiplies each row of `pre` by the decoder norms, when the
    /// autoencoder rescales by them.
    fn rescale_pre_activations(&self, pre: &mut [T]) {
        if !self.io.rescale_by_decoder_norm {
            return;
        }
        let norms = self.decoder_norms();
        pre.par_chunks_mut(self.d_sae.max(1))
            .for_each(|row| row.iter_mut().zip(&norms).for_each(|(p, &n)| *p = *p * n));
    }

    /// `x` normalised row by row as [`Io::normalization`] says, with what
    /// each row's normalisation took out; `None` without normalisation.
    fn normalized(&self, x: &[T]) -> Option<Normalized<T>> {
        let d = self.d_in;
        let n = T::from(d).expect("a float");
        let mut out = x.to_vec();
        let mut norms = Vec::with_capacity(x.len() / d.max(1));
        match self.io.normalization {
            Normalization::None => return None,
            Normalization::LayerNorm => {
                let eps = T::from(1e-5).expect("a float");
                let unbiased = T::from(d.saturating_sub(1)).expect("a float");
                for row in out.chunks_exact_mut(d) {
                    let mean = row.iter().fold(T::zero(), |s, &v| s + v) / n;
                    row.iter_mut().for_each(|v| *v = *v - mean);
                    let std = (row.iter().fold(T::zero(), |s, &v| s + v * v) / unbiased).sqrt();
                    row.iter_mut().for_each(|v| *v = *v / (std + eps));
                    norms.push((std, mean));
                }
            }
            Normalization::ConstantNormRescale => {
                for row in out.chunks_exact_mut(d) {
                    let norm = row.iter().fold(T::zero(), |s, &v| s + v * v).sqrt();
                    let c = n.sqrt() / norm;
                    row.iter_mut().for_each(|v| *v = *v * c);
                    norms.push((c, T::zero()));
                }
            }
        }
        Some((out, norms))
    }

    /// The latents of each row of `pre` that fire under the activation.
    /// Each row is selected alone, so the rows run in parallel.
    pub fn select(&self, pre: &[T]) -> Codes<T> {
        let select = |pre: &[T]| match &self.activation {
            Activation::TopK(k) => top_k_of(pre, self.d_sae, *k, |_| true),
            Activation::JumpRelu(threshold) => {
                firing_of(pre, self.d_sae, |j, v| v > T::zero() && v > threshold[j])
            }
            Activation::Relu => firing_of(pre, self.d_sae, |_, v| v > T::zero()),
        };
        let rows = pre.len() / self.d_sae.max(1);
        if rows <= SELECT_TASK_ROWS {
            return select(pre);
        }
        let task = SELECT_TASK_ROWS * self.d_sae;
        Codes::concat(pre.par_chunks(task).map(select).collect())
    }

    /// Encodes a batch of `rows` inputs (normalised first when [`Io`]
    /// says so; the codes keep what decoding needs to undo it).
    pub fn encode(&self, x: &[T], rows: usize) -> Codes<T> {
        match self.normalized(x) {
            None => self.select(&self.pre_activations(x, rows).0),
            Some((normalized, norms)) => {
                let mut codes = self.select(&self.pre_activations(&normalized, rows).0);
                codes.norms = norms;
                codes
            }
        }
    }

    /// Decodes codes into `[rows, d_in]` reconstructions (rows in
    /// parallel), undoing the inputs' normalisation.
    ///
    /// # Panics
    /// When the autoencoder normalises its inputs and `codes` do not hold
    /// one row's normalisation for each row (codes made elsewhere than
    /// [`Sae::encode`]: there is no input to restore the scale of).
    pub fn decode(&self, codes: &Codes<T>) -> Vec<T> {
        let normalizes = self.io.normalization != Normalization::None;
        assert!(
            !normalizes || codes.norms.len() == codes.rows(),
            "decoding with {} needs the codes' norms from encode",
            self.io.normalization.saelens_name()
        );
        let inverse_norms: Option<Vec<T>> = self
            .io
            .rescale_by_decoder_norm
            .then(|| self.decoder_norms().iter().map(|&n| T::one() / n).collect());
        let mut out = vec![T::zero(); codes.rows() * self.d_in];
        out.par_chunks_mut(self.d_in)
            .enumerate()
            .with_min_len(64)
            .for_each(|(row, recon)| {
                recon.copy_from_slice(&self.b_dec);
                for (j, v) in codes.active(row) {
                    let v = match &inverse_norms {
                        Some(inverse) => v * inverse[j],
                        None => v,
                    };
                    let w = &self.w_dec[j * self.d_in..(j + 1) * self.d_in];
                    recon.iter_mut().zip(w).for_each(|(r, &w)| *r = *r + v * w);
                }
                if normalizes {
                    let (scale, shift) = codes.norms[row];
                    recon.iter_mut().for_each(|r| {
                        *r = match self.io.normalization {
                            Normalization::ConstantNormRescale => *r / scale,
                            _ => *r * scale + shift,
                        }
                    });
                }
            });
        out
    }

    /// Encodes and decodes a batch.
    pub fn forward(&self, x: &[T], rows: usize) -> Vec<T> {
        self.decode(&self.encode(x, rows))
    }
}

/// An autoencoder's product arguments as f32, when `T` is f32 (`None`
/// otherwise): what lets the generic product take the packed f32 kernel.
#[allow(clippy::type_complexity)]
fn as_f32<'a, T: 'static>(
    sae: &'a Sae<T>,
    x: &'a [T],
    centered: &'a mut [T],
    pre: &'a mut [T],
) -> Option<(&'a Sae<f32>, &'a [f32], &'a mut [f32], &'a mut [f32])> {
    let sae = (sae as &dyn std::any::Any).downcast_ref::<Sae<f32>>()?;
    // SAFETY: the downcast succeeded, so `T` is f32 and each slice holds
    // f32 values, borrowed as before.
    unsafe {
        Some((
            sae,
            std::slice::from_raw_parts(x.as_ptr().cast(), x.len()),
            std::slice::from_raw_parts_mut(centered.as_mut_ptr().cast(), centered.len()),
            std::slice::from_raw_parts_mut(pre.as_mut_ptr().cast(), pre.len()),
        ))
    }
}

/// Entries of a row checked together by [`top_k_of`].
const SCAN_BLOCK: usize = 16;

/// The top `k` positive entries by value of each `width`-wide row of `pre`
/// among the columns `eligible` accepts; ties go to the lower index.
///
/// One pass per row keeps the best `k` seen so far in a heap with the
/// weakest at its root; a later entry replaces the weakest only when
/// strictly larger (it has the higher index, so it loses ties), which on
/// typical rows happens O(k log(width / k)) times.
pub(crate) fn top_k_of<T: Float>(
    pre: &[T],
    width: usize,
    k: usize,
    eligible: impl Fn(usize) -> bool,
) -> Codes<T> {
    let rows = pre.len() / width.max(1);
    let k = k.min(width);
    let mut codes = Codes::with_rows(rows);
    let mut best: Vec<(T, u32)> = Vec::with_capacity(k);
    for row in pre.chunks_exact(width) {
        best.clear();
        // An entry must beat this to be kept: 0 until `k` are kept, then
        // the weakest kept value. NaN never enters.
        let mut cutoff = T::zero();
        if k > 0 {
            // Blocks whose largest value cannot enter are skipped whole
            // (a branch-free maximum the compiler vectorises).
            for (b, block) in row.chunks(SCAN_BLOCK).enumerate() {
                let largest = block.iter().fold(T::neg_infinity(), |m, &v| m.max(v));
                // `max` passes NaN over, so `largest` is a number.
                if largest <= cutoff {
                    continue;
                }
                for (i, &v) in block.iter().enumerate() {
                    let j = b * SCAN_BLOCK + i;
                    if v.is_nan() || v <= cutoff || !eligible(j) {
                        continue;
                    }
                    if best.len() < k {
                        heap_push(&mut best, (v, j as u32));
                        if best.len() < k {
                            continue;
                        }
                    } else {
                        heap_replace_root(&mut best, (v, j as u32));
                    }
                    cutoff = best[0].0;
                }
            }
        }
        best.sort_unstable_by(|a, b| {
            b.0.partial_cmp(&a.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.1.cmp(&b.1))
        });
        for &(v, j) in &best {
            codes.latents.push(j);
            codes.values.push(v);
        }
        codes.end_row();
    }
    codes
}

/// Whether `a` ranks below `b`: a smaller value, or the higher index of
/// equal values.
fn weaker<T: Float>(a: (T, u32), b: (T, u32)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 > b.1)
}

/// Adds `entry` to a heap whose root is its weakest entry.
fn heap_push<T: Float>(heap: &mut Vec<(T, u32)>, entry: (T, u32)) {
    heap.push(entry);
    let mut at = heap.len() - 1;
    while at > 0 {
        let parent = (at - 1) / 2;
        if !weaker(heap[at], heap[parent]) {
            break;
        }
        heap.swap(at, parent);
        at = parent;
    }
}

/// Replaces the weakest entry of the heap by `entry`.
fn heap_replace_root<T: Float>(heap: &mut [(T, u32)], entry: (T, u32)) {
    heap[0] = entry;
    let mut at = 0;
    loop {
        let (left, right) = (2 * at + 1, 2 * at + 2);
        let mut weakest = at;
        if left < heap.len() && weaker(heap[left], heap[weakest]) {
            weakest = left;
        }
        if right < heap.len() && weaker(heap[right], heap[weakest]) {
            weakest = right;
        }
        if weakest == at {
            break;
        }
        heap.swap(at, weakest);
        at = weakest;
    }
}

/// The entries of each `width`-wide row of `pre` that `fires` (given the
/// column and value), in column order.
pub(crate) fn firing_of<T: Float>(
    pre: &[T],
    width: usize,
    fires: impl Fn(usize, T) -> bool,
) -> Codes<T> {
    let rows = pre.len() / width.max(1);
    let mut codes = Codes::with_rows(rows);
    for row in pre.chunks_exact(width) {
        for (j, &v) in row.iter().enumerate() {
            if fires(j, v) {
                codes.latents.push(j as u32);
                codes.values.push(v);
            }
        }
        codes.end_row();
    }
    codes
}

/// BatchTopK: the `count` largest positive entries of the whole batch
/// (rows of `width` laid end to end across `parts`), ties to the lower
/// position; returns each part's codes (in column order) and the smallest
/// value kept.
pub(crate) fn batch_top_k<T: Float>(
    parts: &[&[T]],
    width: usize,
    count: usize,
) -> (Vec<Codes<T>>, Option<T>) {
    let mut positive: Vec<(T, usize)> = Vec::new();
    let mut base = 0;
    for part in parts {
        positive.extend(
            part.iter()
                .enumerate()
                .filter(|(_, v)| **v > T::zero()) // NaN never fires
                .map(|(i, &v)| (v, base + i)),
        );
        base += part.len();
    }
    let by_value = |a: &(T, usize), b: &(T, usize)| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
    };
    let kept = count.min(positive.len());
    if kept < positive.len() && kept > 0 {
        positive.select_nth_unstable_by(kept - 1, by_value);
    }
    positive.truncate(kept);
    let smallest = positive.iter().map(|p| p.0).reduce(T::min);
    positive.sort_unstable_by_key(|p| p.1);
    let mut chosen = positive.into_iter().peekable();
    let mut base = 0;
    let codes = parts
        .iter()
        .map(|part| {
            let rows = part.len() / width.max(1);
            let mut codes = Codes::with_rows(rows);
            for row in 0..rows {
                let end = base + (row + 1) * width;
                while let Some((v, at)) = chosen.next_if(|c| c.1 < end) {
                    codes.latents.push(((at - base) % width) as u32);
                    codes.values.push(v);
                }
                codes.end_row();
            }
            base += part.len();
            codes
        })
        .collect();
    (codes, smallest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Sae<f64> {
        // Two inputs dims, three latents, k = 1.
        Sae {
            d_in: 2,
            d_sae: 3,
            activation: Activation::TopK(1),
            w_enc: vec![1.0, 0.0, 0.0, 1.0, -1.0, -1.0],
            b_enc: vec![0.0, 0.0, -0.5],
            w_dec: vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8],
            b_dec: vec![0.5, -0.5],
            io: Io::default(),
        }
    }

    #[test]
    fn encode_keeps_the_largest_positive_latents() {
        let sae = tiny();
        // x − b_dec = (2.5, 1.5): pre = (2.5, 1.5, −4.5).
        let codes = sae.encode(&[3.0, 1.0], 1);
        assert_eq!(
            (codes.latents.as_slice(), codes.values.as_slice()),
            (&[0][..], &[2.5][..])
        );
        assert_eq!(sae.decode(&codes), [3.0, -0.5]);
        // x = b_dec: pre = b_enc, nothing positive, the code is all zero
        // and x̂ = b_dec.
        let codes = sae.encode(&[0.5, -0.5], 1);
        assert_eq!(codes.active(0).count(), 0, "{codes:?}");
        assert_eq!(sae.forward(&[0.5, -0.5], 1), [0.5, -0.5]);
    }

    #[test]
    fn top_k_of_wide_rows_equals_a_sort() {
        // Rows of many scan blocks, most of them skipped: random values,
        // values drawn from a few levels (ties across blocks), rows with
        // NaN and rows with fewer positive entries than k.
        let mut rng = crate::rng::Rng::new(3);
        let width = 1000;
        for case in 0..40 {
            let row: Vec<f32> = (0..width)
                .map(|i| {
                    let u = rng.uniform() as f32;
                    match case % 4 {
                        0 => u * 2.0 - 1.0,
                        1 => (u * 5.0).floor(),
                        2 if i % 97 == 5 => f32::NAN,
                        2 => u,
                        _ => u - 0.98,
                    }
                })
                .collect();
            for k in [1, 5, 32, 64] {
                let mut want: Vec<(f32, u32)> = row
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| **v > 0.0)
                    .map(|(j, &v)| (v, j as u32))
                    .collect();
                want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                want.truncate(k);
                let codes = top_k_of(&row, width, k, |_| true);
                let got: Vec<(f32, u32)> = codes.values.into_iter().zip(codes.latents).collect();
                assert_eq!(got, want, "case {case}, k {k}");
            }
        }
    }

    #[test]
    fn top_k_orders_by_value_and_breaks_ties_by_index() {
        let codes = top_k_of(&[1.0f64, 3.0, 3.0, -1.0, 2.0], 5, 3, |_| true);
        assert_eq!(codes.latents, [1, 2, 4]);
        let codes = top_k_of(&[1.0f64, 3.0, 3.0, -1.0, 2.0], 5, 2, |j| j != 1);
        assert_eq!((codes.latents, codes.values), (vec![2, 4], vec![3.0, 2.0]));
        // NaN never fires and does not disturb the order.
        let codes = top_k_of(&[f64::NAN, 2.0, f64::NAN, 1.0], 4, 3, |_| true);
        assert_eq!((codes.latents, codes.values), (vec![1, 3], vec![2.0, 1.0]));
        // Fewer positive entries than k: only they fire.
        let codes = top_k_of(&[1.0f64, -2.0, 0.0, 4.0, 0.5, 0.0], 3, 3, |_| true);
        assert_eq!(
            (codes.offsets, codes.latents, codes.values),
            (vec![0, 1, 3], vec![0, 0, 1], vec![1.0, 4.0, 0.5])
        );
    }

    #[test]
    fn jumprelu_and_relu_fire_above_their_thresholds() {
        let mut sae = tiny();
        // x − b_dec = (2.5, 1.5): pre = (2.5, 1.5, −4.5).
        sae.activation = Activation::Relu;
        let codes = sae.encode(&[3.0, 1.0], 1);
        assert_eq!((codes.latents, codes.values), (vec![0, 1], vec![2.5, 1.5]));
        sae.activation = Activation::JumpRelu(vec![2.5, 1.0, -9.0]);
        let codes = sae.encode(&[3.0, 1.0], 1);
        assert_eq!((codes.latents, codes.values), (vec![1], vec![1.5]));
        assert_eq!(sae.activation.saelens_name(), "jumprelu");
    }

    #[test]
    fn batch_top_k_keeps_the_largest_of_the_whole_batch() {
        // Two parts of rows of width 3; the 3 largest positive entries of
        // the batch, the tie at 2.0 going to the earlier position.
        let first = [1.0f64, 5.0, -1.0, 2.0, 0.0, f64::NAN];
        let second = [2.0f64, 0.5, 4.0];
        let (codes, smallest) = batch_top_k(&[&first, &second], 3, 3);
        assert_eq!(smallest, Some(2.0));
        assert_eq!(
            (&codes[0].offsets, &codes[0].latents, &codes[0].values),
            (&vec![0, 1, 2], &vec![1, 0], &vec![5.0, 2.0])
        );
        assert_eq!(
            (&codes[1].offsets, &codes[1].latents, &codes[1].values),
            (&vec![0, 1], &vec![2], &vec![4.0])
        );
        // More asked for than fire: every positive entry.
        let (codes, smallest) = batch_top_k(&[&first[..]], 3, 100);
        assert_eq!((codes[0].latents.len(), smallest), (3, Some(1.0)));
    }
}
