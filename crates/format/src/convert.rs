//! Converting between formats.

use std::path::Path;

use crate::file::TensorFile;
use crate::tensor::TensorStore;
use crate::{Error, Format, Result, bintensors, detect, safetensors};

/// What a conversion did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConvertReport {
    /// The input's format.
    pub from: Format,
    /// The output's format.
    pub to: Format,
    /// Tensors written.
    pub tensors: usize,
    /// Size of the output file.
    pub bytes_written: u64,
}

/// Converts `input` (format detected from its content) to `output` in format
/// `to`, atomically. Tensor bytes stream from the mapped input; nothing is
/// cast, so a dtype the target lacks is an error. `progress` gets
/// (bytes written, total bytes).
pub fn convert(
    input: &Path,
    output: &Path,
    to: Format,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ConvertReport> {
    const OPERATION: &str = "convert";
    let from = detect::detect(input)?;
    let source = TensorFile::open(input, from, OPERATION)?;
    let tensors = source.tensors();
    let metadata = source.metadata();
    let bytes_written = match to {
        Format::BinTensors => bintensors::write_file(output, tensors, metadata, progress)?,
        Format::Safetensors => safetensors::write_file(output, tensors, metadata, progress)?,
        _ => {
            return Err(Error::UnsupportedFormat {
                format: to,
                operation: OPERATION,
            });
        }
    };
    Ok(ConvertReport {
        from,
        to,
        tensors: source.len(),
        bytes_written,
    })
}
