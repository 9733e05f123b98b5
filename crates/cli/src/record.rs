//! `modelbin acts record`: a model's residual stream over text files,
//! written as a SAEV dataset (one image per window of tokens) with the
//! windows' token ids kept beside the shards.
//!
//! A TLLM model reads bytes; a BERT model (an EMBD file or a Hugging Face
//! directory) reads WordPiece tokens, each window run as
//! `[CLS] window [SEP]`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use modelbin_format::Format;
use modelbin_format::checksum::{hex, sha256};
use modelbin_format::saev::{Metadata, Writer};
use modelbin_infer::embedder::Embedder;
use modelbin_infer::tllm::Model;
use rayon::prelude::*;

use crate::failure::{Failure, at, invalid};
use crate::progress::Progress;
use crate::stdout::{outln, print_json};

/// Arguments of `modelbin acts record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The model: a byte-level TLLM file, or a BERT model (an EMBD file or a
    /// Hugging Face model directory).
    #[arg(short, long)]
    model: PathBuf,
    /// Blocks whose output is recorded, comma-separated (0 is the first;
    /// negative values count from the end, -1 is the last).
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        default_value = "-1"
    )]
    layers: Vec<i64>,
    /// Tokens per window, one SAEV image each (default: the model's
    /// context; for BERT its max_seq_length less the CLS and SEP tokens).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    tokens_per_text: Option<u64>,
    /// BERT: also record the CLS row of each window, as the CLS token.
    #[arg(long)]
    cls: bool,
    /// Vectors per shard budget.
    #[arg(long, default_value_t = 2_400_000)]
    max_patches_per_shard: u64,
    /// The root directory, where `<HASH>/` is created.
    #[arg(short, long)]
    out: PathBuf,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
    /// Text files, tokenized and concatenated in order.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Tokens computed together before their windows are written in order.
const TOKENS_PER_ROUND: usize = 16_384;

/// The model being recorded.
enum Recorded {
    Tllm(Model),
    Bert(Box<Embedder>),
}

impl Recorded {
    fn open(path: &Path) -> Result<Recorded, Failure> {
        let format = if path.is_dir() {
            Format::Embd
        } else {
            modelbin_format::detect::detect(path).map_err(|e| at(path, e))?
        };
        match format {
            Format::Tllm => {
                let model = Model::open(path).map_err(|e| at(path, e))?;
                if model.config().vocab_size < 256 {
                    return Err(Failure::Invalid(format!(
                        "{}: vocab_size {} is not byte-level (≥ 256), so text cannot be its input",
                        path.display(),
                        model.config().vocab_size
                    )));
                }
                Ok(Recorded::Tllm(model))
            }
            Format::Embd => Ok(Recorded::Bert(Box::new(
                Embedder::open_model(path).map_err(|e| at(path, e))?,
            ))),
            other => Err(Failure::Invalid(format!(
                "{}: the file's format is {other}; acts record reads TLLM and EMBD models (or a Hugging Face model directory)",
                path.display()
            ))),
        }
    }

