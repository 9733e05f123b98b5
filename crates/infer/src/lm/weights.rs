//! A decoder language model's tensors under each family's names, checked
//! against the shapes the configuration implies, widened to f32 and laid
//! out as the one block of [`super::block`] takes them: GPT-2's Conv1D
//! weights (`[in, out]`) transposed, GPT-NeoX's per-head interleaved
//! query/key/value rows put in three blocks, Llama's separate projections
//! stacked.

use rayon::prelude::*;

use crate::Result;
use crate::hf::weights::Weights;
use crate::lm::block::{Block, Linear, Norm};
use crate::lm::config::{Family, LmConfig};
use crate::nn::linear::LinearWeights;

/// Everything but the blocks.
pub(crate) struct Outer {
    /// The token embedding, `[vocab, hidden]`.
    pub embed: Vec<f32>,
    /// GPT-2's learned positions, `[max_positions, hidden]`.
    pub positions: Option<Vec<f32>>,
    pub final_norm: Norm,
    /// The output projection, `[vocab, hidden]`: the embedding when tied.
    pub head: LinearWeights,
}

/// The prefix of the model's tensors, inside the `…ForCausalLM` module.
fn prefix(c: &LmConfig, w: &Weights) -> &'static str {
    match c.family {
        // Hub GPT-2 files name the tensors without `transformer.`.
        Family::Gpt2 if w.view("transformer.wte.weight").is_none() => "",
        Family::Gpt2 => "transformer.",
        Family::GptNeox => "gpt_neox.",
        Family::Llama | Family::Qwen2 => "model.",
    }
}

/// `w` (`[rows, cols]`) transposed.
///
/// Square tiles keep both the rows read and the columns written in cache:
/// a row-by-row walk writes with a stride of `rows` floats, and took 38%
/// of the time to open GPT-2 small from the page cache.
fn transpose(w: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    const TILE: usize = 32;
    let mut t = vec![0.0f32; w.len()];
    for r0 in (0..rows).step_by(TILE) {
        let r1 = (r0 + TILE).min(rows);
        for c0 in (0..cols).step_by(TILE) {
            let c1 = (c0 + TILE).min(cols);
            for r in r0..r1 {
                let row = &w[r * cols + c0..r * cols + c1];
                for (c, &v) in (c0..c1).zip(row) {
                    t[c * rows + r] = v;
                }
            }
        }
    }
    t
}

/// Loads the model's tensors from `w`.
pub(crate) fn load(c: &LmConfig, w: &mut Weights) -> Result<(Outer, Vec<Block>)> {
    let (h, v) = (c.hidden, c.vocab_size);
    w.set_prefix(prefix(c, w));
    let (embed_name, final_name, head_name) = match c.family {
        Family::Gpt2 => ("wte.weight", "ln_f", "lm_head.weight"),
        Family::GptNeox => ("embed_in.weight", "final_layer_norm", "embed_out.weight"),
        Family::Llama | Family::Qwen2 => ("embed_tokens.weight", "norm", "lm_head.weight"),
    };
    let embed = w.get(embed_name, &[v, h])?;
    let positions = match c.family {
        Family::Gpt2 => Some(w.get("wpe.weight", &[c.max_positions, h])?),
        _ => None,
    };
    let final_norm = norm(c, w, final_name)?;
    let blocks = (0..c.layers)
        .into_par_iter()
        .map(|i| load_block(c, w, i))
        .collect::<Result<Vec<_>>>()?;
    // The output projection sits outside the prefix.
    let kept = prefix(c, w);
    w.set_prefix("");
    let head = if c.tie_word_embeddings {
        None
    } else {
        w.optional(head_name, &[v, h])?
    };
    w.set_prefix(kept);
    let head = LinearWeights::float(vec![head.unwrap_or_else(|| embed.clone())], h);
    Ok((
        Outer {
            embed,
            positions,
            final_norm,
            head,
        },
        blocks,
    ))
}

/// The norm `name` (`name.weight`, and `name.bias` for a LayerNorm).
fn norm(c: &LmConfig, w: &Weights, name: &str) -> Result<Norm> {
    let h = c.hidden;
    let weight = w.get(&format!("{name}.weight"), &[h])?;
    Ok(match c.family {
        Family::Gpt2 | Family::GptNeox => {
            Norm::Layer(weight, w.get(&format!("{name}.bias"), &[h])?)
        }
        Family::Llama | Family::Qwen2 => Norm::Rms(weight),
    })
}

/// A linear layer of `parts` stacked, `k` inputs, with its bias (zeros
/// when `bias` is `None`).
fn linear(parts: Vec<Vec<f32>>, bias: Option<Vec<f32>>, k: usize) -> Linear {
    let n: usize = parts.iter().map(|p| p.len() / k).sum();
    Linear {
        weights: LinearWeights::float(parts, k),
        bias: bias.unwrap_or_else(|| vec![0.0; n]),
    }
}

