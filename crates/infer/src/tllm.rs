//! The TLLM transformer (GPT-like; see DESIGN.md "TLLM" and
//! docs/formats/tllm.md):
//!
//! `x = tok[id] + pos[t]`; per layer `h = x + Attn(LN1(x))`,
//! `x = h + FFN(LN2(h))`; `logits = x · output`. LayerNorm eps 1e-5 with
//! biased variance; causal attention without biases, head `h` on columns
//! `h·hd..(h+1)·hd`, scale `1/√hd`; `FFN(a) = GELU_tanh(a·W1 + b1)·W2 + b2`;
//! weights are `[in, out]` so `y = x·W`; no final LayerNorm; dropout unused.

use std::path::Path;
use std::time::Instant;

use modelbin_format::tllm::{self, Config, Tllm};

use crate::kernels::{gelu_tanh, layer_norm, matmul, softmax};
use crate::rng::Rng;
use crate::{Error, Result};

/// LayerNorm epsilon of the TLLM architecture.
const LN_EPS: f32 = 1e-5;

/// One block's weights.
#[derive(Debug, Clone)]
struct Layer {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    o: Vec<f32>,
    w1: Vec<f32>,
    b1: Vec<f32>,
    w2: Vec<f32>,
    b2: Vec<f32>,
    ln1_w: Vec<f32>,
    ln1_b: Vec<f32>,
    ln2_w: Vec<f32>,
    ln2_b: Vec<f32>,
}

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
        let get = |name: &str| -> Vec<f32> {
            file.values(name)
                .expect("every tensor of the configuration is present")
                .into_owned()
        };
        let layers = (0..file.config().n_layers)
            .map(|l| {
                let get = |suffix: &str| get(&format!("layers.{l}.{suffix}"));
                Layer {
                    q: get("attn.q"),
                    k: get("attn.k"),
                    v: get("attn.v"),
                    o: get("attn.o"),
                    w1: get("ffn.linear1"),
                    b1: get("ffn.bias1"),
                    w2: get("ffn.linear2"),
                    b2: get("ffn.bias2"),
                    ln1_w: get("ln1.weight"),
                    ln1_b: get("ln1.bias"),
                    ln2_w: get("ln2.weight"),
                    ln2_b: get("ln2.bias"),
                }
            })
            .collect();
        Model {
            config: *file.config(),
            tok: get("tok_embeddings"),
            pos: get("pos_embeddings"),
            layers,
            output: get("output"),
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
        let (d, f) = (config.model_dim as usize, config.ffn_hidden_dim as usize);
        let tok = normal(config.vocab_size as usize * d);
        let pos = normal(config.max_seq_len as usize * d);
        let layers = (0..config.n_layers)
            .map(|_| Layer {
                q: normal(d * d),
                k: normal(d * d),
                v: normal(d * d),
                o: normal(d * d),
                w1: normal(d * f),
                b1: vec![0.0; f],
                w2: normal(f * d),
                b2: vec![0.0; d],
                ln1_w: vec![1.0; d],
                ln1_b: vec![0.0; d],
                ln2_w: vec![1.0; d],
                ln2_b: vec![0.0; d],
            })
            .collect();
        let output = normal(d * config.vocab_size as usize);
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
        for l in &self.layers {
            data.extend([
                &l.q[..],
                &l.k,
                &l.v,
                &l.o,
                &l.w1,
                &l.b1,
                &l.w2,
                &l.b2,
                &l.ln1_w,
                &l.ln1_b,
                &l.ln2_w,
                &l.ln2_b,
            ]);
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
            .map(|values| values.iter().flat_map(|v| v.to_le_bytes()).collect())
            .collect();
        let slices: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
        Ok(tllm::write_file(path, &self.config, &slices)?)
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
            layer_norm(&x, &layer.ln1_w, &layer.ln1_b, &mut a, d, LN_EPS);
            matmul(&a, &layer.q, &mut q, (t, d, d), false);
            let (keys, values) = (&mut self.keys[l], &mut self.values[l]);
            keys.resize((start + t) * d, 0.0);
            values.resize((start + t) * d, 0.0);
            matmul(&a, &layer.k, &mut keys[start * d..], (t, d, d), false);
            matmul(&a, &layer.v, &mut values[start * d..], (t, d, d), false);
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
            matmul(&att, &layer.o, &mut x, (t, d, d), true);
            layer_norm(&x, &layer.ln2_w, &layer.ln2_b, &mut a, d, LN_EPS);
            matmul(&a, &layer.w1, &mut hidden, (t, d, f), false);
            for row in hidden.chunks_exact_mut(f) {
                for (h, b) in row.iter_mut().zip(&layer.b1) {
                    *h += b;
                }
            }
            gelu_tanh(&mut hidden);
            matmul(&hidden, &layer.w2, &mut x, (t, f, d), true);
            for row in x.chunks_exact_mut(d) {
                for (xv, b) in row.iter_mut().zip(&layer.b2) {
                    *xv += b;
                }
            }
        }
        self.len += t;
        let rows = if all { &x[..] } else { &x[(t - 1) * d..] };
        let n = rows.len() / d;
        let mut logits = vec![0.0f32; n * v];
        matmul(rows, &model.output, &mut logits, (n, d, v), false);
        Ok(logits)
    }
}

