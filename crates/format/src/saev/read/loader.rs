//! Loaders that stream a view's vectors in batches of `[batch, D]` f32.
//!
//! A loader reads a [`Union`] (a single dataset is a union of one). The
//! view's images are cut into chunks (a few MB of consecutive images of the
//! union, at boundaries that depend only on the union's image count and the
//! view, never on its shards or members, so that a dataset and the union of
//! its slices give the same order for a seed). I/O threads read each chunk's
//! pages of the mapped shards sequentially ahead of the consumer (so the disk sees sequential
//! reads and the consumer never faults), and the consumer takes chunks in a
//! fixed order: chunk `j` comes from thread `j % threads`. Batches copy each
//! vector once, straight from the mapping. The shuffled loader permutes the
//! chunks with the epoch's seed and draws rows at random from a bounded
//! window of resident chunks (the shuffle buffer); it is deterministic for a
//! seed whatever the thread timing, and yields every example exactly once per
//! epoch. The ordered loader yields examples in view order.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::super::Union;
use super::{LayerChoice, Patches};
use crate::io::rng::Rng;
use crate::{Error, Result};

/// Bytes of examples per chunk, roughly.
const CHUNK_BYTES: u64 = 4 << 20;
/// Chunks each thread may have read ahead.
const PREFETCH: usize = 2;

/// How to load.
#[derive(Debug, Clone, Copy)]
pub struct LoaderOptions {
    /// Examples per batch.
    pub batch_size: usize,
    /// I/O threads.
    pub threads: usize,
    /// Shuffle-window size in bytes of examples (shuffled loader only).
    pub buffer_bytes: u64,
    /// Seed; the epoch's permutation is derived from (seed, epoch).
    pub seed: u64,
    /// Epoch number.
    pub epoch: u64,
}

impl Default for LoaderOptions {
    fn default() -> Self {
        LoaderOptions {
            batch_size: 4096,
            threads: 2,
            buffer_bytes: 64 << 20,
            seed: 0,
            epoch: 0,
        }
    }
}

/// A batch: `rows × dim` values, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The values.
    pub data: Vec<f32>,
    /// Examples in the batch.
    pub rows: usize,
    /// Width D.
    pub dim: usize,
}

/// One batch stream over a view.
pub struct Loader {
    union: Arc<Union>,
    patches: Patches,
    layer: LayerChoice,
    /// (first example, rows) of each chunk, in consumption order.
    chunk_rows: Arc<Vec<(u64, usize)>>,
    receivers: Vec<Receiver<()>>,
    workers: Vec<JoinHandle<()>>,
    next_chunk: usize,
    chunks: usize,
    dim: usize,
    batch_size: usize,
    /// One handle per resident example not yet served: its index in the view.
    handles: Vec<u64>,
    capacity_rows: usize,
    rng: Option<Rng>,
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("chunks", &self.chunks)
            .field("next_chunk", &self.next_chunk)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

impl Loader {
    /// The shuffled loader over the view (`patches`, `layer`) of `data`: a
    /// dataset (`Arc<Dataset>`) or a [`Union`]. The order is a function of
    /// the seed, the epoch and the union's examples alone.
    pub fn shuffled(
        data: impl Into<Union>,
        patches: Patches,
        layer: LayerChoice,
        options: LoaderOptions,
    ) -> Result<Loader> {
        Loader::new(Arc::new(data.into()), patches, layer, options, true)
    }

    /// The ordered loader: examples in view order.
    pub fn ordered(
        data: impl Into<Union>,
        patches: Patches,
        layer: LayerChoice,
        options: LoaderOptions,
    ) -> Result<Loader> {
        Loader::new(Arc::new(data.into()), patches, layer, options, false)
    }

    fn new(
        union: Arc<Union>,
        patches: Patches,
        layer: LayerChoice,
        options: LoaderOptions,
        shuffle: bool,
    ) -> Result<Loader> {
        if options.batch_size == 0 || options.threads == 0 {
            return Err(Error::InvalidArgument(
                "batch size and threads must be at least 1".into(),
            ));
        }
        crate::io::threads::check(options.threads)?;
        let view = union.view(patches, layer)?;
        let m = union.metadata();
        let dim = m.d_vit as usize;
        let row_bytes = m.d_vit * 4;
        let per_img = view.per_img();
        let n_imgs = union.n_imgs();
        let imgs_per_chunk = (CHUNK_BYTES / (per_img * row_bytes).max(1)).max(1);
        // Chunks: ranges of the union's images, wherever its shards and
        // members begin.
        let chunks: Vec<(u64, u64)> = (0..n_imgs.div_ceil(imgs_per_chunk))
            .map(|c| (c * imgs_per_chunk, ((c + 1) * imgs_per_chunk).min(n_imgs)))
            .collect();
        let mut chunks = chunks;
        let mut rng = Rng::new(options.seed ^ options.epoch.wrapping_mul(0xD1B5_4A32_D192_ED03));
        if shuffle {
            for i in (1..chunks.len()).rev() {
                chunks.swap(i, rng.below(i + 1));
            }
        }
        let chunk_rows: Vec<(u64, usize)> = chunks
            .iter()
            .map(|&(start, end)| (start * per_img, ((end - start) * per_img) as usize))
            .collect();
        let chunks = Arc::new(chunks);
        let threads = options.threads.min(chunks.len().max(1));
        let mut receivers = Vec::with_capacity(threads);
        let mut workers = Vec::with_capacity(threads);
        for worker in 0..threads {
            let (sender, receiver) = sync_channel(PREFETCH);
            let (union, chunks) = (Arc::clone(&union), Arc::clone(&chunks));
            workers.push(std::thread::spawn(move || {
                read_chunks(&union, &chunks, worker, threads, &sender)
            }));
            receivers.push(receiver);
        }
        let capacity_rows = if shuffle {
            ((options.buffer_bytes / row_bytes) as usize).max(options.batch_size)
        } else {
            options.batch_size
        };
        Ok(Loader {
            union,
            patches,
            layer,
            chunk_rows: Arc::new(chunk_rows),
            receivers,
            workers,
            next_chunk: 0,
            chunks: chunks.len(),
            dim,
            batch_size: options.batch_size,
            handles: Vec::new(),
            capacity_rows,
            rng: shuffle.then_some(rng),
        })
    }

