//! `modelbin acts record`: a model's residual stream over text files, or a
//! vision transformer's over image files, written as a SAEV dataset (see
//! `modelbin_infer::record`).

use std::path::{Path, PathBuf};

use clap::Args;
use modelbin_infer::RecordError;
use modelbin_infer::lm::Site;
use modelbin_infer::record::{ImageRecordSettings, RecordSettings, Recording};

use crate::args::TextFormatArgs;
use crate::failure::{Failure, at};
use crate::progress::Progress;
use crate::stdout::{outln, print_json};

/// The library's defaults of a recording, which the flags take.
static DEFAULTS: std::sync::LazyLock<RecordSettings> =
    std::sync::LazyLock::new(RecordSettings::default);

/// The default layers as `--layers` writes them.
static DEFAULT_LAYERS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let layers: Vec<String> = DEFAULTS.layers.iter().map(i64::to_string).collect();
    layers.join(",")
});

/// Arguments of `modelbin acts record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The model: for text, a decoder language model's Hugging Face
    /// directory (GPT-2, GPT-NeoX/Pythia, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3, with its
    /// tokenizer.json), a byte-level TLLM file, or a BERT model (an EMBD file
    /// or a Hugging Face directory); for --images, a vision transformer's
    /// Hugging Face directory (DINOv2, CLIP, SigLIP, with its
    /// preprocessor_config.json).
    #[arg(short, long)]
    model: PathBuf,
    /// Blocks whose output is recorded, comma-separated (0 is the first;
    /// negative values count from the end, -1 is the last).
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        default_value = DEFAULT_LAYERS.as_str()
    )]
    layers: Vec<i64>,
    /// Tokens per window, one SAEV image each (default: the model's
    /// context; for BERT its max_seq_length less the CLS and SEP tokens; for
    /// a language model 128, SAELens's context size, its BOS included).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "images")]
    tokens_per_text: Option<u64>,
    /// BERT: also record the CLS row of each window, as the CLS token (a
    /// vision transformer's CLS token is recorded where it has one).
    #[arg(long, conflicts_with = "images")]
    cls: bool,
    /// Image files and directories (walked in sorted order for .jpg, .jpeg
    /// and .png files) to record a vision transformer over, one SAEV image
    /// each, instead of text files.
    #[arg(long, num_args = 1.., conflicts_with = "files")]
    images: Vec<PathBuf>,
    /// Refuse the recording when an image does not decode, instead of
    /// skipping it with a warning.
    #[arg(long)]
    strict: bool,
    /// Run a vision transformer's or a language model's linear layers on
    /// int8 weights: faster, activations about a percent from float32's.
    #[arg(long)]
    int8: bool,
    /// A language model: the hook point recorded, as SAELens names them
    /// (blocks.L.hook_SITE): the block's output before any final norm
    /// (resid_post), its input (resid_pre), or the attention's or MLP's
    /// output (attn_out, mlp_out).
    #[arg(long, default_value = DEFAULTS.site.name(), value_parser = parse_site, conflicts_with = "images")]
    site: Site,
    /// A language model: do not start each window with the tokenizer's BOS
    /// token (SAELens's prepend_bos, which also separates texts with it).
    #[arg(long, conflicts_with = "images")]
    no_bos: bool,
    /// Vectors per shard budget.
    #[arg(long, default_value_t = DEFAULTS.max_patches_per_shard)]
    max_patches_per_shard: u64,
    /// Record at most N tokens: the first whole windows of the input, in
    /// order, that fit (SAELens's training_tokens); the rest of the input
    /// is left, and the summary says how much.
    #[arg(long, value_name = "N", conflicts_with = "images", value_parser = clap::value_parser!(u64).range(1..))]
    max_tokens: Option<u64>,
    /// The root directory, where `<HASH>/` is created.
    #[arg(short, long)]
    out: PathBuf,
    /// Print a JSON report.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    text_format: TextFormatArgs,
    /// Text files and directories (walked in sorted order for .txt, .text,
    /// .md, .rst, .jsonl, .ndjson and .parquet files), tokenized and
    /// concatenated in order.
    #[arg(required_unless_present = "images")]
    files: Vec<PathBuf>,
}

