//! A decoder language model's configuration once read: the shape and the
//! block description every family's `config.json` becomes (see
//! [`super::family`], one file per family, for the keys each reads and
//! transformers' defaults), and the readers the families share: the RoPE
//! parameters in both layouts (the top-level `rope_theta` / `rope_scaling`
//! of hub files, and transformers 5's `rope_parameters`), the activation
//! names, the special token ids.

use std::path::Path;

use modelbin_format::io::source::{self, JsonCaps};

/// The `model_type` `dir/config.json` names, if it names one (nothing
/// else is read or checked: [`LanguageModel::open`] does). For faces
/// that take either a language model or another model's directory.
///
/// [`LanguageModel::open`]: crate::lm::LanguageModel::open
pub fn model_type_of_dir(dir: &Path) -> Option<String> {
    let path = dir.join("config.json");
    let json = source::read_json(&path, "a model configuration file", JsonCaps::CONFIG).ok()?;
    Some(json.get("model_type")?.as_str()?.to_owned())
}

/// The activation of the MLP (of the gate, in a gated MLP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    /// `gelu`: the exact form, with erf.
    GeluErf,
    /// `gelu_new`, `gelu_pytorch_tanh`: the tanh approximation.
    GeluTanh,
    /// `silu` / `swish`: `x · σ(x)`.
    Silu,
    /// `relu`.
    Relu,
}

/// A block's normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NormKind {
    /// LayerNorm: weight and bias, the mean subtracted (GPT-2, NeoX).
    Layer,
    /// RMSNorm: weight only (Llama, Qwen, Mistral, Gemma).
    Rms,
}

/// How the inverse frequencies of the rotary embedding are scaled
/// (transformers' `rope_type`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RopeScaling {
    /// `default`: none.
    None,
    /// `linear`: every frequency divided by `factor`.
    Linear {
        /// The factor.
        factor: f32,
    },
    /// `llama3`: low frequencies divided by `factor`, high ones kept, a
    /// smooth blend between.
    Llama3 {
        /// The factor.
        factor: f32,
        /// `low_freq_factor`.
        low: f32,
        /// `high_freq_factor`.
        high: f32,
        /// `original_max_position_embeddings`.
        original: f32,
    },
}

/// Rotary position embeddings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rope {
    /// The base (`rope_theta`).
    pub theta: f32,
    /// Leading dimensions of each head that rotate (even).
    pub dims: usize,
    /// The scaling of the frequencies.
    pub scaling: RopeScaling,
}

/// A family of decoder language models, by `config.json`'s `model_type`:
/// `gpt2` (GPT-2), `gpt_neox` (Pythia, GPT-NeoX), `llama` (Llama 1–3.x,
/// TinyLlama, SmolLM), `mistral`, `qwen2` (Qwen2, Qwen2.5), `qwen3`,
/// `gemma2` (Gemma 2) and `gemma3_text` (Gemma 3's text models). The families are
/// listed, each with how its configuration is read and where its tensors
/// are, in the `lm/family/` folder.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Family(pub(crate) &'static str);

impl Family {
    /// The family's `model_type`.
    pub fn name(&self) -> &'static str {
        self.0
    }
}

