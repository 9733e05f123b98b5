//! The TLLM transformer (GPT-like; see docs/formats/tllm.md):
//!
//! `x = tok[id] + pos[t]`; per layer `h = x + Attn(LN1(x))`,
//! `x = h + FFN(LN2(h))`; `logits = x · output`. LayerNorm eps 1e-5 with
//! biased variance; causal attention without biases, head `h` on columns
//! `h·hd..(h+1)·hd`, scale `1/√hd`; `FFN(a) = GELU_tanh(a·W1 + b1)·W2 + b2`;
//! weights are `[in, out]` so `y = x·W`; no final LayerNorm; dropout unused.
//!
//! [`train`] trains the same model on bytes; [`generate`] samples from it.

use std::path::Path;

use modelbin_format::tensor::floats;
use modelbin_format::tllm::{
    self, Config, LAYER_NORM_EPS, LayerTensor::*, ModelTensor, PerLayerTensor, Tllm,
};

use crate::nn::kernels::{gelu_tanh, layer_norm, matmul, softmax};
use crate::rng::Rng;
use crate::{Error, Result};

mod hooked;
pub mod train;

use crate::generation::{Decoder, DecoderSession, generate_with};
pub use crate::generation::{Generation, Sampling, argmax};

/// Generates up to `max_tokens` after `prompt` with the KV cache, stopping
/// early at `stop`. Past the model's context (max_seq_len tokens) the window
/// slides: each further token is predicted from the last max_seq_len tokens,
/// recomputed from scratch (positions restart at 0 in the window), so long
/// generations cost one full forward pass per token once the window is
/// full. A prompt longer than the context keeps its last max_seq_len
/// tokens. `on_token` sees each id.
pub fn generate(
    model: &Model,
    prompt: &[u32],
    max_tokens: usize,
    sampling: Sampling,
    stop: Option<u32>,
    on_token: impl FnMut(u32),
) -> Result<Generation> {
    let stop: Vec<u32> = stop.into_iter().collect();
    generate_with(model, prompt, max_tokens, sampling, &stop, on_token)
}

impl Decoder for Model {
    type Session<'a> = Session<'a>;

    fn context(&self) -> usize {
        self.config.max_seq_len as usize
    }

    fn start(&self) -> Session<'_> {
        self.session()
    }
}

impl DecoderSession for Session<'_> {
    fn cached(&self) -> usize {
        self.len
    }

    fn extend_last(&mut self, ids: &[u32]) -> Result<Vec<f32>> {
        self.extend(ids, false)
    }
}

/// One block's weights, indexed by [`LayerTensor`].
type Layer = PerLayerTensor<Vec<f32>>;

/// A loaded model. Thread-safe (sessions hold the per-sequence state).
#[derive(Debug, Clone)]
pub struct Model {
    config: Config,
    tok: Vec<f32>,
    pos: Vec<f32>,
    layers: Vec<Layer>,
    output: Vec<f32>,
}

impl Model {
    /// Loads a validated TLLM file.
    pub fn from_tllm<B: AsRef<[u8]>>(file: &Tllm<B>) -> Model {
        let get = |tensor: ModelTensor| file.model_values(tensor).into_owned();
        let layers = (0..file.config().n_layers)
            .map(|l| Layer::from_fn(|tensor| get(ModelTensor::Layer(l, tensor))))
            .collect();
        Model {
            config: *file.config(),
            tok: get(ModelTensor::TokEmbeddings),
            pos: get(ModelTensor::PosEmbeddings),
            layers,
            output: get(ModelTensor::Output),
        }
    }

    /// Opens and loads a TLLM file.
    pub fn open(path: impl AsRef<Path>) -> Result<Model> {
        Ok(Model::from_tllm(&tllm::open(path)?))
    }

