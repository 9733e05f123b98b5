//! Training a sparse autoencoder: the reconstruction loss, the AuxK loss
//! on dead latents (TopK and BatchTopK), an L1 penalty (ReLU) or an L0
//! penalty through a learned threshold (JumpReLU), their hand-written
//! gradients, and a trainer that runs Adam over batches with unit-norm
//! decoder rows.
//!
//! Losses, for a batch of `B` inputs of `d_in` values:
//!
//! ```text
//! mse  = Σ_b ‖x̂_b − x_b‖² / (B · d_in)
//! aux  = Σ_b ‖ê_b − e_b‖² / (B · d_in)    e_b = x_b − x̂_b (held constant),
//!                                          ê_b = Σ_{j ∈ top aux_k dead} ReLU(pre_bj) W_dec[j]
//! l1   = Σ_b Σ_j z_bj / (B · d_in)        (ReLU only; rows have unit norm)
//! loss = mse + aux_coeff · aux + l1_coeff · l1
//! ```
//!
//! JumpReLU is trained as SAELens 6.54's `JumpReLUTrainingSAE` trains it
//! (`jumprelu_sparsity_loss_mode="step"`): a latent fires when its
//! pre-activation is above its threshold θ (one per latent, trained
//! directly, not as a logarithm, and clamped at 0 before each step), its
//! code is the pre-activation, and its loss is SAELens's
//!
//! ```text
//! loss = Σ_b ‖x̂_b − x_b‖² / B + l0_coeff · Σ_b Σ_j H(pre_bj − θ_j) / B
//! ```
//!
//! with the straight-through pseudo-derivatives of the rectangle kernel
//! `K(u) = [−½ < u < ½]` of width `bandwidth` ε for the threshold:
//! `∂z_bj/∂θ_j = −(θ_j/ε) K((pre_bj − θ_j)/ε)` and
//! `∂H(pre_bj − θ_j)/∂θ_j = −(1/ε) K((pre_bj − θ_j)/ε)`; the codes pass
//! the gradient to the pre-activations only where they fire.
//!
//! Which latents fire: TopK keeps the `k` largest positive pre-activations
//! of each input; BatchTopK the `k · B` largest of the batch (Bussmann et
//! al., 2024), and it tracks the threshold it used (a running average of
//! the smallest kept value) to encode single inputs afterwards; ReLU every
//! positive one. A latent is dead when it has not fired for `dead_after`
//! inputs. After each Adam step the decoder rows are renormalised to unit
//! length, and before it the gradient component along each row is removed
//! (Gao et al., section 2.4 and appendix A).

use num_traits::Float;
use rayon::prelude::*;

use super::error::SaeSetting;
use super::{Activation, Codes, Io, Sae, batch_top_k, firing_of, top_k_of};
use crate::SaeError;
use crate::rng::Rng;
use crate::tllm::train::optim::AdamW;

/// The gradients of the four parameters, shaped as they are.
#[derive(Debug, Clone, PartialEq)]
pub struct Gradients<T> {
    /// Of `w_enc`.
    pub w_enc: Vec<T>,
    /// Of `b_enc`.
    pub b_enc: Vec<T>,
    /// Of `w_dec`.
    pub w_dec: Vec<T>,
    /// Of `b_dec`.
    pub b_dec: Vec<T>,
}

impl<T: Float> Gradients<T> {
    fn zeros(sae: &Sae<T>) -> Self {
        Gradients {
            w_enc: vec![T::zero(); sae.w_enc.len()],
            b_enc: vec![T::zero(); sae.b_enc.len()],
            w_dec: vec![T::zero(); sae.w_dec.len()],
            b_dec: vec![T::zero(); sae.b_dec.len()],
        }
    }
}

/// What one forward and backward pass over a batch measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchLoss {
    /// Σ ‖x̂ − x‖² over the batch.
    pub squared_error: f64,
    /// Σ ‖ê − e‖² of the AuxK reconstruction (0 without dead latents).
    pub aux_squared_error: f64,
    /// Σ over inputs of the latents that fired.
    pub active: u64,
}

/// The AuxK settings of a pass: which latents are dead, how many of them
/// reconstruct the residual, and the loss's weight.
#[derive(Debug, Clone, Copy)]
pub struct Aux<'a> {
    /// One flag per latent.
    pub dead: &'a [bool],
    /// Dead latents used per input.
    pub k: usize,
    /// Weight of the AuxK loss.
    pub coeff: f64,
}

/// Parameters per task of the Adam update.
const ADAM_CHUNK: usize = 1 << 14;

/// Latents per task of the latent-major gradient pass.
const LATENTS_PER_TASK: usize = 32;

/// The loss's reconstruction term and penalty, besides AuxK.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loss {
    /// Weight of the L1 penalty Σ z / (B · d_in) (0: none).
    pub l1_coeff: f64,
    /// The squared error averaged over inputs, Σ ‖x̂ − x‖² / B (SAELens's
    /// JumpReLU loss), rather than over values, / (B · d_in).
    pub per_input: bool,
}

