//! Picking tokens from logits (greedy, temperature, top-k, top-p) and the
//! generation loop with a KV cache, shared by every model that decodes
//! (the TLLM transformer, the decoder language models): a model takes
//! part through [`Decoder`], a session that extends by ids and returns the
//! last position's logits.

use std::time::Instant;

use crate::nn::kernels::softmax;
use crate::rng::Rng;
use crate::{Error, Result};

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
    /// Why it stopped: `max_tokens` or `stop_id`.
    pub stopped: &'static str,
    /// Seconds spent generating (prompt included).
    pub seconds: f64,
    /// Generated tokens per second.
    pub tokens_per_second: f64,
}

/// A model that decodes one sequence with a KV cache.
pub trait Decoder {
    /// A sequence's state.
    type Session<'a>: DecoderSession
    where
        Self: 'a;

    /// The most tokens a session holds (the model's context).
    fn context(&self) -> usize;

    /// A session with an empty cache.
    fn start(&self) -> Self::Session<'_>;
}

/// A sequence being decoded.
pub trait DecoderSession {
    /// Tokens in the cache.
    fn cached(&self) -> usize;

    /// Runs `ids` after the cached tokens; the logits of the last one.
    fn extend_last(&mut self, ids: &[u32]) -> Result<Vec<f32>>;
}

/// Generates up to `max_tokens` after `prompt` with the KV cache of
/// `model`, stopping early at any id of `stop` (which is kept as the last
/// generated id). Past the model's context the window slides: each
/// further token is predicted from the last `context` tokens, recomputed
/// from scratch (positions restart at 0 in the window), so long
/// generations cost one full forward pass per token once the window is
/// full. A prompt longer than the context keeps its last `context`
/// tokens. `on_token` sees each id.
pub fn generate_with<D: Decoder + ?Sized>(
    model: &D,
    prompt: &[u32],
    max_tokens: usize,
    sampling: Sampling,
    stop: &[u32],
    mut on_token: impl FnMut(u32),
) -> Result<Generation> {
    sampling.validate()?;
    let started = Instant::now();
    let window = model.context();
    let mut session = model.start();
    // A prompt longer than the context keeps its last tokens.
    let kept = prompt.len().saturating_sub(window);
    let mut logits = session.extend_last(&prompt[kept..])?;
    let mut rng = Rng::new(sampling.seed);
    let mut context = prompt.to_vec();
    let mut ids = Vec::new();
    let mut stopped = "max_tokens";
    while ids.len() < max_tokens {
        let id = sampling.pick(&logits, &mut rng);
        ids.push(id);
        context.push(id);
        on_token(id);
        if stop.contains(&id) {
            stopped = "stop_id";
            break;
        }
        if ids.len() == max_tokens {
            break;
        }
        logits = if session.cached() < window {
            session.extend_last(&[id])?
        } else {
            session = model.start();
            session.extend_last(&context[context.len() - window..])?
        };
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(Generation {
        tokens_per_second: ids.len() as f64 / seconds.max(1e-9),
        ids,
        stopped,
        seconds,
    })
}
