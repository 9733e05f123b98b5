//! `modelbin convert`.

use std::path::Path;

use modelbin_format::Format;
use modelbin_format::convert::ConvertOptions;

use crate::progress::Progress;
use crate::{Failure, print_json};

pub fn run(
    input: &Path,
    output: &Path,
    to: Option<Format>,
    options: ConvertOptions,
    json: bool,
) -> Result<(), Failure> {
    let to = match to.or_else(|| Format::from_extension(output)) {
        Some(format) => format,
        None => {
            return Err(Failure::Usage(format!(
                "cannot tell the output format from `{}`; pass --to FORMAT",
                output.display()
            )));
        }
    };
    let mut progress = Progress::new("converting");
    let report =
        modelbin_format::convert::convert(input, output, to, options, &mut |done, total| {
            progress.update(done, total)
        })
        .map_err(|e| Failure::Invalid(format!("{}: {e}", input.display())))?;
    progress.finish();
    if json {
        print_json(&report);
    } else {
        println!(
            "{} ({}) -> {} ({}): {} {}, {} bytes",
            input.display(),
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
        );
    }
    Ok(())
}