/// Adds to `grads` the gradient of the loss over a batch `x` of `rows`
/// inputs, given its pre-activations and `x − b_dec` (see
/// [`Sae::pre_activations`]) and the latents that fire. Returns what the
/// pass measured and which latents fired. The sums run in a fixed order,
/// so the result does not depend on the thread count.
pub fn backward<T: Float + Send + Sync + 'static>(
    sae: &Sae<T>,
    x: &[T],
    (pre, centered): (&[T], &[T]),
    codes: &Codes<T>,
    aux: Aux<'_>,
    loss_of: Loss,
    grads: &mut Gradients<T>,
) -> (BatchLoss, Vec<bool>) {
    let d_in = sae.d_in;
    let rows = codes.rows();
    let recon = sae.decode(codes);
    let averaged_over = if loss_of.per_input { rows } else { rows * d_in };
    let scale = T::from(2.0 / averaged_over as f64).expect("a float");
    let l1_coeff = loss_of.l1_coeff;
    // d(l1_coeff · Σ z / (B · d_in)) / dz, for every latent that fires.
    let l1 = T::from(l1_coeff / (rows * d_in) as f64).expect("a float");
    let mut loss = BatchLoss {
        squared_error: 0.0,
        aux_squared_error: 0.0,
        active: codes.latents.len() as u64,
    };
    let mut fired = vec![false; sae.d_sae];
    for &j in &codes.latents {
        fired[j as usize] = true;
    }
    let mut g: Vec<T> = recon.iter().zip(x).map(|(&r, &x)| r - x).collect();
    loss.squared_error = g
        .iter()
        .map(|d| d.to_f64().unwrap_or(f64::NAN).powi(2))
        .sum();
    g.iter_mut().for_each(|v| *v = *v * scale);
    for row in g.chunks_exact(d_in) {
        grads
            .b_dec
            .iter_mut()
            .zip(row)
            .for_each(|(b, &g)| *b = *b + g);
    }
    let main = Term::new(sae, codes, g, l1);
    if aux.dead.iter().any(|&d| d) && aux.k > 0 {
        let aux_codes = top_k_of(pre, sae.d_sae, aux.k, |j| aux.dead[j]);
        let residual: Vec<T> = x.iter().zip(&recon).map(|(&x, &r)| x - r).collect();
        let coeff = T::from(aux.coeff).expect("a float");
        let (g, squared_error) = aux_gradient(sae, &aux_codes, &residual, scale * coeff);
        loss.aux_squared_error = squared_error;
        let aux_term = Term::new(sae, &aux_codes, g, T::zero());
        apply_terms(sae, centered, &[main, aux_term], grads);
    } else {
        apply_terms(sae, centered, &[main], grads);
    }
    (loss, fired)
}

/// The AuxK term: reconstructs `target` (the residual, held constant) from
/// the dead latents' codes without bias, adds its gradient scaled by
/// `scale` to `grads`, and returns Σ ‖ê − e‖².
pub fn aux_backward<T: Float + Send + Sync + 'static>(
    sae: &Sae<T>,
    codes: &Codes<T>,
    target: &[T],
    centered: &[T],
    scale: T,
    grads: &mut Gradients<T>,
) -> f64 {
    let (g, squared_error) = aux_gradient(sae, codes, target, scale);
    apply_terms(sae, centered, &[Term::new(sae, codes, g, T::zero())], grads);
    squared_error
}

/// The AuxK reconstruction's gradient `scale · (ê − e)` at each input, and
/// Σ ‖ê − e‖².
fn aux_gradient<T: Float>(sae: &Sae<T>, codes: &Codes<T>, target: &[T], scale: T) -> (Vec<T>, f64) {
    let d_in = sae.d_in;
    let mut g = vec![T::zero(); target.len()];
    let mut squared_error = 0.0;
    for (row, (g, e)) in g
        .chunks_exact_mut(d_in)
        .zip(target.chunks_exact(d_in))
        .enumerate()
    {
        for (j, value) in codes.active(row) {
            let w = &sae.w_dec[j * d_in..][..d_in];
            g.iter_mut().zip(w).for_each(|(g, &w)| *g = *g + value * w);
        }
        for (g, &e) in g.iter_mut().zip(e) {
            let diff = *g - e;
            squared_error += diff.to_f64().unwrap_or(f64::NAN).powi(2);
            *g = scale * diff;
        }
    }
    (g, squared_error)
}

/// `a · b`, in eight running sums so the compiler can vectorise it.
fn dot<T: Float>(a: &[T], b: &[T]) -> T {
    let mut sums = [T::zero(); 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .fold(T::zero(), |s, (&x, &y)| s + x * y);
    for (x, y) in a8.zip(b8) {
        for i in 0..8 {
            sums[i] = sums[i] + x[i] * y[i];
        }
    }
    sums.iter().fold(tail, |s, &v| s + v)
}

/// One loss term's share of the gradient: the latents that fired in it,
/// the gradient at its reconstruction (`[rows, d_in]`), and the gradient at
/// each firing latent's pre-activation (one per entry of `codes`).
struct Term<'a, T> {
    codes: &'a Codes<T>,
    g: Vec<T>,
    d_pre: Vec<T>,
}