    fn family(&self) -> &'static str {
        match self {
            Recorded::Tllm(_) => "tllm",
            Recorded::Bert(_) => "bert",
        }
    }

    fn blocks(&self) -> usize {
        match self {
            Recorded::Tllm(m) => m.config().n_layers as usize,
            Recorded::Bert(e) => e.config().num_layers,
        }
    }

    fn width(&self) -> usize {
        match self {
            Recorded::Tllm(m) => m.config().model_dim as usize,
            Recorded::Bert(e) => e.config().hidden_size,
        }
    }

    fn vocab_size(&self) -> usize {
        match self {
            Recorded::Tllm(m) => m.config().vocab_size as usize,
            Recorded::Bert(e) => e.tokenizer().vocab_size(),
        }
    }

    /// The longest window, and the default one.
    fn windows(&self) -> (usize, usize) {
        match self {
            Recorded::Tllm(m) => {
                let n = m.config().max_seq_len as usize;
                (n, n)
            }
            Recorded::Bert(e) => {
                let c = e.config();
                let longest = c.max_position.saturating_sub(2);
                (
                    longest,
                    c.max_seq_length.min(c.max_position).saturating_sub(2),
                )
            }
        }
    }

    /// The token ids of a file's text.
    fn tokenize(&self, path: &Path, bytes: Vec<u8>) -> Result<Vec<u32>, Failure> {
        match self {
            Recorded::Tllm(_) => Ok(bytes.into_iter().map(u32::from).collect()),
            Recorded::Bert(e) => {
                let text = String::from_utf8(bytes).map_err(|_| {
                    Failure::Invalid(format!(
                        "{}: is not UTF-8 text (a BERT model reads text)",
                        path.display()
                    ))
                })?;
                Ok(e.tokenizer().pieces(&text))
            }
        }
    }

    /// The vocabulary kept beside the token ids (none for bytes).
    fn vocabulary(&self) -> Option<Vec<&str>> {
        match self {
            Recorded::Tllm(_) => None,
            Recorded::Bert(e) => {
                let t = e.tokenizer();
                Some(
                    (0..t.vocab_size() as u32)
                        .map(|id| t.token(id).unwrap_or(""))
                        .collect(),
                )
            }
        }
    }

    /// Each window's image, `[layers, tokens, width]` flattened.
    fn images(
        &self,
        windows: &[&[u32]],
        blocks: &[usize],
        cls: bool,
    ) -> Result<Vec<Vec<f32>>, Failure> {
        match self {
            Recorded::Tllm(model) => windows
                .par_iter()
                .map(|ids| model.residual_stream(ids, blocks).map(|s| s.concat()))
                .collect::<Result<_, _>>()
                .map_err(invalid),
            Recorded::Bert(embedder) => {
                let specials = embedder.tokenizer().specials();
                let sequences: Vec<Vec<u32>> = windows
                    .iter()
                    .map(|w| {
                        let mut s = Vec::with_capacity(w.len() + 2);
                        s.push(specials.cls);
                        s.extend_from_slice(w);
                        s.push(specials.sep);
                        s
                    })
                    .collect();
                let refs: Vec<&[u32]> = sequences.iter().map(Vec::as_slice).collect();
                let states = embedder
                    .encoder()
                    .hidden_states(&refs, blocks)
                    .map_err(invalid)?;
                let h = self.width();
                let mut start = 0;
                let mut images = Vec::with_capacity(windows.len());
                for window in windows {
                    // Rows of this sequence: [CLS] at `start`, the window
                    // after it, [SEP] last (never recorded).
                    let first = if cls { start } else { start + 1 };
                    let rows = first..start + 1 + window.len();
                    let mut image = Vec::with_capacity(blocks.len() * rows.len() * h);
                    for state in &states {
                        image.extend_from_slice(&state[rows.start * h..rows.end * h]);
                    }
                    images.push(image);
                    start += window.len() + 2;
                }
                Ok(images)
            }
        }
    }
}

