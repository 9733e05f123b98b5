//! `modelbin sae train|eval`: sparse autoencoders (TopK, BatchTopK, ReLU)
//! on SAEV activations, saved in SAELens's layout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Subcommand, ValueEnum};
use modelbin_infer::Stepped;
use modelbin_infer::sae::evaluate::{Evaluation, evaluate, trained_elsewhere};
use modelbin_infer::sae::run::{TrainRun, TrainSettings};
use modelbin_infer::sae::splice::Splice;
use modelbin_infer::sae::train::{Architecture, ArchitectureParams};

use crate::failure::{Failure, invalid};
use crate::progress::Progress;
use crate::sae_view::{ViewArgs, open_for_view, sae_failure};
use crate::stderr::errln;
use crate::stdout::{outln, print_json};

/// `modelbin sae …`.
#[derive(Debug, Subcommand)]
pub enum SaeCommand {
    /// Train a sparse autoencoder (TopK, BatchTopK, ReLU or JumpReLU) on one layer of a SAEV dataset.
    Train(TrainArgs),
    /// Measure an autoencoder on a dataset: MSE, explained variance, L0, dead latents.
    Eval(EvalArgs),
    /// What each latent fires on: densities, histograms, inputs in their text; a browsable page.
    Features(crate::sae_features::FeaturesArgs),
    /// Write an autoencoder of any layout read (Gemma Scope, Gemma Scope 2, Llama Scope, sparsify, SAELens) in SAELens's layout.
    Import(crate::sae_import::ImportArgs),
}

/// The autoencoder's architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArchitectureArg {
    /// The k largest latents of each input (Gao et al., 2024).
    Topk,
    /// The k·B largest of a batch of B (Bussmann et al., 2024); saved as
    /// JumpReLU with the threshold it learned.
    Batchtopk,
    /// Every positive latent, with an L1 penalty (--l1-coeff).
    Relu,
    /// The latents above their learned thresholds, with an L0 penalty
    /// (--l0-coeff, --bandwidth), as SAELens's JumpReLU trains them.
    Jumprelu,
}

/// The library's defaults of a training run, which the flags take.
static DEFAULTS: std::sync::LazyLock<TrainSettings> =
    std::sync::LazyLock::new(TrainSettings::default);

/// Arguments of `modelbin sae train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    #[command(flatten)]
    view: ViewArgs,
    /// Latents.
    #[arg(long, default_value_t = DEFAULTS.d_sae as u64)]
    d_sae: u64,
    /// The architecture.
    #[arg(long, value_enum, default_value = DEFAULTS.architecture.name())]
    architecture: ArchitectureArg,
    /// Latents kept per input (topk; batchtopk: on average).
    #[arg(short, long, default_value_t = Architecture::DEFAULT_K as u64)]
    k: u64,
    /// Weight of the L1 penalty (relu; SAELens's l1_coefficient).
    #[arg(long, default_value_t = Architecture::DEFAULT_L1_COEFF, value_parser = crate::args::parse_number)]
    l1_coeff: f64,
    /// Weight of the L0 penalty (jumprelu; SAELens's l0_coefficient).
    #[arg(long, default_value_t = Architecture::DEFAULT_L0_COEFF, value_parser = crate::args::parse_number)]
    l0_coeff: f64,
    /// Width of the thresholds' pseudo-derivative window (jumprelu; SAELens's jumprelu_bandwidth).
    #[arg(long, default_value_t = Architecture::DEFAULT_BANDWIDTH, value_parser = crate::args::parse_number)]
    bandwidth: f64,
    /// Optimisation steps (one batch each; epochs repeat as needed).
    #[arg(long, default_value_t = DEFAULTS.steps)]
    steps: u64,
    /// Peak learning rate (Adam; warmup over 5% of the steps, cosine to a tenth).
    #[arg(long, default_value_t = DEFAULTS.lr, value_parser = crate::args::parse_number)]
    lr: f64,
    /// Seed of the initial weights and of the shuffling.
    #[arg(long, default_value_t = DEFAULTS.seed)]
    seed: u64,
    /// Dead latents reconstructing the residual in the AuxK loss (default: d_in / 2; 0: off).
    #[arg(long)]
    aux_k: Option<u64>,
    /// Inputs without firing after which a latent counts as dead.
    #[arg(long, default_value_t = DEFAULTS.dead_after)]
    dead_after: u64,
    /// Append one JSON object per step to this file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Also write the run's state (--out/checkpoint.safetensors) every N
    /// steps (0: only at the end).
    #[arg(long, default_value_t = DEFAULTS.checkpoint_every)]
    checkpoint_every: u64,
    /// Continue the run whose checkpoint is in --out, up to --steps (bit
    /// for bit the same as one uninterrupted run when --steps is unchanged).
    #[arg(long)]
    resume: bool,
    /// The directory to write (cfg.json, sae_weights.safetensors).
    #[arg(short, long)]
    out: PathBuf,
    /// Replace an existing autoencoder in --out (autoencoders are protected
    /// without it: they can hold hours of training).
    #[arg(long)]
    force: bool,
    /// Print the final summary as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `modelbin sae …`.