impl<'a, T: Float + Send + Sync> Term<'a, T> {
    /// `d_pre = g · W_dec[j] + extra` for every firing entry.
    fn new(sae: &Sae<T>, codes: &'a Codes<T>, g: Vec<T>, extra: T) -> Self {
        let d_in = sae.d_in;
        let d_pre = (0..codes.rows())
            .into_par_iter()
            .flat_map_iter(|row| {
                let g = &g[row * d_in..][..d_in];
                codes
                    .active(row)
                    .map(move |(j, _)| extra + dot(g, &sae.w_dec[j * d_in..][..d_in]))
            })
            .collect();
        Term { codes, g, d_pre }
    }
}

/// Adds the terms' gradients of `b_enc`, `b_dec`, `W_enc` and `W_dec`,
/// latent by latent: each latent's rows are summed over the inputs it fired
/// on (in term then input order), in parallel across latents.
fn apply_terms<T: Float + Send + Sync>(
    sae: &Sae<T>,
    centered: &[T],
    terms: &[Term<'_, T>],
    grads: &mut Gradients<T>,
) {
    let d_in = sae.d_in;
    // Entries grouped by latent (a counting sort): (term, row, entry).
    let mut starts = vec![0usize; sae.d_sae + 1];
    for term in terms {
        for &j in &term.codes.latents {
            starts[j as usize + 1] += 1;
        }
    }
    for j in 0..sae.d_sae {
        starts[j + 1] += starts[j];
    }
    let mut next = starts.clone();
    let mut entries = vec![(0u32, 0u32, 0u32); starts[sae.d_sae]];
    for (t, term) in terms.iter().enumerate() {
        for row in 0..term.codes.rows() {
            for e in term.codes.offsets[row]..term.codes.offsets[row + 1] {
                let j = term.codes.latents[e] as usize;
                entries[next[j]] = (t as u32, row as u32, e as u32);
                next[j] += 1;
            }
        }
    }
    let chunk = LATENTS_PER_TASK * d_in;
    // Σ d_pre per latent: its b_enc gradient, and its share of b_dec's.
    let mut totals = vec![T::zero(); sae.d_sae];
    grads
        .w_enc
        .par_chunks_mut(chunk)
        .zip(grads.w_dec.par_chunks_mut(chunk))
        .zip(totals.par_chunks_mut(LATENTS_PER_TASK))
        .enumerate()
        .for_each(|(task, ((w_enc, w_dec), totals))| {
            for (local, total) in totals.iter_mut().enumerate() {
                let j = task * LATENTS_PER_TASK + local;
                let (w_enc, w_dec) = (
                    &mut w_enc[local * d_in..][..d_in],
                    &mut w_dec[local * d_in..][..d_in],
                );
                for &(t, row, e) in &entries[starts[j]..starts[j + 1]] {
                    let (term, row, e) = (&terms[t as usize], row as usize, e as usize);
                    let (value, d_pre) = (term.codes.values[e], term.d_pre[e]);
                    let g = &term.g[row * d_in..][..d_in];
                    w_dec
                        .iter_mut()
                        .zip(g)
                        .for_each(|(w, &g)| *w = *w + value * g);
                    let xc = &centered[row * d_in..][..d_in];
                    w_enc
                        .iter_mut()
                        .zip(xc)
                        .for_each(|(w, &x)| *w = *w + d_pre * x);
                    *total = *total + d_pre;
                }
            }
        });
    // Through x − b_dec: b_dec's gradient loses Σ_j (Σ d_pre_j) W_enc[j].
    for (j, &total) in totals.iter().enumerate() {
        grads.b_enc[j] = grads.b_enc[j] + total;
        if total != T::zero() {
            let w = &sae.w_enc[j * d_in..][..d_in];
            grads
                .b_dec
                .iter_mut()
                .zip(w)
                .for_each(|(b, &w)| *b = *b - total * w);
        }
    }
}

/// How latents are chosen while training.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Architecture {
    /// The `k` largest positive pre-activations of each input.
    TopK {
        /// Latents kept per input.
        k: usize,
    },
    /// The `k · B` largest positive pre-activations of a batch of `B`;
    /// saved as a JumpReLU autoencoder with the threshold it tracked.
    BatchTopK {
        /// Latents kept per input, on average over a batch.
        k: usize,
    },
    /// Every positive pre-activation, with an L1 penalty on the codes.
    Relu {
        /// Weight of the L1 penalty (SAELens's `l1_coefficient`).
        l1_coeff: f64,
    },
    /// The pre-activations above each latent's learned threshold, with an
    /// L0 penalty (SAELens's JumpReLU, sparsity loss mode `step`).
    JumpRelu {
        /// Weight of the L0 penalty (SAELens's `l0_coefficient`).
        l0_coeff: f64,
        /// Width of the pseudo-derivatives' window (SAELens's
        /// `jumprelu_bandwidth`).
        bandwidth: f64,
    },
}

/// The numbers the architectures take, each checked whichever the
/// architecture named takes (the faces take them all, with defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArchitectureParams {
    /// TopK, BatchTopK: latents kept per input.
    pub k: usize,
    /// ReLU: the L1 weight.
    pub l1_coeff: f64,
    /// JumpReLU: the L0 weight.
    pub l0_coeff: f64,
    /// JumpReLU: the pseudo-derivatives' window.
    pub bandwidth: f64,
}

impl Default for ArchitectureParams {
    fn default() -> Self {
        ArchitectureParams {
            k: Architecture::DEFAULT_K,
            l1_coeff: Architecture::DEFAULT_L1_COEFF,
            l0_coeff: Architecture::DEFAULT_L0_COEFF,
            bandwidth: Architecture::DEFAULT_BANDWIDTH,
        }
    }
}

