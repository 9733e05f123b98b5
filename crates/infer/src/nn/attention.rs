//! Bidirectional scaled dot-product attention over packed sequences, and
//! the row-parallel helpers the encoders (BERT, the vision transformers)
//! share around it.

use rayon::prelude::*;

use crate::nn::kernels::{gemm_strided, layer_norm, shifted_exp};

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

/// `a += b`, element-wise, spread over the rayon pool.
pub(crate) fn add_in_place(a: &mut [f32], b: &[f32]) {
    a.par_chunks_mut(4096)
        .zip(b.par_chunks(4096))
        .for_each(|(a, b)| a.iter_mut().zip(b).for_each(|(a, b)| *a += b));
}

/// Scaled dot-product attention (no mask) of every sequence and head.
/// `spans` are the sequences as `(first row, rows)` of the packed batch;
/// `qkv` rows are `[q | k | v]`, each `hidden` wide and split into `heads`
/// heads; the context rows (`hidden` wide) are written to `context`.
pub(crate) fn attention(
    spans: &[(usize, usize)],
    qkv: &[f32],
    context: &mut [f32],
    hidden: usize,
    heads: usize,
) {
    let h = hidden;
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let outputs: Vec<Vec<f32>> = spans
        .par_iter()
        .flat_map(|&(start, len)| {
            (0..heads)
                .into_par_iter()
                .map(move |head| (start, len, head))
        })
        .map(|(start, len, head)| {
            let q = &qkv[start * 3 * h + head * d..];
            let k = &q[h..];
            let v = &q[2 * h..];
            let mut scores = vec![0.0f32; len * len];
            // SAFETY: q, k and v address `len` rows of `d` columns with
            // row stride 3h inside this sequence's rows of `qkv`;
            // `scores` is len × len.
            unsafe {
                gemm_strided(
                    (len, d, len),
                    (q, [3 * h, 1]),
                    (k, [1, 3 * h]),
                    (&mut scores, len),
                    false,
                );
            }
            // Softmax's division waits for the output rows, which are
            // d wide where the scores are len wide.
            let sums: Vec<f32> = scores
                .chunks_exact_mut(len)
                .map(|row| shifted_exp(row, scale))
                .collect();
            let mut out = vec![0.0f32; len * d];
            // SAFETY: `scores` is len × len, v is len × d with row stride
            // 3h inside `qkv`, `out` is len × d.
            unsafe {
                gemm_strided(
                    (len, len, d),
                    (&scores, [len, 1]),
                    (v, [3 * h, 1]),
                    (&mut out, d),
                    false,
                );
            }
            for (row, sum) in out.chunks_exact_mut(d).zip(sums) {
                let inverse = 1.0 / sum;
                row.iter_mut().for_each(|v| *v *= inverse);
            }
            out
        })
        .collect();
    let mut outputs = outputs.into_iter();
    for &(start, len) in spans {
        for head in 0..heads {
            let out = outputs.next().unwrap_or_default();
            for (r, values) in out.chunks_exact(d).enumerate().take(len) {
                let at = (start + r) * h + head * d;
                context[at..at + d].copy_from_slice(values);
            }
        }
    }
}
