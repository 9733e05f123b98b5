//! `modelbin sae train|eval`: sparse autoencoders (TopK, BatchTopK, ReLU)
//! on SAEV activations, saved in SAELens's layout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Subcommand, ValueEnum};
use modelbin_format::saev::{self, Dataset, LayerChoice, Loader, LoaderOptions, Patches};
use modelbin_infer::sae::splice::CrossEntropy;
use modelbin_infer::sae::train::{Architecture, Options, Trainer};
use modelbin_infer::sae::{Sae, checkpoint, saelens};

use crate::failure::{Failure, at, invalid};
use crate::progress::Progress;
use crate::stdout::{outln, print_json};

/// `modelbin sae …`.
#[derive(Debug, Subcommand)]
pub enum SaeCommand {
    /// Train a sparse autoencoder (TopK, BatchTopK or ReLU) on one layer of a SAEV dataset.
    Train(TrainArgs),
    /// Measure an autoencoder on a dataset: MSE, explained variance, L0, dead latents.
    Eval(EvalArgs),
    /// The inputs that activate each latent most, with their text for TLLM recordings.
    Features(crate::sae_features::FeaturesArgs),
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
}

/// Which tokens of each image are examples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PatchesArg {
    /// The image patches (CLS excluded).
    Image,
    /// Only the CLS token.
    Cls,
    /// CLS and patches.
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
    /// The SAEV dataset directory (`<root>/<HASH>`).
    pub dataset: PathBuf,
    /// The recorded layer to read (as in the dataset's `layers`, e.g. -1).
    #[arg(long, allow_negative_numbers = true)]
    pub layer: i64,
    /// Which tokens are examples.
    #[arg(long, value_enum, default_value = "image")]
    pub patches: PatchesArg,
    /// Examples per batch.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
}

impl ViewArgs {
    /// Opens the dataset and checks that the view exists.
    pub fn open(&self) -> Result<(Arc<Dataset>, usize, u64), Failure> {
        let dataset = saev::open(&self.dataset).map_err(|e| at(&self.dataset, e))?;
        let layers = &dataset.metadata().layers;
        if !layers.contains(&self.layer) {
            return Err(Failure::Usage(format!(
                "--layer {}: the dataset recorded layers {layers:?}",
                self.layer
            )));
        }
        let examples = dataset
            .view(self.patches.into(), LayerChoice::One(self.layer))
            .map_err(|e| Failure::Usage(format!("--patches: {e}")))?
            .len();
        let d_in = dataset.metadata().d_vit as usize;
        Ok((Arc::new(dataset), d_in, examples))
    }

    pub fn threads(&self) -> usize {
        self.threads
            .map_or_else(rayon::current_num_threads, |t| t as usize)
    }

    /// Batches of epoch `epoch`, shuffled by `seed` or in order.
    pub fn loader(
        &self,
        dataset: &Arc<Dataset>,
        seed: u64,
        epoch: u64,
        shuffle: bool,
    ) -> Result<Loader, Failure> {
        let options = LoaderOptions {
            batch_size: self.batch_size as usize,
            threads: self.threads().clamp(1, 4),
            seed,
            epoch,
            ..LoaderOptions::default()
        };
        let (patches, layer) = (self.patches.into(), LayerChoice::One(self.layer));
        if shuffle {
            Loader::shuffled(dataset.clone(), patches, layer, options)
        } else {
            Loader::ordered(dataset.clone(), patches, layer, options)
        }
        .map_err(invalid)
    }