impl Default for Architecture {
    /// TopK with [`Architecture::DEFAULT_K`].
    fn default() -> Self {
        Architecture::TopK {
            k: Architecture::DEFAULT_K,
        }
    }
}

impl Architecture {
    /// Latents kept per input when a face leaves `k` out.
    pub const DEFAULT_K: usize = 32;
    /// The L1 weight when a face leaves it out.
    pub const DEFAULT_L1_COEFF: f64 = 5.0;
    /// The JumpReLU L0 weight when a face leaves it out (SAELens's
    /// `l0_coefficient`).
    pub const DEFAULT_L0_COEFF: f64 = 1.0;
    /// The JumpReLU bandwidth when a face leaves it out (SAELens's
    /// `jumprelu_bandwidth`).
    pub const DEFAULT_BANDWIDTH: f64 = 0.05;
    /// Every JumpReLU threshold at the start (SAELens's
    /// `jumprelu_init_threshold`).
    pub const INITIAL_THRESHOLD: f32 = 0.01;

    /// The architecture `name`d (`topk`, `batchtopk`, `relu` or
    /// `jumprelu`) with the `params` it takes. Every parameter is checked
    /// whichever it takes, as the command line and Python take them all
    /// with defaults: a bad value is a mistake even where it goes unused.
    /// `k` must be at least 1 and the others finite numbers above 0
    /// ([`SaeError::InvalidSetting`]); an unknown name is
    /// [`SaeError::UnknownArchitecture`].
    pub fn named(name: &str, params: ArchitectureParams) -> Result<Self, SaeError> {
        let ArchitectureParams {
            k,
            l1_coeff,
            l0_coeff,
            bandwidth,
        } = params;
        SaeSetting::K.check(k as f64)?;
        SaeSetting::L1Coeff.check(l1_coeff)?;
        SaeSetting::L0Coeff.check(l0_coeff)?;
        SaeSetting::Bandwidth.check(bandwidth)?;
        match name {
            "topk" => Ok(Architecture::TopK { k }),
            "batchtopk" => Ok(Architecture::BatchTopK { k }),
            "relu" => Ok(Architecture::Relu { l1_coeff }),
            "jumprelu" => Ok(Architecture::JumpRelu {
                l0_coeff,
                bandwidth,
            }),
            _ => Err(SaeError::UnknownArchitecture {
                name: name.to_owned(),
            }),
        }
    }

    /// Its name in settings and provenance: `topk`, `batchtopk`, `relu` or
    /// `jumprelu`.
    pub fn name(&self) -> &'static str {
        match self {
            Architecture::TopK { .. } => "topk",
            Architecture::BatchTopK { .. } => "batchtopk",
            Architecture::Relu { .. } => "relu",
            Architecture::JumpRelu { .. } => "jumprelu",
        }
    }
}

/// The BatchTopK threshold's running-average rate (SAELens's default).
const THRESHOLD_RATE: f64 = 0.01;

/// Training settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Latents.
    pub d_sae: usize,
    /// Which latents fire.
    pub architecture: Architecture,
    /// Dead latents in the AuxK reconstruction (0: no AuxK loss).
    pub aux_k: usize,
    /// Weight of the AuxK loss (Gao et al.: 1/32).
    pub aux_coeff: f64,
    /// Inputs without firing after which a latent counts as dead.
    pub dead_after: u64,
    /// Adam: peak learning rate, schedule (warmup, cosine to lr/10 at
    /// `steps`) and betas; no weight decay, no clipping.
    pub optimizer: AdamW,
    /// Seed of the initial decoder directions.
    pub seed: u64,
}

impl Options {
    /// Gao et al.'s choices for `d_sae` latents of `architecture`, over
    /// `steps` steps at learning rate `lr`, without AuxK.
    pub fn new(architecture: Architecture, d_sae: usize, steps: u64, lr: f64) -> Self {
        Options {
            d_sae,
            architecture,
            aux_k: 0,
            aux_coeff: 1.0 / 32.0,
            dead_after: 10_000_000,
            optimizer: AdamW {
                lr,
                warmup: (steps / 20).min(1000),
                steps,
                weight_decay: 0.0,
                clip: 0.0,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
            },
            seed: 0,
        }
    }
}

/// What one training step measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StepReport {
    /// Steps done.
    pub step: u64,
    /// Mean squared error per value (scaled inputs).
    pub mse: f64,
    /// Fraction of variance unexplained: Σ‖x̂ − x‖² / Σ‖x − mean(x)‖².
    pub fvu: f64,
    /// Mean latents firing per input.
    pub l0: f64,
    /// Fraction of latents dead after this step.
    pub dead_fraction: f64,
    /// AuxK mean squared error per value (0 without dead latents).
    pub aux_mse: f64,
}

