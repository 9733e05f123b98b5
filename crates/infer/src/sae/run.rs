//! One sparse-autoencoder training run on a dataset view, as `modelbin sae
//! train` and `modelbin.sae.train` drive it: the checks before any work
//! (the settings' ranges, memory, output directory, checkpoint), the
//! batches (shuffled epochs one after another), checkpoints every so many
//! steps, resuming bit for bit from one, the SAELens files at the end, and
//! the summary both faces print. The rules live here once so the command
//! line and Python refuse the same settings and report the same run; they
//! only word the errors with their flag or keyword names.
//!
//! The caller owns the loop, so it can show progress, log each step and
//! stop between steps:
//!
//! ```no_run
//! use modelbin_format::saev::Patches;
//! use modelbin_infer::sae::run::{TrainRun, TrainSettings};
//! use modelbin_infer::sae::train::Architecture;
//! use modelbin_infer::sae::view::View;
//! use modelbin_infer::Stepped;
//!
//! # fn main() -> modelbin_infer::Result<()> {
//! let view = View::open("acts/3f2a…".as_ref(), -1, Patches::Image, 4096, None)?;
//! let settings = TrainSettings::new(Architecture::TopK { k: 32 }, 4096, 1000);
//! let mut run = TrainRun::start(view, settings, "sae-out".as_ref())?;
//! while !run.is_done() {
//!     let report = run.step()?;
//!     println!("step {}: fvu {:.3}", report.step, report.fvu);
//! }
//! let summary = run.finish()?;
//! println!("saved in {}", summary.path.display());
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use modelbin_format::io::output::OutputFile;
use modelbin_format::saev::Loader;

pub use super::error::SaeSetting;
use super::train::{Architecture, Options, StepReport, Trainer};
use super::view::View;
use super::{checkpoint, saelens};
use crate::{Result, SaeError, SettingDifference};

/// What a training run is asked to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainSettings {
    /// Which latents fire, and `k` or the L1 weight.
    pub architecture: Architecture,
    /// Latents.
    pub d_sae: usize,
    /// Optimisation steps (one batch each; epochs repeat as needed).
    pub steps: u64,
    /// Peak learning rate (Adam; warmup over 5% of the steps, cosine to a
    /// tenth).
    pub lr: f64,
    /// Seed of the initial weights and of the shuffling.
    pub seed: u64,
    /// Dead latents reconstructing the residual in the AuxK loss (`None`:
    /// half the input width; 0: off).
    pub aux_k: Option<usize>,
    /// Inputs without firing after which a latent counts as dead.
    pub dead_after: u64,
    /// Write the run's state every this many steps (0: only at the end).
    pub checkpoint_every: u64,
    /// Continue the run whose checkpoint is in the output directory.
    pub resume: bool,
    /// Replace an autoencoder or checkpoint already in the output
    /// directory.
    pub replace: bool,
}

impl Default for TrainSettings {
    /// What a run takes when a face leaves a setting out (the command
    /// line's flag defaults, Python's keyword defaults): TopK with
    /// [`Architecture::DEFAULT_K`] latents per input, 4,096 latents, 1,000
    /// steps, and [`TrainSettings::new`]'s defaults for the rest.
    fn default() -> Self {
        TrainSettings::new(Architecture::default(), 4096, 1000)
    }
}

impl TrainSettings {
    /// `d_sae` latents of `architecture` over `steps` steps, with the
    /// command line's defaults for the rest: learning rate 1e-3, seed 0,
    /// AuxK on half the input width, dead after 10,000,000 inputs, a
    /// checkpoint only at the end, a fresh run that replaces nothing.
    pub fn new(architecture: Architecture, d_sae: usize, steps: u64) -> Self {
        TrainSettings {
            architecture,
            d_sae,
            steps,
            lr: 1e-3,
            seed: 0,
            aux_k: None,
            dead_after: 10_000_000,
            checkpoint_every: 0,
            resume: false,
            replace: false,
        }
    }

