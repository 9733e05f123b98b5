//! The TLLM model description both directions share: the configuration the
//! header stores, its validation, and the fixed list of tensors (names,
//! shapes, order) it implies.

use std::collections::BTreeMap;

use super::{HEADER_LEN, MAGIC, TllmError, VERSION};
use crate::{Error, ModelError, Result};

/// The epsilon of every LayerNorm of the architecture (biased variance).
pub const LAYER_NORM_EPS: f32 = 1e-5;

/// The model configuration stored in the header.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Config {
    /// Width of the residual stream (d).
    pub model_dim: u32,
    /// Number of transformer blocks.
    pub n_layers: u32,
    /// Attention heads; divides `model_dim`.
    pub n_heads: u32,
    /// Hidden width of the feed-forward network (F).
    pub ffn_hidden_dim: u32,
    /// Longest sequence (S), the rows of the position embeddings.
    pub max_seq_len: u32,
    /// Vocabulary size (V).
    pub vocab_size: u32,
    /// Dropout rate used in training; unused at inference. 0 ≤ dropout < 1.
    pub dropout: f32,
}

/// The shape of a stored tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `rows × cols`, stored with a (u64, u64) prefix.
    Matrix(usize, usize),
    /// `len`, stored with a u64 prefix.
    Vector(usize),
}

impl Shape {
    /// Number of f32 values.
    pub fn len(self) -> usize {
        match self {
            Shape::Matrix(r, c) => r * c,
            Shape::Vector(n) => n,
        }
    }

    /// Whether the tensor holds no value.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The dimensions as a list.
    pub fn dims(self) -> Vec<usize> {
        match self {
            Shape::Matrix(r, c) => vec![r, c],
            Shape::Vector(n) => vec![n],
        }
    }
}

/// A tensor of the format: its name (as used in conversions) and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    /// e.g. `layers.0.attn.q`.
    pub name: String,
    /// Its shape.
    pub shape: Shape,
}

/// The tensors of one transformer block, in file order: the one description
/// of a layer that the reader, the forward pass and the training backward
/// pass all iterate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayerTensor {
    /// Query projection `[d, d]`.
    AttnQ,
    /// Key projection `[d, d]`.
    AttnK,
    /// Value projection `[d, d]`.
    AttnV,
    /// Output projection `[d, d]`.
    AttnO,
    /// First feed-forward matrix `[d, F]`.
    FfnLinear1,
    /// First feed-forward bias `[F]`.
    FfnBias1,
    /// Second feed-forward matrix `[F, d]`.
    FfnLinear2,
    /// Second feed-forward bias `[d]`.
    FfnBias2,
    /// Gain of the LayerNorm before attention `[d]`.
    Ln1Weight,
    /// Bias of the LayerNorm before attention `[d]`.
    Ln1Bias,
    /// Gain of the LayerNorm before the feed-forward network `[d]`.
    Ln2Weight,
    /// Bias of the LayerNorm before the feed-forward network `[d]`.
    Ln2Bias,
}

impl LayerTensor {
    /// Every layer tensor, in file order.
    pub const ALL: [LayerTensor; 12] = [
        LayerTensor::AttnQ,
        LayerTensor::AttnK,
        LayerTensor::AttnV,
        LayerTensor::AttnO,
        LayerTensor::FfnLinear1,
        LayerTensor::FfnBias1,
        LayerTensor::FfnLinear2,
        LayerTensor::FfnBias2,
        LayerTensor::Ln1Weight,
        LayerTensor::Ln1Bias,
        LayerTensor::Ln2Weight,
        LayerTensor::Ln2Bias,
    ];

    /// The name after `layers.N.`, e.g. `attn.q`.
    pub const fn suffix(self) -> &'static str {
        match self {
            LayerTensor::AttnQ => "attn.q",
            LayerTensor::AttnK => "attn.k",
            LayerTensor::AttnV => "attn.v",
            LayerTensor::AttnO => "attn.o",
            LayerTensor::FfnLinear1 => "ffn.linear1",
            LayerTensor::FfnBias1 => "ffn.bias1",
            LayerTensor::FfnLinear2 => "ffn.linear2",
            LayerTensor::FfnBias2 => "ffn.bias2",
            LayerTensor::Ln1Weight => "ln1.weight",
            LayerTensor::Ln1Bias => "ln1.bias",
            LayerTensor::Ln2Weight => "ln2.weight",
            LayerTensor::Ln2Bias => "ln2.bias",
        }
    }

    /// Its position within the layer, in file order.
    pub const fn position(self) -> usize {
        self as usize
    }

    /// Its shape in a model of `config`.
    pub fn shape(self, config: &Config) -> Shape {
        let (d, f) = (config.model_dim as usize, config.ffn_hidden_dim as usize);
        match self {
            LayerTensor::AttnQ | LayerTensor::AttnK | LayerTensor::AttnV | LayerTensor::AttnO => {
                Shape::Matrix(d, d)
            }
            LayerTensor::FfnLinear1 => Shape::Matrix(d, f),
            LayerTensor::FfnBias1 => Shape::Vector(f),
            LayerTensor::FfnLinear2 => Shape::Matrix(f, d),
            LayerTensor::FfnBias2
            | LayerTensor::Ln1Weight
            | LayerTensor::Ln1Bias
            | LayerTensor::Ln2Weight
            | LayerTensor::Ln2Bias => Shape::Vector(d),
        }
    }

    /// Whether training decays it (the matrices; not biases or LayerNorm).
    pub const fn is_matrix(self) -> bool {
        matches!(
            self,
            LayerTensor::AttnQ
                | LayerTensor::AttnK
                | LayerTensor::AttnV
                | LayerTensor::AttnO
                | LayerTensor::FfnLinear1
                | LayerTensor::FfnLinear2
        )
    }

    /// Whether a LayerNorm gain (initialised to 1 rather than at random).
    pub const fn is_layer_norm_gain(self) -> bool {
        matches!(self, LayerTensor::Ln1Weight | LayerTensor::Ln2Weight)
    }

    /// The layer tensor whose suffix is `suffix`.
    pub fn from_suffix(suffix: &str) -> Option<LayerTensor> {
        LayerTensor::ALL.into_iter().find(|t| t.suffix() == suffix)
    }
}

