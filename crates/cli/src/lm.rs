//! `modelbin lm logits|generate`: decoder language models (GPT-2,
//! GPT-NeoX, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3) from Hugging Face model directories, with the
//! directory's `tokenizer.json` for text (see `modelbin_infer::lm`);
//! `generate` may be steered by an autoencoder's latents
//! (`--sae DIR --steer LATENT:ALPHA`).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use modelbin_infer::SaeError;
use modelbin_infer::lm::{LanguageModel, LoadOptions, Steering, generate_steered};
use modelbin_infer::sae::steer::steering;
use modelbin_tokenize::HfTokenizer;

use crate::args::{IdList, flatten_ids, parse_ids};
use crate::failure::{Failure, at, invalid};
use crate::generating::{Render, SamplingArgs, print_generation};
use crate::stdout::print_json;

/// `modelbin lm …`.
#[derive(Debug, Subcommand)]
pub enum LmCommand {
    /// Print the logits of the last position (or every position) as JSON.
    Logits {
        #[command(flatten)]
        input: LmInput,
        /// Logits at every position (a JSON array of arrays).
        #[arg(long)]
        all: bool,
        /// Accepted for uniformity: the output is always JSON.
        #[arg(long)]
        json: bool,
    },
    /// Generate text after a prompt.
    Generate {
        #[command(flatten)]
        input: LmInput,
        #[command(flatten)]
        sampling: SamplingArgs,
        /// Stop after generating this id (repeatable; default: the
        /// configuration's end-of-sequence ids).
        #[arg(long)]
        stop: Vec<u32>,
        #[command(flatten)]
        steer: SteerArgs,
    },
}

/// Steering by an autoencoder's latents.
#[derive(Debug, Args)]
pub struct SteerArgs {
    /// An autoencoder's directory (SAELens layout) trained on this model:
    /// its cfg.json's hook_name is the site steered.
    #[arg(long, requires = "steer")]
    sae: Option<PathBuf>,
    /// Add ALPHA times the decoder row of LATENT at the autoencoder's
    /// site, at every position (prompt and generated); repeatable.
    #[arg(long, value_name = "LATENT:ALPHA", requires = "sae", value_parser = crate::args::parse_steer)]
    steer: Vec<(usize, f32)>,
}

impl SteerArgs {
    /// The steering asked for, if any.
    fn open(&self, model: &LanguageModel) -> Result<Option<Steering>, Failure> {
        let Some(dir) = &self.sae else {
            return Ok(None);
        };
        let failure = |e| crate::sae_view::sae_failure(e, dir);
        let (sae, config) = modelbin_infer::sae::layouts::load(dir).map_err(failure)?;
        steering(model, model.dir(), &sae, dir, &config, &self.steer)
            .map(Some)
            .map_err(|e| match e {
                modelbin_infer::Error::Sae(SaeError::NoSuchLatent { latent, d_sae }) => {
                    Failure::Usage(format!(
                        "--steer {latent}:…: the autoencoder has {d_sae} latents"
                    ))
                }
                e => failure(e),
            })
    }
}

/// The model and the prompt.
#[derive(Debug, Args)]
pub struct LmInput {
    /// A Hugging Face model directory (config.json, model.safetensors or
    /// its shards, tokenizer.json): GPT-2, GPT-NeoX/Pythia, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3.
    #[arg(short, long)]
    model: PathBuf,
    /// Prompt text, tokenized with the model's tokenizer.json as
    /// transformers does (special tokens added: a Llama BOS first).
    #[arg(long, conflicts_with = "ids", required_unless_present = "ids")]
    prompt: Option<String>,
    /// Prompt token ids: commas and/or spaces.
    #[arg(long, num_args = 1.., value_parser = parse_ids)]
    ids: Option<Vec<IdList>>,
    /// Run the linear layers on int8 weights (faster; logits about a
    /// percent from float32's).
    #[arg(long)]
    int8: bool,
}

/// A model ready to run, its tokenizer if it has one, and the prompt's ids.
struct Opened {
    model: LanguageModel,
    tokenizer: Option<HfTokenizer>,
    prompt: Vec<u32>,
}

impl LmInput {
    fn open(&self) -> Result<Opened, Failure> {
        let dir = &self.model;
        let model =
            LanguageModel::open_with(dir, LoadOptions::int8(self.int8)).map_err(|e| at(dir, e))?;
        let tokenizer = open_tokenizer(dir, self.prompt.is_some())?;
        let prompt = match (&self.prompt, &tokenizer) {
            (Some(text), Some(tokenizer)) => {
                tokenizer.encode(text, true).map_err(|e| at(dir, e))?
            }
            // clap requires --ids when --prompt is absent.
            _ => flatten_ids(self.ids.as_deref().unwrap_or_default()),
        };
        Ok(Opened {
            model,
            tokenizer,
            prompt,
        })
    }
}

/// The directory's tokenizer: required for a text prompt, else read when
/// there is one (to print text).
fn open_tokenizer(dir: &Path, required: bool) -> Result<Option<HfTokenizer>, Failure> {
    if !required && !dir.join("tokenizer.json").is_file() {
        return Ok(None);
    }
    HfTokenizer::open_dir(dir).map(Some).map_err(|e| at(dir, e))
}

/// Runs `modelbin lm …`.
pub fn run(command: LmCommand) -> Result<(), Failure> {
    match command {
        LmCommand::Logits { input, all, .. } => {
            let Opened { model, prompt, .. } = input.open()?;
            let logits = model.logits(&prompt).map_err(invalid)?;
            let v = model.config().vocab_size;
            if all {
                let rows: Vec<&[f32]> = logits.chunks_exact(v).collect();
                print_json(&rows)
            } else {
                print_json(&&logits[logits.len() - v..])
            }
        }
        LmCommand::Generate {
            input,
            sampling,
            stop,
            steer,
        } => {
            let Opened {
                model,
                tokenizer,
                prompt,
            } = input.open()?;
            let steering = steer.open(&model)?;
            let stop = if stop.is_empty() {
                model.config().eos_token_ids.clone()
            } else {
                stop
            };
            let mut render = TextRender {
                tokenizer: tokenizer.as_ref(),
                shown: 0,
            };
            let s = &sampling;
            print_generation(s.json, &mut render, |on_token| {
                generate_steered(
                    &model,
                    steering.as_ref(),
                    &prompt,
                    s.max_tokens,
                    s.sampling(),
                    &stop,
                    on_token,
                )
                .map_err(invalid)
            })
        }
    }
}

/// Generated ids as the tokenizer decodes them, streamed as the bytes the
/// text grows by (a character split over tokens is written once whole by
/// the terminal-safe writer); ids when the model has no tokenizer.
struct TextRender<'t> {
    tokenizer: Option<&'t HfTokenizer>,
    /// Bytes of the decoded text already streamed.
    shown: usize,
}

impl Render for TextRender<'_> {
    fn next_piece(&mut self, ids: &[u32]) -> Vec<u8> {
        let Some(tokenizer) = self.tokenizer else {
            return format!("{} ", ids[ids.len() - 1]).into_bytes();
        };
        // Decoding the whole text keeps what a decoder does across tokens
        // (a Metaspace file's spaces); the new bytes are what grew.
        let text = tokenizer.decode_bytes(ids).unwrap_or_default();
        let piece = text.get(self.shown..).unwrap_or_default().to_vec();
        self.shown = self.shown.max(text.len());
        piece
    }

    fn text(&self, ids: &[u32]) -> Option<String> {
        let bytes = self.tokenizer?.decode_bytes(ids).ok()?;
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }
}
