//! Sparse autoencoders over activation vectors: the TopK architecture of
//! Gao et al. (2024), "Scaling and evaluating sparse autoencoders".
//!
//! For an input `x` of `d_in` values:
//!
//! ```text
//! pre = W_enc (x − b_dec) + b_enc          // d_sae pre-activations
//! z   = TopK(ReLU(pre))                    // k non-zero latents at most
//! x̂   = b_dec + Σ_j z_j W_dec[j]           // touches k decoder rows
//! ```
//!
//! Both matrices are stored here one row per latent (`[d_sae, d_in]`), so a
//! latent's encoder and decoder vectors are contiguous; SAELens's files
//! hold the encoder transposed (`W_enc [d_in, d_sae]`), see [`saelens`].
//! [`train`] fits one with Adam, unit-norm decoder rows and the AuxK loss on
//! dead latents. The arithmetic is generic over `f32` (training) and `f64`
//! (gradient checks).

pub mod saelens;
pub mod train;

use num_traits::Float;

use crate::kernels::gemm_strided;

/// A TopK sparse autoencoder's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Sae<T> {
    /// Input width.
    pub d_in: usize,
    /// Latents.
    pub d_sae: usize,
    /// Latents kept per input.
    pub k: usize,
    /// Encoder, one row of `d_in` per latent: `[d_sae, d_in]`.
    pub w_enc: Vec<T>,
    /// Encoder bias, `[d_sae]`.
    pub b_enc: Vec<T>,
    /// Decoder, one row of `d_in` per latent: `[d_sae, d_in]`.
    pub w_dec: Vec<T>,
    /// Decoder bias, also subtracted from the input: `[d_in]`.
    pub b_dec: Vec<T>,
}

/// The sparse codes of a batch: `k` (latent, value) pairs per input, in
/// descending order of value; values are ≥ 0 (a latent whose pre-activation
/// is not positive has value 0 and does not fire).
#[derive(Debug, Clone, PartialEq)]
pub struct Codes<T> {
    /// Latents kept per input.
    pub k: usize,
    /// Latent indices, `[batch, k]`.
    pub latents: Vec<u32>,
    /// Their values, `[batch, k]`.
    pub values: Vec<T>,
}

impl<T: Float> Codes<T> {
    /// The (latent, value) pairs of input `row` that fire (value > 0).
    pub fn active(&self, row: usize) -> impl Iterator<Item = (usize, T)> + '_ {
        let range = row * self.k..(row + 1) * self.k;
        self.latents[range.clone()]
            .iter()
            .zip(&self.values[range])
            .filter(|(_, v)| **v > T::zero())
            .map(|(&j, &v)| (j as usize, v))
    }
}

impl<T: Float + 'static> Sae<T> {
    /// Pre-activations `W_enc (x − b_dec) + b_enc` of a batch `x` of
    /// `rows` inputs: `[rows, d_sae]`; also returns `x − b_dec`.
    pub fn pre_activations(&self, x: &[T], rows: usize) -> (Vec<T>, Vec<T>) {
        let (d_in, d_sae) = (self.d_in, self.d_sae);
        assert_eq!(x.len(), rows * d_in, "batch of {rows} rows of {d_in}");
        let mut centered = x.to_vec();
        for row in centered.chunks_exact_mut(d_in) {
            row.iter_mut()
                .zip(&self.b_dec)
                .for_each(|(v, &b)| *v = *v - b);
        }
        let mut pre = Vec::with_capacity(rows * d_sae);
        for _ in 0..rows {
            pre.extend_from_slice(&self.b_enc);
        }
        // SAFETY: `centered` is rows×d_in (strides d_in, 1); `w_enc` read
        // with strides (1, d_in) is the d_in×d_sae transpose of the
        // d_sae×d_in matrix it holds; `pre` is rows×d_sae.
        unsafe {
            gemm_strided(
                (rows, d_in, d_sae),
                (&centered, [d_in, 1]),
                (&self.w_enc, [1, d_in]),
                (&mut pre, d_sae),
                true,
            );
        }
        (pre, centered)
    }

    /// The top `k` latents of each row of `pre` after ReLU.
    pub fn top_k(&self, pre: &[T], k: usize) -> Codes<T> {
        top_k_of(pre, self.d_sae, k, |_| true)
    }

    /// Encodes a batch of `rows` inputs.
    pub fn encode(&self, x: &[T], rows: usize) -> Codes<T> {
        self.top_k(&self.pre_activations(x, rows).0, self.k)
    }

    /// Decodes codes into `[rows, d_in]` reconstructions.
    pub fn decode(&self, codes: &Codes<T>) -> Vec<T> {
        let rows = codes.latents.len() / codes.k.max(1);
        let mut out = Vec::with_capacity(rows * self.d_in);
        for row in 0..rows {
            let start = out.len();
            out.extend_from_slice(&self.b_dec);
            let recon = &mut out[start..];
            for (j, v) in codes.active(row) {
                let w = &self.w_dec[j * self.d_in..(j + 1) * self.d_in];
                recon.iter_mut().zip(w).for_each(|(r, &w)| *r = *r + v * w);
            }
        }
        out
    }

    /// Encodes and decodes a batch.
    pub fn forward(&self, x: &[T], rows: usize) -> Vec<T> {
        self.decode(&self.encode(x, rows))
    }
}

