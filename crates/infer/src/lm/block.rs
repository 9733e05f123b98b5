//! One decoder block, the same code for every family, its variants being
//! data ([`LmConfig`]): LayerNorm or RMSNorm, fused query/key/value rows with or without
//! biases, per-head query/key norms, rotary embeddings or none (one base
//! for every layer or one for the sliding-window layers and another for
//! the rest), grouped-query heads, full or sliding-window attention with
//! or without a cap on the scores, a plain or gated (SwiGLU, GeGLU) MLP,
//! norms after the attention and the MLP or not, and a sequential or
//! parallel residual.
//!
//! A block runs over the rows of many sequences at once (one tall matrix
//! through each linear layer); attention alone runs per sequence and head.
//! Its keys and values come either from the rows just computed (whole
//! windows, the recording pass) or from a KV cache the new rows are
//! appended to (a decoding session).

use rayon::prelude::*;

use crate::lm::config::{Activation, LmConfig};
use crate::lm::rope::RopeTables;
use crate::model::Site;
use crate::nn::attention::{
    CausalSpan, Heads, Strided, add_in_place, causal_attention, layer_norm_rows, rms_norm_rows,
    rows_per_task,
};
use crate::nn::int8::Int8Kernel;
use crate::nn::kernels::rms_norm;
use crate::nn::kernels::{gelu_erf, gelu_tanh, relu, silu};
use crate::nn::linear::LinearWeights;

/// A block's normalisation.
#[derive(Debug, Clone)]
pub(crate) enum Norm {
    /// LayerNorm: weight and bias.
    Layer(Vec<f32>, Vec<f32>),
    /// RMSNorm: weight.
    Rms(Vec<f32>),
}

impl Norm {
    /// The norm of each `dim`-wide row of `x` into `out`.
    pub(crate) fn apply(&self, x: &[f32], out: &mut [f32], dim: usize, eps: f32) {
        match self {
            Norm::Layer(weight, bias) => layer_norm_rows(x, (weight, bias), out, dim, eps),
            Norm::Rms(weight) => rms_norm_rows(x, weight, out, dim, eps),
        }
    }
}

/// A linear layer's weights (`[out, in]`, packed for `x · Wᵀ`) and bias
/// (zeros where the model has none).
#[derive(Debug, Clone)]
pub(crate) struct Linear {
    pub weights: LinearWeights,
    pub bias: Vec<f32>,
}

impl Linear {
    /// `out = x · Wᵀ + b`.
    fn apply(&self, x: &[f32], out: &mut [f32], kernel: Int8Kernel) {
        self.weights.apply(x, &self.bias, out, kernel);
    }
}

/// One block's weights.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub norm1: Norm,
    /// Queries, keys and values stacked: `[(heads + 2 kv_heads) · head_dim, hidden]`.
    pub qkv: Linear,
    /// The attention's output projection.
    pub out: Linear,
    pub norm2: Norm,
    /// The MLP's first layer; a gated MLP's gate and up projections
    /// stacked (`[2 · intermediate, hidden]`, the gate first).
    pub up: Linear,
    /// The MLP's second layer.
    pub down: Linear,
    /// The per-head RMSNorm weights of the queries and of the keys
    /// (`head_dim` each), when the family has them.
    pub qk_norm: Option<(Vec<f32>, Vec<f32>)>,
    /// The norms of the attention's and of the MLP's outputs, when the
    /// family has them.
    pub post_norms: Option<(Norm, Norm)>,
}

impl Block {
    /// The block's linear layers.
    pub(crate) fn linears_mut(&mut self) -> [&mut Linear; 4] {
        [&mut self.qkv, &mut self.out, &mut self.up, &mut self.down]
    }
}

/// Where a block's attention finds its keys and values.
pub(crate) enum Keys<'a> {
    /// In the rows just computed: each span's keys are its own rows.
    Fresh,
    /// In a cache of earlier rows (`[positions, kv_heads · head_dim]`
    /// each), which the new rows are appended to.
    Cached {
        keys: &'a mut Vec<f32>,
        values: &'a mut Vec<f32>,
    },
}

