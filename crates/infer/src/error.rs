//! The error types of this crate.

use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong running a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The weight file is invalid.
    #[error(transparent)]
    Format(#[from] modelbin_format::Error),
    /// The vocabulary cannot make a tokenizer.
    #[error(transparent)]
    Tokenize(#[from] modelbin_tokenize::Error),
    /// A token id outside the vocabulary.
    #[error("token id {id} at position {position} is not below vocab_size {vocab_size}")]
    TokenOutOfRange {
        /// The id.
        id: u32,
        /// Its position in the input.
        position: usize,
        /// The model's vocabulary size.
        vocab_size: u32,
    },
    /// More tokens than the model's context.
    #[error("{len} tokens do not fit the model's max_seq_len of {max}")]
    SequenceTooLong {
        /// Tokens given (or reached).
        len: usize,
        /// The model's limit.
        max: u32,
    },
    /// A kernel tier asked for that this CPU cannot run.
    #[error("the {0} kernel needs CPU features this machine lacks")]
    KernelUnavailable(&'static str),
    /// `MODELBIN_INT8_TIER` names no int8 kernel.
    #[error(
        "MODELBIN_INT8_TIER={0:?} names no int8 kernel (portable, avx2, avx-vnni or avx512-vnni)"
    )]
    UnknownKernel(String),
    /// A kernel tier name that names none.
    #[error("{name:?} names no kernel tier ({known})")]
    UnknownTier {
        /// The name given.
        name: String,
        /// The names there are.
        known: &'static str,
    },
    /// Kernel tiers set after the process chose others: the tiers are
    /// fixed at first use.
    #[error(
        "the kernel tiers are chosen already (f32 {f32}, int8 {int8}); set them before the first model loads"
    )]
    KernelsAlreadyChosen {
        /// The f32 tier in use.
        f32: &'static str,
        /// The int8 tier in use.
        int8: &'static str,
    },
    /// The input has no tokens.
    #[error("the input has no tokens")]
    EmptyInput,
    /// Images of a size the vision transformer cannot take.
    #[error("images of {height}×{width} pixels: {reason}")]
    ImageSize {
        /// Their height in pixels.
        height: usize,
        /// Their width in pixels.
        width: usize,
        /// Why the model cannot take them.
        reason: String,
    },
    /// A result that is NaN or infinite: the model's weights (see
    /// `modelbin verify`) or its configuration make it so. Never returned
    /// as a value.
    #[error("{what} came out NaN or infinite; check the model with `modelbin verify`")]
    NonFinite {
        /// The result: "the embedding", "the logits", ...
        what: &'static str,
    },
    /// A saved line index (`modelbin search --index`) whose embedding of a
    /// line holds a NaN or an infinity: it would rank first (NaN) or never
    /// (infinity), so the index is refused when loaded.
    #[error(
        "{path}: row {row} of the index ({file}:{line}) holds {value}; embeddings must be finite: build the index again"
    )]
    NonFiniteIndexRow {
        /// The index file.
        path: PathBuf,
        /// The row (0-based, in index order).
        row: usize,
        /// The file the row's line comes from.
        file: PathBuf,
        /// The line number (1-based).
        line: u32,
        /// The first bad value.
        value: f32,
    },
    /// The system refused to start a pool's worker threads.
    #[error("cannot start the worker threads: {0}")]
    ThreadPool(String),
    /// A sampling parameter out of range.
    #[error("invalid sampling parameter: {0}")]
    BadSampling(String),
    /// Search chunks that cannot be cut: of no tokens, or overlapping by
    /// a whole chunk.
    #[error(
        "chunks of {tokens} tokens overlapping by {overlap}: a chunk needs at least one token and more than its overlap"
    )]
    BadChunks {
        /// The tokens asked per chunk.
        tokens: usize,
        /// The overlap asked.
        overlap: usize,
    },
    /// A training run that cannot start or continue.
    #[error(transparent)]
    Training(#[from] TrainingError),
    /// A sparse-autoencoder run that cannot start or continue.
    #[error(transparent)]
    Sae(#[from] SaeError),
    /// A recording that cannot start.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Work that needs more memory than this process may take.
    #[error(transparent)]
    Memory(#[from] modelbin_format::io::memory::Shortfall),
    /// An image that cannot be read, or an image processor's configuration
    /// that cannot be followed.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// A decoder language model that cannot be loaded or run.
    #[error(transparent)]
    Lm(#[from] LmError),
}

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
    #[error(
        "config.json model_type {model_type:?} is not supported: expected {}",
        crate::lm::Family::names()
    )]
    UnsupportedModelType {
        /// The model type as written (empty when the key is missing or not a string).
        model_type: String,
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
    /// Sliding-window attention (Qwen2's `use_sliding_window`, or a
    /// `sliding_attention` layer): not supported, where running full
    /// attention instead would give other results silently.
    #[error("config.json: layer {layer} uses sliding-window attention, which is not supported")]
    SlidingWindow {
        /// The first such layer.
        layer: usize,
    },
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

/// Why an image cannot become a model's input. The variants about one
/// image carry the reason only: the caller, which knows where the bytes
/// came from, names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The model directory has no `preprocessor_config.json`.
    #[error(
        "{path}: no such file; the model directory needs its image processor's preprocessor_config.json (as `save_pretrained` writes it)"
    )]
    MissingConfig {
        /// The file looked for.
        path: PathBuf,
    },
    /// `preprocessor_config.json` is not JSON, or a value has the wrong
    /// type or range.
    #[error("preprocessor_config.json: {0}")]
    BadConfig(String),
    /// A `resample` code that names no PIL filter.
    #[error(
        "preprocessor_config.json: resample {code} is not a PIL filter (NEAREST 0, LANCZOS 1, BILINEAR 2, BICUBIC 3, BOX 4, HAMMING 5)"
    )]
    UnsupportedResample {
        /// The code.
        code: i64,
    },
    /// A rescale or normalization constant that would make a pixel value
    /// NaN or infinite in f32 (where transformers would hand the model
    /// such values): not finite as f32, a standard deviation that is zero,
    /// subnormal or has no finite reciprocal, or constants that take a
    /// pixel of 0 to 255 beyond f32's range.
    #[error("preprocessor_config.json: {key} = {value}: {reason}")]
    UnusableConstant {
        /// The key, with the channel where it has one (`image_std[0]`).
        key: String,
        /// Its value, as f32 where it is used so.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A setting that changes the pixels in a way not supported here.
    #[error("preprocessor_config.json: {key} = {value} is not supported")]
    UnsupportedSetting {
        /// The key.
        key: String,
        /// Its value, as JSON.
        value: String,
    },
    /// The bytes are not a JPEG or PNG image, or are corrupt or truncated.
    #[error("cannot decode the image: {0}")]
    Decode(String),
    /// The image's header declares more pixels or memory than the decoding
    /// limits allow.
    #[error("the image is too large to decode: {0}")]
    TooLarge(String),
    /// A pixel layout the processor cannot convert to what the model takes.
    #[error("unsupported image: {0}")]
    Unsupported(String),
    /// An input (file or directory) that does not exist.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The input.
        path: PathBuf,
    },
    /// A file or directory that cannot be read.
    #[error("{path}: {reason}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        reason: String,
    },
}

