//! Where each tensor of a TLLM model sits in the trainer's one flat
//! parameter vector (TLLM file order); gradients use the same layout.

use std::ops::Range;

use modelbin_format::tllm::{Config, ModelTensor, PerLayerTensor};

/// Where each tensor sits in the flat parameter vector (TLLM file order).
#[derive(Debug, Clone)]
pub struct ParamLayout {
    pub(super) d: usize,
    pub(super) heads: usize,
    pub(super) f: usize,
    pub(super) v: usize,
    pub(super) tok: usize,
    pub(super) pos: usize,
    /// Per layer, each tensor's offset.
    pub(super) layers: Vec<PerLayerTensor<usize>>,
    pub(super) output: usize,
    /// Each tensor's range, in file order.
    ranges: Vec<(ModelTensor, Range<usize>)>,
}

impl ParamLayout {
    /// The layout of `config`'s tensors.
    pub fn new(config: &Config) -> Self {
        let mut ranges = Vec::new();
        let mut at = 0;
        for tensor in config.model_tensors() {
            let len = tensor.shape(config).len();
            ranges.push((tensor, at..at + len));
            at += len;
        }
        let start = |wanted: ModelTensor| {
            ranges
                .iter()
                .find(|(t, _)| *t == wanted)
                .map_or(0, |(_, r)| r.start)
        };
        let layers = (0..config.n_layers)
            .map(|l| PerLayerTensor::from_fn(|t| start(ModelTensor::Layer(l, t))))
            .collect();
        ParamLayout {
            d: config.model_dim as usize,
            heads: config.n_heads as usize,
            f: config.ffn_hidden_dim as usize,
            v: config.vocab_size as usize,
            tok: start(ModelTensor::TokEmbeddings),
            pos: start(ModelTensor::PosEmbeddings),
            layers,
            output: start(ModelTensor::Output),
            ranges,
        }
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.ranges.last().map_or(0, |(_, r)| r.end)
    }

    /// Whether there are no parameters (never, for a valid configuration).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ranges of the tensors weight decay applies to (matrices, the
    /// embeddings included; not biases or LayerNorm parameters).
    pub fn decayed(&self) -> Vec<Range<usize>> {
        self.ranges
            .iter()
            .filter(|(tensor, _)| match tensor {
                ModelTensor::Layer(_, t) => t.is_matrix(),
                _ => true,
            })
            .map(|(_, range)| range.clone())
            .collect()
    }

    /// Each tensor's range, in file order, for per-tensor checks.
    pub fn tensor_ranges(&self) -> Vec<Range<usize>> {
        self.ranges.iter().map(|(_, range)| range.clone()).collect()
    }
}
