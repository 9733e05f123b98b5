//! What the `sae` commands share: the flags of the dataset view they read,
//! opening an autoencoder for it, and library errors in the flags' words.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use modelbin_format::saev::Patches;
use modelbin_infer::SaeError;
use modelbin_infer::sae::Sae;
use modelbin_infer::sae::config::SaeConfig;
use modelbin_infer::sae::evaluate::open_for_view as open_for_view_of;
use modelbin_infer::sae::run::SaeSetting;
use modelbin_infer::sae::view::View;

use crate::failure::{Failure, at, invalid};

/// Which tokens of each image (or text window) are examples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PatchesArg {
    /// Every token but CLS: an image's patches, a text window's tokens.
    Image,
    /// Only the CLS token.
    Cls,
    /// CLS and the rest.
    All,
}

impl From<PatchesArg> for Patches {
    fn from(p: PatchesArg) -> Patches {
        match p {
            PatchesArg::Image => Patches::Image,
            PatchesArg::Cls => Patches::Cls,
            PatchesArg::All => Patches::All,
        }
    }
}

/// The dataset view the `sae` commands read.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The SAEV dataset directory (`<root>/<HASH>`); several datasets, or
    /// a union manifest (`union.json`), are read as one.
    #[arg(required = true, num_args = 1..)]
    pub dataset: Vec<PathBuf>,
    /// The recorded layer to read (as in the dataset's `layers`, e.g. -1).
    #[arg(long, allow_negative_numbers = true)]
    pub layer: i64,
    /// Which tokens are examples.
    #[arg(long, value_enum, default_value = "image")]
    pub patches: PatchesArg,
    /// Examples per batch.
    #[arg(long, default_value_t = View::DEFAULT_BATCH_SIZE as u64)]
    batch_size: u64,
    /// Worker threads (default: one per core; at most 256).
    #[arg(long, value_parser = crate::args::parse_threads)]
    threads: Option<usize>,
}

impl ViewArgs {
    /// Opens the dataset and checks that the view exists.
    pub fn open(&self) -> Result<View, Failure> {
        View::open_union(
            &self.dataset,
            self.layer,
            self.patches.into(),
            self.batch_size as usize,
            self.threads,
        )
        .map_err(|e| sae_failure(e, &self.dataset[0]))
    }

    /// The dataset paths given, which outputs may not be written over.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.dataset.iter().map(PathBuf::as_path)
    }
}

/// A library error of the `sae` commands as a failure, worded with the
/// command line's flags where it is about one; `path` is the file or
/// directory the command was working on.
pub fn sae_failure(e: modelbin_infer::Error, path: &Path) -> Failure {
    let modelbin_infer::Error::Sae(sae) = e else {
        return match e {
            modelbin_infer::Error::Memory(shortfall) => Failure::Usage(shortfall.to_string()),
            e => at(path, e),
        };
    };
    let usage = match &sae {
        SaeError::NoSuchLayer { layer, recorded } => {
            format!("--layer {layer}: the dataset recorded layers {recorded:?}")
        }
        SaeError::Patches(reason) => format!("--patches: {reason}"),
        SaeError::KAboveLatents { k, d_sae } => format!("-k {k} is more than --d-sae {d_sae}"),
        SaeError::InvalidSetting { setting, value } => {
            let (flag, requirement) = match setting {
                SaeSetting::DSae => ("--d-sae", "at least 1"),
                SaeSetting::K => ("-k", "at least 1"),
                SaeSetting::L1Coeff => ("--l1-coeff", "a finite number > 0"),
                SaeSetting::L0Coeff => ("--l0-coeff", "a finite number > 0"),
                SaeSetting::Bandwidth => ("--bandwidth", "a finite number > 0"),
                SaeSetting::Steps => ("--steps", "at least 1"),
                SaeSetting::Lr => ("--lr", "a finite number > 0"),
                SaeSetting::BatchSize => ("--batch-size", "at least 1"),
            };
            format!("invalid value '{value}' for '{flag}': must be {requirement}")
        }
        SaeError::OutputHoldsAutoencoder { dir } => format!(
            "{} holds an autoencoder; pass --force to replace it",
            dir.display()
        ),
        SaeError::OutputHoldsCheckpoint { dir } => format!(
            "{} holds a run's checkpoint; pass --resume to continue it or --force to start over",
            dir.display()
        ),
        SaeError::NoCheckpoint { dir, file } => {
            format!("--resume: {} holds no checkpoint ({file})", dir.display())
        }
        SaeError::OtherSettings { differences } => {
            let differ: Vec<String> = differences
                .iter()
                .map(|d| {
                    let hint = if d.setting == "threads" {
                        format!(" — pass --threads {}", d.saved)
                    } else {
                        String::new()
                    };
                    format!("{} {} (checkpoint: {}){hint}", d.setting, d.asked, d.saved)
                })
                .collect();
            format!(
                "--resume: the checkpoint was made with other settings: {}",
                differ.join(", ")
            )
        }
        SaeError::AlreadyTrained { steps } => format!(
            "--resume: already trained for {steps} steps; pass a larger --steps (the schedule then spans the new --steps)"
        ),
        SaeError::NoSplice { family } => format!(
            "--model: the dataset was recorded from a {family:?} model; the cross-entropy is measured on TLLM and decoder language-model recordings"
        ),
        SaeError::NoTokenIds { dataset } => format!(
            "--model: {} kept no token ids (tokens.bin); record it again with `modelbin acts record`",
            dataset.display()
        ),
        SaeError::NoDecoderEffects { family } => format!(
            "--model: the dataset was recorded from a {family:?} model; decoder effects are read from TLLM, BERT and decoder language models"
        ),
        SaeError::NotTllm { model, format } => {
            return Failure::Invalid(format!(
                "{}: the file's format is {format}; --model takes the TLLM model the dataset was recorded from",
                model.display()
            ));
        }
        SaeError::OtherModel {
            model,
            hash,
            recorded,
        } => format!(
            "--model {}: its hash is {hash}, the dataset was recorded from {recorded}",
            model.display()
        ),
        SaeError::Diverged { step, mse } => {
            return Failure::Invalid(format!(
                "training diverged at step {step} (mse {mse}); nothing was saved: lower --lr"
            ));
        }
        _ => return invalid(sae),
    };
    Failure::Usage(usage)
}

/// Opens the autoencoder in `dir` and the view; refused when their widths
/// differ.
pub fn open_for_view(dir: &Path, view: &ViewArgs) -> Result<(Sae<f32>, SaeConfig, View), Failure> {
    let opened = view.open()?;
    let (sae, config) = open_for_view_of(dir, &opened).map_err(|e| sae_failure(e, dir))?;
    Ok((sae, config, opened))
}