    /// A randomly initialised model: embeddings, projections and the output
    /// matrix from N(0, `std`); LayerNorm weights 1; all biases 0.
    pub fn random(config: Config, seed: u64, std: f64) -> Result<Model> {
        config.validate()?;
        let mut rng = Rng::new(seed);
        let mut normal =
            |n: usize| -> Vec<f32> { (0..n).map(|_| rng.normal(std) as f32).collect() };
        let tok = normal(ModelTensor::TokEmbeddings.shape(&config).len());
        let pos = normal(ModelTensor::PosEmbeddings.shape(&config).len());
        let layers = (0..config.n_layers)
            .map(|_| {
                Layer::from_fn(|tensor| {
                    let len = tensor.shape(&config).len();
                    if tensor.is_matrix() {
                        normal(len)
                    } else if tensor.is_layer_norm_gain() {
                        vec![1.0; len]
                    } else {
                        vec![0.0; len]
                    }
                })
            })
            .collect();
        let output = normal(ModelTensor::Output.shape(&config).len());
        Ok(Model {
            config,
            tok,
            pos,
            layers,
            output,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Every tensor's values, in TLLM file order.
    fn tensors(&self) -> Vec<&[f32]> {
        let mut data: Vec<&[f32]> = vec![&self.tok, &self.pos];
        for layer in &self.layers {
            data.extend(layer.iter().map(|(_, values)| values.as_slice()));
        }
        data.push(&self.output);
        data
    }

    /// All parameters in one vector, in TLLM file order.
    pub fn flat_parameters(&self) -> Vec<f32> {
        self.tensors().concat()
    }

    /// Writes the model as a TLLM file, atomically.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<u64> {
        let bytes: Vec<Vec<u8>> = self
            .tensors()
            .iter()
            .map(|values| floats::encode_f32(values))
            .collect();
        let slices: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        Ok(tllm::write_file(
            path,
            &self.config,
            &slices,
            &mut |_, _| {},
        )?)
    }

    fn check_ids(&self, ids: &[u32], start: usize) -> Result<()> {
        if let Some((i, &id)) = ids
            .iter()
            .enumerate()
            .find(|&(_, &id)| id >= self.config.vocab_size)
        {
            return Err(Error::TokenOutOfRange {
                id,
                position: start + i,
                vocab_size: self.config.vocab_size,
            });
        }
        if start + ids.len() > self.config.max_seq_len as usize {
            return Err(Error::SequenceTooLong {
                len: start + ids.len(),
                max: self.config.max_seq_len,
            });
        }
        Ok(())
    }

    /// Logits `[ids.len(), vocab_size]` (row-major) at every position of a
    /// full forward pass.
    pub fn forward(&self, ids: &[u32]) -> Result<Vec<f32>> {
        if ids.is_empty() {
            return Err(Error::EmptyInput);
        }
        let mut session = self.session();
        session.extend(ids, true)
    }

    /// The residual stream after each block in `layers` (indices from 0)
    /// at every position of `ids`: one `[ids.len(), model_dim]` matrix per
    /// requested layer, in the order asked.
    pub fn residual_stream(&self, ids: &[u32], layers: &[usize]) -> Result<Vec<Vec<f32>>> {
        if ids.is_empty() {
            return Err(Error::EmptyInput);
        }
        let mut out = vec![Vec::new(); layers.len()];
        self.session()
            .extend_with_hook(ids, false, &mut |layer, x| {
                for (slot, _) in layers.iter().enumerate().filter(|(_, l)| **l == layer) {
                    out[slot] = x.to_vec();
                }
            })?;
        Ok(out)
    }

    /// A decoding session with an empty KV cache. The cache grows with the
    /// tokens actually run (never reserved for `max_seq_len` up front).
    pub fn session(&self) -> Session<'_> {
        let layers = self.layers.len();
        Session {
            model: self,
            keys: vec![Vec::new(); layers],
            values: vec![Vec::new(); layers],
            len: 0,
        }
    }
}

/// The state of one sequence: a KV cache over the tokens seen so far.
#[derive(Debug, Clone)]
pub struct Session<'m> {
    model: &'m Model,
    /// Per layer, `[position][model_dim]` for the positions seen so far.
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
    len: usize,
}

