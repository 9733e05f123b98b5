//! One TLLM training run, as `modelbin tllm train` and
//! `modelbin.TLLM.train` drive it: the checks before any work (memory, the
//! output file, the corpus), the steps with evaluations and checkpoints at
//! their intervals, and the model saved at the end.
//!
//! ```no_run
//! use modelbin_format::tllm::Config;
//! use modelbin_infer::Stepped;
//! use modelbin_infer::tllm::train::{TrainingRun, TrainingSettings};
//!
//! # fn main() -> modelbin_infer::Result<()> {
//! let config = Config {
//!     model_dim: 64, n_layers: 2, n_heads: 2, ffn_hidden_dim: 256,
//!     max_seq_len: 128, vocab_size: 256, dropout: 0.0,
//! };
//! let corpus = ["corpus.txt".into()];
//! let mut run = TrainingRun::start(&corpus, "m.tllm".as_ref(), TrainingSettings::new(config))?;
//! while !run.is_done() {
//!     let step = run.step()?;
//!     if let Some(val) = step.val_loss {
//!         println!("step {}: val loss {val:.3}", step.report.step);
//!     }
//! }
//! let summary = run.finish()?;
//! println!("{} steps, {:.0} tokens/s", summary.steps, summary.tokens_per_second);
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use modelbin_format::tllm::Config;

use super::data::{Corpus, read_corpus};
use super::optim::AdamW;
use super::{StepReport, Trainer};
use crate::{Result, TrainingError};

/// What a training run is asked to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainingSettings {
    /// The model's shape (its vocabulary is bytes: 256).
    pub config: Config,
    /// Sequences per step.
    pub batch_size: usize,
    /// Total optimisation steps.
    pub steps: u64,
    /// Peak learning rate.
    pub lr: f64,
    /// Linear warmup steps (`None`: min(100, steps / 10)).
    pub warmup: Option<u64>,
    /// AdamW weight decay (matrices and embeddings).
    pub weight_decay: f64,
    /// Clip the global gradient norm to this (0: off).
    pub clip: f64,
    /// Seed of the initialisation, batches and dropout.
    pub seed: u64,
    /// Fraction of the corpus (its end) held out for validation.
    pub val_fraction: f64,
    /// Evaluate the validation loss every this many steps (and at the end).
    pub eval_every: u64,
    /// Write a checkpoint every this many steps (0: only at the end).
    pub checkpoint_every: u64,
    /// Continue from the checkpoint at the output (same configuration and
    /// seed).
    pub resume: bool,
    /// Replace an existing model at the output with a new one.
    pub replace: bool,
    /// Worker threads (`None`: one per core).
    pub threads: Option<usize>,
}

impl Default for TrainingSettings {
    /// What a run takes when a face leaves a setting out (the command
    /// line's flag defaults, Python's keyword defaults): the
    /// [default shape](default_shape) over bytes, and
    /// [`TrainingSettings::new`]'s defaults for the rest.
    fn default() -> Self {
        TrainingSettings::new(default_shape(256))
    }
}

/// The shape of a model when a face leaves it out, over `vocab_size`
/// tokens: width 64, 2 blocks of 4 heads, a feed-forward layer of 256, a
/// context of 64, no dropout.
pub fn default_shape(vocab_size: u32) -> Config {
    Config {
        model_dim: 64,
        n_layers: 2,
        n_heads: 4,
        ffn_hidden_dim: 256,
        max_seq_len: 64,
        vocab_size,
        dropout: 0.0,
    }
}

impl TrainingSettings {
    /// A run of `config` with the command line's defaults: batches of 16,
    /// 1,000 steps at learning rate 3e-3, weight decay 0.1, clipping at 1,
    /// seed 0, 10% held out, an evaluation every 100 steps, a checkpoint at
    /// the end, a fresh model that replaces nothing.
    pub fn new(config: Config) -> Self {
        TrainingSettings {
            config,
            batch_size: 16,
            steps: 1000,
            lr: 3e-3,
            warmup: None,
            weight_decay: 0.1,
            clip: 1.0,
            seed: 0,
            val_fraction: 0.1,
            eval_every: 100,
            checkpoint_every: 0,
            resume: false,
            replace: false,
            threads: None,
        }
    }
}

/// The bytes a training run is estimated to take: weights, gradients and
/// the two Adam moments, one gradient per thread, and the activations a
/// batch saves for the backward pass.
pub fn memory_estimate(config: &Config, batch_size: usize, threads: usize) -> f64 {
    let parameters = config.parameter_count().map_or(f64::INFINITY, |n| n as f64);
    let (d, f, layers) = (
        f64::from(config.model_dim),
        f64::from(config.ffn_hidden_dim),
        f64::from(config.n_layers),
    );
    let tokens = batch_size as f64 * f64::from(config.max_seq_len);
    let per_token = layers * (12.0 * d + 3.0 * f) + 2.0 * f64::from(config.vocab_size);
    4.0 * (parameters * (4.0 + threads as f64) + tokens * per_token)
}

/// One step of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunStep {
    /// What the step did.
    pub report: StepReport,
    /// The validation loss, at the steps that evaluate it (when the corpus
    /// holds validation data).
    pub val_loss: Option<f64>,
    /// Whether this step evaluated.
    pub evaluated: bool,
    /// Training tokens per second since the run (this process) started.
    pub tokens_per_second: f64,
}

/// What a finished run did, as `tllm train --json` prints it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TrainingSummary {
    /// The model file.
    pub path: PathBuf,
    /// Steps it holds.
    pub steps: u64,
    /// The last step's training loss (nats per byte).
    pub train_loss: f64,
    /// The last validation loss.
    pub val_loss: Option<f64>,
    /// The same in bits per byte.
    pub val_bits_per_byte: Option<f64>,
    /// Training tokens per second in this process.
    pub tokens_per_second: f64,
    /// Seconds this process trained.
    pub seconds: f64,
}

