//! Why a decoder language model cannot be loaded or run.

use std::path::PathBuf;

/// Why a decoder language model ([`crate::lm`]) cannot be loaded or run.
/// A `config.json` value of the wrong type or range is a
/// [`modelbin_format::ModelError::InvalidMetadata`] naming the key, and a
/// tensor of the wrong shape or dtype, missing or non-finite another
/// [`modelbin_format::ModelError`]; these are the rules of the models
/// themselves.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LmError {
    /// A `model_type` that is none of the families supported.
    #[error("config.json model_type {model_type:?} is not supported: expected {supported}")]
    UnsupportedModelType {
        /// The model type as written (empty when the key is missing or not a string).
        model_type: String,
        /// The model types there are (`gpt2, gpt_neox, llama or qwen2`).
        supported: String,
    },
    /// A RoPE scaling type other than `default`, `linear` and `llama3`.
    #[error(
        "config.json rope type {rope_type:?} is not supported: expected default, linear or llama3"
    )]
    UnsupportedRope {
        /// The `rope_type` (or legacy `type`) as written.
        rope_type: String,
    },
    /// A key of the RoPE parameters that the rope type needs but is
    /// missing, or a value it cannot use.
    #[error("config.json rope parameter {key}: {reason}")]
    BadRope {
        /// The key.
        key: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// An activation function not supported.
    #[error(
        "config.json {key} {name:?} is not supported: expected gelu, gelu_new, gelu_pytorch_tanh, silu, swish or relu"
    )]
    UnsupportedActivation {
        /// The key (`activation_function` or `hidden_act`).
        key: &'static str,
        /// The name as written.
        name: String,
    },
    /// A layer `layer_types` gives sliding-window attention while
    /// `sliding_window` is `null` (transformers refuses it too).
    #[error("config.json: layer {layer} uses sliding-window attention, but sliding_window is null")]
    NoSlidingWindow {
        /// The first such layer.
        layer: usize,
    },
    /// Gemma's `use_bidirectional_attention`: an encoder, not a causal
    /// decoder.
    #[error("config.json use_bidirectional_attention: bidirectional attention is not supported")]
    BidirectionalAttention,
    /// GPT-2 with cross-attention (an encoder-decoder's decoder).
    #[error("config.json add_cross_attention: cross-attention is not supported")]
    CrossAttention,
    /// Attention heads that do not divide the hidden width (where the
    /// head width derives from it).
    #[error("config.json: {heads} attention heads do not divide hidden_size {hidden}")]
    HeadsDoNotDivide {
        /// The hidden width.
        hidden: usize,
        /// The heads.
        heads: usize,
    },
    /// Key/value heads that do not divide the query heads.
    #[error("config.json: {kv_heads} key/value heads do not divide {heads} attention heads")]
    KvHeadsDoNotDivide {
        /// The query heads.
        heads: usize,
        /// The key/value heads.
        kv_heads: usize,
    },
    /// A site name that is none of SAELens's hook points.
    #[error("site {name:?}: expected resid_pre, resid_post, attn_out or mlp_out")]
    UnknownSite {
        /// The name given.
        name: String,
    },
    /// A layer the model does not have.
    #[error("layer {layer}: the model has {layers} layers")]
    NoSuchLayer {
        /// The layer asked for.
        layer: usize,
        /// The model's layers.
        layers: usize,
    },
    /// A language model directory without a `tokenizer.json`, asked to
    /// read text.
    #[error("{dir}: has no tokenizer.json, which reading text with the model needs")]
    NoTokenizer {
        /// The model directory.
        dir: PathBuf,
    },
    /// A steering whose values leave f32's range: the vector itself, the
    /// steered rows, or what the model computes from them.
    #[error(
        "steering by {steering} at {hook_name}: the steered residual stream is no longer finite in float32; use smaller alphas"
    )]
    SteeringOverflow {
        /// What was steered (`latent 3 × 1e30`).
        steering: String,
        /// Where (`blocks.0.hook_resid_post`).
        hook_name: String,
    },
    /// Token ids that are not whole windows.
    #[error("{ids} token ids are not whole windows of {window}")]
    NotWholeWindows {
        /// Ids given.
        ids: usize,
        /// The window length.
        window: usize,
    },
}
