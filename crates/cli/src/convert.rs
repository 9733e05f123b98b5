//! `modelbin convert`.

use std::path::{Path, PathBuf};

use modelbin_format::convert::ConvertOptions;
use modelbin_format::{DType, Format};

use crate::args::{OutputPath, parse_format, parse_weight_dtype};
use crate::failure::{Failure, at};
use crate::progress::Progress;
use crate::stdout::{json_text, report_beside};

/// Arguments of `modelbin convert`.
#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// The input file (or Hugging Face model directory).
    input: PathBuf,
    #[command(flatten)]
    output: OutputPath,
    /// Output format; inferred from the output's extension when omitted.
    /// `sentence-transformers` writes a model directory that
    /// `SentenceTransformer(DIR)` loads, from an EMBD file or a Hugging Face
    /// model directory.
    #[arg(long, value_parser = parse_target, value_name = "FORMAT")]
    to: Option<Target>,
    /// Print a JSON report instead of text.
    #[arg(long)]
    json: bool,
    /// `.tiktoken` -> BPE2: leave the special tokens out (as llm-cost's files do).
    #[arg(long)]
    no_special_tokens: bool,
    /// -> EMBD: store the weights as f32, f16 or bf16 (half-size files), or
    /// int8: the linear layers' weights as int8 with an f32 scale per 32
    /// inputs (under a third of their f32 size; faster to embed, slightly
    /// less exact).
    #[arg(long, value_parser = parse_weight_dtype)]
    dtype: Option<DType>,
}

/// What `convert` writes.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// A file of one of modelbin's formats.
    File(Format),
    /// A sentence-transformers model directory.
    SentenceTransformers,
}

use modelbin_format::convert::sentence_transformers::TARGET as SENTENCE_TRANSFORMERS;

fn parse_target(name: &str) -> Result<Target, String> {
    if name == SENTENCE_TRANSFORMERS {
        return Ok(Target::SentenceTransformers);
    }
    parse_format(name)
        .map(Target::File)
        .map_err(|e| format!("{e}; or {SENTENCE_TRANSFORMERS}, a model directory"))
}

/// Runs `modelbin convert`.
pub fn run(args: &ConvertArgs) -> Result<(), Failure> {
    let output = args.output.path()?;
    let to = match args.to {
        Some(Target::SentenceTransformers) => return export_sentence_transformers(args, output),
        Some(Target::File(format)) => Some(format),
        None => Format::from_extension(output),
    };
    let Some(to) = to else {
        return Err(Failure::Usage(format!(
            "cannot tell the output format from `{}`; pass --to FORMAT",
            output.display()
        )));
    };
    let options = ConvertOptions {
        include_special_tokens: !args.no_special_tokens,
        dtype: args.dtype,
        quantizer: Some(modelbin_infer::quantize_weight_blocks),
    };
    let mut progress = Progress::new("converting");
    let report =
        modelbin_format::convert::convert(&args.input, output, to, options, &mut |done, total| {
            progress.update(done, total)
        })
        .map_err(|e| at(&args.input, e))?;
    progress.finish();
    let unit = if matches!(report.to, Format::Bpe2 | Format::Tiktoken) {
        "tokens"
    } else {
        "tensors"
    };
    let line = Line {
        to: report.to.to_string(),
        from: report.from,
        count: report.tensors,
        unit,
        bytes: report.bytes_written,
    };
    print_report(args, output, &report, line)
}

/// One conversion, as its text line says it.
struct Line {
    from: Format,
    to: String,
    count: usize,
    unit: &'static str,
    bytes: u64,
}

/// Prints what a conversion did: `report` as JSON with `--json`, else
/// `line`.
fn print_report(
    args: &ConvertArgs,
    output: &Path,
    report: &impl serde::Serialize,
    line: Line,
) -> Result<(), Failure> {
    let text = if args.json {
        json_text(report)
    } else {
        format!(
            "{} ({}) -> {} ({}): {} {}, {} bytes",
            args.input.display(),
            line.from,
            output.display(),
            line.to,
            line.count,
            line.unit,
            line.bytes
        )
    };
    report_beside(output, &text)
}

/// `convert --to sentence-transformers`: a model directory for
/// sentence-transformers.
fn export_sentence_transformers(args: &ConvertArgs, output: &Path) -> Result<(), Failure> {
    if args.dtype.is_some() || args.no_special_tokens {
        return Err(Failure::Usage(format!(
            "--to {SENTENCE_TRANSFORMERS} writes float32 weights and takes no --dtype or \
             --no-special-tokens"
        )));
    }
    let mut progress = Progress::new("exporting");
    let report = modelbin_format::convert::to_sentence_transformers(
        &args.input,
        output,
        &mut |done, total| progress.update(done, total),
    )
    .map_err(|e| at(&args.input, e))?;
    progress.finish();
    let line = Line {
        from: report.from,
        to: SENTENCE_TRANSFORMERS.to_owned(),
        count: report.tensors,
        unit: "tensors",
        bytes: report.bytes_written,
    };
    print_report(args, output, &report, line)
}