    /// Checks each setting's range, in the order the faces list them:
    /// `d_sae`, the architecture's `k` (at most `d_sae`:
    /// [`SaeError::KAboveLatents`]) or L1 weight, `steps`, `lr`
    /// ([`SaeError::InvalidSetting`]). [`TrainRun::start`] calls it; a face
    /// may call it before opening the dataset, to refuse a bad setting
    /// before any work.
    pub fn validate(&self) -> std::result::Result<(), SaeError> {
        SaeSetting::DSae.check(self.d_sae as f64)?;
        match self.architecture {
            Architecture::TopK { k } | Architecture::BatchTopK { k } => {
                SaeSetting::K.check(k as f64)?;
                if k > self.d_sae {
                    return Err(SaeError::KAboveLatents {
                        k,
                        d_sae: self.d_sae,
                    });
                }
            }
            Architecture::Relu { l1_coeff } => SaeSetting::L1Coeff.check(l1_coeff)?,
            Architecture::JumpRelu {
                l0_coeff,
                bandwidth,
            } => {
                SaeSetting::L0Coeff.check(l0_coeff)?;
                SaeSetting::Bandwidth.check(bandwidth)?;
            }
        }
        SaeSetting::Steps.check(self.steps as f64)?;
        SaeSetting::Lr.check(self.lr)
    }
}

/// The bytes a run of `d_sae` latents on vectors of `d_in` values, in
/// batches of `batch_size` over `threads` threads, is estimated to take:
/// the parameters, their Adam moments and gradients, one gradient copy per
/// thread, and two batches' worth of inputs, codes and reconstructions.
pub fn memory_estimate(d_in: usize, d_sae: usize, batch_size: usize, threads: usize) -> f64 {
    let matrix = d_sae as f64 * d_in as f64 * 4.0;
    let batch = batch_size as f64 * (d_sae as f64 + 2.0 * d_in as f64) * 4.0;
    matrix * (6.0 + 2.0 * threads as f64) + 2.0 * batch
}

/// A training run between its checks and its saved files.
pub struct TrainRun {
    view: View,
    settings: TrainSettings,
    out: PathBuf,
    /// What a resumed run must share with the run it continues.
    fingerprint: serde_json::Value,
    trainer: Trainer,
    batches: Batches,
    /// The batch `Trainer::new` was initialised from, trained on first.
    pending: Option<Vec<f32>>,
    pool: rayon::ThreadPool,
    last: Option<StepReport>,
    vectors: u64,
    /// When [`TrainRun::start`] was called: the summary's time counts the
    /// checks and the first batch too.
    started: Instant,
}

/// What a finished run reports, as `modelbin sae train` prints it (its
/// `--json` is this, serialized) and `modelbin.sae.train` returns it. The
/// last step's measures are absent when the run resumed at its last step
/// with nothing left to train.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TrainSummary {
    /// The directory the autoencoder was written to.
    pub path: PathBuf,
    /// Steps it was trained for.
    pub steps: u64,
    /// The last step's mean squared error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mse: Option<f64>,
    /// The last step's fraction of variance unexplained.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fvu: Option<f64>,
    /// The last step's mean latents firing per input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l0: Option<f64>,
    /// The last step's fraction of dead latents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_fraction: Option<f64>,
    /// Vectors trained on per second by this process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vectors_per_second: Option<f64>,
    /// Seconds since the run started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Vectors trained on by this process (not counting a resumed run's
    /// earlier steps).
    #[serde(skip)]
    pub vectors: u64,
}

