//! What `modelbin inspect` reports about a TLLM model: its configuration
//! and the value statistics of every tensor.

use serde::Serialize;

use super::{Config, Tllm};
use crate::Format;
use crate::tensor::TensorStore;
use crate::tensor::stats::ValueStats;

/// What `inspect` reports about a TLLM model.
#[derive(Debug, Clone, Serialize)]
pub struct TllmSummary {
    /// The format.
    pub format: Format,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// The format version.
    pub version: u32,
    /// The configuration.
    pub config: Config,
    /// Number of parameters.
    pub parameter_count: u64,
    /// Every tensor with its value statistics.
    pub tensors: Vec<TensorStats>,
}

/// Value statistics of one f32 tensor.
#[derive(Debug, Clone, Serialize)]
pub struct TensorStats {
    /// Tensor name.
    pub name: String,
    /// Its dimensions.
    pub shape: Vec<usize>,
    /// Mean of the finite values.
    pub mean: f64,
    /// Standard deviation of the finite values.
    pub std: f64,
    /// Smallest finite value (`null` in JSON when there is none).
    pub min: Option<f32>,
    /// Largest finite value.
    pub max: Option<f32>,
    /// NaN count.
    pub nan: usize,
    /// ±Inf count.
    pub inf: usize,
}

impl TensorStats {
    /// Statistics of `values`.
    pub fn of(name: &str, shape: Vec<usize>, values: &[f32]) -> TensorStats {
        let stats = ValueStats::of(values);
        TensorStats {
            name: name.to_owned(),
            shape,
            mean: stats.mean(),
            std: stats.std(),
            min: stats.min(),
            max: stats.max(),
            nan: stats.nan() as usize,
            inf: stats.inf() as usize,
        }
    }
}

impl TllmSummary {
    /// Summarises a validated TLLM file, reading every value once.
    pub fn of<B: AsRef<[u8]>>(file: &Tllm<B>) -> Self {
        let config = *file.config();
        let tensors = file
            .tensors()
            .map(|t| {
                let values = crate::tensor::floats::decode_f32(t.data());
                TensorStats::of(t.name(), t.shape().to_vec(), &values)
            })
            .collect();
        TllmSummary {
            format: Format::Tllm,
            file_size: file.file_bytes().len() as u64,
            version: super::VERSION,
            config,
            // The file exists, so its parameter count fits.
            parameter_count: config.parameter_count().unwrap_or(u64::MAX),
            tensors,
        }
    }
}