/// Why a sparse-autoencoder run (training, evaluation, features) cannot
/// start or continue. The variants that name a setting are the caller's to
/// word in its own terms (a flag, a keyword argument); their messages here
/// name the setting plainly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaeError {
    /// The layer was not recorded.
    #[error("layer {layer}: the dataset recorded layers {recorded:?}")]
    NoSuchLayer {
        /// The layer asked for.
        layer: i64,
        /// The layers the dataset holds.
        recorded: Vec<i64>,
    },
    /// The dataset has no such tokens (CLS of a dataset without one).
    #[error("patches: {0}")]
    Patches(String),
    /// More latents kept than there are.
    #[error("k {k} is more than d_sae {d_sae}")]
    KAboveLatents {
        /// Latents kept per input.
        k: usize,
        /// Latents.
        d_sae: usize,
    },
    /// A setting outside its range (see
    /// [`TrainSettings::validate`](crate::sae::run::TrainSettings::validate)).
    #[error("{setting} must be {}, not {value}", .setting.requirement())]
    InvalidSetting {
        /// The setting.
        setting: crate::sae::run::SaeSetting,
        /// The value given.
        value: f64,
    },
    /// An architecture name that is none of `topk`, `batchtopk`, `relu`.
    #[error("architecture {name:?}: one of \"topk\", \"batchtopk\", \"relu\"")]
    UnknownArchitecture {
        /// The name given.
        name: String,
    },
    /// The view holds no examples.
    #[error("{dataset}: the view has no examples")]
    EmptyView {
        /// The dataset directory.
        dataset: PathBuf,
    },
    /// The output directory holds an autoencoder and replacing it was not
    /// asked for.
    #[error("{dir} holds an autoencoder; replacing it must be asked for")]
    OutputHoldsAutoencoder {
        /// The output directory.
        dir: PathBuf,
    },
    /// The output directory holds a run's checkpoint and neither resuming
    /// nor replacing it was asked for.
    #[error("{dir} holds a run's checkpoint; resume it or ask to start over")]
    OutputHoldsCheckpoint {
        /// The output directory.
        dir: PathBuf,
    },
    /// Resuming was asked for but there is no checkpoint.
    #[error("resume: {dir} holds no checkpoint ({file})")]
    NoCheckpoint {
        /// The output directory.
        dir: PathBuf,
        /// The checkpoint's file name.
        file: &'static str,
    },
    /// The checkpoint was made with other settings.
    #[error("resume: the checkpoint was made with other settings: {}", .differences.iter().map(|d| format!("{} {} (checkpoint: {})", d.setting, d.asked, d.saved)).collect::<Vec<_>>().join(", "))]
    OtherSettings {
        /// Each setting that differs.
        differences: Vec<SettingDifference>,
    },
    /// The checkpoint has as many steps as asked for, or more.
    #[error(
        "resume: already trained for {steps} steps; ask for more steps (the schedule then spans them)"
    )]
    AlreadyTrained {
        /// Steps the checkpoint holds.
        steps: u64,
    },
    /// The loss became NaN or infinite; nothing was saved.
    #[error(
        "training diverged at step {step} (mse {mse}); nothing was saved: lower the learning rate"
    )]
    Diverged {
        /// The step.
        step: u64,
        /// Its mean squared error.
        mse: f64,
    },
    /// Trained weights (or optimiser moments) that hold a NaN or an
    /// infinity: refused before they are saved, so no file holds them.
    #[error(
        "the trained {name} holds {value} at element {index}; nothing was saved: lower the learning rate, or check the checkpoint resumed from"
    )]
    NonFiniteWeights {
        /// The tensor (`W_dec`, `m.w_enc`, ...).
        name: String,
        /// The element's index (row-major).
        index: usize,
        /// Its value.
        value: f32,
    },
    /// A checkpoint value a run cannot resume from: a tensor that holds
    /// a NaN or an infinity, a negative second moment, an input scale that
    /// is not a positive normal number, a threshold that is not finite.
    #[error("resume: {path}: {name} is {value}; {expected}")]
    BadCheckpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// The value's name (`scale`, `threshold`, a tensor and element).
        name: String,
        /// The value found.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// An input vector holds NaN or Inf.
    #[error(
        "{dataset}: the vector of image {img}, layer {layer}, token {token} holds NaN or Inf; SAEs train on finite values (`modelbin acts verify --values` counts them)"
    )]
    NonFiniteInput {
        /// The dataset directory.
        dataset: PathBuf,
        /// The vector's image.
        img: u64,
        /// Its layer.
        layer: i64,
        /// Its token.
        token: u64,
    },
    /// A batch holds NaN or Inf that no single vector of the view holds.
    #[error("{dataset}: a batch holds NaN or Inf")]
    NonFiniteBatch {
        /// The dataset directory.
        dataset: PathBuf,
    },
    /// The autoencoder's width differs from the dataset's.
    #[error("{dir}: the autoencoder takes vectors of {sae} values, the dataset holds {dataset}")]
    WidthMismatch {
        /// The autoencoder's directory.
        dir: PathBuf,
        /// Its input width.
        sae: usize,
        /// The dataset's vector width.
        dataset: usize,
    },
    /// The cross-entropy is measured on recordings of TLLM models and of
    /// decoder language models only.
    #[error(
        "model: the dataset was recorded from a {family:?} model; the cross-entropy is measured on TLLM and decoder language-model recordings"
    )]
    NoSplice {
        /// The dataset's model family.
        family: String,
    },
    /// The dataset kept no token ids to run the model on.
    #[error(
        "model: {dataset} kept no token ids (tokens.bin); record it again with `modelbin acts record`"
    )]
    NoTokenIds {
        /// The dataset directory.
        dataset: PathBuf,
    },
    /// The model to splice into is not a TLLM file.
    #[error(
        "{model}: the file's format is {format}; the cross-entropy needs the TLLM model the dataset was recorded from"
    )]
    NotTllm {
        /// The file.
        model: PathBuf,
        /// Its format.
        format: modelbin_format::Format,
    },
    /// The autoencoder's width is not the model's at the site it splices
    /// into.
    #[error(
        "the autoencoder takes vectors of {sae} values; the model's rows at the site hold {model}"
    )]
    ModelWidth {
        /// The autoencoder's input width.
        sae: usize,
        /// The model's width at the site.
        model: usize,
    },
    /// An autoencoder's `cfg.json` key that is missing where it is needed,
    /// of the wrong type, or of a value that changes what the autoencoder
    /// computes in a way not supported.
    #[error("{path}: {key} = {value}: {reason}")]
    BadConfig {
        /// The `cfg.json`.
        path: PathBuf,
        /// The key (dotted inside an object).
        key: String,
        /// Its value as JSON (`null` when missing).
        value: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A tensor in an autoencoder's weights that its architecture does
    /// not have (SAELens refuses to load such a file too).
    #[error("{path}: tensor {name:?} is not one of the {architecture} architecture's")]
    UnexpectedTensor {
        /// The weights file.
        path: PathBuf,
        /// The tensor.
        name: String,
        /// The architecture.
        architecture: &'static str,
    },
    /// The autoencoder was trained at another hook point than the one the
    /// dataset's layer was recorded at (or the model is hooked at).
    #[error(
        "{dir}: the autoencoder was trained at {hook_name}; the dataset's layer was recorded at {recorded}"
    )]
    OtherHook {
        /// The autoencoder's directory.
        dir: PathBuf,
        /// Its `hook_name`.
        hook_name: String,
        /// The hook the dataset's layer was recorded at.
        recorded: String,
    },
    /// The autoencoder's configuration names no hook point.
    #[error("{dir}: cfg.json names no hook_name (metadata.hook_name) to steer at")]
    NoHookName {
        /// The autoencoder's directory.
        dir: PathBuf,
    },
    /// The autoencoder's hook point is not a site of a block.
    #[error(
        "{dir}: hook_name {hook_name:?} is not blocks.L.hook_<site> of resid_pre, resid_post, attn_out or mlp_out"
    )]
    UnknownHook {
        /// The autoencoder's directory.
        dir: PathBuf,
        /// The name it gives.
        hook_name: String,
    },
    /// The model is not the one the dataset was recorded from.
    #[error("model {model}: its hash is {hash}, the dataset was recorded from {recorded}")]
    OtherModel {
        /// The model.
        model: PathBuf,
        /// Its hash.
        hash: String,
        /// The hash the dataset names.
        recorded: String,
    },
    /// The autoencoder was trained on another model than the one it is
    /// applied to (its `cfg.json` names the checkpoint).
    #[error("{model}: its checkpoint is {hash}; the autoencoder {sae} was trained on {trained}")]
    TrainedOnOtherModel {
        /// The autoencoder's directory.
        sae: PathBuf,
        /// The model.
        model: PathBuf,
        /// The model's checkpoint id.
        hash: String,
        /// The checkpoint the autoencoder names.
        trained: String,
    },
    /// Decoder effects are read from TLLM, BERT and decoder language
    /// models only.
    #[error(
        "model: the dataset was recorded from a {family:?} model; decoder effects are read from TLLM, BERT and decoder language models"
    )]
    NoDecoderEffects {
        /// The dataset's model family.
        family: String,
    },
    /// A latent the autoencoder does not have.
    #[error("latent {latent}: the autoencoder has {d_sae} latents")]
    NoSuchLatent {
        /// The latent asked for.
        latent: usize,
        /// Its latents.
        d_sae: usize,
    },
    /// The caller stopped the run (an interrupt); nothing was saved past
    /// the last checkpoint.
    #[error("interrupted")]
    Interrupted,
}