    /// Refuses a batch holding NaN or Inf, naming the first such vector of
    /// the view.
    pub fn check_finite(&self, dataset: &Dataset, batch: &[f32]) -> Result<(), Failure> {
        if batch.iter().all(|v| v.is_finite()) {
            return Ok(());
        }
        let view = dataset
            .view(self.patches.into(), LayerChoice::One(self.layer))
            .map_err(invalid)?;
        for i in 0..view.len() {
            let example = view.get(i).map_err(invalid)?;
            if example.vector.iter().any(|v| !v.is_finite()) {
                return Err(Failure::Invalid(format!(
                    "{}: the vector of image {}, layer {}, token {} holds NaN or Inf; SAEs train on finite values (`modelbin acts verify --values` counts them)",
                    self.dataset.display(),
                    example.img,
                    example.layer,
                    example.token
                )));
            }
        }
        Err(Failure::Invalid(format!(
            "{}: a batch holds NaN or Inf",
            self.dataset.display()
        )))
    }
}

/// Arguments of `modelbin sae train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    #[command(flatten)]
    view: ViewArgs,
    /// Latents.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..))]
    d_sae: u64,
    /// The architecture.
    #[arg(long, value_enum, default_value = "topk")]
    architecture: ArchitectureArg,
    /// Latents kept per input (topk; batchtopk: on average).
    #[arg(short, long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..))]
    k: u64,
    /// Weight of the L1 penalty (relu; SAELens's l1_coefficient).
    #[arg(long, default_value_t = 5.0, value_parser = crate::args::parse_positive)]
    l1_coeff: f64,
    /// Optimisation steps (one batch each; epochs repeat as needed).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    steps: u64,
    /// Peak learning rate (Adam; warmup over 5% of the steps, cosine to a tenth).
    #[arg(long, default_value_t = 1e-3, value_parser = crate::args::parse_positive)]
    lr: f64,
    /// Seed of the initial weights and of the shuffling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Dead latents reconstructing the residual in the AuxK loss (default: d_in / 2; 0: off).
    #[arg(long)]
    aux_k: Option<u64>,
    /// Inputs without firing after which a latent counts as dead.
    #[arg(long, default_value_t = 10_000_000)]
    dead_after: u64,
    /// Append one JSON object per step to this file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Also write the run's state (--out/checkpoint.safetensors) every N
    /// steps (0: only at the end).
    #[arg(long, default_value_t = 0)]
    checkpoint_every: u64,
    /// Continue the run whose checkpoint is in --out, up to --steps (bit
    /// for bit the same as one uninterrupted run when --steps is unchanged).
    #[arg(long)]
    resume: bool,
    /// The directory to write (cfg.json, sae_weights.safetensors).
    #[arg(short, long)]
    out: PathBuf,
    /// Replace an existing autoencoder in --out.
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
    }
}

