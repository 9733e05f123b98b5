//! Training TLLM models on CPU: byte-level corpora, AdamW with a cosine
//! schedule and warmup, gradient clipping, residual dropout at the header's
//! rate, and atomic checkpoints that resume bit for bit.
//!
//! A step samples `batch_size` windows of the training bytes (from a
//! generator seeded by the run's seed and the step number, so that a resumed
//! run draws what the uninterrupted one would have), splits them into one
//! contiguous chunk per thread, sums each chunk's gradients in order and
//! then the chunks in order: results depend on the seed and thread count
//! only.

pub mod backprop;
pub mod checkpoint;
pub mod data;
pub(crate) mod error;
mod layout;
mod ops;
pub mod optim;
pub mod run;

pub use error::TrainingError;
pub use run::{TrainingRun, TrainingSettings, TrainingSummary, bits_per_byte, default_shape};

use std::path::Path;

use modelbin_format::tllm::Config;
use rayon::prelude::*;

use crate::Result;
use crate::rng::Rng;
use crate::tllm::Model;
use backprop::{ParamLayout, sequence_loss};
use checkpoint::OptimizerState;
use data::Corpus;
use optim::AdamW;

/// Standard deviation of the initial weights (GPT-2's).
pub const INIT_STD: f64 = 0.02;

/// Validation windows evaluated at most.
const MAX_VAL_WINDOWS: usize = 64;

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StepReport {
    /// The step number (1-based).
    pub step: u64,
    /// Mean training loss of the batch, nats per byte.
    pub loss: f64,
    /// Gradient norm before clipping.
    pub grad_norm: f64,
    /// Learning rate used.
    pub lr: f64,
}

/// A model being trained, with its optimiser state.
#[derive(Debug, Clone)]
pub struct Trainer {
    config: Config,
    layout: ParamLayout,
    params: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    decay: Vec<bool>,
    step: u64,
    seed: u64,
    optimizer: AdamW,
    batch_size: usize,
}