/// A training run between its checks and its saved model.
pub struct TrainingRun {
    settings: TrainingSettings,
    out: PathBuf,
    corpus: Corpus,
    trainer: Trainer,
    pool: rayon::ThreadPool,
    started: Instant,
    first_step: u64,
    last: Option<StepReport>,
    val_loss: Option<f64>,
}

impl TrainingRun {
    /// Checks the memory the run needs and the output `out` (never one of
    /// the corpus files, nor is its optimiser sidecar: see
    /// [`modelbin_format::io::output::refuse_input_as_output`]), reads the
    /// corpus files (bytes are the tokens, concatenated), and starts the
    /// run, or resumes it from the checkpoint at `out` when asked to.
    pub fn start(corpus: &[PathBuf], out: &Path, settings: TrainingSettings) -> Result<Self> {
        let inputs: Vec<&Path> = corpus.iter().map(PathBuf::as_path).collect();
        for output in [out, &super::checkpoint::sidecar(out)] {
            modelbin_format::io::output::refuse_input_as_output(&inputs, output)?;
        }
        let threads =
            crate::threads::check(settings.threads.unwrap_or_else(rayon::current_num_threads))?;
        modelbin_format::io::memory::check(
            memory_estimate(&settings.config, settings.batch_size, threads),
            "this training run",
        )?;
        if !settings.resume
            && !settings.replace
            && std::fs::metadata(out).is_ok_and(|m| m.is_file())
        {
            return Err(TrainingError::OutputExists {
                path: out.to_path_buf(),
            }
            .into());
        }
        let steps = settings.steps;
        let optimizer = AdamW {
            lr: settings.lr,
            warmup: settings.warmup.unwrap_or((steps / 10).min(100)),
            steps,
            weight_decay: settings.weight_decay,
            clip: settings.clip,
            beta1: 0.9,
            beta2: 0.95,
            eps: 1e-8,
        };
        let corpus = Corpus::new(
            read_corpus(corpus)?,
            settings.val_fraction,
            settings.config.max_seq_len as usize,
        )?;
        // Fail on an unwritable output now, not after the training.
        modelbin_format::io::output::OutputFile::create(out)
            .map_err(TrainingError::OutputUnwritable)?;
        let pool = crate::threads::pool(Some(threads))?;
        let trainer = if settings.resume {
            Trainer::resume(
                out,
                Some(settings.config),
                optimizer,
                settings.batch_size,
                settings.seed,
            )
        } else {
            Trainer::new(
                settings.config,
                optimizer,
                settings.batch_size,
                settings.seed,
            )
        }?;
        if trainer.steps_done() >= steps {
            return Err(TrainingError::AlreadyTrained {
                path: out.to_path_buf(),
                steps: trainer.steps_done(),
            }
            .into());
        }
        Ok(TrainingRun {
            settings,
            out: out.to_path_buf(),
            corpus,
            first_step: trainer.steps_done(),
            trainer,
            pool,
            started: Instant::now(),
            last: None,
            val_loss: None,
        })
    }

    /// Training tokens per step.
    fn tokens_per_step(&self) -> f64 {
        (self.settings.batch_size * self.settings.config.max_seq_len as usize) as f64
    }

    /// Runs one step; evaluates and writes a checkpoint at their
    /// intervals. A loss that is NaN or infinite stops the run with
    /// [`TrainingError::Diverged`] (nothing saved since the last
    /// checkpoint).
    pub fn step(&mut self) -> Result<RunStep> {
        let (trainer, corpus) = (&mut self.trainer, &self.corpus);
        let report = self.pool.install(|| trainer.step(corpus));
        let done = report.step;
        if !report.loss.is_finite() {
            return Err(TrainingError::Diverged {
                step: done,
                loss: report.loss,
            }
            .into());
        }
        let tokens_per_second = (done - self.first_step) as f64 * self.tokens_per_step()
            / self.started.elapsed().as_secs_f64().max(1e-9);
        let evaluated =
            done.is_multiple_of(self.settings.eval_every.max(1)) || done == self.settings.steps;
        if evaluated {
            let trainer = &self.trainer;
            self.val_loss = self.pool.install(|| trainer.validation_loss(corpus));
        }
        let every = self.settings.checkpoint_every;
        if every > 0 && done.is_multiple_of(every) {
            self.trainer.save(&self.out)?;
        }
        self.last = Some(report);
        Ok(RunStep {
            report,
            val_loss: self.val_loss.filter(|_| evaluated),
            evaluated,
            tokens_per_second,
        })
    }

    /// Saves the model (and its optimiser state) at the output.
    pub fn finish(self) -> Result<TrainingSummary> {
        self.trainer.save(&self.out)?;
        let seconds = self.started.elapsed().as_secs_f64();
        let trained = self.trainer.steps_done() - self.first_step;
        let tokens_per_second = trained as f64 * self.tokens_per_step() / seconds.max(1e-9);
        Ok(TrainingSummary {
            path: self.out,
            steps: self.trainer.steps_done(),
            train_loss: self.last.map_or(f64::NAN, |r| r.loss),
            val_loss: self.val_loss,
            val_bits_per_byte: self.val_loss.map(bits_per_byte),
            tokens_per_second,
            seconds,
        })
    }
}

/// Bits per byte of a loss in nats per byte.
pub fn bits_per_byte(nats: f64) -> f64 {
    nats / std::f64::consts::LN_2
}

impl crate::Stepped for TrainingRun {
    fn steps_done(&self) -> u64 {
        self.trainer.steps_done()
    }

    fn steps(&self) -> u64 {
        self.settings.steps
    }
}
