//! Why a TLLM training run cannot start or continue.

use std::path::PathBuf;

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
