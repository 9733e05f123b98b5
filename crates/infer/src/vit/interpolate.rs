//! Bicubic resizing of a grid of position embeddings, as DINOv2 adapts its
//! embeddings to an input's patch grid in transformers: PyTorch's
//! `interpolate(mode="bicubic", align_corners=False)`, plain (Keys' cubic
//! with a = −0.75, edge rows repeated) or with `antialias=True` (a = −0.5,
//! widened when shrinking, the window cut at the edges and its weights
//! normalized). Each axis is resized on its own, columns first, in f32, as
//! PyTorch's CPU kernels do.

/// One output coordinate: the input coordinates it reads and their
/// weights.
type Taps = Vec<(usize, f32)>;

/// Keys' cubic convolution kernel with parameter `a`, at `x`.
fn cubic(x: f32, a: f32) -> f32 {
    let x = x.abs();
    if x <= 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    } else {
        0.0
    }
}

/// The taps of each of `output` coordinates resampled from `input` ones.
fn axis_taps(input: usize, output: usize, antialias: bool) -> Vec<Taps> {
    let scale = input as f32 / output as f32;
    let last = input as i64 - 1;
    (0..output)
        .map(|i| {
            if antialias {
                let support = if scale >= 1.0 { 2.0 * scale } else { 2.0 };
                let inverse = if scale >= 1.0 { 1.0 / scale } else { 1.0 };
                let center = scale * (i as f32 + 0.5);
                // Truncating casts, as PyTorch's `static_cast<int64_t>`.
                let start = ((center - support + 0.5) as i64).max(0);
                let end = ((center + support + 0.5) as i64).min(input as i64);
                let mut taps: Taps = (start..end)
                    .map(|j| {
                        let w = cubic((j as f32 - center + 0.5) * inverse, -0.5);
                        (j as usize, w)
                    })
                    .collect();
                let total: f32 = taps.iter().map(|t| t.1).sum();
                if total != 0.0 {
                    taps.iter_mut().for_each(|t| t.1 /= total);
                }
                taps
            } else {
                let real = scale * (i as f32 + 0.5) - 0.5;
                let index = (real.floor() as i64).min(last);
                let t = (real - index as f32).clamp(0.0, 1.0);
                let weights = [
                    cubic(t + 1.0, -0.75),
                    cubic(t, -0.75),
                    cubic(1.0 - t, -0.75),
                    cubic(2.0 - t, -0.75),
                ];
                weights
                    .iter()
                    .enumerate()
                    .map(|(j, &w)| ((index + j as i64 - 1).clamp(0, last) as usize, w))
                    .collect()
            }
        })
        .collect()
}

/// `grid`, `rows × columns` vectors of `dim` values (row-major), resized
/// to `to = (rows, columns)`.
pub(crate) fn resize_grid(
    grid: &[f32],
    (rows, columns): (usize, usize),
    to: (usize, usize),
    dim: usize,
    antialias: bool,
) -> Vec<f32> {
    let mut current = grid.to_vec();
    if to.1 != columns {
        let taps = axis_taps(columns, to.1, antialias);
        let mut out = vec![0.0f32; rows * to.1 * dim];
        for (row_in, row_out) in current
            .chunks_exact(columns * dim)
            .zip(out.chunks_exact_mut(to.1 * dim))
        {
            for (cell, taps) in row_out.chunks_exact_mut(dim).zip(&taps) {
                for &(j, w) in taps {
                    let source = &row_in[j * dim..(j + 1) * dim];
                    cell.iter_mut().zip(source).for_each(|(c, s)| *c += w * s);
                }
            }
        }
        current = out;
    }
    if to.0 != rows {
        let width = to.1 * dim;
        let taps = axis_taps(rows, to.0, antialias);
        let mut out = vec![0.0f32; to.0 * width];
        for (row_out, taps) in out.chunks_exact_mut(width).zip(&taps) {
            for &(i, w) in taps {
                let source = &current[i * width..(i + 1) * width];
                row_out
                    .iter_mut()
                    .zip(source)
                    .for_each(|(c, s)| *c += w * s);
            }
        }
        current = out;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resizing to the same size gives the grid back, both ways.
    #[test]
    fn same_size_is_identity() {
        let grid: Vec<f32> = (0..3 * 4 * 2).map(|i| (i as f32).sin()).collect();
        for antialias in [false, true] {
            let taps = axis_taps(4, 4, antialias);
            for (i, taps) in taps.iter().enumerate() {
                for j in 0..4 {
                    let w: f32 = taps.iter().filter(|t| t.0 == j).map(|t| t.1).sum();
                    assert_eq!(w, if i == j { 1.0 } else { 0.0 }, "{antialias}");
                }
            }
            assert_eq!(resize_grid(&grid, (3, 4), (3, 4), 2, antialias), grid);
        }
    }

    /// A constant grid stays constant (the weights sum to one), enlarged
    /// or shrunk.
    #[test]
    fn constant_grid_stays_constant() {
        let grid = vec![0.25f32; 5 * 5];
        for antialias in [false, true] {
            for to in [(2, 3), (9, 7)] {
                let out = resize_grid(&grid, (5, 5), to, 1, antialias);
                assert_eq!(out.len(), to.0 * to.1);
                assert!(out.iter().all(|v| (v - 0.25).abs() < 1e-6), "{to:?}");
            }
        }
    }
}