/// One value per tensor of a layer, indexed by [`LayerTensor`].
#[derive(Debug, Clone, PartialEq)]
pub struct PerLayerTensor<T>(pub [T; 12]);

impl<T> PerLayerTensor<T> {
    /// Built from `f` called on each tensor in file order.
    pub fn from_fn(mut f: impl FnMut(LayerTensor) -> T) -> Self {
        PerLayerTensor(std::array::from_fn(|i| f(LayerTensor::ALL[i])))
    }

    /// `(tensor, value)` pairs in file order.
    pub fn iter(&self) -> impl Iterator<Item = (LayerTensor, &T)> {
        LayerTensor::ALL.into_iter().zip(&self.0)
    }
}

impl<T> std::ops::Index<LayerTensor> for PerLayerTensor<T> {
    type Output = T;
    fn index(&self, tensor: LayerTensor) -> &T {
        &self.0[tensor.position()]
    }
}

impl<T> std::ops::IndexMut<LayerTensor> for PerLayerTensor<T> {
    fn index_mut(&mut self, tensor: LayerTensor) -> &mut T {
        &mut self.0[tensor.position()]
    }
}

/// A tensor outside the layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelTensor {
    /// Token embeddings `[V, d]`, first in the file.
    TokEmbeddings,
    /// Position embeddings `[S, d]`, second.
    PosEmbeddings,
    /// Tensor `tensor` of layer `layer`, in layer order after the embeddings.
    Layer(u32, LayerTensor),
    /// The output projection `[d, V]`, last.
    Output,
}

impl ModelTensor {
    /// Its name as conversions write it (`layers.3.attn.q`, `output`, ...).
    pub fn name(self) -> String {
        match self {
            ModelTensor::TokEmbeddings => "tok_embeddings".into(),
            ModelTensor::PosEmbeddings => "pos_embeddings".into(),
            ModelTensor::Layer(layer, tensor) => format!("layers.{layer}.{}", tensor.suffix()),
            ModelTensor::Output => "output".into(),
        }
    }

    /// Its shape in a model of `config`.
    pub fn shape(self, config: &Config) -> Shape {
        let (d, v) = (config.model_dim as usize, config.vocab_size as usize);
        match self {
            ModelTensor::TokEmbeddings => Shape::Matrix(v, d),
            ModelTensor::PosEmbeddings => Shape::Matrix(config.max_seq_len as usize, d),
            ModelTensor::Layer(_, tensor) => tensor.shape(config),
            ModelTensor::Output => Shape::Matrix(d, v),
        }
    }
}

impl Config {
    /// Every tensor in file order: `tok_embeddings` [V, d], `pos_embeddings`
    /// [S, d], per layer N the [`LayerTensor`]s as `layers.N.SUFFIX`, then
    /// `output` [d, V].
    pub fn model_tensors(&self) -> impl Iterator<Item = ModelTensor> + use<> {
        let layers = (0..self.n_layers).flat_map(|layer| {
            LayerTensor::ALL
                .into_iter()
                .map(move |tensor| ModelTensor::Layer(layer, tensor))
        });
        [ModelTensor::TokEmbeddings, ModelTensor::PosEmbeddings]
            .into_iter()
            .chain(layers)
            .chain([ModelTensor::Output])
    }

    /// [`Config::model_tensors`] with their names and shapes.
    pub fn tensors(&self) -> Vec<TensorSpec> {
        self.model_tensors()
            .map(|t| TensorSpec {
                name: t.name(),
                shape: t.shape(self),
            })
            .collect()
    }

    /// How many tensors a file of this configuration holds
    /// (2 + 12 · n_layers + 1).
    pub fn tensor_count(&self) -> u64 {
        3 + 12 * u64::from(self.n_layers)
    }