/// An autoencoder being trained on inputs scaled so that E‖x‖² = d_in.
#[derive(Debug, Clone)]
pub struct Trainer {
    /// The autoencoder, on scaled inputs.
    pub sae: Sae<f32>,
    /// The input scale: the autoencoder sees `scale · x`.
    pub scale: f32,
    /// The settings.
    pub options: Options,
    /// Adam moments, one (m, v) pair per parameter, in `Sae` field order.
    pub(super) moments: [(Vec<f32>, Vec<f32>); 4],
    /// Inputs seen since each latent last fired.
    pub(super) since_fired: Vec<u64>,
    /// Steps done.
    pub(super) step: u64,
    /// BatchTopK: the running average of the smallest value kept.
    pub(super) threshold: Option<f32>,
    /// JumpReLU: Adam's moments of the thresholds (empty otherwise).
    pub(super) threshold_moments: (Vec<f32>, Vec<f32>),
    /// A step's pre-activations and centred inputs, kept from one step to
    /// the next: allocated afresh, the 67 MB of a batch of 4,096 with 4,096
    /// latents cost a tenth of a step in page faults.
    scratch: (Vec<f32>, Vec<f32>),
}

impl Trainer {
    /// Starts from a sample of inputs (`[n, d_in]`): the scale that makes
    /// their mean squared norm `d_in`, `b_dec` their (scaled) mean, decoder
    /// rows random unit vectors and the encoder their copy (Gao et al.'s
    /// tied initialisation), `b_enc` zero.
    pub fn new(sample: &[f32], d_in: usize, options: Options) -> Trainer {
        let n = sample.len() / d_in.max(1);
        let activation = match options.architecture {
            Architecture::TopK { k } => {
                assert!(k >= 1 && options.d_sae >= k, "checked by the caller");
                Activation::TopK(k)
            }
            Architecture::BatchTopK { k } => {
                assert!(k >= 1 && options.d_sae >= k, "checked by the caller");
                Activation::JumpRelu(vec![0.0; options.d_sae])
            }
            Architecture::Relu { .. } => Activation::Relu,
            Architecture::JumpRelu { .. } => {
                Activation::JumpRelu(vec![Architecture::INITIAL_THRESHOLD; options.d_sae])
            }
        };
        assert!(n > 0, "checked by the caller");
        let mean_square: f64 = sample.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / n as f64;
        let scale = if mean_square > 0.0 {
            (d_in as f64 / mean_square).sqrt() as f32
        } else {
            1.0
        };
        let mut b_dec = vec![0.0f64; d_in];
        for row in sample.chunks_exact(d_in) {
            b_dec
                .iter_mut()
                .zip(row)
                .for_each(|(b, &v)| *b += f64::from(v * scale));
        }
        let b_dec: Vec<f32> = b_dec.iter().map(|b| (b / n as f64) as f32).collect();
        let mut rng = Rng::new(options.seed);
        let mut w_dec: Vec<f32> = (0..options.d_sae * d_in)
            .map(|_| rng.normal(1.0) as f32)
            .collect();
        normalize_rows(&mut w_dec, d_in);
        let sae = Sae {
            d_in,
            d_sae: options.d_sae,
            activation,
            w_enc: w_dec.clone(),
            b_enc: vec![0.0; options.d_sae],
            w_dec,
            b_dec,
            io: Io::default(),
        };
        let zeros = |len: usize| (vec![0.0; len], vec![0.0; len]);
        Trainer {
            moments: [
                zeros(sae.w_enc.len()),
                zeros(sae.b_enc.len()),
                zeros(sae.w_dec.len()),
                zeros(sae.b_dec.len()),
            ],
            since_fired: vec![0; sae.d_sae],
            step: 0,
            threshold: None,
            threshold_moments: match options.architecture {
                Architecture::JumpRelu { .. } => zeros(options.d_sae),
                _ => (Vec::new(), Vec::new()),
            },
            scratch: (Vec::new(), Vec::new()),
            scale,
            options,
            sae,
        }
    }

    /// Copies the tracked BatchTopK threshold into the autoencoder's
    /// JumpReLU thresholds.
    pub(super) fn refresh_threshold(&mut self) {
        if let (Activation::JumpRelu(threshold), Some(t)) =
            (&mut self.sae.activation, self.threshold)
        {
            threshold.fill(t);
        }
    }

    /// Steps done.
    pub fn steps_done(&self) -> u64 {
        self.step
    }

    /// Which latents are dead now.
    pub fn dead(&self) -> Vec<bool> {
        self.since_fired
            .iter()
            .map(|&n| n >= self.options.dead_after)
            .collect()
    }