impl std::fmt::Debug for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Family({:?})", self.0)
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// What a decoder language model's `config.json` says, once validated:
/// the shape, and the block as data (norms, biases, MLP, rotary
/// embedding), so the one decoder block (`lm/block.rs`) runs every family.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LmConfig {
    /// The family.
    pub family: Family,
    /// `model_type` as written.
    pub model_type: String,
    /// Width of the residual stream.
    pub hidden: usize,
    /// Transformer blocks.
    pub layers: usize,
    /// Attention (query) heads.
    pub heads: usize,
    /// Key/value heads (fewer than `heads` with grouped-query attention).
    pub kv_heads: usize,
    /// Width of each head.
    pub head_dim: usize,
    /// Width of the MLP's hidden layer.
    pub intermediate: usize,
    /// Tokens in the vocabulary (rows of the embedding).
    pub vocab_size: usize,
    /// The longest sequence the model takes (`n_positions` /
    /// `max_position_embeddings`).
    pub max_positions: usize,
    /// The beginning-of-sequence token, if the configuration names one.
    pub bos_token_id: Option<u32>,
    /// The end-of-sequence tokens (a list in some configurations).
    pub eos_token_ids: Vec<u32>,
    /// Whether the output projection is the token embedding.
    pub tie_word_embeddings: bool,
    pub(crate) activation: Activation,
    /// The norms' kind, before attention, before the MLP and at the end.
    pub(crate) norm: NormKind,
    /// The norms' epsilon.
    pub(crate) norm_eps: f32,
    /// A gated MLP: `act(gate) · up`, the gate and up projections stacked.
    pub(crate) gated_mlp: bool,
    pub(crate) rope: Option<Rope>,
    /// NeoX: attention and MLP read the same input, their outputs added
    /// together to it.
    pub(crate) parallel_residual: bool,
    /// Biases on the query, key and value projections.
    pub(crate) qkv_bias: bool,
    /// A bias on the attention's output projection.
    pub(crate) out_bias: bool,
    /// Biases on the MLP's layers.
    pub(crate) mlp_bias: bool,
    /// GPT-2: the attention scores' scale is divided by the layer's index
    /// plus one.
    pub(crate) scale_by_layer: bool,
    /// GPT-2's `scale_attn_weights`: scores scaled by `1/√head_dim`.
    pub(crate) scale_attention: bool,
    /// What the later families add (Mistral, Qwen3, Gemma); all off for
    /// GPT-2, NeoX and Llama.
    pub(crate) features: Features,
}

/// What the later families add to the block and the model around it, each
/// off by default.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Features {
    /// Each layer's attention window: `Some(w)` for a sliding-window layer
    /// (query `i` sees keys `i - w + 1 ..= i`), `None` for full causal
    /// attention. Empty when every layer is full.
    pub windows: Vec<Option<usize>>,
    /// Gemma 3: the rotary embedding of the sliding-window layers, which
    /// have their own base (the full layers take [`LmConfig::rope`]).
    pub sliding_rope: Option<Rope>,
    /// Qwen3, Gemma 3: each query and key head RMS-normalised (one weight
    /// of `head_dim` for the queries, one for the keys) before rotation.
    pub qk_norm: bool,
    /// Gemma: a norm on the attention's and the MLP's outputs before each
    /// joins the residual stream (so `attn_out` and `mlp_out` are what is
    /// added, as TransformerLens hooks them).
    pub sandwich_norms: bool,
    /// Gemma: RMSNorm weights stored as offsets from one (`x̂ · (1 + w)`).
    pub norm_weight_offset: bool,
    /// Gemma: the scores' scale, `query_pre_attn_scalar^-½`, in place of
    /// `head_dim^-½`.
    pub query_scale: Option<f32>,
    /// Gemma 2: scores capped as `c · tanh(s / c)` after scaling.
    pub attention_softcap: Option<f32>,
    /// Gemma 2: logits capped as `c · tanh(l / c)`.
    pub final_softcap: Option<f32>,
    /// Gemma: the embeddings multiplied by `√hidden` (rounded to f32).
    pub embed_scale: Option<f32>,
}

impl Features {
    /// Layer `layer`'s attention window, if it slides.
    pub(crate) fn window(&self, layer: usize) -> Option<usize> {
        self.windows.get(layer).copied().flatten()
    }
}

impl LmConfig {
    /// Width of the query, key and value rows together.
    pub(crate) fn qkv_width(&self) -> usize {
        (self.heads + 2 * self.kv_heads) * self.head_dim
    }

    /// Width of the MLP's first layer (the gate and up rows together in a
    /// gated MLP).
    pub(crate) fn up_width(&self) -> usize {
        let parts = if self.gated_mlp { 2 } else { 1 };
        parts * self.intermediate
    }
}