impl TrainRun {
    /// Checks the settings, the memory the run needs, the view and the
    /// output directory `out` (created if missing), and starts the run, or
    /// resumes it from the checkpoint in `out` when asked to.
    pub fn start(view: View, settings: TrainSettings, out: &Path) -> Result<TrainRun> {
        let started = Instant::now();
        settings.validate()?;
        let d_in = view.d_in();
        let d_sae = settings.d_sae;
        modelbin_format::io::memory::check(
            memory_estimate(d_in, d_sae, view.batch_size(), view.threads()),
            "this autoencoder",
        )?;
        if view.examples() == 0 {
            return Err(SaeError::EmptyView {
                dataset: view.union().path().to_path_buf(),
            }
            .into());
        }
        prepare_output(out, &settings)?;
        let checkpoint_path = out.join(checkpoint::CHECKPOINT_FILE);
        let pool = crate::threads::pool(Some(view.threads()))?;
        let mut options = Options::new(settings.architecture, d_sae, settings.steps, settings.lr);
        options.aux_k = settings.aux_k.unwrap_or(d_in / 2).min(d_sae);
        options.dead_after = settings.dead_after;
        options.seed = settings.seed;
        let fingerprint = fingerprint(&view, &settings, &options);
        let (mut epoch, mut taken) = (0, 0);
        let mut resumed = None;
        if settings.resume {
            let (trainer, record) = checkpoint::load(&checkpoint_path, d_in, options)?;
            check_same_settings(&fingerprint, &record["settings"])?;
            if trainer.steps_done() > settings.steps
                || (trainer.steps_done() == settings.steps
                    && out.join(saelens::CONFIG_FILE).is_file())
            {
                return Err(SaeError::AlreadyTrained {
                    steps: trainer.steps_done(),
                }
                .into());
            }
            epoch = record["epoch"].as_u64().unwrap_or(0);
            taken = record["taken"].as_u64().unwrap_or(0);
            resumed = Some(trainer);
        }
        let mut batches = Batches::at(&view, settings.seed, epoch, taken)?;
        let mut pending = None;
        let trainer = match resumed {
            Some(trainer) => trainer,
            None => {
                let first = batches.next(&view)?;
                let trainer = Trainer::new(&first, d_in, options);
                pending = Some(first);
                trainer
            }
        };
        Ok(TrainRun {
            view,
            settings,
            out: out.to_path_buf(),
            fingerprint,
            trainer,
            batches,
            pending,
            pool,
            last: None,
            vectors: 0,
            started,
        })
    }

    /// Vectors trained on by this process so far.
    pub fn vectors(&self) -> u64 {
        self.vectors
    }

    /// The view trained on.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// Runs one step on the next batch, and writes the checkpoint when the
    /// settings ask for one at this step (always at the last). A loss that
    /// is NaN or infinite stops the run with [`SaeError::Diverged`].
    pub fn step(&mut self) -> Result<StepReport> {
        let batch = match self.pending.take() {
            Some(batch) => batch,
            None => self.batches.next(&self.view)?,
        };
        let chunks = self.pool.current_num_threads();
        let trainer = &mut self.trainer;
        let report = self.pool.install(|| trainer.step(&batch, chunks));
        if !report.mse.is_finite() {
            return Err(SaeError::Diverged {
                step: report.step,
                mse: report.mse,
            }
            .into());
        }
        self.vectors += (batch.len() / self.view.d_in()) as u64;
        self.last = Some(report);
        let every = self.settings.checkpoint_every;
        if report.step == self.settings.steps || (every > 0 && report.step.is_multiple_of(every)) {
            let record = serde_json::json!({
                "settings": self.fingerprint,
                "epoch": self.batches.epoch,
                "taken": self.batches.taken,
            });
            checkpoint::save(
                &self.out.join(checkpoint::CHECKPOINT_FILE),
                &self.trainer,
                &record,
            )?;
        }
        Ok(report)
    }

