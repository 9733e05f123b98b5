//! How a product against packed weights is split over the rayon pool: by
//! rows when there are many, by panels of output features otherwise (a
//! short sentence has too few rows to keep every thread busy).

use std::ops::Range;

use rayon::prelude::*;

/// Runs `block(rows, panels, out, ldo)` over the pool so that together the
/// calls write `out`, row-major `[m, n]`: each call computes the rows
/// `rows` and the features of `panels` (panels of `width` features, the
/// last one possibly short), into `out`, which holds those rows with row
/// stride `ldo`, its column 0 being the first panel's first feature.
/// `tile_rows` is the kernel's row tile, so row tasks start on whole tiles.
pub(crate) fn for_each_block<F>(
    m: usize,
    n: usize,
    width: usize,
    tile_rows: usize,
    out: &mut [f32],
    block: F,
) where
    F: Fn(Range<usize>, Range<usize>, &mut [f32], usize) + Sync,
{
    let threads = rayon::current_num_threads();
    let panel_count = n.div_ceil(width);
    if m == 0 {
        return;
    }
    if m >= 4 * tile_rows * threads || threads == 1 || panel_count < 2 {
        let rows_per_task = m.div_ceil(threads).next_multiple_of(tile_rows);
        out.par_chunks_mut(n * rows_per_task)
            .enumerate()
            .for_each(|(task, out)| {
                let first = task * rows_per_task;
                block(first..first + out.len() / n, 0..panel_count, out, n);
            });
        return;
    }
    let per_task = panel_count.div_ceil(threads);
    let blocks: Vec<(usize, Vec<f32>)> = (0..panel_count)
        .step_by(per_task)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|first| {
            let panels = first..(first + per_task).min(panel_count);
            let columns = (panels.end * width).min(n) - first * width;
            let mut local = vec![0.0; m * columns];
            block(0..m, panels, &mut local, columns);
            (first * width, local)
        })
        .collect();
    for (col, local) in blocks {
        let columns = local.len() / m;
        for (row, values) in out.chunks_exact_mut(n).zip(local.chunks_exact(columns)) {
            row[col..col + columns].copy_from_slice(values);
        }
    }
}

/// `rows` cut into the fewest tiles of at most `tile` rows, as even as
/// possible (31 rows in tiles of 6 are 6, 5, 5, 5, 5, 5, not five 6s and a
/// 1: a one-row tile reads a whole panel for one row). Yields
/// `(first row, row count)`.
pub(crate) fn row_tiles(rows: Range<usize>, tile: usize) -> impl Iterator<Item = (usize, usize)> {
    let count = rows.len().div_ceil(tile.max(1));
    let (base, extra) = (rows.len() / count.max(1), rows.len() % count.max(1));
    (0..count).scan(rows.start, move |start, i| {
        let len = base + usize::from(i < extra);
        let first = *start;
        *start += len;
        Some((first, len))
    })
}

#[cfg(test)]
mod tests {
    use super::row_tiles;

    #[test]
    fn row_tiles_are_few_and_even() {
        let tiles = |range, tile| row_tiles(range, tile).collect::<Vec<_>>();
        assert_eq!(
            tiles(0..31, 6),
            [(0, 6), (6, 5), (11, 5), (16, 5), (21, 5), (26, 5)]
        );
        assert_eq!(tiles(4..16, 6), [(4, 6), (10, 6)]);
        assert_eq!(tiles(3..4, 6), [(3, 1)]);
        assert_eq!(tiles(5..5, 6), []);
    }
}
