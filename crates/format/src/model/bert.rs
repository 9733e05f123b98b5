//! The BERT encoder an EMBD file carries: its configuration, read from the
//! metadata, and the tensors it needs, checked against that configuration.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::embd::{Embd, int8, metadata_number};
use crate::tensor::TensorStore;
use crate::{DType, Error, Result};
use crate::{ModelError, TllmError};

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// Mean over the tokens (all-MiniLM-L6-v2).
    Mean,
    /// The `[CLS]` token's vector.
    Cls,
    /// Element-wise maximum over the tokens.
    Max,
}

impl Pooling {
    /// The metadata spelling.
    pub fn name(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
            Pooling::Max => "max",
        }
    }
}

/// The model configuration of an EMBD file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BertConfig {
    /// Vocabulary size (rows of the word embeddings).
    pub vocab_size: usize,
    /// Width of the hidden states.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_layers: usize,
    /// Attention heads; divides `hidden_size`.
    pub num_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Rows of the position embeddings.
    pub max_position: usize,
    /// Rows of the token-type embeddings.
    pub type_vocab_size: usize,
    /// Width of the sentence embedding.
    pub embedding_dim: usize,
    /// Longest input in tokens, `[CLS]` and `[SEP]` included.
    pub max_seq_length: usize,
    /// Whether the tokenizer lowercases and strips accents.
    pub lowercase: bool,
    /// Pooling of token vectors.
    pub pooling: Pooling,
    /// Whether sentence vectors are L2-normalised.
    pub normalize: bool,
    /// LayerNorm epsilon.
    pub layer_norm_eps: f32,
}

/// Optional metadata: the value of `key`, parsed, or `default` when absent.
fn optional<T>(
    metadata: &BTreeMap<String, String>,
    key: &str,
    default: T,
    parse: impl Fn(&str) -> Option<T>,
    expected: &str,
) -> Result<T> {
    match metadata.get(key) {
        None => Ok(default),
        Some(value) => parse(value).ok_or_else(|| {
            Error::Model(ModelError::InvalidMetadata {
                key: key.into(),
                value: value.clone(),
                reason: format!("expected {expected}"),
            })
        }),
    }
}

fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

impl BertConfig {
    /// Reads the configuration from metadata. Required: the EMBD keys.
    /// Optional, with defaults: `max_seq_length` (512 or fewer positions),
    /// `do_lower_case` (true), `pooling` (mean), `normalize` (true),
    /// `layer_norm_eps` (1e-12), `hidden_act` (must be `gelu` when present).
    pub fn from_metadata(
        metadata: &BTreeMap<String, String>,
        type_vocab_size: usize,
    ) -> Result<Self> {
        let number = |key| metadata_number(metadata, key);
        let max_position = number("max_position_emb")?;
        let config = BertConfig {
            vocab_size: number("vocab_size")?,
            hidden_size: number("hidden_size")?,
            num_layers: number("num_layers")?,
            num_heads: number("num_attention_heads")?,
            intermediate_size: number("intermediate_size")?,
            max_position,
            type_vocab_size,
            embedding_dim: number("embedding_dim")?,
            max_seq_length: optional(
                metadata,
                "max_seq_length",
                max_position.min(512),
                |v| v.parse().ok().filter(|&n| (2..=max_position).contains(&n)),
                &format!("an integer from 2 to max_position_emb ({max_position})"),
            )?,
            lowercase: optional(metadata, "do_lower_case", true, parse_bool, "true or false")?,
            pooling: optional(
                metadata,
                "pooling",
                Pooling::Mean,
                |v| {
                    [Pooling::Mean, Pooling::Cls, Pooling::Max]
                        .into_iter()
                        .find(|p| p.name() == v)
                },
                "mean, cls or max",
            )?,
            normalize: optional(metadata, "normalize", true, parse_bool, "true or false")?,
            layer_norm_eps: optional(
                metadata,
                "layer_norm_eps",
                1e-12,
                |v| v.parse().ok().filter(|e: &f32| e.is_finite() && *e > 0.0),
                "a finite positive number (0 divides a constant input by zero)",
            )?,
        };
        optional(
            metadata,
            "hidden_act",
            (),
            |v| (v == "gelu").then_some(()),
            "gelu (exact erf GELU, the only activation implemented)",
        )?;
        if !config.hidden_size.is_multiple_of(config.num_heads) {
            return Err(Error::Model(ModelError::InvalidMetadata {
                key: "num_attention_heads".into(),
                value: config.num_heads.to_string(),
                reason: format!("must divide hidden_size ({})", config.hidden_size),
            }));
        }
        if config.embedding_dim != config.hidden_size {
            return Err(Error::Model(ModelError::InvalidMetadata {
                key: "embedding_dim".into(),
                value: config.embedding_dim.to_string(),
                reason: format!(
                    "pooling keeps the hidden size ({}), so they must be equal",
                    config.hidden_size
                ),
            }));
        }
        Ok(config)
    }