    /// Waits until the next chunk's pages are read and adds its examples to
    /// the resident set; false when no chunk is left.
    fn admit(&mut self) -> bool {
        if self.next_chunk == self.chunks {
            return false;
        }
        let receiver = &self.receivers[self.next_chunk % self.receivers.len()];
        if receiver.recv().is_err() {
            self.next_chunk = self.chunks;
            return false;
        }
        let (first, rows) = self.chunk_rows[self.next_chunk];
        self.next_chunk += 1;
        self.handles.extend(first..first + rows as u64);
        true
    }
}

/// Reads the pages of every `threads`-th chunk from `worker` on, in order,
/// and signals each one ready. A chunk's images are contiguous in the
/// union, so every view's examples of those images lie in the pages read:
/// those of each (member, shard) piece the chunk spans.
fn read_chunks(
    union: &Union,
    chunks: &[(u64, u64)],
    worker: usize,
    threads: usize,
    sender: &SyncSender<()>,
) {
    const PAGE: usize = 4096;
    for &(start, end) in chunks.iter().skip(worker).step_by(threads) {
        let mut img = start;
        let mut touched = 0u8;
        while img < end {
            let (member, local) = union.locate(img).expect("chunks lie inside the union");
            let dataset = &union.members()[member];
            let m = dataset.metadata();
            let in_shard = local % m.imgs_per_shard();
            let count = (m.imgs_per_shard() - in_shard)
                .min(m.n_imgs - local)
                .min(end - img);
            let shard = &dataset.shards()[(local / m.imgs_per_shard()) as usize];
            let from = (in_shard * m.img_bytes()) as usize;
            let to = from + (count * m.img_bytes()) as usize;
            // Read one byte per page, in order: the pages come in sequentially.
            touched ^= shard[from..to]
                .iter()
                .step_by(PAGE)
                .fold(0u8, |a, &b| a ^ b);
            img += count;
        }
        std::hint::black_box(touched);
        if sender.send(()).is_err() {
            return; // the loader was dropped
        }
    }
}

impl Iterator for Loader {
    type Item = Batch;

    fn next(&mut self) -> Option<Batch> {
        if self.rng.is_some() {
            self.next_shuffled()
        } else {
            self.next_ordered()
        }
    }
}

impl Loader {
    /// Copies the vectors of the given view indices into one batch.
    fn gather(&self, indices: impl Iterator<Item = u64>, rows: usize) -> Batch {
        let view = self
            .union
            .view(self.patches, self.layer)
            .expect("validated when the loader was made");
        let mut data = Vec::with_capacity(rows * self.dim);
        for i in indices {
            data.extend_from_slice(view.get(i).expect("handles are in range").vector);
        }
        Batch {
            data,
            rows,
            dim: self.dim,
        }
    }

    fn next_ordered(&mut self) -> Option<Batch> {
        while self.handles.len() < self.batch_size && self.admit() {}
        let rows = self.handles.len().min(self.batch_size);
        if rows == 0 {
            return None;
        }
        let taken: Vec<u64> = self.handles.drain(..rows).collect();
        Some(self.gather(taken.into_iter(), rows))
    }

    /// Fills the shuffle window, then draws `batch_size` random examples from it.
    fn next_shuffled(&mut self) -> Option<Batch> {
        while self.handles.len() < self.capacity_rows && self.admit() {}
        let rows = self.handles.len().min(self.batch_size);
        if rows == 0 {
            return None;
        }
        let mut picks = Vec::with_capacity(rows);
        let rng = self
            .rng
            .as_mut()
            .expect("shuffled loaders have a generator");
        for _ in 0..rows {
            let pick = rng.below(self.handles.len());
            picks.push(self.handles.swap_remove(pick));
        }
        Some(self.gather(picks.into_iter(), rows))
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.receivers.clear(); // workers see their channel closed and stop
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}