/// Runs `modelbin acts record`.
pub fn record(args: &RecordArgs) -> Result<(), Failure> {
    let model = Recorded::open(&args.model)?;
    if args.cls && matches!(model, Recorded::Tllm(_)) {
        return Err(Failure::Usage(
            "--cls: a TLLM model has no [CLS] token".into(),
        ));
    }
    let n_layers = model.blocks() as i64;
    let blocks: Vec<usize> = args
        .layers
        .iter()
        .map(|&l| {
            let block = if l < 0 { n_layers + l } else { l };
            if (0..n_layers).contains(&block) {
                Ok(block as usize)
            } else {
                Err(Failure::Usage(format!(
                    "--layers {l}: the model has {n_layers} blocks"
                )))
            }
        })
        .collect::<Result<_, _>>()?;
    let (longest, default) = model.windows();
    if longest == 0 {
        return Err(Failure::Invalid(format!(
            "{}: the model's context holds no token besides [CLS] and [SEP]",
            args.model.display()
        )));
    }
    let window = args.tokens_per_text.map_or(default.max(1) as u64, |t| t);
    if window > longest as u64 {
        return Err(Failure::Usage(format!(
            "--tokens-per-text {window}: at most {longest} tokens fit the model's context"
        )));
    }
    let window = window as usize;
    let mut ids = Vec::new();
    let mut files = Vec::new();
    for path in &args.files {
        let bytes =
            std::fs::read(path).map_err(|e| at(path, modelbin_format::Error::io(path, e)))?;
        files.push(serde_json::json!({
            "path": path, "bytes": bytes.len(), "sha256": hex(&sha256(&bytes)),
        }));
        ids.extend(model.tokenize(path, bytes)?);
    }
    let n_imgs = ids.len() / window;
    if n_imgs == 0 {
        return Err(Failure::Invalid(format!(
            "the text has {} tokens, fewer than one window of {window}",
            ids.len()
        )));
    }
    ids.truncate(n_imgs * window);
    let vit_ckpt = checkpoint_id(&args.model)?;
    let tokens = match model {
        Recorded::Tllm(_) => "bytes (token id = byte value)",
        Recorded::Bert(_) => "WordPiece ids of the model's vocabulary, without [CLS]/[SEP]",
    };
    let metadata = Metadata {
        vit_family: model.family().into(),
        vit_ckpt,
        layers: args.layers.clone(),
        n_patches_per_img: window as u64,
        cls_token: args.cls,
        d_vit: model.width() as u64,
        seed: 0,
        n_imgs: n_imgs as u64,
        max_patches_per_shard: args.max_patches_per_shard,
        data: serde_json::json!({
            "files": files,
            "tokens": tokens,
            "vocab_size": model.vocab_size(),
            "token_ids": "tokens.bin: u32 little-endian, [n_imgs, n_patches_per_img]",
            "windowing": format!("consecutive windows of {window} tokens of the files concatenated in order; a final partial window is dropped"),
        }),
    };
    let mut writer = Writer::create(&args.out, metadata).map_err(|e| at(&args.out, e))?;
    writer
        .write_tokens(&ids, model.vocabulary().as_deref())
        .map_err(invalid)?;
    let mut progress = Progress::new("recording");
    let started = Instant::now();
    let windows: Vec<&[u32]> = ids.chunks_exact(window).collect();
    let per_round = (TOKENS_PER_ROUND / window).max(1);
    for (round, chunk) in windows.chunks(per_round).enumerate() {
        for image in model.images(chunk, &blocks, args.cls)? {
            writer.push(&image).map_err(invalid)?;
        }
        let done = ((round * per_round + chunk.len()) * window) as u64;
        progress.update(done, (n_imgs * window) as u64);
    }
    let dir = writer.finish().map_err(invalid)?;
    progress.finish();
    let vectors = blocks.len() * n_imgs * (window + usize::from(args.cls));
    report(
        &dir,
        n_imgs,
        vectors,
        started.elapsed().as_secs_f64(),
        args.json,
    )?;
    Ok(())
}

/// How a recording names its model (`vit_ckpt`): `sha256:` and the first
/// 16 hex digits of the model file's hash (for a directory, of its
/// `model.safetensors`), hashed from the mapped file.
pub fn checkpoint_id(model: &Path) -> Result<String, Failure> {
    let file = if model.is_dir() {
        model.join("model.safetensors")
    } else {
        model.to_path_buf()
    };
    let bytes = modelbin_format::source::MappedFile::open(&file).map_err(|e| at(&file, e))?;
    Ok(format!("sha256:{}", &hex(&sha256(&bytes))[..16]))
}

fn report(
    dir: &Path,
    images: usize,
    vectors: usize,
    seconds: f64,
    json: bool,
) -> Result<(), Failure> {
    let rate = vectors as f64 / seconds.max(1e-9);
    if json {
        print_json(&serde_json::json!({
            "path": dir, "images": images, "vectors": vectors, "seconds": seconds,
            "vectors_per_second": rate,
        }))
    } else {
        outln!(
            "{}: {images} windows, {vectors} vectors in {seconds:.2} s ({rate:.0} vectors/s)",
            dir.display()
        )
    }
}
