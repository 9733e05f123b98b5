//! One streaming pass over a dataset: per-layer value statistics.

use super::Dataset;
use crate::tensor::stats::ValueStats;

/// Statistics of one layer's values over every image and token.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LayerStats {
    /// The layer value.
    pub layer: i64,
    /// Finite values seen.
    pub count: u64,
    /// Their mean.
    pub mean: f64,
    /// Their standard deviation.
    pub std: f64,
    /// NaN values.
    pub nan: u64,
    /// ±Inf values.
    pub inf: u64,
}

impl Dataset {
    /// Per-layer statistics in one sequential pass. `progress` gets
    /// (images done, images).
    pub fn layer_stats(&self, progress: &mut dyn FnMut(u64, u64)) -> Vec<LayerStats> {
        let m = self.metadata();
        let mut layers = vec![ValueStats::default(); m.layers.len()];
        for img in 0..m.n_imgs {
            for (stats, &layer) in layers.iter_mut().zip(&m.layers) {
                for token in 0..m.tokens_per_img() {
                    stats.add(self.vector(img, layer, token).expect("in range"));
                }
            }
            if img % 64 == 63 || img + 1 == m.n_imgs {
                progress(img + 1, m.n_imgs);
            }
        }
        layers
            .iter()
            .zip(&m.layers)
            .map(|(stats, &layer)| LayerStats {
                layer,
                count: stats.finite(),
                mean: stats.mean(),
                std: stats.std(),
                nan: stats.nan(),
                inf: stats.inf(),
            })
            .collect()
    }
}