    /// Saves the autoencoder (unscaled) in SAELens's layout, with the run's
    /// provenance in `cfg.json`'s metadata, and reports the run.
    pub fn finish(self) -> Result<TrainSummary> {
        let metadata = self.view.union().metadata();
        let settings = &self.settings;
        let mut provenance = serde_json::json!({
            "dataset": self.view.union().path(),
            "dataset_hash": self.view.union().hash(),
            "model_family": metadata.vit_family,
            "model": metadata.vit_ckpt,
            "layer": self.view.layer(),
            "patches": self.view.patches_name(),
            "steps": settings.steps,
            "batch_size": self.view.batch_size(),
            "seed": settings.seed,
            "input_scale": self.trainer.scale,
            "trained_as": settings.architecture.name(),
            "trained_by": concat!("modelbin ", env!("CARGO_PKG_VERSION")),
        });
        provenance
            .as_object_mut()
            .expect("the provenance is an object")
            .extend(architecture_parameters(settings.architecture));
        if let Some(hook) = saelens::hook_metadata(metadata, self.view.layer()) {
            provenance
                .as_object_mut()
                .expect("the provenance is an object")
                .extend(hook);
        }
        let sae = self.trainer.unscaled();
        saelens::save(&self.out, &sae, provenance)?;
        let seconds = self.started.elapsed().as_secs_f64();
        let last = self.last;
        Ok(TrainSummary {
            path: self.out,
            steps: last.map_or(self.trainer.steps_done(), |r| r.step),
            mse: last.map(|r| r.mse),
            fvu: last.map(|r| r.fvu),
            l0: last.map(|r| r.l0),
            dead_fraction: last.map(|r| r.dead_fraction),
            vectors_per_second: last.map(|_| self.vectors as f64 / seconds.max(1e-9)),
            seconds: last.map(|_| seconds),
            vectors: self.vectors,
        })
    }
}

/// `k` (for TopK and BatchTopK), the L1 weight (for ReLU), the L0 weight
/// and bandwidth (JumpReLU): each `null` where the architecture has none.
fn architecture_parameters(
    architecture: Architecture,
) -> serde_json::Map<String, serde_json::Value> {
    let (mut k, mut l1_coeff, mut l0_coeff, mut bandwidth) = (None, None, None, None);
    match architecture {
        Architecture::TopK { k: n } | Architecture::BatchTopK { k: n } => k = Some(n),
        Architecture::Relu { l1_coeff: c } => l1_coeff = Some(c),
        Architecture::JumpRelu {
            l0_coeff: c,
            bandwidth: b,
        } => (l0_coeff, bandwidth) = (Some(c), Some(b)),
    }
    let json = serde_json::json!({
        "k": k, "l1_coeff": l1_coeff, "l0_coeff": l0_coeff, "bandwidth": bandwidth,
    });
    match json {
        serde_json::Value::Object(map) => map,
        _ => unreachable!("a JSON object"),
    }
}

/// What a resumed run must share with the run it continues; the thread
/// count is among them because each thread sums its own chunk, and the
/// sums' order changes the bits.
fn fingerprint(view: &View, settings: &TrainSettings, options: &Options) -> serde_json::Value {
    let mut fingerprint = serde_json::json!({
        "architecture": settings.architecture.name(),
        "d_sae": settings.d_sae, "lr": settings.lr,
        "seed": settings.seed, "aux_k": options.aux_k, "dead_after": settings.dead_after,
        "batch_size": view.batch_size(), "layer": view.layer(),
        "patches": view.patches_name(),
        "dataset_hash": view.union().hash(), "threads": view.threads(),
    });
    let parameters = architecture_parameters(settings.architecture);
    fingerprint
        .as_object_mut()
        .expect("the fingerprint is an object")
        .extend(parameters);
    fingerprint
}

/// Refuses a checkpoint whose settings differ from those asked for, naming
/// each difference.
fn check_same_settings(asked: &serde_json::Value, saved: &serde_json::Value) -> Result<()> {
    if asked == saved {
        return Ok(());
    }
    let differences = asked
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, value)| &saved[key.as_str()] != *value)
        .map(|(key, value)| SettingDifference {
            setting: key.clone(),
            asked: value.clone(),
            saved: saved[key.as_str()].clone(),
        })
        .collect();
    Err(SaeError::OtherSettings { differences }.into())
}