/// How to pick each next token.
#[derive(Debug, Clone, Copy)]
pub struct Sampling {
    /// 0 for greedy (argmax); otherwise logits are divided by it.
    pub temperature: f32,
    /// Keep only the `k` most likely tokens.
    pub top_k: Option<usize>,
    /// Keep the smallest set of tokens whose probability reaches `p`.
    pub top_p: Option<f32>,
    /// Seed of the sampler.
    pub seed: u64,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_k: None,
            top_p: None,
            seed: 0,
        }
    }
}

impl Sampling {
    fn validate(&self) -> Result<()> {
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return Err(Error::BadSampling(format!(
                "temperature {} must be ≥ 0",
                self.temperature
            )));
        }
        if self.top_k == Some(0) {
            return Err(Error::BadSampling("top-k must be ≥ 1".into()));
        }
        if let Some(p) = self.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return Err(Error::BadSampling(format!("top-p {p} must be in (0, 1]")));
        }
        Ok(())
    }

    /// Picks a token from `logits`.
    fn pick(&self, logits: &[f32], rng: &mut Rng) -> u32 {
        if self.temperature == 0.0 {
            return argmax(logits);
        }
        let mut candidates: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, l / self.temperature))
            .collect();
        candidates.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        if let Some(k) = self.top_k {
            candidates.truncate(k);
        }
        let mut probs: Vec<f32> = candidates.iter().map(|c| c.1).collect();
        softmax(&mut probs);
        if let Some(p) = self.top_p {
            let mut total = 0.0;
            let keep = probs
                .iter()
                .position(|&q| {
                    total += q;
                    total >= p
                })
                .map_or(probs.len(), |i| i + 1);
            probs.truncate(keep);
            let sum: f32 = probs.iter().sum();
            probs.iter_mut().for_each(|q| *q /= sum);
        }
        let mut u = rng.uniform() as f32;
        for (i, &q) in probs.iter().enumerate() {
            if u < q {
                return candidates[i].0;
            }
            u -= q;
        }
        candidates[probs.len() - 1].0
    }
}

/// The index of the largest logit (the first, on ties).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best as u32
}

/// What a generation run did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Generation {
    /// The generated ids (prompt excluded).
    pub ids: Vec<u32>,
    /// Why it stopped: `max_tokens`, `stop_id` or `context_full`.
    pub stopped: &'static str,
    /// Seconds spent generating (prompt included).
    pub seconds: f64,
    /// Generated tokens per second.
    pub tokens_per_second: f64,
}

/// Generates up to `max_tokens` after `prompt` with the KV cache, stopping at
/// `stop` or when the context (max_seq_len) is full. `on_token` sees each id.
pub fn generate(
    model: &Model,
    prompt: &[u32],
    max_tokens: usize,
    sampling: Sampling,
    stop: Option<u32>,
    mut on_token: impl FnMut(u32),
) -> Result<Generation> {
    sampling.validate()?;
    let started = Instant::now();
    let mut session = model.session();
    let mut logits = session.extend(prompt, false)?;
    let mut rng = Rng::new(sampling.seed);
    let mut ids = Vec::new();
    let mut stopped = "max_tokens";
    while ids.len() < max_tokens {
        let id = sampling.pick(&logits, &mut rng);
        ids.push(id);
        on_token(id);
        if Some(id) == stop {
            stopped = "stop_id";
            break;
        }
        if ids.len() == max_tokens {
            break;
        }
        if session.len() == model.config.max_seq_len as usize {
            stopped = "context_full";
            break;
        }
        logits = session.extend(&[id], false)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(Generation {
        tokens_per_second: ids.len() as f64 / seconds.max(1e-9),
        ids,
        stopped,
        seconds,
    })
}