/// Runs `modelbin acts record`.
pub fn record(args: &RecordArgs) -> Result<(), Failure> {
    let failure = |e| record_failure(e, &args.model);
    if args.images.is_empty() && args.strict {
        return Err(Failure::Usage(
            "--strict applies to recordings of --images".into(),
        ));
    }
    let mut recording = if args.images.is_empty() {
        let settings = RecordSettings {
            layers: args.layers.clone(),
            tokens_per_text: args.tokens_per_text.map(|t| t as usize),
            cls: args.cls,
            site: args.site,
            bos: !args.no_bos,
            int8: args.int8,
            max_patches_per_shard: args.max_patches_per_shard,
            text_format: args.text_format.format(),
            max_tokens: args
                .max_tokens
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        };
        Recording::start(&args.model, &args.files, settings, &args.out).map_err(failure)?
    } else {
        start_images(args).map_err(failure)?
    };
    let mut progress = if args.images.is_empty() {
        Progress::new("recording")
    } else {
        Progress::items("recording", "images")
    };
    while recording.record_round().map_err(failure)? {
        progress.update(recording.done(), recording.total());
    }
    let summary = recording.finish().map_err(|e| at(&args.out, e))?;
    progress.finish();
    if args.json {
        print_json(&summary)
    } else if summary.existing {
        outln!(
            "{}: already recorded ({} {}, {} vectors); nothing to do",
            summary.path.display(),
            summary.images,
            if args.images.is_empty() {
                "windows"
            } else {
                "images"
            },
            summary.vectors
        )
    } else if args.images.is_empty() {
        let left = match args.max_tokens {
            Some(_) => format!(
                "; --max-tokens left {} windows of the input",
                summary.windows_left
            ),
            None => String::new(),
        };
        outln!(
            "{}: {} windows ({} tokens), {} vectors in {:.2} s ({:.0} vectors/s){left}",
            summary.path.display(),
            summary.images,
            summary.tokens,
            summary.vectors,
            summary.seconds,
            summary.vectors_per_second
        )
    } else {
        outln!(
            "{}: {} images ({} skipped), {} vectors in {:.2} s ({:.2} images/s)",
            summary.path.display(),
            summary.images,
            summary.skipped,
            summary.vectors,
            summary.seconds,
            summary.images_per_second
        )
    }
}

/// Starts an image recording, with a bar over the files read first and a
/// warning for each file left out.
fn start_images(args: &RecordArgs) -> Result<Recording, modelbin_infer::Error> {
    let settings = ImageRecordSettings {
        layers: args.layers.clone(),
        max_patches_per_shard: args.max_patches_per_shard,
        strict: args.strict,
        int8: args.int8,
    };
    let mut progress = Progress::items("reading images", "files");
    let recording = Recording::start_images(
        &args.model,
        &args.images,
        settings,
        &args.out,
        &mut |done, total| {
            progress.update(done, total);
            true
        },
    )?;
    for skipped in recording.skipped() {
        progress.println(format!(
            "warning: skipped {}: {}",
            skipped.path.display(),
            skipped.reason
        ));
    }
    progress.finish();
    Ok(recording)
}

/// A library error of `acts record` as a failure, worded with the command
/// line's flags where it is about one.
fn record_failure(e: modelbin_infer::Error, model: &Path) -> Failure {
    let modelbin_infer::Error::Record(e) = e else {
        return at(model, e);
    };
    match e {
        RecordError::NoClsToken => {
            Failure::Usage("--cls: only a BERT model has a [CLS] token".into())
        }
        RecordError::LanguageModelSetting { setting } => Failure::Usage(format!(
            "--{setting} applies to recordings of a decoder language model{}",
            if setting == "int8" {
                " or of --images"
            } else {
                ""
            }
        )),
        RecordError::WindowTooShortForBos { window } => Failure::Usage(format!(
            "--tokens-per-text {window}: a window starts with the BOS token, so it holds at least 2 tokens (or pass --no-bos)"
        )),
        RecordError::NoSuchLayer { layer, blocks } => {
            Failure::Usage(format!("--layers {layer}: the model has {blocks} blocks"))
        }
        RecordError::WindowTooLong { window, longest } => Failure::Usage(format!(
            "--tokens-per-text {window}: at most {longest} tokens fit the model's context"
        )),
        RecordError::NotAModel { path, format } => Failure::Invalid(format!(
            "{}: the file's format is {format}; acts record reads TLLM and EMBD models (or a Hugging Face model directory)",
            path.display()
        )),
        e => Failure::Invalid(e.to_string()),
    }
}

/// A site by its name.
fn parse_site(name: &str) -> Result<Site, String> {
    name.parse()
        .map_err(|e: modelbin_infer::Error| e.to_string())
}