/// Creates `dir` if needed and checks that it can take the run's files,
/// before any work: an autoencoder already there is refused unless
/// replacing or resuming, a checkpoint unless replacing or resuming, and
/// resuming needs a checkpoint.
fn prepare_output(dir: &Path, settings: &TrainSettings) -> Result<()> {
    let (resume, replace) = (settings.resume, settings.replace);
    if dir.join(saelens::CONFIG_FILE).exists() && !replace && !resume {
        return Err(SaeError::OutputHoldsAutoencoder {
            dir: dir.to_path_buf(),
        }
        .into());
    }
    std::fs::create_dir_all(dir).map_err(|e| modelbin_format::Error::io(dir, e))?;
    // Creating (and dropping) a temporary file proves the directory writable.
    OutputFile::create(dir.join(saelens::CONFIG_FILE))?;
    let has_checkpoint = dir.join(checkpoint::CHECKPOINT_FILE).is_file();
    if !resume && !replace && has_checkpoint {
        return Err(SaeError::OutputHoldsCheckpoint {
            dir: dir.to_path_buf(),
        }
        .into());
    }
    if resume && !has_checkpoint {
        return Err(SaeError::NoCheckpoint {
            dir: dir.to_path_buf(),
            file: checkpoint::CHECKPOINT_FILE,
        }
        .into());
    }
    Ok(())
}

/// Training batches: shuffled epochs one after another, from a position
/// (an epoch and the batches already taken from it).
struct Batches {
    seed: u64,
    epoch: u64,
    taken: u64,
    loader: Loader,
}

impl Batches {
    fn at(view: &View, seed: u64, epoch: u64, taken: u64) -> Result<Self> {
        let mut loader = view.loader(seed, epoch, true)?;
        if taken > 0 {
            loader.nth(taken as usize - 1);
        }
        Ok(Batches {
            seed,
            epoch,
            taken,
            loader,
        })
    }

    /// The next batch, starting the next epoch when one ends; refused when
    /// it holds NaN or Inf.
    fn next(&mut self, view: &View) -> Result<Vec<f32>> {
        loop {
            if let Some(batch) = self.loader.next() {
                view.check_finite(&batch.data)?;
                self.taken += 1;
                return Ok(batch.data);
            }
            self.epoch += 1;
            self.taken = 0;
            self.loader = view.loader(self.seed, self.epoch, true)?;
        }
    }
}

impl crate::Stepped for TrainRun {
    fn steps_done(&self) -> u64 {
        self.trainer.steps_done()
    }

