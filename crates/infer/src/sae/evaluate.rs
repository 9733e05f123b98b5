//! How well an autoencoder reconstructs a dataset view: mean squared
//! error, explained variance, L0, dead latents and a histogram of firing
//! densities, as `modelbin sae eval` reports them.

use std::path::Path;

use super::config::SaeConfig;
use super::splice::CrossEntropy;
use super::view::View;
use super::{Sae, saelens};
use crate::{Result, SaeError};

/// What an evaluation measures over a view.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Evaluation {
    /// Vectors evaluated.
    pub vectors: u64,
    /// Mean squared error per value.
    pub mse: f64,
    /// One minus the squared error over the variance about the mean.
    pub explained_variance: f64,
    /// Mean latents firing per vector.
    pub l0: f64,
    /// Fraction of latents that never fired.
    pub dead_fraction: f64,
    /// Latents by how often they fire: counts in decades of density,
    /// `[never, < 1e-5, [1e-5, 1e-4), …, [1e-1, 1]]`.
    pub density_histogram: [u64; 7],
    /// The next-token loss clean, spliced and ablated, when measured on
    /// the TLLM the dataset was recorded from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_entropy: Option<CrossEntropy>,
}

/// Opens the autoencoder in `dir` (any of [`super::layouts`]) for
/// `view`: its weights and configuration, refused as [`check_fits_view`]
/// says.
pub fn open_for_view(dir: &Path, view: &View) -> Result<(Sae<f32>, SaeConfig)> {
    let (sae, config) = super::layouts::load(dir)?;
    check_fits_view(dir, &sae, &config, view)?;
    Ok((sae, config))
}

/// Refuses `sae` (with its `config`, read from `dir`) for `view` when its
/// width is not the view's ([`SaeError::WidthMismatch`]), or when it names
/// the hook point it was trained at and the view's layer was recorded at
/// another ([`SaeError::OtherHook`]).
pub fn check_fits_view(dir: &Path, sae: &Sae<f32>, config: &SaeConfig, view: &View) -> Result<()> {
    if sae.d_in != view.d_in() {
        return Err(SaeError::WidthMismatch {
            dir: dir.to_path_buf(),
            sae: sae.d_in,
            dataset: view.d_in(),
        }
        .into());
    }
    let recorded = saelens::hook_metadata(view.dataset().metadata(), view.layer())
        .and_then(|hook| Some(hook.get("hook_name")?.as_str()?.to_owned()));
    if let (Some(trained), Some(recorded)) = (&config.hook_name, recorded)
        && *trained != recorded
    {
        return Err(SaeError::OtherHook {
            dir: dir.to_path_buf(),
            hook_name: trained.clone(),
            recorded,
        }
        .into());
    }
    Ok(())
}

/// Whether `config` (an autoencoder's `cfg.json`) says it was trained on
/// another dataset or layer than `view`'s: the dataset hash and layer it
/// names, when they differ.
pub fn trained_elsewhere(
    config: &SaeConfig,
    view: &View,
) -> Option<(serde_json::Value, serde_json::Value)> {
    let metadata = &config.json["metadata"];
    let trained_on = (metadata["dataset_hash"].clone(), metadata["layer"].clone());
    let here = (
        serde_json::json!(view.union().hash()),
        serde_json::json!(view.layer()),
    );
    (trained_on != here).then_some(trained_on)
}

/// Measures `sae` over every vector of `view`, in order, on the view's
/// threads. `progress` is told the bytes done and the total after each
/// batch and returns `false` to stop ([`SaeError::Interrupted`]).
pub fn evaluate(
    sae: &Sae<f32>,
    view: &View,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Evaluation> {
    let pool = crate::threads::pool(Some(view.threads()))?;
    let mut totals = Totals::new(sae);
    let row_bytes = view.d_in() as u64 * 4;
    let total_bytes = view.examples() * row_bytes;
    for batch in view.loader(0, 0, false)? {
        view.check_finite(&batch.data)?;
        pool.install(|| totals.add(sae, &batch.data));
        if !progress(totals.vectors * row_bytes, total_bytes) {
            return Err(SaeError::Interrupted.into());
        }
    }
    Ok(totals.finish())
}

/// Running sums of an evaluation.
struct Totals {
    vectors: u64,
    squared_error: f64,
    sum: Vec<f64>,
    sum_of_squares: f64,
    active: u64,
    fired: Vec<u64>,
}

impl Totals {
    fn new(sae: &Sae<f32>) -> Self {
        Totals {
            vectors: 0,
            squared_error: 0.0,
            sum: vec![0.0; sae.d_in],
            sum_of_squares: 0.0,
            active: 0,
            fired: vec![0; sae.d_sae],
        }
    }

    fn add(&mut self, sae: &Sae<f32>, batch: &[f32]) {
        let rows = batch.len() / sae.d_in;
        let codes = sae.encode(batch, rows);
        let recon = sae.decode(&codes);
        for (row, x) in batch.chunks_exact(sae.d_in).enumerate() {
            for (j, _) in codes.active(row) {
                self.fired[j] += 1;
                self.active += 1;
            }
            for ((s, &v), &r) in self.sum.iter_mut().zip(x).zip(&recon[row * sae.d_in..]) {
                *s += f64::from(v);
                self.sum_of_squares += f64::from(v).powi(2);
                self.squared_error += f64::from(r - v).powi(2);
            }
        }
        self.vectors += rows as u64;
    }

    fn finish(self) -> Evaluation {
        let n = self.vectors.max(1) as f64;
        let variance = self.sum_of_squares - self.sum.iter().map(|s| s * s).sum::<f64>() / n;
        let mut histogram = [0u64; 7];
        for &f in &self.fired {
            let density = f as f64 / n;
            let bucket = if f == 0 {
                0
            } else {
                (density.log10().floor() as i64 + 7).clamp(1, 6) as usize
            };
            histogram[bucket] += 1;
        }
        Evaluation {
            vectors: self.vectors,
            mse: self.squared_error / (n * self.sum.len() as f64),
            explained_variance: 1.0 - self.squared_error / variance.max(f64::MIN_POSITIVE),
            l0: self.active as f64 / n,
            dead_fraction: histogram[0] as f64 / self.fired.len() as f64,
            density_histogram: histogram,
            cross_entropy: None,
        }
    }
}
