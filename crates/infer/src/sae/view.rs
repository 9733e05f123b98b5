//! The part of a SAEV dataset an autoencoder reads: one recorded layer and
//! a choice of tokens, in batches.

use std::path::Path;
use std::sync::Arc;

use modelbin_format::saev::{self, Dataset, LayerChoice, Loader, LoaderOptions, Patches};

use super::run::SaeSetting;
use crate::{Result, SaeError};

/// One layer of a dataset and the tokens taken as examples, with the batch
/// size and the threads that read and process it.
#[derive(Debug, Clone)]
pub struct View {
    dataset: Arc<Dataset>,
    layer: i64,
    patches: Patches,
    batch_size: usize,
    threads: usize,
    examples: u64,
}

impl View {
    /// Opens the dataset in `dir` (`<root>/<HASH>`) and checks that it
    /// recorded `layer` and holds the `patches` asked for. `threads` of
    /// `None` is one per core of the current rayon pool; more than
    /// [`crate::threads::MAX_THREADS`] is refused, and so is a
    /// `batch_size` of 0 ([`SaeError::InvalidSetting`]).
    pub fn open(
        dir: &Path,
        layer: i64,
        patches: Patches,
        batch_size: usize,
        threads: Option<usize>,
    ) -> Result<View> {
        SaeSetting::BatchSize.check(batch_size as f64)?;
        if let Some(threads) = threads {
            crate::threads::check(threads)?;
        }
        let dataset = saev::open(dir)?;
        let recorded = &dataset.metadata().layers;
        if !recorded.contains(&layer) {
            return Err(SaeError::NoSuchLayer {
                layer,
                recorded: recorded.clone(),
            }
            .into());
        }
        let examples = dataset
            .view(patches, LayerChoice::One(layer))
            .map_err(|e| SaeError::Patches(e.to_string()))?
            .len();
        Ok(View {
            dataset: Arc::new(dataset),
            layer,
            patches,
            batch_size,
            threads: threads.unwrap_or_else(rayon::current_num_threads).max(1),
            examples,
        })
    }

    /// The dataset.
    pub fn dataset(&self) -> &Arc<Dataset> {
        &self.dataset
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
        self.dataset.metadata().d_vit as usize
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
        let dataset = self.dataset.clone();
        Ok(if shuffle {
            Loader::shuffled(dataset, patches, layer, options)
        } else {
            Loader::ordered(dataset, patches, layer, options)
        }?)
    }

    /// Refuses a batch holding NaN or Inf, naming the first such vector of
    /// the view.
    pub fn check_finite(&self, batch: &[f32]) -> Result<()> {
        if batch.iter().all(|v| v.is_finite()) {
            return Ok(());
        }
        let view = self
            .dataset
            .view(self.patches, LayerChoice::One(self.layer))?;
        for i in 0..view.len() {
            let example = view.get(i)?;
            if example.vector.iter().any(|v| !v.is_finite()) {
                return Err(SaeError::NonFiniteInput {
                    dataset: self.dataset.dir().to_path_buf(),
                    img: example.img,
                    layer: example.layer,
                    token: example.token,
                }
                .into());
            }
        }
        Err(SaeError::NonFiniteBatch {
            dataset: self.dataset.dir().to_path_buf(),
        }
        .into())
    }
}