/// A setting of a resumed run that differs from its checkpoint's.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingDifference {
    /// The setting's name (`lr`, `threads`, ...).
    pub setting: String,
    /// The value asked for, as JSON.
    pub asked: serde_json::Value,
    /// The checkpoint's value, as JSON.
    pub saved: serde_json::Value,
}

/// Why a training run cannot start or continue.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainingError {
    /// The corpus holds no bytes.
    #[error("the corpus is empty")]
    EmptyCorpus,
    /// The validation fraction is outside [0, 1).
    #[error("the validation fraction {0} must be in [0, 1)")]
    ValidationFraction(f64),
    /// A part of the corpus is too short for what it must hold.
    #[error("the {part} part of the corpus has {bytes} bytes; it needs at least {needed}")]
    CorpusTooShort {
        /// `training` or `validation`.
        part: &'static str,
        /// Its length.
        bytes: usize,
        /// The least it needs (one sequence plus its target for training,
        /// two bytes for validation).
        needed: usize,
    },
    /// A batch of no sequences.
    #[error("the batch size must be at least 1")]
    EmptyBatch,
    /// A checkpoint of another model configuration than the one asked for.
    #[error(
        "{path}: the checkpoint is a different model ({saved}) from the one asked for ({requested})"
    )]
    OtherConfiguration {
        /// The checkpoint.
        path: PathBuf,
        /// Its configuration.
        saved: String,
        /// The one asked for.
        requested: String,
    },
    /// A checkpoint trained with another seed (batches would differ).
    #[error("{path}: the checkpoint was trained with seed {saved}, not {requested}")]
    OtherSeed {
        /// The checkpoint.
        path: PathBuf,
        /// Its seed.
        saved: u64,
        /// The one asked for.
        requested: u64,
    },
    /// The output holds a model and neither resuming nor replacing it was
    /// asked for.
    #[error("{path} exists; resume training it or ask to start over")]
    OutputExists {
        /// The model file.
        path: PathBuf,
    },
    /// The output cannot be written (checked before any work).
    #[error("cannot write the model: {0}")]
    OutputUnwritable(#[source] modelbin_format::Error),
    /// The checkpoint holds as many steps as asked for, or more.
    #[error("{path} is already trained for {steps} steps; ask for more steps to go on")]
    AlreadyTrained {
        /// The model file.
        path: PathBuf,
        /// Steps it holds.
        steps: u64,
    },
    /// The loss became NaN or infinite.
    #[error(
        "training diverged at step {step} (loss {loss}); nothing was saved since the last checkpoint: lower the learning rate"
    )]
    Diverged {
        /// The step.
        step: u64,
        /// Its loss.
        loss: f64,
    },
    /// The optimiser state beside a checkpoint cannot be used.
    #[error("{path}: {reason}")]
    OptimizerState {
        /// The sidecar file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// `values` unchanged when every one is finite, else [`Error::NonFinite`]
/// naming `what`.
pub(crate) fn finite<T: AsRef<[f32]>>(values: T, what: &'static str) -> Result<T> {
    if values.as_ref().iter().all(|v| v.is_finite()) {
        Ok(values)
    } else {
        Err(Error::NonFinite { what })
    }
}

/// Why a recording cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A TLLM model whose vocabulary is not byte-level.
    #[error(
        "{path}: vocab_size {vocab_size} is not byte-level (≥ 256), so text cannot be its input"
    )]
    NotByteLevel {
        /// The model.
        path: PathBuf,
        /// Its vocabulary size.
        vocab_size: u32,
    },
    /// A file that is not a model this can record.
    #[error(
        "{path}: the file's format is {format}; recording reads TLLM and EMBD models (or a Hugging Face model directory)"
    )]
    NotAModel {
        /// The file.
        path: PathBuf,
        /// Its format.
        format: modelbin_format::Format,
    },
    /// The CLS row asked of a model without one.
    #[error("cls: only a BERT model has a [CLS] token")]
    NoClsToken,
    /// A setting only a language model's recording takes, asked of
    /// another model's.
    #[error(
        "{setting}: applies to recordings of a decoder language model (or of images, for int8)"
    )]
    LanguageModelSetting {
        /// The setting (`int8`, `site`).
        setting: &'static str,
    },
    /// A window too short to hold its BOS token and a token of text.
    #[error(
        "tokens_per_text {window}: a window starts with the BOS token, so it must hold at least 2 tokens (or turn the BOS off)"
    )]
    WindowTooShortForBos {
        /// The window asked for.
        window: usize,
    },
    /// A layer the model does not have.
    #[error("layers {layer}: the model has {blocks} blocks")]
    NoSuchLayer {
        /// The layer asked for.
        layer: i64,
        /// The model's blocks.
        blocks: usize,
    },
    /// A BERT model whose context holds nothing besides CLS and SEP.
    #[error("{path}: the model's context holds no token besides [CLS] and [SEP]")]
    NoRoom {
        /// The model.
        path: PathBuf,
    },
    /// A window longer than the model's context.
    #[error("tokens_per_text {window}: at most {longest} tokens fit the model's context")]
    WindowTooLong {
        /// The window asked for.
        window: usize,
        /// The longest that fits.
        longest: usize,
    },
    /// A text file that is not UTF-8, for a model that reads text.
    #[error("{path}: is not UTF-8 text ({model} reads text)")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The model in use (`a BERT model`, `a gpt2 language model`).
        model: String,
    },
    /// Fewer tokens than one window.
    #[error("the text has {tokens} tokens, fewer than one window of {window}")]
    TooFewTokens {
        /// Tokens in the files.
        tokens: usize,
        /// The window.
        window: usize,
    },
    /// No file of the inputs decodes as an image.
    #[error("none of the {files} image files decodes; nothing to record")]
    NoImages {
        /// Image files found.
        files: usize,
    },
    /// An image file that does not decode (refused in strict mode, else
    /// skipped).
    #[error("{path}: {reason}")]
    BadImage {
        /// The file.
        path: PathBuf,
        /// Why it does not decode.
        reason: String,
    },
    /// An image file whose bytes changed, or that went away, between the
    /// start of the recording and its round.
    #[error("{path}: the file changed or went away while it was being recorded")]
    ImageChanged {
        /// The file.
        path: PathBuf,
    },
    /// The caller stopped the recording; nothing was written.
    #[error("interrupted")]
    Interrupted,
    /// A recorded vector that holds a NaN or an infinity: the recording
    /// stops before writing it (and leaves no dataset), whatever made it
    /// so (non-finite weights, constants or inputs).
    #[error(
        "{input}: the recorded vector of layer {layer}, token {token} holds {value}; nothing was written (`modelbin verify` checks a model file's weights)"
    )]
    NonFinite {
        /// The input: the image file, or the text window.
        input: String,
        /// The layer, as the recording names it (negative from the end).
        layer: i64,
        /// The token (row) of the vector within the input: CLS first when
        /// it is recorded, then the patches or the window's tokens.
        token: usize,
        /// The first bad value.
        value: f32,
    },
}
