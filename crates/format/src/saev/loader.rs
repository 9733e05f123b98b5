//! Loaders that stream a view's vectors in batches of `[batch, D]` f32.
//!
//! The view's images are cut into chunks (a few MB of consecutive images,
//! never crossing a shard). I/O threads copy chunks out of the mapped shards
//! (sequential reads) ahead of the consumer, which takes them in a fixed
//! order: chunk `j` comes from thread `j % threads`. The shuffled loader
//! permutes the chunks with the epoch's seed and mixes them in a bounded
//! shuffle buffer; it is deterministic for a seed (whatever the thread
//! timing), and yields every example exactly once per epoch. The ordered
//! loader yields examples in view order.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::dataset::{Dataset, LayerChoice, Patches};
use crate::{Error, Result};

/// Bytes of examples per chunk, roughly.
const CHUNK_BYTES: u64 = 4 << 20;
/// Chunks each thread may hold ready.
const PREFETCH: usize = 2;

/// How to load.
#[derive(Debug, Clone, Copy)]
pub struct LoaderOptions {
    /// Examples per batch.
    pub batch_size: usize,
    /// I/O threads.
    pub threads: usize,
    /// Shuffle-buffer size in bytes (shuffled loader only).
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
    receivers: Vec<Receiver<Vec<f32>>>,
    workers: Vec<JoinHandle<()>>,
    next_chunk: usize,
    chunks: usize,
    dim: usize,
    batch_size: usize,
    /// Pending rows of the ordered loader, row-major.
    buffer: Vec<f32>,
    /// The shuffle buffer: resident chunks, rows left in each, and a handle
    /// (chunk slot, row) per resident row. Rows are copied once, into the batch.
    resident: Vec<Option<Vec<f32>>>,
    rows_left: Vec<usize>,
    free_slots: Vec<usize>,
    handles: Vec<(u32, u32)>,
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

/// SplitMix64, for a permutation and picks that are stable across versions.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

impl Loader {
    /// The shuffled loader over the view (`patches`, `layer`) of `dataset`.
    pub fn shuffled(
        dataset: Arc<Dataset>,
        patches: Patches,
        layer: LayerChoice,
        options: LoaderOptions,
    ) -> Result<Loader> {
        Loader::new(dataset, patches, layer, options, true)
    }

    /// The ordered loader: examples in view order.
    pub fn ordered(
        dataset: Arc<Dataset>,
        patches: Patches,
        layer: LayerChoice,
        options: LoaderOptions,
    ) -> Result<Loader> {
        Loader::new(dataset, patches, layer, options, false)
    }

    fn new(
        dataset: Arc<Dataset>,
        patches: Patches,
        layer: LayerChoice,
        options: LoaderOptions,
        shuffle: bool,
    ) -> Result<Loader> {
        if options.batch_size == 0 || options.threads == 0 {
            return Err(Error::InvalidCoordinate(
                "batch size and threads must be at least 1".into(),
            ));
        }
        let view = dataset.view(patches, layer)?;
        let m = dataset.metadata();
        let dim = m.d_vit as usize;
        let row_bytes = m.d_vit * 4;
        let per_img = view.per_img();
        let imgs_per_chunk =
            (CHUNK_BYTES / (per_img * row_bytes).max(1)).clamp(1, m.imgs_per_shard());
        // Chunks: image ranges inside one shard.
        let mut chunks: Vec<(u64, u64)> = Vec::new();
        let mut start = 0;
        while start < m.n_imgs {
            let shard_end = (start / m.imgs_per_shard() + 1) * m.imgs_per_shard();
            let end = (start + imgs_per_chunk).min(shard_end).min(m.n_imgs);
            chunks.push((start, end));
            start = end;
        }
        let mut rng = Rng(options.seed ^ options.epoch.wrapping_mul(0xD1B5_4A32_D192_ED03));
        if shuffle {
            for i in (1..chunks.len()).rev() {
                chunks.swap(i, rng.below(i + 1));
            }
        }
        let chunks = Arc::new(chunks);
        let threads = options.threads.min(chunks.len().max(1));
        let mut receivers = Vec::with_capacity(threads);
        let mut workers = Vec::with_capacity(threads);
        for worker in 0..threads {
            let (sender, receiver) = sync_channel(PREFETCH);
            let (dataset, chunks) = (Arc::clone(&dataset), Arc::clone(&chunks));
            workers.push(std::thread::spawn(move || {
                read_chunks(&dataset, patches, layer, &chunks, worker, threads, &sender)
            }));
            receivers.push(receiver);
        }
        let capacity_rows = if shuffle {
            ((options.buffer_bytes / row_bytes) as usize).max(options.batch_size)
        } else {
            options.batch_size
        };
        Ok(Loader {
            receivers,
            workers,
            next_chunk: 0,
            chunks: chunks.len(),
            dim,
            batch_size: options.batch_size,
            buffer: Vec::new(),
            resident: Vec::new(),
            rows_left: Vec::new(),
            free_slots: Vec::new(),
            handles: Vec::new(),
            capacity_rows,
            rng: shuffle.then_some(rng),
        })
    }

