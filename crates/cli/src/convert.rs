//! `modelbin convert`.

use std::path::PathBuf;

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
    #[arg(long, value_parser = parse_format)]
    to: Option<Format>,
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

/// Runs `modelbin convert`.
pub fn run(args: &ConvertArgs) -> Result<(), Failure> {
    let output = args.output.path()?;
    let Some(to) = args.to.or_else(|| Format::from_extension(output)) else {
        return Err(Failure::Usage(format!(
            "cannot tell the output format from `{}`; pass --to FORMAT",
            output.display()
        )));
    };
    let options = ConvertOptions {
        include_special_tokens: !args.no_special_tokens,
        dtype: args.dtype,
    };
    let mut progress = Progress::new("converting");
    let report =
        modelbin_format::convert::convert(&args.input, output, to, options, &mut |done, total| {
            progress.update(done, total)
        })
        .map_err(|e| at(&args.input, e))?;
    progress.finish();
    let text = if args.json {
        json_text(&report)
    } else {
        format!(
            "{} ({}) -> {} ({}): {} {}, {} bytes",
            args.input.display(),
            report.from,
            output.display(),
            report.to,
            report.tensors,
            if matches!(report.to, Format::Bpe2 | Format::Tiktoken) {
                "tokens"
            } else {
                "tensors"
            },
            report.bytes_written
        )
    };
    report_beside(output, &text)
}
