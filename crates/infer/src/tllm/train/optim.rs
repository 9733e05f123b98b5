//! AdamW with decoupled weight decay, a cosine learning-rate schedule with
//! linear warmup, and global-norm gradient clipping.

use std::ops::Range;

/// Optimiser settings.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct AdamW {
    /// Peak learning rate.
    pub lr: f64,
    /// Steps of linear warmup from 0 to `lr`.
    pub warmup: u64,
    /// Total steps: the cosine decays to `lr / 10` at the last one.
    pub steps: u64,
    /// Decoupled weight decay (matrices and embeddings only).
    pub weight_decay: f64,
    /// Clip the global gradient norm to this (0: no clipping).
    pub clip: f64,
    /// First-moment decay.
    pub beta1: f64,
    /// Second-moment decay.
    pub beta2: f64,
    /// Denominator epsilon.
    pub eps: f64,
}

impl AdamW {
    /// The learning rate of step `step` (1-based).
    pub fn lr_at(&self, step: u64) -> f64 {
        let min = self.lr / 10.0;
        if step <= self.warmup {
            return self.lr * step as f64 / self.warmup.max(1) as f64;
        }
        let span = self.steps.saturating_sub(self.warmup).max(1) as f64;
        let progress = ((step - self.warmup) as f64 / span).min(1.0);
        min + 0.5 * (self.lr - min) * (1.0 + (std::f64::consts::PI * progress).cos())
    }

    /// Clips `grad` in place; returns its norm before clipping.
    pub fn clip(&self, grad: &mut [f32]) -> f64 {
        let norm = grad
            .iter()
            .map(|&g| f64::from(g) * f64::from(g))
            .sum::<f64>()
            .sqrt();
        if self.clip > 0.0 && norm > self.clip {
            let scale = (self.clip / norm) as f32;
            grad.iter_mut().for_each(|g| *g *= scale);
        }
        norm
    }

    /// Which parameters weight decay applies to, from their ranges.
    pub fn decay_mask(len: usize, decayed: &[Range<usize>]) -> Vec<bool> {
        let mut mask = vec![false; len];
        for r in decayed {
            mask[r.clone()].iter_mut().for_each(|d| *d = true);
        }
        mask
    }

    /// One update of `params` at step `step` (1-based) with moments `m`,
    /// `v`; weight decay where `decay` is set.
    pub fn update(
        &self,
        step: u64,
        params: &mut [f32],
        grad: &[f32],
        (m, v): (&mut [f32], &mut [f32]),
        decay: &[bool],
    ) {
        let lr = self.lr_at(step);
        let (b1, b2) = (self.beta1, self.beta2);
        let c1 = 1.0 - b1.powi(step as i32);
        let c2 = 1.0 - b2.powi(step as i32);
        for i in 0..params.len() {
            let g = f64::from(grad[i]);
            let mi = b1 * f64::from(m[i]) + (1.0 - b1) * g;
            let vi = b2 * f64::from(v[i]) + (1.0 - b2) * g * g;
            m[i] = mi as f32;
            v[i] = vi as f32;
            let mut p = f64::from(params[i]);
            if decay[i] {
                p -= lr * self.weight_decay * p;
            }
            p -= lr * (mi / c1) / ((vi / c2).sqrt() + self.eps);
            params[i] = p as f32;
        }
    }
}
