//! `modelbin tllm train`: train a byte-level TLLM model on text files.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use modelbin_format::tllm::Config;
use modelbin_infer::train::data::{Corpus, read_corpus};
use modelbin_infer::train::optim::AdamW;
use modelbin_infer::train::{StepReport, Trainer};

use crate::args::{parse_coefficient, parse_fraction, parse_positive};
use crate::failure::{Failure, invalid};
use crate::progress::Progress;
use crate::stdout::{outln, print_json};

/// Arguments of `modelbin tllm train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Text files to train on (bytes are the tokens), concatenated.
    #[arg(required = true)]
    corpus: Vec<PathBuf>,
    /// The model file to write (checkpoints too; optimiser state in FILE.opt).
    #[arg(short, long)]
    out: PathBuf,
    #[command(flatten)]
    shape: crate::tllm::ModelShape,
    /// Sequences per step.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// Total optimisation steps (≥ 1).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    steps: u64,
    /// Peak learning rate.
    #[arg(long, default_value_t = 3e-3, value_parser = parse_positive)]
    lr: f64,
    /// Linear warmup steps (default: min(100, steps / 10)).
    #[arg(long)]
    warmup: Option<u64>,
    /// AdamW weight decay (matrices and embeddings).
    #[arg(long, default_value_t = 0.1, value_parser = parse_coefficient)]
    weight_decay: f64,
    /// Clip the global gradient norm to this (0: off).
    #[arg(long, default_value_t = 1.0, value_parser = parse_coefficient)]
    clip: f64,
    /// Random seed (initialisation, batches, dropout).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Fraction of the corpus (its end) held out for validation.
    #[arg(long, default_value_t = 0.1, value_parser = parse_fraction)]
    val_fraction: f64,
    /// Evaluate and print losses every N steps.
    #[arg(long, default_value_t = 100)]
    eval_every: u64,
    /// Write a checkpoint every N steps (0: only at the end).
    #[arg(long, default_value_t = 0)]
    checkpoint_every: u64,
    /// Continue from the checkpoint at --out (same configuration and seed).
    #[arg(long, conflicts_with = "force")]
    resume: bool,
    /// Replace an existing --out model with a new one.
    #[arg(long)]
    force: bool,
    /// Append one JSON object per step (and evaluation) to this file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Print the final summary as JSON.
    #[arg(long)]
    json: bool,
}

/// A training error, with the flag that would change it where one would.
fn training_failure(e: modelbin_infer::Error) -> Failure {
    use modelbin_infer::{Error, TrainingError};
    let hint = match &e {
        Error::Training(TrainingError::ValidationFraction(_)) => " (--val-fraction)",
        Error::Training(TrainingError::CorpusTooShort {
            part: "training", ..
        }) => ": use more text or a shorter --seq",
        Error::Training(TrainingError::CorpusTooShort { .. }) => {
            ": use more text or a larger --val-fraction"
        }
        Error::Training(TrainingError::EmptyBatch) => " (--batch-size)",
        Error::Training(TrainingError::OtherSeed { .. }) => " (--seed)",
        _ => "",
    };
    Failure::Invalid(format!("{e}{hint}"))
}

/// Refuses a configuration whose training memory exceeds the machine's:
/// weights, gradients and the two Adam moments, one gradient per thread,
/// and the activations a batch saves for the backward pass.
fn check_training_memory(config: &Config, args: &TrainArgs) -> Result<(), Failure> {
    let parameters = config.parameter_count().map_or(f64::INFINITY, |n| n as f64);
    let threads = args.threads.unwrap_or_else(rayon::current_num_threads) as f64;
    let (d, f, layers) = (
        f64::from(config.model_dim),
        f64::from(config.ffn_hidden_dim),
        f64::from(config.n_layers),
    );
    let tokens = args.batch_size as f64 * f64::from(config.max_seq_len);
    let per_token = layers * (12.0 * d + 3.0 * f) + 2.0 * f64::from(config.vocab_size);
    let bytes = 4.0 * (parameters * (4.0 + threads) + tokens * per_token);
    crate::work::check_memory(bytes, "this training run")
}

/// Bits per byte of a loss in nats per byte.
fn bits(nats: f64) -> f64 {
    nats / std::f64::consts::LN_2
}

#[derive(serde::Serialize)]
struct Summary {
    path: PathBuf,
    steps: u64,
    train_loss: f64,
    val_loss: Option<f64>,
    val_bits_per_byte: Option<f64>,
    tokens_per_second: f64,
    seconds: f64,
}

