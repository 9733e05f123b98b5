//! `modelbin init-tllm`, `modelbin tllm logits`, `modelbin generate`
//! (`modelbin tllm train` is in `train.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use modelbin_format::tllm::Config;
use modelbin_infer::tllm::{Model, Sampling, generate};

use crate::{Failure, invalid, print_json};

/// Shape and seed of a new random model.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Model dimension.
    #[arg(long, default_value_t = 64)]
    dim: u32,
    /// Transformer blocks.
    #[arg(long, default_value_t = 2)]
    layers: u32,
    /// Attention heads (must divide --dim).
    #[arg(long, default_value_t = 2)]
    heads: u32,
    /// Feed-forward hidden dimension.
    #[arg(long, default_value_t = 128)]
    ffn: u32,
    /// Maximum sequence length.
    #[arg(long, default_value_t = 128)]
    seq: u32,
    /// Vocabulary size (256: one token per byte).
    #[arg(long, default_value_t = 256)]
    vocab: u32,
    /// Dropout rate recorded in the header (unused at inference).
    #[arg(long, default_value_t = 0.0)]
    dropout: f32,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output file.
    output: PathBuf,
}

/// A configuration error in the words of the flags that set each field.
pub fn config_failure(e: modelbin_format::Error) -> Failure {
    use modelbin_format::{Error, TllmError};
    match e {
        Error::Tllm(TllmError::InvalidConfig {
            field,
            value,
            reason,
            ..
        }) => {
            let flag = match field {
                "model_dim" => "--dim",
                "n_layers" => "--layers",
                "n_heads" => "--heads",
                "ffn_hidden_dim" => "--ffn",
                "max_seq_len" => "--seq",
                "vocab_size" => "--vocab",
                _ => "--dropout",
            };
            let reason = reason.replace("model_dim", "--dim");
            Failure::Invalid(format!("{flag} {value}: {reason}"))
        }
        other => Failure::Invalid(other.to_string()),
    }
}

/// Writes a model with N(0, 0.02) weights, LayerNorm weights 1, biases 0.
pub fn init(args: &InitArgs) -> Result<(), Failure> {
    let config = Config {
        model_dim: args.dim,
        n_layers: args.layers,
        n_heads: args.heads,
        ffn_hidden_dim: args.ffn,
        max_seq_len: args.seq,
        vocab_size: args.vocab,
        dropout: args.dropout,
    };
    config.validate().map_err(config_failure)?;
    let model = Model::random(config, args.seed, 0.02).map_err(invalid)?;
    let bytes = model
        .save(&args.output)
        .map_err(|e| Failure::Invalid(format!("{}: {e}", args.output.display())))?;
    println!(
        "{}: {} parameters, {bytes} bytes",
        args.output.display(),
        config.parameter_count().unwrap_or(0)
    );
    Ok(())
}

#[derive(Debug, Subcommand)]
pub enum TllmCommand {
    /// Print the logits of the last position (or every position) as JSON.
    Logits {
        /// The model file.
        #[arg(long)]
        model: PathBuf,
        /// Token ids, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        ids: Vec<u32>,
        /// Logits at every position (a JSON array of arrays).
        #[arg(long)]
        all: bool,
    },
    /// Train a byte-level model on text files (AdamW, cosine schedule, checkpoints).
    Train(crate::train::TrainArgs),
}

pub fn run(command: TllmCommand) -> Result<(), Failure> {
    match command {
        TllmCommand::Logits { model, ids, all } => {
            let model = open(&model)?;
            let logits = model.forward(&ids).map_err(invalid)?;
            let v = model.config().vocab_size as usize;
            if all {
                let rows: Vec<&[f32]> = logits.chunks_exact(v).collect();
                print_json(&rows);
            } else {
                print_json(&&logits[logits.len() - v..]);
            }
            Ok(())
        }
        TllmCommand::Train(args) => crate::train::train(&args),
    }
}

fn open(path: &Path) -> Result<Model, Failure> {
    Model::open(path).map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))
}

/// What to generate from.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The model file.
    #[arg(long)]
    model: PathBuf,
    /// Prompt text, one token per byte (models with vocab_size ≥ 256).
    #[arg(long, conflicts_with = "ids", required_unless_present = "ids")]
    prompt: Option<String>,
    /// Prompt token ids, comma-separated.
    #[arg(long, value_delimiter = ',')]
    ids: Option<Vec<u32>>,
    /// Tokens to generate at most.
    #[arg(long, default_value_t = 64)]
    max_tokens: usize,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Sample among the k most likely tokens.
    #[arg(long)]
    top_k: Option<usize>,
    /// Sample among the most likely tokens whose probability reaches p.
    #[arg(long)]
    top_p: Option<f32>,
    /// Sampler seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Stop after generating this id.
    #[arg(long)]
    stop: Option<u32>,
    /// Print a JSON report (ids, text, speed) instead of streaming text.
    #[arg(long)]
    json: bool,
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

pub fn generate_command(args: &GenerateArgs) -> Result<(), Failure> {
    let model = open(&args.model)?;
    let bytes_level = model.config().vocab_size >= 256;
    let prompt: Vec<u32> = match (&args.prompt, &args.ids) {
        (Some(text), _) if bytes_level => text.bytes().map(u32::from).collect(),
        (Some(_), _) => {
            return Err(Failure::Invalid(format!(
                "--prompt needs a byte-level model (vocab_size ≥ 256); this one has {}: use --ids",
                model.config().vocab_size
            )));
        }
        (None, Some(ids)) => ids.clone(),
        (None, None) => unreachable!("clap requires --prompt or --ids"),
    };
    let sampling = Sampling {
        temperature: args.temperature,
        top_k: args.top_k,
        top_p: args.top_p,
        seed: args.seed,
    };
    let stream = !args.json;
    let mut stdout = std::io::stdout().lock();
    let result = generate(
        &model,
        &prompt,
        args.max_tokens,
        sampling,
        args.stop,
        |id| {
            if stream {
                let piece = if bytes_level {
                    render(&[id])
                } else {
                    format!("{id} ").into_bytes()
                };
                let _ = stdout.write_all(&piece);
                let _ = stdout.flush();
            }
        },
    )
    .map_err(invalid)?;
    drop(stdout);
    if args.json {
        #[derive(serde::Serialize)]
        struct Report<'a> {
            ids: &'a [u32],
            text: Option<String>,
            stopped: &'a str,
            tokens_per_second: f64,
        }
        print_json(&Report {
            ids: &result.ids,
            text: bytes_level.then(|| String::from_utf8_lossy(&render(&result.ids)).into_owned()),
            stopped: result.stopped,
            tokens_per_second: result.tokens_per_second,
        });
    } else {
        println!();
        eprintln!(
            "{} tokens in {:.3} s ({:.1} tokens/s), stopped: {}",
            result.ids.len(),
            result.seconds,
            result.tokens_per_second,
            result.stopped
        );
    }
    Ok(())
}