/// Checks that `dir` can take the autoencoder's files, before any work.
fn check_output(dir: &Path, force: bool) -> Result<(), Failure> {
    if dir.join(saelens::CONFIG_FILE).exists() && !force {
        return Err(Failure::Usage(format!(
            "{} holds an autoencoder; pass --force to replace it",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| at(dir, modelbin_format::Error::io(dir, e)))?;
    // Creating (and dropping) a temporary file proves the directory writable.
    modelbin_format::output::OutputFile::create(dir.join(saelens::CONFIG_FILE))
        .map(drop)
        .map_err(|e| at(dir, e))
}

fn train(args: &TrainArgs) -> Result<(), Failure> {
    let (d_sae, k) = (args.d_sae as usize, args.k as usize);
    if k > d_sae && args.architecture != ArchitectureArg::Relu {
        return Err(Failure::Usage(format!(
            "-k {k} is more than --d-sae {d_sae}"
        )));
    }
    let (dataset, d_in, examples) = args.view.open()?;
    let threads = args.view.threads() as f64;
    let matrix = d_sae as f64 * d_in as f64 * 4.0;
    let batch = args.view.batch_size as f64 * (d_sae as f64 + 2.0 * d_in as f64) * 4.0;
    crate::work::check_memory(
        matrix * (6.0 + 2.0 * threads) + 2.0 * batch,
        "this autoencoder",
    )?;
    if examples == 0 {
        return Err(Failure::Invalid(format!(
            "{}: the view has no examples",
            args.view.dataset.display()
        )));
    }
    check_output(&args.out, args.force || args.resume)?;
    let checkpoint_path = args.out.join(checkpoint::CHECKPOINT_FILE);
    if !args.resume && !args.force && checkpoint_path.is_file() {
        return Err(Failure::Usage(format!(
            "{} holds a run's checkpoint; pass --resume to continue it or --force to start over",
            args.out.display()
        )));
    }
    if args.resume && !checkpoint_path.is_file() {
        return Err(Failure::Usage(format!(
            "--resume: {} holds no checkpoint ({})",
            args.out.display(),
            checkpoint::CHECKPOINT_FILE
        )));
    }
    let mut log = crate::work::open_log(args.log.as_deref())?;
    let pool = crate::work::thread_pool(Some(args.view.threads()))?;
    let architecture = match args.architecture {
        ArchitectureArg::Topk => Architecture::TopK { k },
        ArchitectureArg::Batchtopk => Architecture::BatchTopK { k },
        ArchitectureArg::Relu => Architecture::Relu {
            l1_coeff: args.l1_coeff,
        },
    };
    let mut options = Options::new(architecture, d_sae, args.steps, args.lr);
    options.aux_k = args.aux_k.map_or(d_in / 2, |a| a as usize).min(d_sae);
    options.dead_after = args.dead_after;
    options.seed = args.seed;
    // What a resumed run must share with the run it continues (the chunk
    // count, one per thread, changes the sums' order).
    let settings = serde_json::json!({
        "architecture": format!("{:?}", args.architecture).to_lowercase(),
        "d_sae": d_sae, "k": k, "l1_coeff": args.l1_coeff, "lr": args.lr, "seed": args.seed,
        "aux_k": options.aux_k, "dead_after": args.dead_after,
        "batch_size": args.view.batch_size, "layer": args.view.layer,
        "patches": format!("{:?}", args.view.patches).to_lowercase(),
        "dataset_hash": dataset.metadata().hash(), "threads": args.view.threads(),
    });
    // The loader's position: the epoch and the batches taken from it.
    let (mut epoch, mut taken) = (0, 0);
    let mut trainer = None;
    if args.resume {
        let (resumed, record) = checkpoint::load(&checkpoint_path, d_in, options)
            .map_err(|e| at(&checkpoint_path, e))?;
        if record["settings"] != settings {
            let differ: Vec<String> = settings
                .as_object()
                .expect("an object")
                .iter()
                .filter(|(key, value)| &record["settings"][key.as_str()] != *value)
                .map(|(key, value)| {
                    let theirs = &record["settings"][key.as_str()];
                    let hint = if key == "threads" {
                        format!(" — pass --threads {theirs}")
                    } else {
                        String::new()
                    };
                    format!("{key} {value} (checkpoint: {theirs}){hint}")
                })
                .collect();
            return Err(Failure::Usage(format!(
                "--resume: the checkpoint was made with other settings: {}",
                differ.join(", ")
            )));
        }
        if resumed.steps_done() > args.steps
            || (resumed.steps_done() == args.steps && args.out.join(saelens::CONFIG_FILE).is_file())
        {
            return Err(Failure::Usage(format!(
                "--resume: already trained for {} steps; pass a larger --steps (the schedule then spans the new --steps)",
                resumed.steps_done()
            )));
        }
        epoch = record["epoch"].as_u64().unwrap_or(0);
        taken = record["taken"].as_u64().unwrap_or(0);
        trainer = Some(resumed);
    }
    let mut batches = Batches::at(&args.view, &dataset, args.seed, epoch, taken)?;
    let mut pending = None;
    let mut trainer = match trainer {
        Some(trainer) => trainer,
        None => {
            let first = batches.next()?;
            let trainer = Trainer::new(&first, d_in, options);
            pending = Some(first);
            trainer
        }
    };
    let chunks = pool.current_num_threads();
    let done = trainer.steps_done();
    let mut bar = Progress::steps(args.steps, done);
    let started = Instant::now();
    let mut last = None;
    let mut vectors = 0u64;
    for step in done + 1..=args.steps {
        let batch = match pending.take() {
            Some(batch) => batch,
            None => batches.next()?,
        };
        let report = pool.install(|| trainer.step(&batch, chunks));
        if !report.mse.is_finite() {
            bar.finish();
            return Err(Failure::Invalid(format!(
                "training diverged at step {step} (mse {}); nothing was saved: lower --lr",
                report.mse
            )));
        }
        vectors += (batch.len() / d_in) as u64;
        let rate = vectors as f64 / started.elapsed().as_secs_f64().max(1e-9);
        bar.update(step, args.steps);
        bar.note(format!(
            "mse {:.4}, fvu {:.3}, L0 {:.1}, dead {:.1}%, {rate:.0} vectors/s",
            report.mse,
            report.fvu,
            report.l0,
            100.0 * report.dead_fraction
        ));
        if let Some(log) = &mut log {
            let mut entry = serde_json::to_value(report).map_err(invalid)?;
            entry["vectors_per_second"] = rate.into();
            writeln!(log, "{entry}").map_err(invalid)?;
        }
        last = Some(report);
        if step == args.steps || (args.checkpoint_every > 0 && step % args.checkpoint_every == 0) {
            let record = serde_json::json!({
                "settings": settings, "epoch": batches.epoch, "taken": batches.taken,
            });
            checkpoint::save(&checkpoint_path, &trainer, &record)
                .map_err(|e| at(&checkpoint_path, e))?;
        }
    }
    bar.finish();
    if let Some(log) = &mut log {
        log.flush().map_err(invalid)?;
    }
    let metadata = dataset.metadata();
    let provenance = serde_json::json!({
        "dataset": dataset.dir(),
        "dataset_hash": metadata.hash(),
        "model_family": metadata.vit_family,
        "model": metadata.vit_ckpt,
        "layer": args.view.layer,
        "patches": format!("{:?}", args.view.patches).to_lowercase(),
        "steps": args.steps,
        "batch_size": args.view.batch_size,
        "seed": args.seed,
        "input_scale": trainer.scale,
        "trained_as": format!("{:?}", args.architecture).to_lowercase(),
        "k": (args.architecture != ArchitectureArg::Relu).then_some(k),
        "l1_coeff": (args.architecture == ArchitectureArg::Relu).then_some(args.l1_coeff),
        "trained_by": concat!("modelbin ", env!("CARGO_PKG_VERSION")),
    });
    saelens::save(&args.out, &trainer.unscaled(), provenance).map_err(|e| at(&args.out, e))?;
    let Some(report) = last else {
        // Resumed at its last step (the run stopped before saving): saved now.
        outln!(
            "{}: {} steps (from the checkpoint; nothing left to train)",
            args.out.display(),
            trainer.steps_done()
        )?;
        return Ok(());
    };
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        print_json(&serde_json::json!({
            "path": args.out, "steps": report.step, "mse": report.mse, "fvu": report.fvu,
            "l0": report.l0, "dead_fraction": report.dead_fraction,
            "vectors_per_second": vectors as f64 / seconds.max(1e-9), "seconds": seconds,
        }))?;
    } else {
        outln!(
            "{}: {} steps, fvu {:.4} (explained variance {:.4}), L0 {:.1}, dead {:.1}%, {:.0} vectors/s",
            args.out.display(),
            report.step,
            report.fvu,
            1.0 - report.fvu,
            report.l0,
            100.0 * report.dead_fraction,
            vectors as f64 / seconds.max(1e-9)
        )?;
    }
    Ok(())
}

/// Training batches: shuffled epochs one after another, from a position
/// (an epoch and the batches already taken from it).
struct Batches<'a> {
    view: &'a ViewArgs,
    dataset: &'a Arc<Dataset>,
    seed: u64,
    epoch: u64,
    taken: u64,
    loader: Loader,
}

impl<'a> Batches<'a> {
    fn at(
        view: &'a ViewArgs,
        dataset: &'a Arc<Dataset>,
        seed: u64,
        epoch: u64,
        taken: u64,
    ) -> Result<Self, Failure> {
        let mut loader = view.loader(dataset, seed, epoch, true)?;
        if taken > 0 {
            loader.nth(taken as usize - 1);
        }
        Ok(Batches {
            view,
            dataset,
            seed,
            epoch,
            taken,
            loader,
        })
    }

    /// The next batch, starting the next epoch when one ends; refused when
    /// it holds NaN or Inf.
    fn next(&mut self) -> Result<Vec<f32>, Failure> {
        loop {
            if let Some(batch) = self.loader.next() {
                self.view.check_finite(self.dataset, &batch.data)?;
                self.taken += 1;
                return Ok(batch.data);
            }
            self.epoch += 1;
            self.taken = 0;
            self.loader = self
                .view
                .loader(self.dataset, self.seed, self.epoch, true)?;
        }
    }
}

/// Arguments of `modelbin sae eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The autoencoder's directory (cfg.json, sae_weights.safetensors).
    sae: PathBuf,
    #[command(flatten)]
    view: ViewArgs,
    /// Also measure the cross-entropy recovered when the reconstruction
    /// replaces the layer in this TLLM model (the one recorded).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Windows of the dataset run through the model for the cross-entropy.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    ce_windows: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// What `sae eval` measures over a view.
#[derive(Debug, serde::Serialize)]
struct Evaluation {
    vectors: u64,
    mse: f64,
    explained_variance: f64,
    l0: f64,
    dead_fraction: f64,
    /// Latents by how often they fire: counts in decades of density,
    /// `[never, < 1e-5, [1e-5, 1e-4), …, [1e-1, 1]]`.
    density_histogram: [u64; 7],
    /// With `--model`: the next-token loss clean, spliced and ablated.
    #[serde(skip_serializing_if = "Option::is_none")]
    cross_entropy: Option<CrossEntropy>,
}

/// An autoencoder and the dataset view it reads, of the same width.
pub struct Opened {
    /// The autoencoder.
    pub sae: Sae<f32>,
    /// Its `cfg.json`.
    pub config: serde_json::Value,
    /// The dataset.
    pub dataset: Arc<Dataset>,
    /// The vectors' width.
    pub d_in: usize,
    /// Examples in the view.
    pub examples: u64,
}

/// Opens the autoencoder in `dir` and the view; refused when their widths
/// differ.
pub fn open_for_view(dir: &Path, view: &ViewArgs) -> Result<Opened, Failure> {
    let (sae, config) = saelens::load(dir).map_err(|e| at(dir, e))?;
    let (dataset, d_in, examples) = view.open()?;
    if sae.d_in != d_in {
        return Err(Failure::Invalid(format!(
            "{}: the autoencoder takes vectors of {} values, the dataset holds {d_in}",
            dir.display(),
            sae.d_in
        )));
    }
    Ok(Opened {
        sae,
        config,
        dataset,
        d_in,
        examples,
    })
}

fn eval(args: &EvalArgs) -> Result<(), Failure> {
    let Opened {
        sae,
        config,
        dataset,
        d_in,
        examples,
    } = open_for_view(&args.sae, &args.view)?;
    let trained_on = (
        &config["metadata"]["dataset_hash"],
        &config["metadata"]["layer"],
    );
    if trained_on
        != (
            &serde_json::json!(dataset.metadata().hash()),
            &serde_json::json!(args.view.layer),
        )
    {
        eprintln!(
            "warning: {} was trained on dataset {}, layer {}; this is dataset {}, layer {}",
            args.sae.display(),
            trained_on.0,
            trained_on.1,
            dataset.metadata().hash(),
            args.view.layer
        );
    }
    let pool = crate::work::thread_pool(Some(args.view.threads()))?;
    let splice = args
        .model
        .as_deref()
        .map(|model| crate::splice::Splice::open(model, &dataset, args.view.layer, args.ce_windows))
        .transpose()?;
    let mut totals = Totals::new(&sae);
    let mut progress = Progress::new("evaluating");
    let total_bytes = examples * d_in as u64 * 4;
    for batch in args.view.loader(&dataset, 0, 0, false)? {
        args.view.check_finite(&dataset, &batch.data)?;
        pool.install(|| totals.add(&sae, &batch.data));
        progress.update(totals.vectors * d_in as u64 * 4, total_bytes);
    }
    progress.finish();
    let mut result = totals.finish();
    if let Some(splice) = &splice {
        result.cross_entropy = Some(pool.install(|| splice.measure(&sae))?);
    }
    if args.json {
        print_json(&result)?;
    } else {
        outln!(
            "{} on {} vectors: mse {:.6}, explained variance {:.4}, L0 {:.2}, dead {:.2}%",
            args.sae.display(),
            result.vectors,
            result.mse,
            result.explained_variance,
            result.l0,
            100.0 * result.dead_fraction
        )?;
        outln!(
            "latents by firing density: never {}, <1e-5 {}, 1e-5..1e-4 {}, 1e-4..1e-3 {}, 1e-3..1e-2 {}, 1e-2..1e-1 {}, >=1e-1 {}",
            result.density_histogram[0],
            result.density_histogram[1],
            result.density_histogram[2],
            result.density_histogram[3],
            result.density_histogram[4],
            result.density_histogram[5],
            result.density_histogram[6]
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
        }
    }
    Ok(())
}

/// Running sums of an evaluation.
struct Totals {
    vectors: u64,
    squared_error: f64,
    sum: Vec<f64>,
    sum_of_squares: f64,
    active: u64,
    fired: Vec<u64>,
}

impl Totals {
    fn new(sae: &Sae<f32>) -> Self {
        Totals {
            vectors: 0,
            squared_error: 0.0,
            sum: vec![0.0; sae.d_in],
            sum_of_squares: 0.0,
            active: 0,
            fired: vec![0; sae.d_sae],
        }
    }

    fn add(&mut self, sae: &Sae<f32>, batch: &[f32]) {
        let rows = batch.len() / sae.d_in;
        let codes = sae.encode(batch, rows);
        let recon = sae.decode(&codes);
        for (row, x) in batch.chunks_exact(sae.d_in).enumerate() {
            for (j, _) in codes.active(row) {
                self.fired[j] += 1;
                self.active += 1;
            }
            for ((s, &v), &r) in self.sum.iter_mut().zip(x).zip(&recon[row * sae.d_in..]) {
                *s += f64::from(v);
                self.sum_of_squares += f64::from(v).powi(2);
                self.squared_error += f64::from(r - v).powi(2);
            }
        }
        self.vectors += rows as u64;
    }

    fn finish(self) -> Evaluation {
        let n = self.vectors.max(1) as f64;
        let variance = self.sum_of_squares - self.sum.iter().map(|s| s * s).sum::<f64>() / n;
        let mut histogram = [0u64; 7];
        for &f in &self.fired {
            let density = f as f64 / n;
            let bucket = if f == 0 {
                0
            } else {
                (density.log10().floor() as i64 + 7).clamp(1, 6) as usize
            };
            histogram[bucket] += 1;
        }
        Evaluation {
            vectors: self.vectors,
            mse: self.squared_error / (n * self.sum.len() as f64),
            explained_variance: 1.0 - self.squared_error / variance.max(f64::MIN_POSITIVE),
            l0: self.active as f64 / n,
            dead_fraction: histogram[0] as f64 / self.fired.len() as f64,
            density_histogram: histogram,
            cross_entropy: None,
        }
    }
}
