//! Rotary position embeddings as transformers computes them: the inverse
//! frequencies in f32 (with `linear` or Llama 3 scaling), each angle one
//! f32 product `position · inv_freq`, and the "rotate half" convention
//! (the first half of the rotating dimensions paired with the second, not
//! adjacent pairs), on the leading `dims` dimensions of each head.

use crate::lm::config::{Rope, RopeScaling};

/// The cosines and sines of the angles of a run of positions:
/// `[positions, dims / 2]` each.
#[derive(Debug, Clone)]
pub(crate) struct RopeTable {
    /// Rotating dimensions of a head.
    dims: usize,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

/// transformers' inverse frequencies: `1 / theta^(2i / dims)` for `i` in
/// `0..dims / 2`, scaled.
pub(crate) fn inverse_frequencies(rope: &Rope) -> Vec<f32> {
    let dims = rope.dims;
    let base: Vec<f32> = (0..dims / 2)
        .map(|i| 1.0 / rope.theta.powf((2 * i) as f32 / dims as f32))
        .collect();
    match rope.scaling {
        RopeScaling::None => base,
        RopeScaling::Linear { factor } => base.iter().map(|f| f / factor).collect(),
        RopeScaling::Llama3 {
            factor,
            low,
            high,
            original,
        } => {
            let (low_wavelen, high_wavelen) = (original / low, original / high);
            base.iter()
                .map(|&f| {
                    let wavelen = 2.0 * std::f32::consts::PI / f;
                    let scaled = if wavelen > low_wavelen { f / factor } else { f };
                    // Neither below the high nor above the low wavelength (for a
                    // finite wavelength).
                    let medium = wavelen >= high_wavelen && wavelen <= low_wavelen;
                    if medium {
                        let smooth = (original / wavelen - low) / (high - low);
                        (1.0 - smooth) * scaled / factor + smooth * scaled
                    } else {
                        scaled
                    }
                })
                .collect()
        }
    }
}

/// The rotary tables of a run of positions: the full-attention layers'
/// and, when they rotate with another base (Gemma 3), the sliding-window
/// layers'.
#[derive(Debug, Clone, Default)]
pub(crate) struct RopeTables {
    /// The table of the full-attention layers (every layer's when
    /// `sliding` is `None`).
    pub full: Option<RopeTable>,
    /// The table of the sliding-window layers, when it differs.
    pub sliding: Option<RopeTable>,
}

impl RopeTables {
    /// The table a layer rotates with: a sliding-window layer's own if
    /// there is one.
    pub(crate) fn for_layer(&self, sliding: bool) -> Option<&RopeTable> {
        match (&self.sliding, sliding) {
            (Some(table), true) => Some(table),
            _ => self.full.as_ref(),
        }
    }
}

impl RopeTable {
    /// The table of positions `first..first + count`.
    pub(crate) fn new(rope: &Rope, first: usize, count: usize) -> RopeTable {
        let inv = inverse_frequencies(rope);
        let half = rope.dims / 2;
        let mut cos = Vec::with_capacity(count * half);
        let mut sin = Vec::with_capacity(count * half);
        for p in first..first + count {
            for &f in &inv {
                let angle = p as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        RopeTable {
            dims: rope.dims,
            cos,
            sin,
        }
    }

    /// Rotates each head (`head_dim` wide) of `row` for the table's
    /// `index`-th position.
    pub(crate) fn rotate(&self, row: &mut [f32], head_dim: usize, index: usize) {
        let half = self.dims / 2;
        let cos = &self.cos[index * half..(index + 1) * half];
        let sin = &self.sin[index * half..(index + 1) * half];
        for head in row.chunks_exact_mut(head_dim) {
            let (a, b) = head[..self.dims].split_at_mut(half);
            for (((x, y), &c), &s) in a.iter_mut().zip(b.iter_mut()).zip(cos).zip(sin) {
                let (u, v) = (*x, *y);
                // q·cos + rotate_half(q)·sin, rounded as torch does.
                *x = u * c + (-v) * s;
                *y = v * c + u * s;
            }
        }
    }
}