/// Runs `modelbin tllm train`.
pub fn train(args: &TrainArgs) -> Result<(), Failure> {
    let config = args.shape.config(256)?;
    check_training_memory(&config, args)?;
    if !args.resume {
        crate::tllm::refuse_overwrite(
            &args.out,
            args.force,
            "pass --resume to continue training it or --force to start over",
        )?;
    }
    let optimizer = AdamW {
        lr: args.lr,
        warmup: args.warmup.unwrap_or((args.steps / 10).min(100)),
        steps: args.steps,
        weight_decay: args.weight_decay,
        clip: args.clip,
        beta1: 0.9,
        beta2: 0.95,
        eps: 1e-8,
    };
    let corpus = Corpus::new(
        read_corpus(&args.corpus).map_err(training_failure)?,
        args.val_fraction,
        args.shape.seq as usize,
    )
    .map_err(training_failure)?;
    // Fail on an unwritable output now, not after the training.
    modelbin_format::output::OutputFile::create(&args.out)
        .map_err(|e| Failure::Invalid(format!("cannot write the model: {e}")))?;
    let pool = crate::work::thread_pool(args.threads)?;
    let mut trainer = if args.resume {
        Trainer::resume(
            &args.out,
            Some(config),
            optimizer,
            args.batch_size as usize,
            args.seed,
        )
    } else {
        Trainer::new(config, optimizer, args.batch_size as usize, args.seed)
    }
    .map_err(training_failure)?;
    let mut log = crate::work::open_log(args.log.as_deref())?;
    if trainer.steps_done() >= args.steps {
        return Err(Failure::Usage(format!(
            "{} is already trained for {} steps; pass a larger --steps to go on",
            args.out.display(),
            trainer.steps_done()
        )));
    }
    let mut bar = Progress::steps(args.steps, trainer.steps_done());
    let tokens_per_step = (args.batch_size as usize * args.shape.seq as usize) as f64;
    let start = Instant::now();
    let first_step = trainer.steps_done();
    let mut last = None;
    let mut val = None;
    while trainer.steps_done() < args.steps {
        let report: StepReport = pool.install(|| trainer.step(&corpus));
        let done = report.step;
        if !report.loss.is_finite() {
            bar.finish();
            return Err(Failure::Invalid(format!(
                "training diverged at step {done} (loss {}); nothing was saved since the last checkpoint: lower --lr",
                report.loss
            )));
        }
        let rate = (done - first_step) as f64 * tokens_per_step / start.elapsed().as_secs_f64();
        bar.update(done, args.steps);
        bar.note(format!(
            "loss {:.3} ({:.2} bpb), {rate:.0} tok/s",
            report.loss,
            bits(report.loss)
        ));
        let evaluate = done.is_multiple_of(args.eval_every.max(1)) || done == args.steps;
        if evaluate {
            val = pool.install(|| trainer.validation_loss(&corpus));
            let val_text = val.map_or("no validation data".into(), |v| {
                format!("val loss {v:.4} ({:.3} bpb)", bits(v))
            });
            let line = format!(
                "step {done}/{}: train loss {:.4} ({:.3} bpb), {val_text}, lr {:.2e}, {rate:.0} tok/s",
                args.steps,
                report.loss,
                bits(report.loss),
                report.lr
            );
            bar.println(line);
        }
        if let Some(log) = &mut log {
            let mut entry = serde_json::json!({"step": done, "loss": report.loss, "lr": report.lr, "grad_norm": report.grad_norm, "tokens_per_second": rate});
            if evaluate && let Some(v) = val {
                entry["val_loss"] = v.into();
            }
            writeln!(log, "{entry}").map_err(invalid)?;
        }
        if args.checkpoint_every > 0 && done.is_multiple_of(args.checkpoint_every) {
            trainer.save(&args.out).map_err(invalid)?;
        }
        last = Some(report);
    }
    bar.finish();
    if let Some(log) = &mut log {
        log.flush().map_err(invalid)?;
    }
    trainer.save(&args.out).map_err(invalid)?;
    let seconds = start.elapsed().as_secs_f64();
    let trained = trainer.steps_done() - first_step;
    let summary = Summary {
        path: args.out.clone(),
        steps: trainer.steps_done(),
        train_loss: last.map_or(f64::NAN, |r| r.loss),
        val_loss: val,
        val_bits_per_byte: val.map(bits),
        tokens_per_second: trained as f64 * tokens_per_step / seconds.max(1e-9),
        seconds,
    };
    if args.json {
        print_json(&summary)?;
    } else {
        outln!(
            "{}: {} steps, train loss {:.4}{}, {:.0} tok/s",
            args.out.display(),
            summary.steps,
            summary.train_loss,
            val.map_or(String::new(), |v| format!(
                ", val loss {v:.4} ({:.3} bits per byte)",
                bits(v)
            )),
            summary.tokens_per_second
        )?;
    }
    Ok(())
}