/// The rows a pass runs: the sequences, and each row's position.
pub(crate) struct Rows<'a> {
    /// One span per sequence, over the rows of the pass.
    pub spans: &'a [CausalSpan],
    /// Each row's position in its sequence.
    pub positions: &'a [usize],
    /// The cosines and sines of the positions (none for a model without
    /// rotary embeddings).
    pub rope: &'a RopeTables,
    /// The first position `rope` covers.
    pub rope_first: usize,
}

/// Buffers reused across the blocks of one pass.
pub(crate) struct Scratch {
    normed: Vec<f32>,
    qkv: Vec<f32>,
    context: Vec<f32>,
    attn_out: Vec<f32>,
    up: Vec<f32>,
    act: Vec<f32>,
    mlp_out: Vec<f32>,
}

impl Scratch {
    /// Floats per row of the buffers of a pass.
    pub(crate) fn floats_per_row(c: &LmConfig) -> usize {
        3 * c.hidden + c.qkv_width() + c.heads * c.head_dim + c.up_width() + c.intermediate
    }

    /// The buffers of a pass over `rows` rows.
    pub(crate) fn new(rows: usize, c: &LmConfig) -> Scratch {
        Scratch {
            normed: vec![0.0; rows * c.hidden],
            qkv: vec![0.0; rows * c.qkv_width()],
            context: vec![0.0; rows * c.heads * c.head_dim],
            attn_out: vec![0.0; rows * c.hidden],
            up: vec![0.0; rows * c.up_width()],
            act: vec![0.0; rows * c.intermediate],
            mlp_out: vec![0.0; rows * c.hidden],
        }
    }
}

/// The in-place kernel of the activation `act`.
fn kernel_of(act: Activation) -> fn(&mut [f32]) {
    match act {
        Activation::GeluErf => gelu_erf,
        Activation::GeluTanh => gelu_tanh,
        Activation::Silu => silu,
        Activation::Relu => relu,
    }
}

/// The activation `act` over rows, in place, spread over the pool.
fn activate(x: &mut [f32], width: usize, act: Activation) {
    let rows = x.len() / width.max(1);
    x.par_chunks_mut(width * rows_per_task(rows))
        .for_each(kernel_of(act));
}