    /// The position of tensor `name` in file order, in constant time; `None`
    /// for a name the configuration does not have.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        let layers = self.n_layers as usize;
        match name {
            "tok_embeddings" => return Some(0),
            "pos_embeddings" => return Some(1),
            "output" => return Some(2 + 12 * layers),
            _ => {}
        }
        let (layer, suffix) = name.strip_prefix("layers.")?.split_once('.')?;
        let index: usize = layer.parse().ok()?;
        if index >= layers || index.to_string() != layer {
            return None;
        }
        let within = LayerTensor::from_suffix(suffix)?.position();
        Some(2 + 12 * index + within)
    }

    /// Number of parameters, or `None` if it overflows.
    pub fn parameter_count(&self) -> Option<u64> {
        let (d, f, v, s, l) = (
            u64::from(self.model_dim),
            u64::from(self.ffn_hidden_dim),
            u64::from(self.vocab_size),
            u64::from(self.max_seq_len),
            u64::from(self.n_layers),
        );
        let per_layer = (4 * d)
            .checked_mul(d)?
            .checked_add((2 * d).checked_mul(f)?)?
            .checked_add(f + 5 * d)?;
        (2 * v)
            .checked_mul(d)?
            .checked_add(s.checked_mul(d)?)?
            .checked_add(l.checked_mul(per_layer)?)
    }

    /// The exact size of a file with this configuration, or `None` if it overflows.
    pub fn file_size(&self) -> Option<u64> {
        let prefixes = 16 * 3 + u64::from(self.n_layers) * (16 * 6 + 8 * 6);
        self.parameter_count()?
            .checked_mul(4)?
            .checked_add(prefixes)?
            .checked_add(HEADER_LEN)
    }

    /// The 36-byte file header for this configuration.
    pub fn header_bytes(&self) -> Vec<u8> {
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend(MAGIC.to_le_bytes());
        header.extend(VERSION.to_le_bytes());
        for v in [
            self.model_dim,
            self.n_layers,
            self.n_heads,
            self.ffn_hidden_dim,
            self.max_seq_len,
            self.vocab_size,
        ] {
            header.extend((v as i32).to_le_bytes());
        }
        header.extend(self.dropout.to_le_bytes());
        header
    }

    /// Checks every rule: positive dims, `model_dim % n_heads == 0`, 0 ≤ dropout < 1.
    pub fn validate(&self) -> Result<()> {
        let fields = [
            ("model_dim", self.model_dim, 8),
            ("n_layers", self.n_layers, 12),
            ("n_heads", self.n_heads, 16),
            ("ffn_hidden_dim", self.ffn_hidden_dim, 20),
            ("max_seq_len", self.max_seq_len, 24),
            ("vocab_size", self.vocab_size, 28),
        ];
        for (field, value, offset) in fields {
            if value == 0 || value > i32::MAX as u32 {
                return Err(Error::Tllm(TllmError::InvalidConfig {
                    field,
                    value: (value as i32).to_string(),
                    offset,
                    reason: "must be positive",
                }));
            }
        }
        if !self.model_dim.is_multiple_of(self.n_heads) {
            return Err(Error::Tllm(TllmError::InvalidConfig {
                field: "n_heads",
                value: self.n_heads.to_string(),
                offset: 16,
                reason: "must divide model_dim",
            }));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::Tllm(TllmError::InvalidConfig {
                field: "dropout",
                value: self.dropout.to_string(),
                offset: 32,
                reason: "must be in [0, 1)",
            }));
        }
        Ok(())
    }

    /// The configuration as string metadata (`tllm.model_dim`, ...), for conversion.
    pub fn to_metadata(&self) -> BTreeMap<String, String> {
        [
            ("format", "tllm".to_owned()),
            ("tllm.version", VERSION.to_string()),
            ("tllm.model_dim", self.model_dim.to_string()),
            ("tllm.n_layers", self.n_layers.to_string()),
            ("tllm.n_heads", self.n_heads.to_string()),
            ("tllm.ffn_hidden_dim", self.ffn_hidden_dim.to_string()),
            ("tllm.max_seq_len", self.max_seq_len.to_string()),
            ("tllm.vocab_size", self.vocab_size.to_string()),
            ("tllm.dropout", self.dropout.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// Reads a configuration back from [`Config::to_metadata`]'s keys.
    pub fn from_metadata(metadata: &BTreeMap<String, String>) -> Result<Config> {
        fn field<T: std::str::FromStr>(
            m: &BTreeMap<String, String>,
            key: &'static str,
        ) -> Result<T> {
            let value = m
                .get(key)
                .ok_or(Error::Model(ModelError::MissingMetadata { key }))?;
            value.parse().map_err(|_| {
                Error::Model(ModelError::InvalidMetadata {
                    key: key.into(),
                    value: value.clone(),
                    reason: "not a number".into(),
                })
            })
        }
        let config = Config {
            model_dim: field(metadata, "tllm.model_dim")?,
            n_layers: field(metadata, "tllm.n_layers")?,
            n_heads: field(metadata, "tllm.n_heads")?,
            ffn_hidden_dim: field(metadata, "tllm.ffn_hidden_dim")?,
            max_seq_len: field(metadata, "tllm.max_seq_len")?,
            vocab_size: field(metadata, "tllm.vocab_size")?,
            dropout: field(metadata, "tllm.dropout")?,
        };
        config.validate()?;
        Ok(config)
    }
}
