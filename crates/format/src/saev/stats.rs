//! One streaming pass over a dataset: per-layer value statistics.

use super::dataset::Dataset;

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
        let layers = m.layers.len();
        let (mut sum, mut sq) = (vec![0.0f64; layers], vec![0.0f64; layers]);
        let (mut count, mut nan, mut inf) =
            (vec![0u64; layers], vec![0u64; layers], vec![0u64; layers]);
        for img in 0..m.n_imgs {
            for (l, &layer) in m.layers.iter().enumerate() {
                for token in 0..m.tokens_per_img() {
                    let vector = self.vector(img, layer, token).expect("in range");
                    let (mut s, mut q) = (0.0f64, 0.0f64);
                    for &v in vector {
                        if v.is_finite() {
                            s += f64::from(v);
                            q += f64::from(v) * f64::from(v);
                            count[l] += 1;
                        } else if v.is_nan() {
                            nan[l] += 1;
                        } else {
                            inf[l] += 1;
                        }
                    }
                    sum[l] += s;
                    sq[l] += q;
                }
            }
            if img % 64 == 63 || img + 1 == m.n_imgs {
                progress(img + 1, m.n_imgs);
            }
        }
        (0..layers)
            .map(|l| {
                let n = count[l].max(1) as f64;
                let mean = sum[l] / n;
                LayerStats {
                    layer: m.layers[l],
                    count: count[l],
                    mean,
                    std: (sq[l] / n - mean * mean).max(0.0).sqrt(),
                    nan: nan[l],
                    inf: inf[l],
                }
            })
            .collect()
    }
}
