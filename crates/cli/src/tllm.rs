//! `modelbin tllm init|logits|generate` (`tllm train` is in `train.rs`).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use modelbin_infer::tllm::{Model, generate};

use crate::args::{IdList, OutputPath, flatten_ids, parse_ids};
use crate::failure::{Failure, at, invalid};
use crate::generating::{Render, SamplingArgs, print_generation};
use crate::model_shape::ModelShape;
use crate::stdout::{json_text, print_json, report_beside};

/// Refuses to replace an existing file unless `force` (a usage error:
/// exit 2 with the flag that allows it).
pub fn refuse_overwrite(path: &Path, force: bool, how: &str) -> Result<(), Failure> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_file()) && !force {
        return Err(Failure::Usage(format!("{} exists; {how}", path.display())));
    }
    Ok(())
}

/// Arguments of `modelbin tllm init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    shape: ModelShape,
    /// Vocabulary size (256: one token per byte).
    #[arg(long, default_value_t = 256)]
    vocab: u32,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    output: OutputPath,
    /// Replace the output file if it exists (models are protected without
    /// it: one can hold hours of training).
    #[arg(long)]
    force: bool,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
}

/// Writes a model with N(0, 0.02) weights, LayerNorm weights 1, biases 0.
pub fn init(args: &InitArgs) -> Result<(), Failure> {
    let config = args.shape.config(args.vocab)?;
    let parameters = config.parameter_count().map_or(f64::INFINITY, |n| n as f64);
    crate::work::check_memory(parameters * 8.0, "this model")?;
    let output = args.output.path()?;
    refuse_overwrite(output, args.force, "pass --force to replace it")?;
    let model = Model::random(config, args.seed, 0.02).map_err(invalid)?;
    let bytes = model.save(output).map_err(|e| at(output, e))?;
    let parameters = config.parameter_count().unwrap_or(0);
    let text = if args.json {
        json_text(&serde_json::json!({
            "path": output, "parameter_count": parameters, "bytes_written": bytes
        }))
    } else {
        format!(
            "{}: {parameters} parameters, {bytes} bytes",
            output.display()
        )
    };
    report_beside(output, &text)
}

/// `modelbin tllm …`.
#[derive(Debug, Subcommand)]
pub enum TllmCommand {
    /// Write a randomly initialised model.
    Init(InitArgs),
    /// Print the logits of the last position (or every position) as JSON.
    Logits {
        /// The model file.
        #[arg(short, long)]
        model: PathBuf,
        /// Token ids: commas and/or spaces (`1,2,3` or `"1 2 3"`).
        #[arg(long, required = true, num_args = 1.., value_parser = parse_ids)]
        ids: Vec<IdList>,
        /// Logits at every position (a JSON array of arrays).
        #[arg(long)]
        all: bool,
        /// Accepted for uniformity: the output is always JSON.
        #[arg(long)]
        json: bool,
    },
    /// Generate tokens (or byte-level text).
    Generate(GenerateArgs),
    /// Train a byte-level model on text files (AdamW, cosine schedule, checkpoints).
    Train(crate::train::TrainArgs),
}

/// Runs `modelbin tllm …`.
pub fn run(command: TllmCommand) -> Result<(), Failure> {
    match command {
        TllmCommand::Init(args) => init(&args),
        TllmCommand::Logits {
            model, ids, all, ..
        } => {
            let ids = flatten_ids(&ids);
            let model = open(&model)?;
            let logits = model.forward(&ids).map_err(invalid)?;
            let v = model.config().vocab_size as usize;
            if all {
                let rows: Vec<&[f32]> = logits.chunks_exact(v).collect();
                print_json(&rows)?;
            } else {
                print_json(&&logits[logits.len() - v..])?;
            }
            Ok(())
        }
        TllmCommand::Generate(args) => generate_command(&args),
        TllmCommand::Train(args) => crate::train::train(&args),
    }
}

fn open(path: &Path) -> Result<Model, Failure> {
    crate::inspect::expect_format(
        path,
        modelbin_format::Format::Tllm,
        "tllm commands take a TLLM model (`modelbin tllm init` or `tllm train` makes one)",
    )?;
    Model::open(path).map_err(|e| at(path, e))
}

/// What to generate from.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The model file.
    #[arg(short, long)]
    model: PathBuf,
    /// Prompt text, one token per byte (models with vocab_size ≥ 256).
    #[arg(long, conflicts_with = "ids", required_unless_present = "ids")]
    prompt: Option<String>,
    /// Prompt token ids: commas and/or spaces.
    #[arg(long, num_args = 1.., value_parser = parse_ids)]
    ids: Option<Vec<IdList>>,
    #[command(flatten)]
    sampling: SamplingArgs,
    /// Stop after generating this id.
    #[arg(long)]
    stop: Option<u32>,
}

/// Byte-level rendering: ids below 256 are bytes; others print as `<|id|>`.
fn render(ids: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        match u8::try_from(id) {
            Ok(b) => out.push(b),
            Err(_) => out.extend_from_slice(format!("<|{id}|>").as_bytes()),
        }
    }
    out
}

/// A TLLM model's ids as text: bytes for a byte-level model, else the ids.
struct TllmRender {
    bytes_level: bool,
}

impl Render for TllmRender {
    fn next_piece(&mut self, ids: &[u32]) -> Vec<u8> {
        let id = ids[ids.len() - 1];
        if self.bytes_level {
            render(&[id])
        } else {
            format!("{id} ").into_bytes()
        }
    }

    fn text(&self, ids: &[u32]) -> Option<String> {
        self.bytes_level
            .then(|| String::from_utf8_lossy(&render(ids)).into_owned())
    }
}

pub fn generate_command(args: &GenerateArgs) -> Result<(), Failure> {
    let model = open(&args.model)?;
    let bytes_level = model.config().vocab_size >= 256;
    let prompt: Vec<u32> = match &args.prompt {
        Some(text) if bytes_level => text.bytes().map(u32::from).collect(),
        Some(_) => {
            return Err(Failure::Invalid(format!(
                "--prompt needs a byte-level model (vocab_size ≥ 256); this one has {}: use --ids",
                model.config().vocab_size
            )));
        }
        // clap requires --ids when --prompt is absent.
        None => flatten_ids(args.ids.as_deref().unwrap_or_default()),
    };
    let s = &args.sampling;
    print_generation(s.json, &mut TllmRender { bytes_level }, |on_token| {
        generate(
            &model,
            &prompt,
            s.max_tokens,
            s.sampling(),
            args.stop,
            on_token,
        )
        .map_err(invalid)
    })
}
