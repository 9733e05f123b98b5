//! Scaled dot-product attention over packed sequences, bidirectional (the
//! encoders: BERT, the vision transformers) and causal with a KV cache and
//! grouped-query heads (the decoder language models), and the
//! row-parallel helpers the models share around it.

use rayon::prelude::*;

use crate::nn::kernels::{gemm_strided, layer_norm, rms_norm, shifted_exp};
use crate::nn::packed::{StridedWeights, product_on_thread, simd_available};
use crate::{Error, Result};

/// Rows of an element-wise pass handed to one rayon task, at most.
const ROWS_PER_TASK: usize = 32;

/// Rows per task of an element-wise pass over `rows` rows: a few tasks per
/// thread, and at least one task per thread for a short input.
pub(crate) fn rows_per_task(rows: usize) -> usize {
    rows.div_ceil(rayon::current_num_threads())
        .clamp(1, ROWS_PER_TASK)
}

/// LayerNorm of each `dim`-wide row of `input` into `out`, rows spread
/// over the rayon pool.
pub(crate) fn layer_norm_rows(
    input: &[f32],
    (weight, bias): (&[f32], &[f32]),
    out: &mut [f32],
    dim: usize,
    eps: f32,
) {
    let rows = rows_per_task(input.len() / dim);
    out.par_chunks_mut(dim * rows)
        .zip(input.par_chunks(dim * rows))
        .for_each(|(out, input)| layer_norm(input, weight, bias, out, dim, eps));
}

/// RMSNorm of each `dim`-wide row of `input` into `out`, rows spread over
/// the rayon pool.
pub(crate) fn rms_norm_rows(input: &[f32], weight: &[f32], out: &mut [f32], dim: usize, eps: f32) {
    let rows = rows_per_task(input.len() / dim);
    out.par_chunks_mut(dim * rows)
        .zip(input.par_chunks(dim * rows))
        .for_each(|(out, input)| rms_norm(input, weight, out, dim, eps));
}

/// `a += b`, element-wise, spread over the rayon pool.
pub(crate) fn add_in_place(a: &mut [f32], b: &[f32]) {
    a.par_chunks_mut(4096)
        .zip(b.par_chunks(4096))
        .for_each(|(a, b)| a.iter_mut().zip(b).for_each(|(a, b)| *a += b));
}

/// The most attention scores one task holds (16 MiB of `f32`): a
/// sequence's queries are taken in blocks of rows whose scores fit, so
/// attention's memory stays bounded whatever the sequence length, where
/// all of a long sequence's scores at once would take `tokens²` floats per
/// head. Sequences of up to 2,048 tokens take a single block.
pub(crate) const MAX_SCORES_PER_TASK: usize = 1 << 22;

/// Query rows per block for a sequence of `len` tokens when a task holds
/// at most `max_scores` scores (one row at the least).
fn queries_per_block(len: usize, max_scores: usize) -> usize {
    (max_scores / len.max(1)).clamp(1, len.max(1))
}

/// One task of [`attention`]: a block of query rows of one head of one
/// sequence.
#[derive(Debug, Clone, Copy)]
struct Task {
    /// The sequence's first row in the packed batch, and its length.
    start: usize,
    len: usize,
    head: usize,
    /// The block's first query (within the sequence) and its row count.
    first: usize,
    rows: usize,
}

/// Refuses, with [`Error::Memory`], a forward pass of a transformer
/// encoder over `rows` token rows `hidden` wide with an MLP `intermediate`
/// wide whose buffers do not fit in the memory this process may take:
/// the residual stream, its norm, q/k/v, the context, a hidden buffer,
/// the MLP's activations, each thread's attention scores, and
/// `extra_floats` more (the caller's inputs and copies). Checked before
/// anything is allocated, so an input too large is an error, not an
/// abort; `what` names the pass in the message. A pass under
/// [`UNCHECKED_FORWARD_BYTES`] is not checked: reading the bounds costs
/// more than such a pass risks.
pub(crate) fn check_forward_memory(
    rows: usize,
    (hidden, intermediate): (usize, usize),
    extra_floats: usize,
    what: impl FnOnce() -> String,
) -> Result<()> {
    let per_row = 7.0 * hidden as f64 + intermediate as f64;
    let scores = (rayon::current_num_threads() * MAX_SCORES_PER_TASK) as f64;
    let bytes = 4.0 * (rows as f64 * per_row + scores + extra_floats as f64);
    if bytes < UNCHECKED_FORWARD_BYTES {
        return Ok(());
    }
    modelbin_format::io::memory::check(bytes, &what()).map_err(Error::Memory)
}

/// Forward passes smaller than this (256 MiB) skip the memory check.
const UNCHECKED_FORWARD_BYTES: f64 = (256u64 << 20) as f64;