impl Block {
    /// Runs block `layer` in place on the residual stream `x` (rows of
    /// `rows`), calling `hook(site, rows)` at each site with the rows
    /// there, which it may replace.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn forward(
        &self,
        layer: usize,
        c: &LmConfig,
        x: &mut [f32],
        rows: &Rows<'_>,
        keys: Keys<'_>,
        s: &mut Scratch,
        kernel: Int8Kernel,
        hook: &mut dyn FnMut(Site, &mut [f32]),
    ) {
        let (h, hd, inter) = (c.hidden, c.head_dim, c.intermediate);
        let (qw, kvw, width) = (c.heads * hd, c.kv_heads * hd, c.qkv_width());
        let n = x.len() / h;
        let window = c.features.window(layer);
        hook(Site::ResidPre, x);
        self.norm1.apply(x, &mut s.normed, h, c.norm_eps);
        self.qkv.apply(&s.normed, &mut s.qkv, kernel);
        if let Some((q_weight, k_weight)) = &self.qk_norm {
            normalize_heads(&mut s.qkv, width, (qw, kvw), (q_weight, k_weight), c);
        }
        if let Some(table) = rows.rope.for_layer(window.is_some()) {
            s.qkv
                .par_chunks_mut(width)
                .zip(rows.positions.par_iter())
                .for_each(|(row, &position)| {
                    let at = position - rows.rope_first;
                    table.rotate(&mut row[..qw + kvw], hd, at);
                });
        }
        let mut scale = match c.features.query_scale {
            Some(scale) => scale,
            None if c.scale_attention => 1.0 / (hd as f32).sqrt(),
            None => 1.0,
        };
        if c.scale_by_layer {
            scale /= (layer + 1) as f32;
        }
        let heads = Heads {
            heads: c.heads,
            kv_heads: c.kv_heads,
            dim: hd,
            scale,
            softcap: c.features.attention_softcap,
            window,
        };
        let q = Strided {
            values: &s.qkv,
            stride: width,
        };
        match keys {
            Keys::Fresh => {
                let k = Strided {
                    values: &s.qkv[qw..],
                    stride: width,
                };
                let v = Strided {
                    values: &s.qkv[qw + kvw..],
                    stride: width,
                };
                causal_attention(rows.spans, (q, k, v), heads, &mut s.context);
            }
            Keys::Cached { keys, values } => {
                for row in s.qkv.chunks_exact(width) {
                    keys.extend_from_slice(&row[qw..qw + kvw]);
                    values.extend_from_slice(&row[qw + kvw..]);
                }
                let k = Strided {
                    values: keys,
                    stride: kvw,
                };
                let v = Strided {
                    values,
                    stride: kvw,
                };
                causal_attention(rows.spans, (q, k, v), heads, &mut s.context);
            }
        }
        self.out.apply(&s.context, &mut s.attn_out, kernel);
        if let Some((after_attention, _)) = &self.post_norms {
            after_attention.apply(&s.attn_out, &mut s.normed, h, c.norm_eps);
            std::mem::swap(&mut s.attn_out, &mut s.normed);
        }
        hook(Site::AttnOut, &mut s.attn_out);
        if !c.parallel_residual {
            add_in_place(x, &s.attn_out);
        }
        self.norm2.apply(x, &mut s.normed, h, c.norm_eps);
        self.up.apply(&s.normed, &mut s.up, kernel);
        if c.gated_mlp {
            activate_gated(&s.up, &mut s.act, inter, c.activation);
        } else {
            activate(&mut s.up, inter, c.activation);
        }
        let act = if c.gated_mlp { &s.act } else { &s.up };
        self.down.apply(act, &mut s.mlp_out, kernel);
        if let Some((_, after_mlp)) = &self.post_norms {
            after_mlp.apply(&s.mlp_out, &mut s.normed, h, c.norm_eps);
            std::mem::swap(&mut s.mlp_out, &mut s.normed);
        }
        hook(Site::MlpOut, &mut s.mlp_out);
        if c.parallel_residual {
            add_in_place(x, &s.attn_out);
        }
        add_in_place(x, &s.mlp_out);
        hook(Site::ResidPost, x);
        debug_assert_eq!(n * h, x.len());
    }
}

/// RMS-normalises each query head (the first `qw` values of each
/// `width`-wide row of `qkv`) with `q_weight` and each key head (the
/// `kvw` values after) with `k_weight`, in place.
fn normalize_heads(
    qkv: &mut [f32],
    width: usize,
    (qw, kvw): (usize, usize),
    (q_weight, k_weight): (&[f32], &[f32]),
    c: &LmConfig,
) {
    let hd = c.head_dim;
    qkv.par_chunks_mut(width).for_each_init(
        || vec![0.0f32; qw + kvw],
        |heads, row| {
            heads.copy_from_slice(&row[..qw + kvw]);
            rms_norm(&heads[..qw], q_weight, &mut row[..qw], hd, c.norm_eps);
            rms_norm(
                &heads[qw..],
                k_weight,
                &mut row[qw..qw + kvw],
                hd,
                c.norm_eps,
            );
        },
    );
}

/// A gated MLP's hidden rows: `act(gate) · up` of the rows `[gate | up]`
/// (`2 · inter` wide) of `gate_up`, into `out` (`inter` wide).
fn activate_gated(gate_up: &[f32], out: &mut [f32], inter: usize, act: Activation) {
    let rows = out.len() / inter.max(1);
    let per_task = rows_per_task(rows);
    let f = kernel_of(act);
    out.par_chunks_mut(inter * per_task)
        .zip(gate_up.par_chunks(2 * inter * per_task))
        .for_each(|(out, gate_up)| {
            for (o, gu) in out
                .chunks_exact_mut(inter)
                .zip(gate_up.chunks_exact(2 * inter))
            {
                o.copy_from_slice(&gu[..inter]);
                f(o);
                for (o, u) in o.iter_mut().zip(&gu[inter..]) {
                    *o *= u;
                }
            }
        });
}