    fn steps(&self) -> u64 {
        self.settings.steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sae::train::ArchitectureParams;

    /// The setting and value a refusal names.
    fn refused(result: std::result::Result<(), SaeError>) -> (SaeSetting, f64) {
        match result {
            Err(SaeError::InvalidSetting { setting, value }) => (setting, value),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_are_valid() {
        for architecture in [
            Architecture::TopK { k: 32 },
            Architecture::BatchTopK { k: 32 },
            Architecture::Relu { l1_coeff: 5.0 },
        ] {
            TrainSettings::new(architecture, 4096, 1000)
                .validate()
                .unwrap();
        }
    }

    /// Each setting out of range is named with its value, in the order the
    /// faces list them.
    #[test]
    fn settings_out_of_range_are_named() {
        let topk = |k, d_sae, steps, lr| TrainSettings {
            lr,
            ..TrainSettings::new(Architecture::TopK { k }, d_sae, steps)
        };
        let cases = [
            (topk(1, 0, 1, 1e-3), (SaeSetting::DSae, 0.0)),
            (topk(0, 8, 0, 0.0), (SaeSetting::K, 0.0)),
            (topk(1, 8, 0, 0.0), (SaeSetting::Steps, 0.0)),
            (topk(1, 8, 1, 0.0), (SaeSetting::Lr, 0.0)),
            (topk(1, 8, 1, -1e-3), (SaeSetting::Lr, -1e-3)),
            (
                topk(1, 8, 1, f64::INFINITY),
                (SaeSetting::Lr, f64::INFINITY),
            ),
        ];
        for (settings, want) in cases {
            assert_eq!(refused(settings.validate()), want, "{settings:?}");
        }
        let (setting, value) = refused(topk(1, 8, 1, f64::NAN).validate());
        assert!(setting == SaeSetting::Lr && value.is_nan());
        for l1_coeff in [0.0, -1.0, f64::NEG_INFINITY] {
            let relu = TrainSettings::new(Architecture::Relu { l1_coeff }, 8, 1);
            assert_eq!(refused(relu.validate()), (SaeSetting::L1Coeff, l1_coeff));
        }
    }

    #[test]
    fn k_may_not_exceed_the_latents() {
        let settings = TrainSettings::new(Architecture::BatchTopK { k: 9 }, 8, 1);
        assert!(matches!(
            settings.validate(),
            Err(SaeError::KAboveLatents { k: 9, d_sae: 8 })
        ));
        TrainSettings::new(Architecture::TopK { k: 8 }, 8, 1)
            .validate()
            .unwrap();
    }

    /// Every parameter is checked whichever the architecture takes, and
    /// an unknown name is refused by name.
    #[test]
    fn architectures_are_named_with_checked_parameters() {
        let with = |k, l1_coeff, l0_coeff, bandwidth| ArchitectureParams {
            k,
            l1_coeff,
            l0_coeff,
            bandwidth,
        };
        let fine = with(4, 0.5, 0.2, 0.1);
        assert_eq!(
            Architecture::named("batchtopk", fine).unwrap(),
            Architecture::BatchTopK { k: 4 }
        );
        assert_eq!(
            Architecture::named("relu", fine).unwrap(),
            Architecture::Relu { l1_coeff: 0.5 }
        );
        assert_eq!(
            Architecture::named("jumprelu", fine).unwrap(),
            Architecture::JumpRelu {
                l0_coeff: 0.2,
                bandwidth: 0.1
            }
        );
        for (params, refusal) in [
            (with(0, 5.0, 1.0, 0.05), (SaeSetting::K, 0.0)),
            (with(4, 0.0, 1.0, 0.05), (SaeSetting::L1Coeff, 0.0)),
            (with(4, 5.0, -1.0, 0.05), (SaeSetting::L0Coeff, -1.0)),
            (with(4, 5.0, 1.0, 0.0), (SaeSetting::Bandwidth, 0.0)),
        ] {
            assert_eq!(
                refused(Architecture::named("topk", params).map(drop)),
                refusal
            );
        }
        assert!(matches!(
            Architecture::named("gated", fine),
            Err(SaeError::UnknownArchitecture { name }) if name == "gated"
        ));
    }

    /// A batch of no examples is refused before the dataset is read.
    #[test]
    fn a_view_needs_a_batch_size() {
        let opened = View::open(
            "no such dataset".as_ref(),
            -1,
            modelbin_format::saev::Patches::Image,
            0,
            None,
        );
        match opened {
            Err(crate::Error::Sae(e)) => {
                assert_eq!(refused(Err(e)), (SaeSetting::BatchSize, 0.0));
            }
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("opened"),
        }
    }

    #[test]
    fn a_refusal_names_the_setting_plainly() {
        let e = SaeError::InvalidSetting {
            setting: SaeSetting::BatchSize,
            value: 0.0,
        };
        assert_eq!(e.to_string(), "batch_size must be at least 1, not 0");
        let e = SaeError::InvalidSetting {
            setting: SaeSetting::L1Coeff,
            value: -2.0,
        };
        assert_eq!(
            e.to_string(),
            "l1_coeff must be a finite number above 0, not -2"
        );
    }
}