    /// One Adam step on a batch of raw inputs (`[rows, d_in]`). The
    /// selection runs in `chunks` pieces in parallel (the result may depend
    /// on `chunks`, not on the thread count); the gradient sums run latent
    /// by latent in a fixed order.
    pub fn step(&mut self, batch: &[f32], chunks: usize) -> StepReport {
        let d_in = self.sae.d_in;
        let rows = batch.len() / d_in;
        let scaled: Vec<f32> = batch.iter().map(|&v| v * self.scale).collect();
        let dead = self.dead();
        let no_penalty = Loss {
            l1_coeff: 0.0,
            per_input: false,
        };
        let (aux, loss_of) = match self.options.architecture {
            Architecture::Relu { l1_coeff } => (
                0,
                Loss {
                    l1_coeff,
                    ..no_penalty
                },
            ),
            Architecture::JumpRelu { .. } => (
                0,
                Loss {
                    per_input: true,
                    ..no_penalty
                },
            ),
            _ => (self.options.aux_k, no_penalty),
        };
        if let Activation::JumpRelu(threshold) = &mut self.sae.activation
            && matches!(self.options.architecture, Architecture::JumpRelu { .. })
        {
            // SAELens's projection before each step: below zero the gate
            // would pass negative pre-activations.
            threshold.iter_mut().for_each(|t| *t = t.max(0.0));
        }
        let aux = Aux {
            dead: &dead,
            k: aux,
            coeff: self.options.aux_coeff,
        };
        let per_chunk = rows.div_ceil(chunks.max(1)).max(1);
        let (mut pre, mut centered) = std::mem::take(&mut self.scratch);
        let sae = &self.sae;
        // Every value is written before it is read.
        pre.resize(rows * sae.d_sae, 0.0);
        centered.resize(batch.len(), 0.0);
        sae.pre_activations_into(&scaled, &mut centered, &mut pre);
        let in_chunks = |select: &(dyn Fn(&[f32]) -> Codes<f32> + Sync)| {
            Codes::concat(pre.par_chunks(per_chunk * sae.d_sae).map(select).collect())
        };
        let codes = match self.options.architecture {
            Architecture::TopK { k } => in_chunks(&|pre| top_k_of(pre, sae.d_sae, k, |_| true)),
            Architecture::BatchTopK { k } => {
                let (mut codes, smallest) = batch_top_k(&[&pre], sae.d_sae, k * rows);
                if let Some(smallest) = smallest {
                    self.threshold = Some(self.threshold.map_or(smallest, |t| {
                        (f64::from(t) + THRESHOLD_RATE * f64::from(smallest - t)) as f32
                    }));
                }
                codes.pop().expect("one part")
            }
            Architecture::Relu { .. } => {
                in_chunks(&|pre| firing_of(pre, sae.d_sae, |_, v| v > 0.0))
            }
            Architecture::JumpRelu { .. } => {
                let Activation::JumpRelu(threshold) = &sae.activation else {
                    unreachable!("a JumpReLU trainer's autoencoder is JumpReLU")
                };
                in_chunks(&|pre| firing_of(pre, sae.d_sae, |j, v| v > threshold[j]))
            }
        };
        let mut grads = Gradients::zeros(sae);
        let (total, fired) = backward(
            sae,
            &scaled,
            (&pre, &centered),
            &codes,
            aux,
            loss_of,
            &mut grads,
        );
        let threshold_grad = match self.options.architecture {
            Architecture::JumpRelu {
                l0_coeff,
                bandwidth,
            } => Some(threshold_gradient(
                sae,
                &scaled,
                &pre,
                &codes,
                (l0_coeff, bandwidth),
            )),
            _ => None,
        };
        self.scratch = (pre, centered);
        self.refresh_threshold();
        remove_parallel_component(&mut grads.w_dec, &self.sae.w_dec, d_in);
        self.step += 1;
        let (opt, step) = (self.options.optimizer, self.step);
        let no_decay = [false; ADAM_CHUNK];
        for ((params, grad), (m, v)) in [
            (&mut self.sae.w_enc, &grads.w_enc),
            (&mut self.sae.b_enc, &grads.b_enc),
            (&mut self.sae.w_dec, &grads.w_dec),
            (&mut self.sae.b_dec, &grads.b_dec),
        ]
        .into_iter()
        .zip(self.moments.iter_mut())
        {
            // Element-wise, so splitting it changes nothing.
            params
                .par_chunks_mut(ADAM_CHUNK)
                .zip(grad.par_chunks(ADAM_CHUNK))
                .zip(m.par_chunks_mut(ADAM_CHUNK))
                .zip(v.par_chunks_mut(ADAM_CHUNK))
                .for_each(|(((p, g), m), v)| {
                    opt.update(step, p, g, (m, v), &no_decay[..p.len()]);
                });
        }
        if let (Some(grad), Activation::JumpRelu(threshold)) =
            (threshold_grad, &mut self.sae.activation)
        {
            let (m, v) = &mut self.threshold_moments;
            opt.update(step, threshold, &grad, (m, v), &vec![false; grad.len()]);
        }
        normalize_rows(&mut self.sae.w_dec, d_in);
        for (n, &f) in self.since_fired.iter_mut().zip(&fired) {
            *n = if f { 0 } else { n.saturating_add(rows as u64) };
        }
        let values = (rows * d_in) as f64;
        let dead_now = self.dead().iter().filter(|&&d| d).count();
        StepReport {
            step: self.step,
            mse: total.squared_error / values,
            fvu: total.squared_error / total_variance(&scaled, d_in).max(f64::MIN_POSITIVE),
            l0: total.active as f64 / rows as f64,
            dead_fraction: dead_now as f64 / self.sae.d_sae as f64,
            aux_mse: total.aux_squared_error / values,
        }
    }

    /// The autoencoder on raw inputs: the input scale folded into the
    /// weights (`W_enc · s`, `W_dec / s`, `b_dec / s`), so that it encodes
    /// and reconstructs unscaled activations exactly as the trained one
    /// does scaled ones (pre-activations, and so thresholds, are unchanged).
    pub fn unscaled(&self) -> Sae<f32> {
        let s = self.scale;
        let mut sae = self.sae.clone();
        sae.w_enc.iter_mut().for_each(|w| *w *= s);
        sae.w_dec.iter_mut().for_each(|w| *w /= s);
        sae.b_dec.iter_mut().for_each(|b| *b /= s);
        sae
    }
}

