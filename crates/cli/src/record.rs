//! `modelbin acts record`: a TLLM model's residual stream over text files,
//! written as a SAEV dataset (one image per window of tokens).

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use modelbin_format::checksum::{hex, sha256};
use modelbin_format::saev::{Metadata, Writer};
use modelbin_infer::tllm::Model;
use rayon::prelude::*;

use crate::progress::Progress;
use crate::{Failure, at, invalid, print_json};

/// Arguments of `modelbin acts record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The model: a byte-level TLLM file (EMBD models are not recorded yet).
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
    /// Tokens per window, one SAEV image each (default: the model's context).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    tokens_per_text: Option<u64>,
    /// Vectors per shard budget.
    #[arg(long, default_value_t = 2_400_000)]
    max_patches_per_shard: u64,
    /// The root directory, where `<HASH>/` is created.
    #[arg(short, long)]
    out: PathBuf,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
    /// Text files; their bytes, concatenated in order, are the tokens.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Windows computed together before they are written in order.
const WINDOWS_PER_ROUND: usize = 64;

/// Runs `modelbin acts record`.
pub fn record(args: &RecordArgs) -> Result<(), Failure> {
    crate::inspect::expect_format(
        &args.model,
        modelbin_format::Format::Tllm,
        "acts record reads TLLM models (recording EMBD models is not supported yet)",
    )?;
    let model_file =
        modelbin_format::source::MappedFile::open(&args.model).map_err(|e| at(&args.model, e))?;
    let model = Model::open(&args.model).map_err(|e| at(&args.model, e))?;
    let config = *model.config();
    if config.vocab_size < 256 {
        return Err(Failure::Invalid(format!(
            "{}: vocab_size {} is not byte-level (≥ 256), so text cannot be its input",
            args.model.display(),
            config.vocab_size
        )));
    }
    let n_layers = i64::from(config.n_layers);
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
    let window = args
        .tokens_per_text
        .unwrap_or(u64::from(config.max_seq_len));
    if window > u64::from(config.max_seq_len) {
        return Err(Failure::Usage(format!(
            "--tokens-per-text {window}: the model's context is {} tokens",
            config.max_seq_len
        )));
    }
    let mut text = Vec::new();
    let mut files = Vec::new();
    for path in &args.files {
        let bytes =
            std::fs::read(path).map_err(|e| at(path, modelbin_format::Error::io(path, e)))?;
        files.push(serde_json::json!({
            "path": path, "bytes": bytes.len(), "sha256": hex(&sha256(&bytes)),
        }));
        text.extend_from_slice(&bytes);
    }
    let window = window as usize;
    let n_imgs = text.len() / window;
    if n_imgs == 0 {
        return Err(Failure::Invalid(format!(
            "the text has {} bytes, fewer than one window of {window}",
            text.len()
        )));
    }
    let metadata = Metadata {
        vit_family: "tllm".into(),
        vit_ckpt: format!("sha256:{}", &hex(&sha256(&model_file))[..16]),
        layers: args.layers.clone(),
        n_patches_per_img: window as u64,
        cls_token: false,
        d_vit: u64::from(config.model_dim),
        seed: 0,
        n_imgs: n_imgs as u64,
        max_patches_per_shard: args.max_patches_per_shard,
        data: serde_json::json!({
            "files": files,
            "tokens": "bytes (token id = byte value)",
            "windowing": format!("consecutive windows of {window} tokens of the files concatenated in order; a final partial window is dropped"),
        }),
    };
    let mut writer = Writer::create(&args.out, metadata).map_err(|e| at(&args.out, e))?;
    let mut progress = Progress::new("recording");
    let started = Instant::now();
    let windows: Vec<Vec<u32>> = text
        .chunks_exact(window)
        .map(|w| w.iter().map(|&b| u32::from(b)).collect())
        .collect();
    for (round, ids) in windows.chunks(WINDOWS_PER_ROUND).enumerate() {
        let images: Vec<Vec<f32>> = ids
            .par_iter()
            .map(|ids| {
                model
                    .residual_stream(ids, &blocks)
                    .map(|streams| streams.concat())
            })
            .collect::<Result<_, _>>()
            .map_err(invalid)?;
        for image in &images {
            writer.push(image).map_err(invalid)?;
        }
        let done = ((round * WINDOWS_PER_ROUND + ids.len()) * window) as u64;
        progress.update(done, (n_imgs * window) as u64);
    }
    let dir = writer.finish().map_err(invalid)?;
    progress.finish();
    report(
        &dir,
        n_imgs,
        blocks.len() * n_imgs * window,
        started.elapsed().as_secs_f64(),
        args.json,
    );
    Ok(())
}

fn report(dir: &Path, images: usize, vectors: usize, seconds: f64, json: bool) {
    let rate = vectors as f64 / seconds.max(1e-9);
    if json {
        print_json(&serde_json::json!({
            "path": dir, "images": images, "vectors": vectors, "seconds": seconds,
            "vectors_per_second": rate,
        }));
    } else {
        println!(
            "{}: {images} windows, {vectors} vectors in {seconds:.2} s ({rate:.0} vectors/s)",
            dir.display()
        );
    }
}