    fn rows(&self) -> usize {
        self.buffer.len() / self.dim
    }

    /// The next chunk in the fixed order; `None` when none are left.
    fn next_chunk(&mut self) -> Option<Vec<f32>> {
        if self.next_chunk == self.chunks {
            return None;
        }
        let receiver = &self.receivers[self.next_chunk % self.receivers.len()];
        self.next_chunk += 1;
        let chunk = receiver.recv().ok();
        if chunk.is_none() {
            self.next_chunk = self.chunks;
        }
        chunk
    }

    /// Pulls the next chunk into the ordered buffer; false when none are left.
    fn refill(&mut self) -> bool {
        match self.next_chunk() {
            Some(chunk) => {
                self.buffer.extend_from_slice(&chunk);
                true
            }
            None => false,
        }
    }

    /// Makes the next chunk resident in the shuffle buffer; false when none are left.
    fn admit(&mut self) -> bool {
        let Some(chunk) = self.next_chunk() else {
            return false;
        };
        let rows = chunk.len() / self.dim;
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.resident.push(None);
            self.rows_left.push(0);
            self.resident.len() - 1
        });
        self.resident[slot] = Some(chunk);
        self.rows_left[slot] = rows;
        self.handles
            .extend((0..rows as u32).map(|r| (slot as u32, r)));
        true
    }
}

fn read_chunks(
    dataset: &Dataset,
    patches: Patches,
    layer: LayerChoice,
    chunks: &[(u64, u64)],
    worker: usize,
    threads: usize,
    sender: &SyncSender<Vec<f32>>,
) {
    let view = dataset
        .view(patches, layer)
        .expect("validated by the loader");
    let dim = dataset.metadata().d_vit as usize;
    for &(start, end) in chunks.iter().skip(worker).step_by(threads) {
        let first = start * view.per_img();
        let last = end * view.per_img();
        let mut out = Vec::with_capacity((last - first) as usize * dim);
        for i in first..last {
            out.extend_from_slice(view.get(i).expect("in range").vector);
        }
        if sender.send(out).is_err() {
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
    fn next_ordered(&mut self) -> Option<Batch> {
        while self.rows() < self.batch_size && self.refill() {}
        let rows = self.rows().min(self.batch_size);
        if rows == 0 {
            return None;
        }
        let data: Vec<f32> = self.buffer.drain(..rows * self.dim).collect();
        Some(Batch {
            data,
            rows,
            dim: self.dim,
        })
    }

    /// Fills the shuffle buffer, then takes `batch_size` random rows out of it.
    fn next_shuffled(&mut self) -> Option<Batch> {
        while self.handles.len() < self.capacity_rows && self.admit() {}
        let rows = self.handles.len().min(self.batch_size);
        if rows == 0 {
            return None;
        }
        let dim = self.dim;
        let mut data = Vec::with_capacity(rows * dim);
        let rng = self
            .rng
            .as_mut()
            .expect("shuffled loaders have a generator");
        for _ in 0..rows {
            let pick = rng.below(self.handles.len());
            let (slot, row) = self.handles.swap_remove(pick);
            let (slot, row) = (slot as usize, row as usize);
            let chunk = self.resident[slot]
                .as_ref()
                .expect("a handle's chunk is resident");
            data.extend_from_slice(&chunk[row * dim..(row + 1) * dim]);
            self.rows_left[slot] -= 1;
            if self.rows_left[slot] == 0 {
                self.resident[slot] = None;
                self.free_slots.push(slot);
            }
        }
        Some(Batch { data, rows, dim })
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