impl Session<'_> {
    /// Tokens in the cache.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs `ids` after the cached tokens; returns the logits of every new
    /// position (`all`) or of the last one only.
    pub fn extend(&mut self, ids: &[u32], all: bool) -> Result<Vec<f32>> {
        self.extend_with_hook(ids, all, &mut |_, _| {})
    }

    /// [`Session::extend`], calling `hook(layer, residual)` after each
    /// block with the residual stream of the new positions
    /// (`[ids.len(), model_dim]`, the block's output), which the hook may
    /// read or replace (to splice in a reconstruction, or ablate); the
    /// later blocks and the cache see what it leaves.
    pub fn extend_with_hook(
        &mut self,
        ids: &[u32],
        all: bool,
        hook: &mut dyn FnMut(usize, &mut [f32]),
    ) -> Result<Vec<f32>> {
        let model = self.model;
        model.check_ids(ids, self.len)?;
        if ids.is_empty() {
            return Err(Error::EmptyInput);
        }
        let c = &model.config;
        let (d, f, v) = (
            c.model_dim as usize,
            c.ffn_hidden_dim as usize,
            c.vocab_size as usize,
        );
        let heads = c.n_heads as usize;
        let hd = d / heads;
        let t = ids.len();
        let start = self.len;

        let mut x = vec![0.0f32; t * d];
        for (i, &id) in ids.iter().enumerate() {
            let tok = &model.tok[id as usize * d..][..d];
            let pos = &model.pos[(start + i) * d..][..d];
            for j in 0..d {
                x[i * d + j] = tok[j] + pos[j];
            }
        }
        let mut a = vec![0.0f32; t * d];
        let mut q = vec![0.0f32; t * d];
        let mut att = vec![0.0f32; t * d];
        let mut hidden = vec![0.0f32; t * f];
        let mut scores = vec![0.0f32; start + t];
        let scale = 1.0 / (hd as f32).sqrt();
        for (l, layer) in model.layers.iter().enumerate() {
            layer_norm(
                &x,
                &layer[Ln1Weight],
                &layer[Ln1Bias],
                &mut a,
                d,
                LAYER_NORM_EPS,
            );
            matmul(&a, &layer[AttnQ], &mut q, (t, d, d), false);
            let (keys, values) = (&mut self.keys[l], &mut self.values[l]);
            keys.resize((start + t) * d, 0.0);
            values.resize((start + t) * d, 0.0);
            matmul(&a, &layer[AttnK], &mut keys[start * d..], (t, d, d), false);
            matmul(
                &a,
                &layer[AttnV],
                &mut values[start * d..],
                (t, d, d),
                false,
            );
            let (keys, values) = (&keys[..], &values[..]);
            for i in 0..t {
                let visible = start + i + 1; // causal: positions 0..=start+i
                for h in 0..heads {
                    let qh = &q[i * d + h * hd..][..hd];
                    for (p, score) in scores[..visible].iter_mut().enumerate() {
                        let kh = &keys[p * d + h * hd..][..hd];
                        *score = qh.iter().zip(kh).map(|(a, b)| a * b).sum::<f32>() * scale;
                    }
                    softmax(&mut scores[..visible]);
                    let out = &mut att[i * d + h * hd..][..hd];
                    out.fill(0.0);
                    for (p, &w) in scores[..visible].iter().enumerate() {
                        let vh = &values[p * d + h * hd..][..hd];
                        for (o, &vv) in out.iter_mut().zip(vh) {
                            *o += w * vv;
                        }
                    }
                }
            }
            matmul(&att, &layer[AttnO], &mut x, (t, d, d), true);
            layer_norm(
                &x,
                &layer[Ln2Weight],
                &layer[Ln2Bias],
                &mut a,
                d,
                LAYER_NORM_EPS,
            );
            matmul(&a, &layer[FfnLinear1], &mut hidden, (t, d, f), false);
            for row in hidden.chunks_exact_mut(f) {
                for (h, b) in row.iter_mut().zip(&layer[FfnBias1]) {
                    *h += b;
                }
            }
            gelu_tanh(&mut hidden);
            matmul(&hidden, &layer[FfnLinear2], &mut x, (t, f, d), true);
            for row in x.chunks_exact_mut(d) {
                for (xv, b) in row.iter_mut().zip(&layer[FfnBias2]) {
                    *xv += b;
                }
            }
            hook(l, &mut x);
        }
        self.len += t;
        let rows = if all { &x[..] } else { &x[(t - 1) * d..] };
        let n = rows.len() / d;
        let mut logits = vec![0.0f32; n * v];
        matmul(rows, &model.output, &mut logits, (n, d, v), false);
        crate::error::finite(logits, "the logits")
    }
}
