//! The part of a SAEV dataset an autoencoder reads: one recorded layer and
//! a choice of tokens, in batches. The dataset may be a union of several
//! ([`Union`]): its examples are the members' one after the other, and the
//! shuffled order a seed gives is the same as over one dataset holding the
//! same vectors.

use std::path::Path;
use std::sync::Arc;

use modelbin_format::saev::{Dataset, LayerChoice, Loader, LoaderOptions, Patches, Union};

use super::error::SaeSetting;
use crate::{Result, SaeError};

/// One layer of a dataset and the tokens taken as examples, with the batch
/// size and the threads that read and process it.
#[derive(Debug, Clone)]
pub struct View {
    union: Arc<Union>,
    layer: i64,
    patches: Patches,
    batch_size: usize,
    threads: usize,
    examples: u64,
}

impl View {
    /// Examples per batch when a face leaves the batch size out.
    pub const DEFAULT_BATCH_SIZE: usize = 4096;

    /// Opens the dataset in `dir` (`<root>/<HASH>`, or a union manifest)
    /// and checks that it recorded `layer` and holds the `patches` asked
    /// for. `threads` of `None` is one per core of the current rayon pool;
    /// more than [`crate::threads::MAX_THREADS`] is refused, and so is a
    /// `batch_size` of 0 ([`SaeError::InvalidSetting`]).
    pub fn open(
        dir: &Path,
        layer: i64,
        patches: Patches,
        batch_size: usize,
        threads: Option<usize>,
    ) -> Result<View> {
        View::open_union(&[dir], layer, patches, batch_size, threads)
    }

    /// [`View::open`] over the union of `paths` (datasets or union
    /// manifests, in order; see [`Union::open`]).
    pub fn open_union<P: AsRef<Path>>(
        paths: &[P],
        layer: i64,
        patches: Patches,
        batch_size: usize,
        threads: Option<usize>,
    ) -> Result<View> {
        SaeSetting::BatchSize.check(batch_size as f64)?;
        if let Some(threads) = threads {
            crate::threads::check(threads)?;
        }
        let union = Union::open(paths)?;
        let recorded = &union.metadata().layers;
        if !recorded.contains(&layer) {
            return Err(SaeError::NoSuchLayer {
                layer,
                recorded: recorded.clone(),
            }
            .into());
        }
        let examples = union
            .view(patches, LayerChoice::One(layer))
            .map_err(|e| SaeError::Patches(e.to_string()))?
            .len();
        Ok(View {
            union: Arc::new(union),
            layer,
            patches,
            batch_size,
            threads: threads.unwrap_or_else(rayon::current_num_threads).max(1),
            examples,
        })
    }

    /// The first dataset of the union: the dataset itself, unless the view
    /// reads a union of several (see [`View::union`]).
    pub fn dataset(&self) -> &Arc<Dataset> {
        &self.union.members()[0]
    }

    /// The datasets read, as one.
    pub fn union(&self) -> &Arc<Union> {
        &self.union
    }

    /// The recorded layer read.
    pub fn layer(&self) -> i64 {
        self.layer
    }

    /// Which tokens are examples.
    pub fn patches(&self) -> Patches {
        self.patches
    }

    /// The name of [`View::patches`] as the settings and provenance
    /// record it: `image`, `cls` or `all`.
    pub fn patches_name(&self) -> &'static str {
        match self.patches {
            Patches::Image => "image",
            Patches::Cls => "cls",
            Patches::All => "all",
        }
    }

    /// Examples per batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Worker threads.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The width of each vector.
    pub fn d_in(&self) -> usize {
        self.union.metadata().d_vit as usize
    }

    /// Examples in the view.
    pub fn examples(&self) -> u64 {
        self.examples
    }

    /// Batches of epoch `epoch`, shuffled by `seed` or in order.
    pub fn loader(&self, seed: u64, epoch: u64, shuffle: bool) -> Result<Loader> {
        let options = LoaderOptions {
            batch_size: self.batch_size,
            threads: self.threads.clamp(1, 4),
            seed,
            epoch,
            ..LoaderOptions::default()
        };
        let (patches, layer) = (self.patches, LayerChoice::One(self.layer));
        let union = Union::clone(&self.union);
        Ok(if shuffle {
            Loader::shuffled(union, patches, layer, options)
        } else {
            Loader::ordered(union, patches, layer, options)
        }?)
    }

    /// Refuses a batch holding NaN or Inf, naming the first such vector of
    /// the view.
    pub fn check_finite(&self, batch: &[f32]) -> Result<()> {
        if batch.iter().all(|v| v.is_finite()) {
            return Ok(());
        }
        let view = self
            .union
            .view(self.patches, LayerChoice::One(self.layer))?;
        for i in 0..view.len() {
            let example = view.get(i)?;
            if example.vector.iter().any(|v| !v.is_finite()) {
                let (member, img) = self
                    .union
                    .locate(example.img)
                    .expect("a view's images lie inside the union");
                return Err(SaeError::NonFiniteInput {
                    dataset: self.union.members()[member].dir().to_path_buf(),
                    img,
                    layer: example.layer,
                    token: example.token,
                }
                .into());
            }
        }
        Err(SaeError::NonFiniteBatch {
            dataset: self.union.path().to_path_buf(),
        }
        .into())
    }
}
