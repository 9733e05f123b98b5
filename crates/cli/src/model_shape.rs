//! The shape flags `tllm init` and `tllm train` share, and configuration
//! errors in their words.

use clap::Args;
use modelbin_format::tllm::Config;
use modelbin_infer::tllm::train::default_shape;

use crate::args::parse_non_negative;
use crate::failure::Failure;

/// The library's default shape, which the flags take.
static SHAPE: std::sync::LazyLock<Config> = std::sync::LazyLock::new(|| default_shape(256));

/// The shape of a model: the same flags and defaults for `tllm init` and
/// `tllm train`.
#[derive(Debug, Args)]
pub struct ModelShape {
    /// Model dimension.
    #[arg(long, default_value_t = SHAPE.model_dim)]
    pub dim: u32,
    /// Transformer blocks.
    #[arg(long, default_value_t = SHAPE.n_layers)]
    pub layers: u32,
    /// Attention heads (must divide --dim).
    #[arg(long, default_value_t = SHAPE.n_heads)]
    pub heads: u32,
    /// Feed-forward hidden dimension.
    #[arg(long, default_value_t = SHAPE.ffn_hidden_dim)]
    pub ffn: u32,
    /// Context length (max_seq_len; training runs on windows this long).
    #[arg(long, default_value_t = SHAPE.max_seq_len)]
    pub seq: u32,
    /// Residual dropout rate (stored in the header; used by training only).
    #[arg(long, default_value_t = SHAPE.dropout, value_parser = parse_non_negative)]
    pub dropout: f32,
}

impl ModelShape {
    /// The configuration of a model of this shape over `vocab_size` tokens,
    /// checked, its errors in the flags' words.
    pub fn config(&self, vocab_size: u32) -> Result<Config, Failure> {
        let config = Config {
            model_dim: self.dim,
            n_layers: self.layers,
            n_heads: self.heads,
            ffn_hidden_dim: self.ffn,
            max_seq_len: self.seq,
            vocab_size,
            dropout: self.dropout,
        };
        config.validate().map_err(config_failure)?;
        Ok(config)
    }
}

/// A configuration error in the words of the flags that set each field: a
/// usage error (exit 2), as an invalid value is.
pub fn config_failure(e: modelbin_format::Error) -> Failure {
    use modelbin_format::{Error, TllmError};
    match e {
        Error::Tllm(TllmError::InvalidConfig {
            field,
            value,
            reason,
            ..
        }) => {
            let flag = match field {
                "model_dim" => "--dim",
                "n_layers" => "--layers",
                "n_heads" => "--heads",
                "ffn_hidden_dim" => "--ffn",
                "max_seq_len" => "--seq",
                "vocab_size" => "--vocab",
                _ => "--dropout",
            };
            let reason = reason.replace("model_dim", "--dim");
            Failure::Usage(format!("{flag} {value}: {reason}"))
        }
        other => Failure::Invalid(other.to_string()),
    }
}