/// Scaled dot-product attention (no mask) of every sequence and head.
/// `spans` are the sequences as `(first row, rows)` of the packed batch;
/// `qkv` rows are `[q | k | v]`, each `hidden` wide and split into `heads`
/// heads; the context rows (`hidden` wide) are written to `context`.
/// Queries are taken in blocks ([`MAX_SCORES_PER_TASK`]); a row's result
/// depends on its block only through the product kernel's order of work
/// (within a few units in the last place).
pub(crate) fn attention(
    spans: &[(usize, usize)],
    qkv: &[f32],
    context: &mut [f32],
    hidden: usize,
    heads: usize,
) {
    attention_in_blocks(spans, qkv, context, (hidden, heads), MAX_SCORES_PER_TASK);
}

/// [`attention`] with at most `max_scores` scores per task.
fn attention_in_blocks(
    spans: &[(usize, usize)],
    qkv: &[f32],
    context: &mut [f32],
    (hidden, heads): (usize, usize),
    max_scores: usize,
) {
    let h = hidden;
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let tasks: Vec<Task> = spans
        .iter()
        .flat_map(|&(start, len)| {
            let block = queries_per_block(len, max_scores);
            (0..heads).flat_map(move |head| {
                (0..len).step_by(block).map(move |first| Task {
                    start,
                    len,
                    head,
                    first,
                    rows: block.min(len - first),
                })
            })
        })
        .collect();
    let outputs: Vec<Vec<f32>> = tasks
        .par_iter()
        .map(
            |&Task {
                 start,
                 len,
                 head,
                 first,
                 rows,
             }| {
                let k = &qkv[start * 3 * h + h + head * d..];
                let rows_of = |values| Strided {
                    values,
                    stride: 3 * h,
                };
                let q = rows_of(&qkv[(start + first) * 3 * h + head * d..]);
                attend(
                    (q, rows_of(k), rows_of(&k[h..])),
                    (rows, len, d),
                    (scale, None),
                    |_| 0..len,
                )
            },
        )
        .collect();
    for (task, out) in tasks.iter().zip(outputs) {
        for (r, values) in out.chunks_exact(d).enumerate() {
            let at = (task.start + task.first + r) * h + task.head * d;
            context[at..at + d].copy_from_slice(values);
        }
    }
}

/// Queries from which [`attend`] runs the packed kernel (a kernel tile's
/// rows several times over: the keys and values packed for them cost
/// about one product per query row of a tile).
const PACKED_QUERIES: usize = 32;

/// `softmax(scale · q · kᵀ) · v` for `rows` query rows against `seen`
/// keys and values (each row `d` wide at its matrix's stride), query `r`
/// seeing the keys `visible(r)` only: `[rows, d]`. With a `softcap` `c`,
/// each scaled score `s` becomes `c · tanh(s / c)` before the softmax.
fn attend(
    (q, k, v): (Strided<'_>, Strided<'_>, Strided<'_>),
    (rows, seen, d): (usize, usize, usize),
    (scale, softcap): (f32, Option<f32>),
    visible: impl Fn(usize) -> std::ops::Range<usize>,
) -> Vec<f32> {
    let holds =
        |m: Strided<'_>, count: usize| count == 0 || m.values.len() >= (count - 1) * m.stride + d;
    assert!(holds(q, rows) && holds(k, seen) && holds(v, seen));
    // With many queries, both products run the packed kernel on the SIMD
    // tiers: it keeps a head's products near the FMA peak, where the
    // `gemm` crate's general kernel ran them at about a third of the rate
    // of the linear layers' (a DINOv2-small forward's profile). With few,
    // packing the keys and values costs more than the products: one query
    // at a time, GPT-2's generation took a fifth longer.
    let simd = simd_available() && rows >= PACKED_QUERIES;
    let mut scores = vec![0.0f32; rows * seen];
    if simd {
        product_on_thread(
            (q.values, q.stride),
            StridedWeights::Rows(k.values, k.stride),
            (rows, d, seen),
            &mut scores,
        );
    } else {
        // SAFETY: q addresses `rows` rows and k `seen` rows of `d` columns
        // at their strides, inside their slices (asserted above); `scores`
        // is rows × seen.
        unsafe {
            gemm_strided(
                (rows, d, seen),
                (q.values, [q.stride, 1]),
                (k.values, [1, k.stride]),
                (&mut scores, seen),
                false,
            );
        }
    }
    // Softmax's division waits for the output rows, which are d wide
    // where the scores are `seen` wide; the keys a query does not see
    // weigh nothing.
    let sums: Vec<f32> = scores
        .chunks_exact_mut(seen)
        .enumerate()
        .map(|(r, row)| {
            let keys = visible(r);
            row[..keys.start].fill(0.0);
            row[keys.end..].fill(0.0);
            let seen_by_r = &mut row[keys];
            match softcap {
                // In transformers' order: scaled, divided by the cap,
                // tanh, multiplied by the cap.
                Some(cap) => {
                    seen_by_r
                        .iter_mut()
                        .for_each(|s| *s = ((*s * scale) / cap).tanh() * cap);
                    shifted_exp(seen_by_r, 1.0)
                }
                None => shifted_exp(seen_by_r, scale),
            }
        })
        .collect();
    let mut out = vec![0.0f32; rows * d];
    if simd {
        product_on_thread(
            (&scores, seen),
            StridedWeights::Columns(v.values, v.stride),
            (rows, seen, d),
            &mut out,
        );
    } else {
        // SAFETY: `scores` is rows × seen, v is seen × d at its stride
        // inside its slice (asserted above), `out` is rows × d.
        unsafe {
            gemm_strided(
                (rows, seen, d),
                (&scores, [seen, 1]),
                (v.values, [v.stride, 1]),
                (&mut out, d),
                false,
            );
        }
    }
    for (row, sum) in out.chunks_exact_mut(d).zip(sums) {
        let inverse = 1.0 / sum;
        row.iter_mut().for_each(|v| *v *= inverse);
    }
    out
}

/// Rows of a matrix in a larger buffer: row `r` starts at
/// `values[r · stride]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Strided<'a> {
    /// The buffer, from the first row's first value.
    pub values: &'a [f32],
    /// Values from one row to the next.
    pub stride: usize,
}