/// Rows of a batch per task of the JumpReLU threshold gradient: each task
/// sums its rows into a vector of its own, the vectors then added in task
/// order, so the sum does not depend on the thread count.
const THRESHOLD_ROWS_PER_TASK: usize = 64;

/// The JumpReLU thresholds' gradient: per latent, over the inputs whose
/// pre-activation is within `bandwidth / 2` of its threshold,
/// `−(θ/ε) · ∂loss/∂z − (l0_coeff / B) / ε`, with SAELens's
/// `∂loss/∂x̂ = 2 (x̂ − x) / B`. Rows are read in order, in blocks.
fn threshold_gradient(
    sae: &Sae<f32>,
    x: &[f32],
    pre: &[f32],
    codes: &Codes<f32>,
    (l0_coeff, bandwidth): (f64, f64),
) -> Vec<f32> {
    let (d_in, d_sae) = (sae.d_in, sae.d_sae);
    let rows = codes.rows();
    let Activation::JumpRelu(threshold) = &sae.activation else {
        unreachable!("a JumpReLU trainer's autoencoder is JumpReLU")
    };
    let scale = 2.0 / rows as f32;
    let g: Vec<f32> = sae
        .decode(codes)
        .iter()
        .zip(x)
        .map(|(&r, &x)| scale * (r - x))
        .collect();
    let (eps, l0) = (bandwidth as f32, (l0_coeff / rows as f64) as f32);
    let blocks: Vec<Vec<f32>> = pre
        .par_chunks(THRESHOLD_ROWS_PER_TASK * d_sae)
        .zip(g.par_chunks(THRESHOLD_ROWS_PER_TASK * d_in))
        .map(|(pre, g)| {
            let mut sum = vec![0.0f32; d_sae];
            for (pre, g) in pre.chunks_exact(d_sae).zip(g.chunks_exact(d_in)) {
                for (j, ((&p, &t), s)) in pre.iter().zip(threshold).zip(&mut sum).enumerate() {
                    let u = (p - t) / eps;
                    if u > -0.5 && u < 0.5 {
                        let dz = dot(g, &sae.w_dec[j * d_in..][..d_in]);
                        *s += -(t / eps) * dz - l0 / eps;
                    }
                }
            }
            sum
        })
        .collect();
    let mut total = vec![0.0f32; d_sae];
    for block in blocks {
        total.iter_mut().zip(block).for_each(|(t, b)| *t += b);
    }
    total
}

/// Σ_b ‖x_b − mean(x)‖² of a batch.
pub fn total_variance(x: &[f32], d_in: usize) -> f64 {
    let rows = x.len() / d_in;
    let mut mean = vec![0.0f64; d_in];
    for row in x.chunks_exact(d_in) {
        mean.iter_mut()
            .zip(row)
            .for_each(|(m, &v)| *m += f64::from(v));
    }
    mean.iter_mut().for_each(|m| *m /= rows.max(1) as f64);
    x.chunks_exact(d_in)
        .map(|row| {
            row.iter()
                .zip(&mean)
                .map(|(&v, m)| (f64::from(v) - m).powi(2))
                .sum::<f64>()
        })
        .sum()
}

/// Scales every `width`-wide row of `w` to unit length (zero rows stay zero).
pub fn normalize_rows(w: &mut [f32], width: usize) {
    w.par_chunks_exact_mut(width).for_each(|row| {
        let norm = row
            .iter()
            .map(|&v| f64::from(v).powi(2))
            .sum::<f64>()
            .sqrt();
        if norm > 0.0 {
            row.iter_mut()
                .for_each(|v| *v = (f64::from(*v) / norm) as f32);
        }
    });
}

