//! One streaming pass over a dataset: per-layer value statistics, and the
//! rule built on them that a dataset's values are all finite.

use super::Dataset;
use crate::Error;
use crate::saev::{NonFiniteLayer, SaevError};
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

    /// Scans every value ([`layer_stats`](Self::layer_stats), with the same
    /// `progress`) and refuses a dataset holding NaN or ±Inf with
    /// [`SaevError::NonFiniteValues`], naming each layer that holds any and
    /// its counts: an autoencoder trained on such values learns nothing.
    pub fn verify_values(&self, progress: &mut dyn FnMut(u64, u64)) -> crate::Result<()> {
        let layers: Vec<NonFiniteLayer> = self
            .layer_stats(progress)
            .iter()
            .filter(|s| s.nan + s.inf > 0)
            .map(|s| NonFiniteLayer {
                layer: s.layer,
                nan: s.nan,
                inf: s.inf,
            })
            .collect();
        if layers.is_empty() {
            return Ok(());
        }
        Err(Error::Saev(SaevError::NonFiniteValues {
            dir: self.dir().to_path_buf(),
            layers,
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::Error;
    use crate::saev::{Metadata, Writer, open};
    use crate::saev::{NonFiniteLayer, SaevError};

    /// A dataset of two layers, two tokens of two values per image, whose
    /// images are `images`.
    fn dataset(root: &std::path::Path, images: &[[f32; 8]]) -> crate::saev::Dataset {
        let metadata = Metadata {
            vit_family: "clip".into(),
            vit_ckpt: "test".into(),
            layers: vec![3, -1],
            n_patches_per_img: 2,
            cls_token: false,
            d_vit: 2,
            seed: 0,
            n_imgs: images.len() as u64,
            max_patches_per_shard: 100,
            data: serde_json::json!("test"),
        };
        let mut writer = Writer::create(root, metadata).unwrap();
        for image in images {
            writer.push(image).unwrap();
        }
        open(writer.finish().unwrap()).unwrap()
    }

    #[test]
    fn finite_values_pass() {
        let root = tempfile::tempdir().unwrap();
        let dataset = dataset(root.path(), &[[1.0; 8], [-2.0; 8]]);
        let mut calls = 0;
        dataset.verify_values(&mut |_, _| calls += 1).unwrap();
        assert!(calls > 0);
    }

    /// Each layer holding NaN or Inf is named with its counts; a clean
    /// layer is not.
    #[test]
    fn non_finite_values_are_counted_per_layer() {
        let root = tempfile::tempdir().unwrap();
        let mut bad = [0.5f32; 8];
        // Layer -1 (the second four values): two NaN and one Inf.
        bad[4] = f32::NAN;
        bad[5] = f32::NEG_INFINITY;
        bad[7] = f32::NAN;
        let dataset = dataset(root.path(), &[[1.0; 8], bad]);
        match dataset.verify_values(&mut |_, _| {}) {
            Err(Error::Saev(SaevError::NonFiniteValues { dir, layers })) => {
                assert_eq!(dir, dataset.dir());
                assert_eq!(
                    layers,
                    [NonFiniteLayer {
                        layer: -1,
                        nan: 2,
                        inf: 1
                    }]
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