/// One sequence of [`causal_attention`]: `len` new queries, the rows
/// from `queries` on of `q` and of the context; its keys and values are
/// the rows from `keys` on, the `past` cached ones first, then one per
/// new query. Query `i` sees keys `0..=past + i`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CausalSpan {
    /// The first query's row.
    pub queries: usize,
    /// New queries.
    pub len: usize,
    /// The first key's (and value's) row.
    pub keys: usize,
    /// Keys before the first query's own.
    pub past: usize,
}

/// The fewest queries per block under a sliding window: narrower blocks
/// would each pay the packed kernel's set-up for a few rows.
const WINDOW_BLOCK_FLOOR: usize = 64;

/// The heads of a causal attention: `heads` query heads and `kv_heads`
/// key/value heads (query head `h` reads key/value head
/// `h / (heads / kv_heads)`, transformers' `repeat_kv`), each `dim`
/// wide; scores are scaled by `scale` (and capped by `softcap`) before
/// the softmax; with a `window` `w`, the query at position `p` sees the
/// keys at `p - w + 1 ..= p` only.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Heads {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads.
    pub kv_heads: usize,
    /// Width of a head.
    pub dim: usize,
    /// The scores' scale.
    pub scale: f32,
    /// The scores' cap `c` (`c · tanh(s / c)`), if any.
    pub softcap: Option<f32>,
    /// The sliding window, if any.
    pub window: Option<usize>,
}