pub fn run(command: SaeCommand) -> Result<(), Failure> {
    match command {
        SaeCommand::Train(args) => train(&args),
        SaeCommand::Eval(args) => eval(&args),
        SaeCommand::Features(args) => crate::sae_features::features(&args),
        SaeCommand::Import(args) => crate::sae_import::import(&args),
    }
}

fn train(args: &TrainArgs) -> Result<(), Failure> {
    let failure = |e: modelbin_infer::Error| sae_failure(e, &args.out);
    let name = args
        .architecture
        .to_possible_value()
        .expect("no variant is skipped");
    let params = ArchitectureParams {
        k: args.k as usize,
        l1_coeff: args.l1_coeff,
        l0_coeff: args.l0_coeff,
        bandwidth: args.bandwidth,
    };
    let architecture =
        Architecture::named(name.get_name(), params).map_err(|e| failure(e.into()))?;
    let settings = TrainSettings {
        lr: args.lr,
        seed: args.seed,
        aux_k: args.aux_k.map(|a| a as usize),
        dead_after: args.dead_after,
        checkpoint_every: args.checkpoint_every,
        resume: args.resume,
        replace: args.force,
        ..TrainSettings::new(architecture, args.d_sae as usize, args.steps)
    };
    // The settings are refused before the dataset is read.
    settings.validate().map_err(|e| failure(e.into()))?;
    let view = args.view.open()?;
    let mut log =
        crate::work::open_log(args.log.as_deref(), &args.view.paths().collect::<Vec<_>>())?;
    let mut run = TrainRun::start(view, settings, &args.out).map_err(failure)?;
    let mut bar = Progress::steps(args.steps, run.steps_done());
    let started = Instant::now();
    while !run.is_done() {
        let report = match run.step() {
            Ok(report) => report,
            Err(e) => {
                bar.finish();
                return Err(failure(e));
            }
        };
        let rate = run.vectors() as f64 / started.elapsed().as_secs_f64().max(1e-9);
        bar.note(format!(
            "mse {:.4}, fvu {:.3}, L0 {:.1}, dead {:.1}%, {rate:.0} vectors/s",
            report.mse,
            report.fvu,
            report.l0,
            100.0 * report.dead_fraction
        ));
        bar.update(report.step, args.steps);
        if let Some(log) = &mut log {
            let mut entry = serde_json::to_value(report).map_err(invalid)?;
            entry["vectors_per_second"] = rate.into();
            writeln!(log, "{entry}").map_err(invalid)?;
        }
    }
    bar.finish();
    if let Some(log) = &mut log {
        log.flush().map_err(invalid)?;
    }
    let summary = run.finish().map_err(failure)?;
    let (Some(fvu), Some(l0), Some(dead_fraction), Some(rate)) = (
        summary.fvu,
        summary.l0,
        summary.dead_fraction,
        summary.vectors_per_second,
    ) else {
        // Resumed at its last step (the run stopped before saving): saved now.
        outln!(
            "{}: {} steps (from the checkpoint; nothing left to train)",
            args.out.display(),
            summary.steps
        )?;
        return Ok(());
    };
    if args.json {
        print_json(&summary)?;
    } else {
        outln!(
            "{}: {} steps, fvu {fvu:.4} (explained variance {:.4}), L0 {l0:.1}, dead {:.1}%, {rate:.0} vectors/s",
            args.out.display(),
            summary.steps,
            1.0 - fvu,
            100.0 * dead_fraction,
        )?;
    }
    Ok(())
}

