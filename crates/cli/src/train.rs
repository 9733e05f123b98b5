//! `modelbin tllm train`: train a byte-level TLLM model on text files.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use modelbin_infer::Stepped;
use modelbin_infer::tllm::train::{TrainingRun, TrainingSettings, bits_per_byte};

use crate::args::{parse_coefficient, parse_fraction, parse_positive};
use crate::failure::{Failure, invalid};
use crate::progress::Progress;
use crate::stdout::{outln, print_json};

/// Arguments of `modelbin tllm train`.
/// The library's defaults of a training run, which the flags take.
static DEFAULTS: std::sync::LazyLock<TrainingSettings> =
    std::sync::LazyLock::new(TrainingSettings::default);

#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Text files to train on (bytes are the tokens), concatenated.
    #[arg(required = true)]
    corpus: Vec<PathBuf>,
    /// The model file to write (checkpoints too; optimiser state in FILE.opt).
    #[arg(short, long)]
    out: PathBuf,
    #[command(flatten)]
    shape: crate::model_shape::ModelShape,
    /// Sequences per step.
    #[arg(long, default_value_t = DEFAULTS.batch_size as u64, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// Total optimisation steps (≥ 1).
    #[arg(long, default_value_t = DEFAULTS.steps, value_parser = clap::value_parser!(u64).range(1..))]
    steps: u64,
    /// Peak learning rate.
    #[arg(long, default_value_t = DEFAULTS.lr, value_parser = parse_positive)]
    lr: f64,
    /// Linear warmup steps (default: min(100, steps / 10)).
    #[arg(long)]
    warmup: Option<u64>,
    /// AdamW weight decay (matrices and embeddings).
    #[arg(long, default_value_t = DEFAULTS.weight_decay, value_parser = parse_coefficient)]
    weight_decay: f64,
    /// Clip the global gradient norm to this (0: off).
    #[arg(long, default_value_t = DEFAULTS.clip, value_parser = parse_coefficient)]
    clip: f64,
    /// Random seed (initialisation, batches, dropout).
    #[arg(long, default_value_t = DEFAULTS.seed)]
    seed: u64,
    /// Fraction of the corpus (its end) held out for validation.
    #[arg(long, default_value_t = DEFAULTS.val_fraction, value_parser = parse_fraction)]
    val_fraction: f64,
    /// Evaluate and print losses every N steps.
    #[arg(long, default_value_t = DEFAULTS.eval_every)]
    eval_every: u64,
    /// Write a checkpoint every N steps (0: only at the end).
    #[arg(long, default_value_t = DEFAULTS.checkpoint_every)]
    checkpoint_every: u64,
    /// Continue from the checkpoint at --out (same configuration and seed).
    #[arg(long, conflicts_with = "force")]
    resume: bool,
    /// Replace an existing --out model with a new one (models are protected
    /// without it: one can hold hours of training).
    #[arg(long)]
    force: bool,
    /// Append one JSON object per step (and evaluation) to this file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Worker threads (default: one per core; at most 256).
    #[arg(long, value_parser = crate::args::parse_threads)]
    threads: Option<usize>,
    /// Print the final summary as JSON.
    #[arg(long)]
    json: bool,
}

/// A training error, worded with the flag that would change it where one
/// would.
fn training_failure(e: modelbin_infer::Error, out: &Path) -> Failure {
    use modelbin_infer::{Error, TrainingError};
    let Error::Training(training) = &e else {
        return match e {
            Error::Memory(shortfall) => Failure::Usage(shortfall.to_string()),
            e => Failure::Invalid(e.to_string()),
        };
    };
    let hint = match training {
        TrainingError::OutputExists { .. } => {
            return Failure::Usage(format!(
                "{} exists; pass --resume to continue training it or --force to start over",
                out.display()
            ));
        }
        TrainingError::AlreadyTrained { steps, .. } => {
            return Failure::Usage(format!(
                "{} is already trained for {steps} steps; pass a larger --steps to go on",
                out.display()
            ));
        }
        TrainingError::Diverged { step, loss } => {
            return Failure::Invalid(format!(
                "training diverged at step {step} (loss {loss}); nothing was saved since the last checkpoint: lower --lr"
            ));
        }
        TrainingError::ValidationFraction(_) => " (--val-fraction)",
        TrainingError::CorpusTooShort {
            part: "training", ..
        } => ": use more text or a shorter --seq",
        TrainingError::CorpusTooShort { .. } => ": use more text or a larger --val-fraction",
        TrainingError::EmptyBatch => " (--batch-size)",
        TrainingError::OtherSeed { .. } => " (--seed)",
        _ => "",
    };
    Failure::Invalid(format!("{e}{hint}"))
}

/// Runs `modelbin tllm train`.
pub fn train(args: &TrainArgs) -> Result<(), Failure> {
    let settings = TrainingSettings {
        batch_size: args.batch_size as usize,
        steps: args.steps,
        lr: args.lr,
        warmup: args.warmup,
        weight_decay: args.weight_decay,
        clip: args.clip,
        seed: args.seed,
        val_fraction: args.val_fraction,
        eval_every: args.eval_every,
        checkpoint_every: args.checkpoint_every,
        resume: args.resume,
        replace: args.force,
        threads: args.threads,
        ..TrainingSettings::new(args.shape.config(256)?)
    };
    let failure = |e| training_failure(e, &args.out);
    let mut run = TrainingRun::start(&args.corpus, &args.out, settings).map_err(failure)?;
    let corpus: Vec<&Path> = args.corpus.iter().map(PathBuf::as_path).collect();
    let mut log = crate::work::open_log(args.log.as_deref(), &corpus)?;
    let mut bar = Progress::steps(args.steps, run.steps_done());
    while !run.is_done() {
        let step = match run.step() {
            Ok(step) => step,
            Err(e) => {
                bar.finish();
                return Err(failure(e));
            }
        };
        let (report, rate) = (step.report, step.tokens_per_second);
        let done = report.step;
        bar.note(format!(
            "loss {:.3} ({:.2} bpb), {rate:.0} tok/s",
            report.loss,
            bits_per_byte(report.loss)
        ));
        bar.update(done, args.steps);
        if step.evaluated {
            let val_text = step.val_loss.map_or("no validation data".into(), |v| {
                format!("val loss {v:.4} ({:.3} bpb)", bits_per_byte(v))
            });
            bar.println(format!(
                "step {done}/{}: train loss {:.4} ({:.3} bpb), {val_text}, lr {:.2e}, {rate:.0} tok/s",
                args.steps,
                report.loss,
                bits_per_byte(report.loss),
                report.lr
            ));
        }
        if let Some(log) = &mut log {
            let mut entry = serde_json::json!({"step": done, "loss": report.loss, "lr": report.lr, "grad_norm": report.grad_norm, "tokens_per_second": rate});
            if let Some(v) = step.val_loss {
                entry["val_loss"] = v.into();
            }
            writeln!(log, "{entry}").map_err(invalid)?;
        }
    }
    bar.finish();
    if let Some(log) = &mut log {
        log.flush().map_err(invalid)?;
    }
    let summary = run.finish().map_err(invalid)?;
    if args.json {
        return print_json(&summary);
    }
    outln!(
        "{}: {} steps, train loss {:.4}{}, {:.0} tok/s",
        args.out.display(),
        summary.steps,
        summary.train_loss,
        summary.val_loss.map_or(String::new(), |v| format!(
            ", val loss {v:.4} ({:.3} bits per byte)",
            bits_per_byte(v)
        )),
        summary.tokens_per_second
    )
}