/// Causal scaled dot-product attention of every sequence and head: the
/// context rows (`heads · dim` wide, at the queries' rows) written to
/// `context`. Queries are taken in blocks ([`MAX_SCORES_PER_TASK`]); each
/// query's scores run over the keys it sees only.
pub(crate) fn causal_attention<'a>(
    spans: &[CausalSpan],
    (q, k, v): (Strided<'a>, Strided<'a>, Strided<'a>),
    heads: Heads,
    context: &mut [f32],
) {
    let Heads {
        heads: nh,
        kv_heads,
        dim: d,
        scale,
        softcap,
        window,
    } = heads;
    let group = nh / kv_heads;
    let width = nh * d;
    // The rows of `m` from `row` on, from column `column`.
    let from = |m: Strided<'a>, row: usize, column: usize| Strided {
        values: &m.values[row * m.stride + column..],
        stride: m.stride,
    };
    let tasks: Vec<(CausalSpan, usize, usize, usize)> = spans
        .iter()
        .flat_map(|&span| {
            let mut block = queries_per_block(span.past + span.len, MAX_SCORES_PER_TASK);
            if let Some(w) = window {
                // Blocks about a window long, so that each sees about two
                // windows of keys rather than the whole sequence.
                block = block.min(w.max(WINDOW_BLOCK_FLOOR));
            }
            (0..nh).flat_map(move |head| {
                (0..span.len)
                    .step_by(block)
                    .map(move |first| (span, head, first, block.min(span.len - first)))
            })
        })
        .collect();
    let outputs: Vec<Vec<f32>> = tasks
        .par_iter()
        .map(|&(span, head, first, rows)| {
            let kv_head = head / group;
            let past = span.past + first;
            // With a window, the block's keys start at the first one its
            // first query sees: the scores of earlier keys are never
            // computed.
            let skipped = window.map_or(0, |w| (past + 1).saturating_sub(w));
            let seen = past + rows - skipped;
            let matrices = (
                from(q, span.queries + first, head * d),
                from(k, span.keys + skipped, kv_head * d),
                from(v, span.keys + skipped, kv_head * d),
            );
            attend(matrices, (rows, seen, d), (scale, softcap), |r| {
                let end = past + r + 1;
                window.map_or(0, |w| end.saturating_sub(w)) - skipped..end - skipped
            })
        })
        .collect();
    for (&(span, head, first, _), out) in tasks.iter().zip(outputs) {
        for (r, values) in out.chunks_exact(d).enumerate() {
            let at = (span.queries + first + r) * width + head * d;
            context[at..at + d].copy_from_slice(values);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windowed causal attention in blocks (each block's keys from the
    /// first its first query sees) equals a plain float64 computation over
    /// every key with the window as a mask, with and without a cap, fresh
    /// and after cached keys.
    #[test]
    fn sliding_windows_in_blocks_equal_the_masked_definition() {
        let (nh, kv_heads, d) = (4, 2, 8);
        let mut seed = 11u32;
        let mut random = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
                })
                .collect()
        };
        for (past, len, window, softcap) in [
            (0, 300, 70, None),
            (0, 300, 70, Some(0.8)),
            (37, 150, 50, None),
            (0, 40, 500, None),
        ] {
            let q = random(len * nh * d);
            let k = random((past + len) * kv_heads * d);
            let v = random((past + len) * kv_heads * d);
            let scale = 1.7;
            let heads = Heads {
                heads: nh,
                kv_heads,
                dim: d,
                scale,
                softcap,
                window: Some(window),
            };
            let span = CausalSpan {
                queries: 0,
                len,
                keys: 0,
                past,
            };
            let strided = |values, stride| Strided { values, stride };
            let mut ours = vec![f32::NAN; len * nh * d];
            causal_attention(
                &[span],
                (
                    strided(&q, nh * d),
                    strided(&k, kv_heads * d),
                    strided(&v, kv_heads * d),
                ),
                heads,
                &mut ours,
            );
            let mut worst = 0.0f64;
            for i in 0..len {
                let position = past + i;
                let first = (position + 1).saturating_sub(window);
                for h in 0..nh {
                    let kv = h / (nh / kv_heads);
                    let query = &q[(i * nh + h) * d..][..d];
                    let scores: Vec<f64> = (first..=position)
                        .map(|j| {
                            let key = &k[(j * kv_heads + kv) * d..][..d];
                            let dot: f64 = query
                                .iter()
                                .zip(key)
                                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                                .sum();
                            let s = dot * f64::from(scale);
                            softcap.map_or(s, |c| f64::from(c) * (s / f64::from(c)).tanh())
                        })
                        .collect();
                    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let total: f64 = weights.iter().sum();
                    for c in 0..d {
                        let expected: f64 = (first..=position)
                            .zip(&weights)
                            .map(|(j, w)| w * f64::from(v[(j * kv_heads + kv) * d + c]))
                            .sum::<f64>()
                            / total;
                        let got = f64::from(ours[(i * nh + h) * d + c]);
                        worst = worst.max((got - expected).abs());
                    }
                }
            }
            assert!(worst < 1e-5, "past {past}, window {window}: off by {worst}");
        }
    }

    /// Blocks of queries give each row the result it has when the whole
    /// sequence is one block, but for the rounding of the products.
    #[test]
    fn blocks_of_queries_give_the_whole_sequences_result() {
        let (hidden, heads) = (16, 2);
        let spans = [(0, 37), (37, 5)];
        let rows = 42;
        let mut seed = 7u32;
        let qkv: Vec<f32> = (0..rows * 3 * hidden)
            .map(|_| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect();
        let mut whole = vec![0.0f32; rows * hidden];
        attention_in_blocks(&spans, &qkv, &mut whole, (hidden, heads), 37 * 37);
        for max_scores in [1, 37, 3 * 37 + 5, 10 * 37] {
            let mut blocked = vec![f32::NAN; rows * hidden];
            attention_in_blocks(&spans, &qkv, &mut blocked, (hidden, heads), max_scores);
            let worst = blocked
                .iter()
                .zip(&whole)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 1e-6, "{max_scores} scores per task: {worst}");
        }
        assert_eq!(queries_per_block(2048, MAX_SCORES_PER_TASK), 2048);
        assert_eq!(queries_per_block(262_144, MAX_SCORES_PER_TASK), 16);
        assert_eq!(queries_per_block(0, 1), 1);
    }
}
