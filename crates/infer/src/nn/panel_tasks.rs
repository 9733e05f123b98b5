//! How a product against packed weights is split over the rayon pool: by
//! rows when there are many, by panels of output features otherwise (a
//! short sentence has too few rows to keep every thread busy).

use std::marker::PhantomData;
use std::ops::Range;

use rayon::prelude::*;

/// The part of a product's output one task of [`for_each_block`] writes:
/// its rows, and in each only its own run of columns.
pub(crate) struct BlockOut<'a> {
    /// The task's first column of its first row.
    start: *mut f32,
    /// Row stride of the whole output.
    ldo: usize,
    /// Columns of the task.
    columns: usize,
    /// Rows of the task.
    rows: usize,
    _out: PhantomData<&'a mut [f32]>,
}

impl<'a> BlockOut<'a> {
    /// All of `out`, rows of `columns` values.
    pub(crate) fn whole(out: &'a mut [f32], columns: usize) -> Self {
        BlockOut {
            start: out.as_mut_ptr(),
            ldo: columns,
            columns,
            rows: out.len() / columns,
            _out: PhantomData,
        }
    }

    /// Row `r` of the task (relative to its first), the task's columns only.
    pub(crate) fn row(&mut self, r: usize) -> &mut [f32] {
        assert!(r < self.rows, "row {r} of a block of {}", self.rows);
        // SAFETY: `r < rows`, and rows of `columns` values from `start` at
        // stride `ldo` lie inside the output (checked where the block was
        // made); no other block covers them, and the `&mut self` borrow
        // keeps two rows of this one from being held at once.
        unsafe { std::slice::from_raw_parts_mut(self.start.add(r * self.ldo), self.columns) }
    }
}

/// An output `[m, n]` shared by the tasks of a split by columns, each
/// taking a block of its own columns.
struct Columns<'a> {
    start: *mut f32,
    m: usize,
    n: usize,
    _out: PhantomData<&'a mut [f32]>,
}

// SAFETY: tasks only derive blocks of disjoint columns (`for_each_block`).
unsafe impl Sync for Columns<'_> {}

impl<'a> Columns<'a> {
    fn new(out: &'a mut [f32], m: usize, n: usize) -> Self {
        assert_eq!(m.checked_mul(n), Some(out.len()), "output shape");
        Columns {
            start: out.as_mut_ptr(),
            m,
            n,
            _out: PhantomData,
        }
    }

    /// The block of every row's `columns`.
    ///
    /// # Safety
    /// No two blocks made from one `Columns` may share a column.
    unsafe fn block(&self, columns: Range<usize>) -> BlockOut<'a> {
        assert!(columns.start < columns.end && columns.end <= self.n);
        BlockOut {
            start: self.start.wrapping_add(columns.start),
            ldo: self.n,
            columns: columns.len(),
            rows: self.m,
            _out: PhantomData,
        }
    }
}

/// Runs `block(rows, panels, out)` over the pool so that together the
/// calls write `out`, row-major `[m, n]`: each call computes the rows
/// `rows` and the features of `panels` (panels of `width` features, the
/// last one possibly short) into `out`, whose column 0 is the first
/// panel's first feature and row 0 the first of `rows`. `tile_rows` is
/// the kernel's row tile, so row tasks start on whole tiles.
///
/// # Panics
/// If `out` does not hold `m · n` values.
pub(crate) fn for_each_block<F>(
    m: usize,
    n: usize,
    width: usize,
    tile_rows: usize,
    out: &mut [f32],
    block: F,
) where
    F: Fn(Range<usize>, Range<usize>, &mut BlockOut<'_>) + Sync,
{
    assert_eq!(m.checked_mul(n), Some(out.len()), "output shape");
    let threads = rayon::current_num_threads();
    let panel_count = n.div_ceil(width);
    if m == 0 || n == 0 {
        return;
    }
    if m >= 4 * tile_rows * threads || threads == 1 || panel_count < 2 {
        let rows_per_task = m.div_ceil(threads).next_multiple_of(tile_rows);
        out.par_chunks_mut(n * rows_per_task)
            .enumerate()
            .for_each(|(task, out)| {
                let first = task * rows_per_task;
                let rows = first..first + out.len() / n;
                block(rows, 0..panel_count, &mut BlockOut::whole(out, n));
            });
        return;
    }
    // Too few rows to share: each task takes a run of panels, all rows, and
    // writes its columns in place.
    let per_task = panel_count.div_ceil(threads);
    let columns_of = |first: usize| first * width..((first + per_task) * width).min(n);
    let shared = Columns::new(out, m, n);
    (0..panel_count)
        .into_par_iter()
        .step_by(per_task)
        .for_each(|first| {
            // SAFETY: each task's run of panels, so its columns, is its own.
            let mut out = unsafe { shared.block(columns_of(first)) };
            block(0..m, first..(first + per_task).min(panel_count), &mut out);
        });
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