/// A generator for (seed, step, stream): independent of thread scheduling.
fn rng_for(seed: u64, step: u64, stream: u64) -> Rng {
    let mut mix = Rng::new(seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    Rng::new(mix.next_u64() ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
}

impl Trainer {
    /// A freshly initialised model (weights N(0, 0.02), LayerNorm weights 1,
    /// biases 0) with zero optimiser state.
    pub fn new(config: Config, optimizer: AdamW, batch_size: usize, seed: u64) -> Result<Self> {
        let model = Model::random(config, seed, INIT_STD)?;
        let params = model.flat_parameters();
        Trainer::assemble(config, params, None, optimizer, batch_size, seed)
    }

    /// Continues from a checkpoint. The checkpoint must have `config` (when
    /// given) and `seed`; otherwise it is an error, before any work.
    pub fn resume(
        path: &Path,
        config: Option<Config>,
        optimizer: AdamW,
        batch_size: usize,
        seed: u64,
    ) -> Result<Self> {
        let (saved, params, state) = checkpoint::load(path)?;
        if let Some(config) = config.filter(|c| *c != saved) {
            return Err(TrainingError::OtherConfiguration {
                path: path.to_owned(),
                saved: describe(&saved),
                requested: describe(&config),
            }
            .into());
        }
        if state.seed != seed {
            return Err(TrainingError::OtherSeed {
                path: path.to_owned(),
                saved: state.seed,
                requested: seed,
            }
            .into());
        }
        Trainer::assemble(saved, params, Some(state), optimizer, batch_size, seed)
    }

    fn assemble(
        config: Config,
        params: Vec<f32>,
        state: Option<OptimizerState>,
        optimizer: AdamW,
        batch_size: usize,
        seed: u64,
    ) -> Result<Self> {
        if batch_size == 0 {
            return Err(TrainingError::EmptyBatch.into());
        }
        let layout = ParamLayout::new(&config);
        let n = layout.len();
        let state = state.unwrap_or(OptimizerState {
            step: 0,
            seed,
            m: vec![0.0; n],
            v: vec![0.0; n],
        });
        Ok(Trainer {
            config,
            decay: AdamW::decay_mask(n, &layout.decayed()),
            layout,
            params,
            m: state.m,
            v: state.v,
            step: state.step,
            seed,
            optimizer,
            batch_size,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Steps done.
    pub fn steps_done(&self) -> u64 {
        self.step
    }

    /// The parameters, flat, in TLLM file order.
    pub fn parameters(&self) -> &[f32] {
        &self.params
    }

    /// Mean loss and gradient (scaled to the mean) of `windows`, each of
    /// `len + 1` bytes, with one contiguous chunk of windows per thread.
    fn batch_gradient(&self, windows: &[&[u8]], step: u64) -> (f64, Vec<f32>) {
        let threads = rayon::current_num_threads().max(1);
        let per_chunk = windows.len().div_ceil(threads);
        let positions: usize = windows.iter().map(|w| w.len() - 1).sum();
        let scale = 1.0 / positions as f32;
        let dropout = self.config.dropout;
        let chunks: Vec<(f64, Vec<f32>)> = windows
            .par_chunks(per_chunk)
            .enumerate()
            .map(|(c, chunk)| {
                let mut grad = vec![0.0f32; self.layout.len()];
                let mut loss = 0.0;
                for (i, window) in chunk.iter().enumerate() {
                    let (inputs, targets) = split(window);
                    let mut rng = rng_for(self.seed, step, (c * per_chunk + i) as u64 + 1);
                    loss += sequence_loss(
                        &self.layout,
                        &self.params,
                        &inputs,
                        &targets,
                        dropout,
                        &mut rng,
                        Some((&mut grad, scale)),
                    );
                }
                (loss, grad)
            })
            .collect();
        let mut chunks = chunks.into_iter();
        let (mut loss, mut grad) = chunks.next().unwrap_or_default();
        for (l, g) in chunks {
            loss += l;
            grad.iter_mut().zip(&g).for_each(|(a, b)| *a += b);
        }
        (loss / positions as f64, grad)
    }

    /// One optimisation step on a sampled batch.
    pub fn step(&mut self, corpus: &Corpus) -> StepReport {
        let seq = self.config.max_seq_len as usize;
        let mut rng = rng_for(self.seed, self.step + 1, 0);
        let windows = corpus.sample(self.batch_size, seq, &mut rng);
        self.step_on(&windows)
    }

    /// One optimisation step on the given windows (each a sequence of
    /// inputs plus one byte: its last target).
    pub fn step_on(&mut self, windows: &[&[u8]]) -> StepReport {
        let step = self.step + 1;
        let (loss, mut grad) = self.batch_gradient(windows, step);
        let grad_norm = self.optimizer.clip(&mut grad);
        self.optimizer.update(
            step,
            &mut self.params,
            &grad,
            (&mut self.m, &mut self.v),
            &self.decay,
        );
        self.step = step;
        StepReport {
            step,
            loss,
            grad_norm,
            lr: self.optimizer.lr_at(step),
        }
    }

    /// Mean validation loss (nats per byte, no dropout), or `None` without
    /// validation data.
    pub fn validation_loss(&self, corpus: &Corpus) -> Option<f64> {
        let windows = corpus.val_windows(self.config.max_seq_len as usize, MAX_VAL_WINDOWS);
        if windows.is_empty() {
            return None;
        }
        let losses: Vec<(f64, usize)> = windows
            .par_iter()
            .map(|w| {
                let (inputs, targets) = split(w);
                let loss = sequence_loss::<f32>(
                    &self.layout,
                    &self.params,
                    &inputs,
                    &targets,
                    0.0,
                    &mut Rng::new(0),
                    None,
                );
                (loss, targets.len())
            })
            .collect();
        let (sum, count) = losses
            .iter()
            .fold((0.0, 0), |(s, c), &(l, n)| (s + l, c + n));
        Some(sum / count as f64)
    }

    /// Writes the weights to `path` and the optimiser state beside it.
    pub fn save(&self, path: &Path) -> Result<()> {
        let tensors: Vec<&[f32]> = self
            .layout
            .tensor_ranges()
            .into_iter()
            .map(|r| &self.params[r])
            .collect();
        let state = OptimizerState {
            step: self.step,
            seed: self.seed,
            m: self.m.clone(),
            v: self.v.clone(),
        };
        checkpoint::save(path, &self.config, &tensors, &state)
    }
}

/// Inputs (all bytes but the last) and next-byte targets of a window.
fn split(window: &[u8]) -> (Vec<u32>, Vec<u32>) {
    let ids: Vec<u32> = window.iter().map(|&b| u32::from(b)).collect();
    (ids[..ids.len() - 1].to_vec(), ids[1..].to_vec())
}

/// A configuration in words, for errors: `model_dim 64, n_layers 2, ...`.
fn describe(config: &Config) -> String {
    format!(
        "model_dim {}, n_layers {}, n_heads {}, ffn_hidden_dim {}, max_seq_len {}, vocab_size {}, dropout {}",
        config.model_dim,
        config.n_layers,
        config.n_heads,
        config.ffn_hidden_dim,
        config.max_seq_len,
        config.vocab_size,
        config.dropout
    )
}