/// The top `k` entries by value of each `width`-wide row of `pre` among the
/// columns `eligible` accepts, after ReLU; ties go to the lower index.
pub(crate) fn top_k_of<T: Float>(
    pre: &[T],
    width: usize,
    k: usize,
    eligible: impl Fn(usize) -> bool,
) -> Codes<T> {
    let rows = pre.len() / width.max(1);
    let k = k.min(width);
    let mut latents = Vec::with_capacity(rows * k);
    let mut values = Vec::with_capacity(rows * k);
    let mut order: Vec<u32> = Vec::with_capacity(width);
    for row in pre.chunks_exact(width) {
        order.clear();
        order.extend((0..width as u32).filter(|&j| eligible(j as usize)));
        // NaN ranks below every number, so the order is total (sorting
        // with an inconsistent comparator may panic) and NaN never fires.
        let rank = |j: &u32| {
            let v = row[*j as usize];
            if v.is_nan() { T::neg_infinity() } else { v }
        };
        let by_value = |a: &u32, b: &u32| {
            rank(b)
                .partial_cmp(&rank(a))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(b))
        };
        let kept = k.min(order.len());
        if kept < order.len() && kept > 0 {
            order.select_nth_unstable_by(kept - 1, by_value);
        }
        order.truncate(kept);
        order.sort_unstable_by(by_value);
        for slot in 0..k {
            match order.get(slot) {
                Some(&j) => {
                    latents.push(j);
                    values.push(rank(&j).max(T::zero()));
                }
                None => {
                    latents.push(0);
                    values.push(T::zero());
                }
            }
        }
    }
    Codes { k, latents, values }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Sae<f64> {
        // Two inputs dims, three latents, k = 1.
        Sae {
            d_in: 2,
            d_sae: 3,
            k: 1,
            w_enc: vec![1.0, 0.0, 0.0, 1.0, -1.0, -1.0],
            b_enc: vec![0.0, 0.0, -0.5],
            w_dec: vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8],
            b_dec: vec![0.5, -0.5],
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
    fn top_k_orders_by_value_and_breaks_ties_by_index() {
        let codes = top_k_of(&[1.0f64, 3.0, 3.0, -1.0, 2.0], 5, 3, |_| true);
        assert_eq!(codes.latents, [1, 2, 4]);
        let codes = top_k_of(&[1.0f64, 3.0, 3.0, -1.0, 2.0], 5, 2, |j| j != 1);
        assert_eq!((codes.latents, codes.values), (vec![2, 4], vec![3.0, 2.0]));
        // NaN never fires and does not disturb the order.
        let codes = top_k_of(&[f64::NAN, 2.0, f64::NAN, 1.0], 4, 3, |_| true);
        assert_eq!(
            (codes.latents, codes.values),
            (vec![1, 3, 0], vec![2.0, 1.0, 0.0])
        );
        // Fewer eligible columns than k: padded with zero values.
        let codes = top_k_of(&[1.0f64, -2.0], 2, 3, |_| true);
        assert_eq!((codes.k, codes.values), (2, vec![1.0, 0.0]));
    }
}