    /// Every tensor the encoder needs, with its shape, in a natural order.
    ///
    /// Lazy, so that a file claiming a million layers costs nothing until
    /// a caller looks for a tensor it lacks: checks stop at the first one.
    pub fn tensors(&self) -> impl Iterator<Item = (String, Vec<usize>)> + use<> {
        let (h, f) = (self.hidden_size, self.intermediate_size);
        let embeddings = [
            (
                "embeddings.word_embeddings.weight".to_owned(),
                vec![self.vocab_size, h],
            ),
            (
                "embeddings.position_embeddings.weight".to_owned(),
                vec![self.max_position, h],
            ),
            (
                "embeddings.token_type_embeddings.weight".to_owned(),
                vec![self.type_vocab_size, h],
            ),
            ("embeddings.LayerNorm.weight".to_owned(), vec![h]),
            ("embeddings.LayerNorm.bias".to_owned(), vec![h]),
        ];
        let layers = (0..self.num_layers).flat_map(move |layer| {
            let layer_shapes: [(&str, Vec<usize>); 16] = [
                ("attention.self.query.weight", vec![h, h]),
                ("attention.self.query.bias", vec![h]),
                ("attention.self.key.weight", vec![h, h]),
                ("attention.self.key.bias", vec![h]),
                ("attention.self.value.weight", vec![h, h]),
                ("attention.self.value.bias", vec![h]),
                ("attention.output.dense.weight", vec![h, h]),
                ("attention.output.dense.bias", vec![h]),
                ("attention.output.LayerNorm.weight", vec![h]),
                ("attention.output.LayerNorm.bias", vec![h]),
                ("intermediate.dense.weight", vec![f, h]),
                ("intermediate.dense.bias", vec![f]),
                ("output.dense.weight", vec![h, f]),
                ("output.dense.bias", vec![h]),
                ("output.LayerNorm.weight", vec![h]),
                ("output.LayerNorm.bias", vec![h]),
            ];
            layer_shapes
                .into_iter()
                .map(move |(suffix, shape)| (format!("encoder.layer.{layer}.{suffix}"), shape))
        });
        embeddings.into_iter().chain(layers)
    }

    /// Checks that `embd` holds a usable BERT encoder: a vocabulary of
    /// `vocab_size` tokens, and every tensor present with the shape the
    /// metadata implies and a float dtype (F32, F16 or BF16), or, for the
    /// linear layers' weights and the word embeddings, I8 with valid scales
    /// ([`crate::embd::int8`]).
    pub fn validate<B: AsRef<[u8]>>(embd: &Embd<B>) -> Result<Self> {
        if embd.special_tokens().is_none() {
            return Err(Error::Model(ModelError::InvalidMetadata {
                key: "flags".into(),
                value: format!("0x{:08X}", embd.header().flags),
                reason: "the file has no vocabulary (VOCAB_EMBEDDED is clear)".into(),
            }));
        }
        let type_vocab_size = embd
            .get("embeddings.token_type_embeddings.weight")
            .and_then(|t| t.shape().first().copied())
            .filter(|&rows| rows > 0)
            .unwrap_or(1);
        let config = BertConfig::from_metadata(&embd.metadata, type_vocab_size)?;
        for (name, shape) in config.tensors() {
            let tensor = embd
                .get(&name)
                .ok_or_else(|| Error::Model(ModelError::MissingTensor { name: name.clone() }))?;
            if tensor.shape() != shape.as_slice() {
                return Err(Error::Tllm(TllmError::DimensionMismatch {
                    offset: embd.descriptor_offset(&name).unwrap_or(0) + 8,
                    tensor: name,
                    expected: format!("{shape:?} (from the metadata)"),
                    found: format!("{:?}", tensor.shape()),
                }));
            }
            match tensor.dtype() {
                DType::F32 | DType::F16 | DType::BF16 => {}
                DType::I8 if int8::is_quantized(&name) => {
                    int8::weight_and_scales(embd, &name)?;
                }
                dtype => {
                    return Err(Error::Model(ModelError::WrongDtype {
                        name,
                        dtype,
                        expected: "model weights must be F32, F16 or BF16 (linear layer weights and word embeddings may be I8 with F32 scales)",
                    }));
                }
            }
        }
        Ok(config)
    }
}