/// Removes from each row of `grad` its component along the matching
/// (unit-norm) row of `w`.
pub fn remove_parallel_component(grad: &mut [f32], w: &[f32], width: usize) {
    grad.par_chunks_exact_mut(width)
        .zip(w.par_chunks_exact(width))
        .for_each(|(g, w)| {
            let along = g
                .iter()
                .zip(w)
                .map(|(&g, &w)| f64::from(g) * f64::from(w))
                .sum::<f64>();
            g.iter_mut()
                .zip(w)
                .for_each(|(g, &w)| *g = (f64::from(*g) - along * f64::from(w)) as f32);
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_sae(rng: &mut Rng, d_in: usize, d_sae: usize, k: usize) -> Sae<f64> {
        let mut vec = |n: usize| (0..n).map(|_| rng.normal(0.5)).collect::<Vec<f64>>();
        Sae {
            d_in,
            d_sae,
            activation: Activation::TopK(k),
            w_enc: vec(d_sae * d_in),
            b_enc: vec(d_sae),
            w_dec: vec(d_sae * d_in),
            b_dec: vec(d_in),
            io: Io::default(),
        }
    }

    /// A parameter of an autoencoder, by name.
    type Field = fn(&mut Sae<f64>) -> &mut Vec<f64>;

    /// Central differences of `loss` for every parameter, against `grads`.
    fn check(sae: &Sae<f64>, grads: &Gradients<f64>, loss: impl Fn(&Sae<f64>) -> f64) {
        let eps = 1e-6;
        let fields: [(&str, Field, &Vec<f64>); 4] = [
            ("w_enc", |s| &mut s.w_enc, &grads.w_enc),
            ("b_enc", |s| &mut s.b_enc, &grads.b_enc),
            ("w_dec", |s| &mut s.w_dec, &grads.w_dec),
            ("b_dec", |s| &mut s.b_dec, &grads.b_dec),
        ];
        for (name, field, analytic) in fields {
            for (i, &expected) in analytic.iter().enumerate() {
                let mut plus = sae.clone();
                field(&mut plus)[i] += eps;
                let mut minus = sae.clone();
                field(&mut minus)[i] -= eps;
                let numeric = (loss(&plus) - loss(&minus)) / (2.0 * eps);
                let error =
                    (numeric - expected).abs() / numeric.abs().max(expected.abs()).max(1e-4);
                assert!(
                    error < 1e-5,
                    "{name}[{i}]: numeric {numeric}, analytic {expected}"
                );
            }
        }
    }

    fn mse(sae: &Sae<f64>, x: &[f64], rows: usize) -> f64 {
        let recon = sae.forward(x, rows);
        recon
            .iter()
            .zip(x)
            .map(|(r, x)| (r - x).powi(2))
            .sum::<f64>()
            / x.len() as f64
    }

    #[test]
    fn reconstruction_gradients_match_finite_differences() {
        let mut rng = Rng::new(7);
        let (d_in, d_sae, k, rows) = (5, 12, 3, 4);
        let sae = random_sae(&mut rng, d_in, d_sae, k);
        let x: Vec<f64> = (0..rows * d_in).map(|_| rng.normal(1.0)).collect();
        let mut grads = Gradients::zeros(&sae);
        let no_dead = vec![false; d_sae];
        let aux = Aux {
            dead: &no_dead,
            k: 0,
            coeff: 0.0,
        };
        let (pre, centered) = sae.pre_activations(&x, rows);
        let codes = sae.select(&pre);
        let forward = (pre.as_slice(), centered.as_slice());
        let per_value = Loss {
            l1_coeff: 0.0,
            per_input: false,
        };
        let (loss, _) = backward(&sae, &x, forward, &codes, aux, per_value, &mut grads);
        assert!((loss.squared_error / (rows * d_in) as f64 - mse(&sae, &x, rows)).abs() < 1e-12);
        check(&sae, &grads, |s| mse(s, &x, rows));
    }

    #[test]
    fn aux_gradients_match_finite_differences_with_the_residual_held() {
        let mut rng = Rng::new(11);
        let (d_in, d_sae, rows) = (4, 10, 3);
        let sae = random_sae(&mut rng, d_in, d_sae, 2);
        let x: Vec<f64> = (0..rows * d_in).map(|_| rng.normal(1.0)).collect();
        let target: Vec<f64> = (0..rows * d_in).map(|_| rng.normal(1.0)).collect();
        let dead: Vec<bool> = (0..d_sae).map(|j| j % 2 == 0).collect();
        let aux_loss = |s: &Sae<f64>| {
            let (pre, centered) = s.pre_activations(&x, rows);
            let codes = top_k_of(&pre, d_sae, 3, |j| dead[j]);
            let mut unused = Gradients::zeros(s);
            aux_backward(s, &codes, &target, &centered, 0.0, &mut unused) / (rows * d_in) as f64
        };
        let (pre, centered) = sae.pre_activations(&x, rows);
        let codes = top_k_of(&pre, d_sae, 3, |j| dead[j]);
        let mut grads = Gradients::zeros(&sae);
        aux_backward(
            &sae,
            &codes,
            &target,
            &centered,
            2.0 / (rows * d_in) as f64,
            &mut grads,
        );
        check(&sae, &grads, aux_loss);
    }

    #[test]
    fn decoder_rows_stay_unit_norm_and_folding_the_scale_keeps_the_reconstruction() {
        let mut rng = Rng::new(3);
        let d_in = 6;
        let data: Vec<f32> = (0..256 * d_in)
            .map(|_| (rng.normal(1.0) * 7.0 + 2.0) as f32)
            .collect();
        let mut trainer = Trainer::new(
            &data,
            d_in,
            Options::new(Architecture::TopK { k: 2 }, 16, 10, 1e-3),
        );
        for _ in 0..5 {
            trainer.step(&data[..64 * d_in], 2);
        }
        for row in trainer.sae.w_dec.chunks_exact(d_in) {
            let norm: f32 = row.iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        }
        let raw = trainer.unscaled();
        let x = &data[..4 * d_in];
        let scaled: Vec<f32> = x.iter().map(|v| v * trainer.scale).collect();
        let expected: Vec<f32> = trainer
            .sae
            .forward(&scaled, 4)
            .iter()
            .map(|v| v / trainer.scale)
            .collect();
        for (a, b) in raw.forward(x, 4).iter().zip(&expected) {
            assert!((a - b).abs() < 1e-4 * b.abs().max(1.0), "{a} vs {b}");
        }
        assert_eq!(
            raw.encode(x, 4).latents,
            trainer.sae.encode(&scaled, 4).latents
        );
    }
}