/// Block `i`'s weights.
fn load_block(c: &LmConfig, w: &Weights, i: usize) -> Result<Block> {
    let (h, inter, hd) = (c.hidden, c.intermediate, c.head_dim);
    let (qw, kvw) = (c.heads * hd, c.kv_heads * hd);
    let get = |name: &str, shape: &[usize]| w.get(name, shape);
    let bias = |on: bool, name: &str, n: usize| -> Result<Option<Vec<f32>>> {
        if on {
            get(name, &[n]).map(Some)
        } else {
            Ok(None)
        }
    };
    Ok(match c.family {
        Family::Gpt2 => {
            let p = format!("h.{i}.");
            let conv = |name: &str, k: usize, n: usize| -> Result<Linear> {
                let weight = get(&format!("{p}{name}.weight"), &[k, n])?;
                let b = get(&format!("{p}{name}.bias"), &[n])?;
                Ok(linear(vec![transpose(&weight, k, n)], Some(b), k))
            };
            Block {
                norm1: norm(c, w, &format!("{p}ln_1"))?,
                qkv: conv("attn.c_attn", h, 3 * h)?,
                out: conv("attn.c_proj", h, h)?,
                norm2: norm(c, w, &format!("{p}ln_2"))?,
                up: conv("mlp.c_fc", h, inter)?,
                down: conv("mlp.c_proj", inter, h)?,
                gated: false,
            }
        }
        Family::GptNeox => {
            let p = format!("layers.{i}.");
            let fused = get(&format!("{p}attention.query_key_value.weight"), &[3 * h, h])?;
            let fused_bias = bias(
                c.qkv_bias,
                &format!("{p}attention.query_key_value.bias"),
                3 * h,
            )?;
            // Row r belongs to head r / (3 hd): its queries, keys, values.
            let part = |values: &[f32], width: usize, which: usize| -> Vec<f32> {
                values
                    .chunks_exact(3 * hd * width)
                    .flat_map(|head| head[which * hd * width..(which + 1) * hd * width].to_vec())
                    .collect()
            };
            let qkv = (0..3).map(|which| part(&fused, h, which)).collect();
            let qkv_bias =
                fused_bias.map(|b| (0..3).flat_map(|which| part(&b, 1, which)).collect());
            let plain = |name: &str, n: usize, k: usize, on: bool| -> Result<Linear> {
                let weight = get(&format!("{p}{name}.weight"), &[n, k])?;
                Ok(linear(
                    vec![weight],
                    bias(on, &format!("{p}{name}.bias"), n)?,
                    k,
                ))
            };
            Block {
                norm1: norm(c, w, &format!("{p}input_layernorm"))?,
                qkv: linear(qkv, qkv_bias, h),
                out: plain("attention.dense", h, h, c.out_bias)?,
                norm2: norm(c, w, &format!("{p}post_attention_layernorm"))?,
                up: plain("mlp.dense_h_to_4h", inter, h, c.mlp_bias)?,
                down: plain("mlp.dense_4h_to_h", h, inter, c.mlp_bias)?,
                gated: false,
            }
        }
        Family::Llama | Family::Qwen2 => {
            let p = format!("layers.{i}.");
            let mut parts = Vec::with_capacity(3);
            let mut biases = Vec::with_capacity(3);
            for (name, n) in [("q_proj", qw), ("k_proj", kvw), ("v_proj", kvw)] {
                parts.push(get(&format!("{p}self_attn.{name}.weight"), &[n, h])?);
                if let Some(b) = bias(c.qkv_bias, &format!("{p}self_attn.{name}.bias"), n)? {
                    biases.extend(b);
                }
            }
            let qkv_bias = c.qkv_bias.then_some(biases);
            let o = get(&format!("{p}self_attn.o_proj.weight"), &[h, qw])?;
            let o_bias = bias(c.out_bias, &format!("{p}self_attn.o_proj.bias"), h)?;
            let mlp = |name: &str, n: usize, k: usize| -> Result<(Vec<f32>, Option<Vec<f32>>)> {
                Ok((
                    get(&format!("{p}mlp.{name}.weight"), &[n, k])?,
                    bias(c.mlp_bias, &format!("{p}mlp.{name}.bias"), n)?,
                ))
            };
            let (gate, gate_bias) = mlp("gate_proj", inter, h)?;
            let (up, up_bias) = mlp("up_proj", inter, h)?;
            let (down, down_bias) = mlp("down_proj", h, inter)?;
            let up_bias = gate_bias.zip(up_bias).map(|(g, u)| [g, u].concat());
            Block {
                norm1: norm(c, w, &format!("{p}input_layernorm"))?,
                qkv: linear(parts, qkv_bias, h),
                out: linear(vec![o], o_bias, qw),
                norm2: norm(c, w, &format!("{p}post_attention_layernorm"))?,
                up: linear(vec![gate, up], up_bias, h),
                down: linear(vec![down], down_bias, inter),
                gated: true,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::transpose;

    #[test]
    fn tiled_transpose_moves_every_element_across_ragged_tiles() {
        for (rows, cols) in [(1, 1), (1, 33), (37, 70), (64, 32), (65, 31)] {
            let w: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
            let t = transpose(&w, rows, cols);
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(
                        t[c * rows + r],
                        w[r * cols + c],
                        "{rows}x{cols} at ({r}, {c})"
                    );
                }
            }
        }
    }
}