/// Arguments of `modelbin sae eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The autoencoder's directory (SAELens's layout, Gemma Scope, Gemma
    /// Scope 2, Llama Scope or sparsify).
    sae: PathBuf,
    #[command(flatten)]
    view: ViewArgs,
    /// Also measure the cross-entropy and KL recovered when the
    /// reconstruction replaces the recorded rows in this model (the one
    /// recorded: a TLLM file, or a language model's directory), as
    /// SAELens's evals do.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Windows of the dataset run through the model for the cross-entropy.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    ce_windows: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn eval(args: &EvalArgs) -> Result<(), Failure> {
    let (sae, config, view) = open_for_view(&args.sae, &args.view)?;
    if let Some((dataset_hash, layer)) = trained_elsewhere(&config, &view) {
        errln!(
            "warning: {} was trained on dataset {dataset_hash}, layer {layer}; this is dataset {}, layer {}",
            args.sae.display(),
            view.union().hash(),
            view.layer()
        );
    }
    let splice = args
        .model
        .as_deref()
        .map(|model| {
            Splice::open(model, view.dataset(), view.layer(), args.ce_windows)
                .map_err(|e| sae_failure(e, model))
        })
        .transpose()?;
    let mut progress = Progress::new("evaluating");
    let evaluated = evaluate(&sae, &view, &mut |done, total| {
        progress.update(done, total);
        true
    });
    progress.finish();
    let mut result = evaluated.map_err(|e| sae_failure(e, &args.sae))?;
    if let Some(splice) = &splice {
        let pool = crate::work::thread_pool(Some(view.threads()))?;
        result.cross_entropy = Some(
            pool.install(|| splice.measure(&sae))
                .map_err(|e| sae_failure(e, &args.sae))?,
        );
    }
    if args.json {
        print_json(&result)?;
    } else {
        print_evaluation(&args.sae, &result)?;
    }
    Ok(())
}

/// `sae eval`'s lines of text.
fn print_evaluation(sae: &Path, result: &Evaluation) -> Result<(), Failure> {
    outln!(
        "{} on {} vectors: mse {:.6}, explained variance {:.4}, L0 {:.2}, dead {:.2}%",
        sae.display(),
        result.vectors,
        result.mse,
        result.explained_variance,
        result.l0,
        100.0 * result.dead_fraction
    )?;
    let h = &result.density_histogram;
    outln!(
        "latents by firing density: never {}, <1e-5 {}, 1e-5..1e-4 {}, 1e-4..1e-3 {}, 1e-3..1e-2 {}, 1e-2..1e-1 {}, >=1e-1 {}",
        h[0],
        h[1],
        h[2],
        h[3],
        h[4],
        h[5],
        h[6]
    )?;
    if let Some(ce) = &result.cross_entropy {
        outln!(
            "cross-entropy over {} tokens: clean {:.4}, spliced {:.4}, zero-ablated {:.4}; recovered {:.4}",
            ce.tokens,
            ce.clean,
            ce.spliced,
            ce.zero_ablated,
            ce.recovered
        )?;
        outln!(
            "KL to the clean model over {} positions: spliced {:.4}, zero-ablated {:.4}; recovered {:.4}",
            ce.kl_positions,
            ce.kl_spliced,
            ce.kl_zero_ablated,
            ce.kl_recovered
        )?;
    }
    Ok(())
}
