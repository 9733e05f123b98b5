//! Why a sparse-autoencoder run cannot start or continue, and the
//! settings with a range that it names.

use std::path::PathBuf;

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
        setting: SaeSetting,
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
        "{dataset}: the vector of image {img}, layer {layer}, token {token} holds NaN or Inf; SAEs train on finite values (verifying the dataset's values counts them)"
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
    #[error("model: {dataset} kept no token ids (tokens.bin); record it again to keep them")]
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
    /// A directory holding no autoencoder of a layout read (see
    /// [`crate::sae::layouts`]).
    #[error(
        "{dir}: no autoencoder here (looked for SAELens's cfg.json + sae_weights.safetensors, sparsify's cfg.json + sae.safetensors, Gemma Scope's params.npz or params.safetensors, Llama Scope's hyperparams.json + checkpoints/final.safetensors){}",
        inside_note(inside)
    )]
    UnknownLayout {
        /// The directory.
        dir: PathBuf,
        /// Its subdirectories that hold one (a run of several hook
        /// points), to name one of.
        inside: Vec<String>,
    },
    /// A downloaded autoencoder's file whose key or tensor is missing, of
    /// the wrong type or shape, or not finite.
    #[error("{path}: {what}: {reason}")]
    BadLayout {
        /// The file.
        path: PathBuf,
        /// The key or tensor.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// A downloaded autoencoder that computes something modelbin does not
    /// (a transcoder, a skip connection, attention-head inputs, ...).
    #[error("{path}: {feature} is not supported")]
    UnsupportedLayout {
        /// The file that says so.
        path: PathBuf,
        /// What it is.
        feature: String,
    },
}

/// `; it holds autoencoders in a, b, …: name one` for a directory with
/// autoencoders in subdirectories.
fn inside_note(inside: &[String]) -> String {
    const SHOWN: usize = 8;
    match inside.len() {
        0 => String::new(),
        n => {
            let mut names = inside[..n.min(SHOWN)].join(", ");
            if n > SHOWN {
                names.push_str(&format!(" and {} more", n - SHOWN));
            }
            format!("; it holds autoencoders in {names}: name one")
        }
    }
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

/// A setting of a run with a range ([`SaeError::InvalidSetting`] names
/// it). Each face words it as its own flag or keyword; [`name`](Self::name)
/// is the plain name, which is also Python's keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaeSetting {
    /// Latents (at least 1).
    DSae,
    /// Latents kept per input (at least 1).
    K,
    /// Weight of the L1 penalty (finite, above 0).
    L1Coeff,
    /// Weight of the JumpReLU L0 penalty (finite, above 0).
    L0Coeff,
    /// Width of the JumpReLU pseudo-derivatives' window (finite, above 0).
    Bandwidth,
    /// Optimisation steps (at least 1).
    Steps,
    /// Peak learning rate (finite, above 0).
    Lr,
    /// Examples per batch (at least 1).
    BatchSize,
}

impl SaeSetting {
    /// The setting's plain name: `d_sae`, `k`, `l1_coeff`, `l0_coeff`,
    /// `bandwidth`, `steps`, `lr`, `batch_size`.
    pub fn name(self) -> &'static str {
        match self {
            SaeSetting::DSae => "d_sae",
            SaeSetting::K => "k",
            SaeSetting::L1Coeff => "l1_coeff",
            SaeSetting::L0Coeff => "l0_coeff",
            SaeSetting::Bandwidth => "bandwidth",
            SaeSetting::Steps => "steps",
            SaeSetting::Lr => "lr",
            SaeSetting::BatchSize => "batch_size",
        }
    }

    /// What its value must be, completing "must be …".
    pub fn requirement(self) -> &'static str {
        if self.is_count() {
            "at least 1"
        } else {
            "a finite number above 0"
        }
    }

    /// Whether it is a whole number (else a real one).
    fn is_count(self) -> bool {
        !matches!(
            self,
            SaeSetting::L1Coeff | SaeSetting::L0Coeff | SaeSetting::Bandwidth | SaeSetting::Lr
        )
    }

    /// `value` when it is in the setting's range, else
    /// [`SaeError::InvalidSetting`]. Counts must be at least 1, reals
    /// finite and above 0 (a learning rate or penalty of 0, a NaN or an
    /// infinity trains nothing or diverges at once).
    pub fn check(self, value: f64) -> std::result::Result<(), SaeError> {
        let valid = if self.is_count() {
            value >= 1.0
        } else {
            value.is_finite() && value > 0.0
        };
        if valid {
            Ok(())
        } else {
            Err(SaeError::InvalidSetting {
                setting: self,
                value,
            })
        }
    }
}

impl std::fmt::Display for SaeSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
