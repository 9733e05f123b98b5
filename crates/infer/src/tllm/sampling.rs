//! Picking tokens from logits (greedy, temperature, top-k, top-p) and
//! generation with the KV cache.

use std::time::Instant;

use super::Model;
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
    mut on_token: impl FnMut(u32),
) -> Result<Generation> {
    sampling.validate()?;
    let started = Instant::now();
    let mut session = model.session();
    // A prompt longer than the context keeps its last max_seq_len tokens.
    let kept = prompt
        .len()
        .saturating_sub(model.config.max_seq_len as usize);
    let mut logits = session.extend(&prompt[kept..], false)?;
    let mut rng = Rng::new(sampling.seed);
    let window = model.config.max_seq_len as usize;
    let mut context = prompt.to_vec();
    let mut ids = Vec::new();
    let mut stopped = "max_tokens";
    while ids.len() < max_tokens {
        let id = sampling.pick(&logits, &mut rng);
        ids.push(id);
        context.push(id);
        on_token(id);
        if Some(id) == stop {
            stopped = "stop_id";
            break;
        }
        if ids.len() == max_tokens {
            break;
        }
        logits = if session.len() < window {
            session.extend(&[id], false)?
        } else {
            session = model.session();
            session.extend(&context[context.len() - window..], false)?
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
