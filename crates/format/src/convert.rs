//! Converting between formats.

use std::path::Path;

use std::io::Write;

use crate::atomic::AtomicFile;
use crate::file::TensorFile;
use crate::source::MappedFile;
use crate::tensor::TensorStore;
use crate::{Error, Format, Result, bintensors, bpe2, detect, safetensors};

/// What a conversion did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ConvertReport {
    /// The input's format.
    pub from: Format,
    /// The output's format.
    pub to: Format,
    /// Tensors (or vocabulary tokens) written.
    pub tensors: usize,
    /// Size of the output file.
    pub bytes_written: u64,
}

/// Choices that apply to some conversions.
#[derive(Debug, Clone, Copy)]
pub struct ConvertOptions {
    /// `.tiktoken` → BPE2: write the encoding's special tokens at their ranks.
    pub include_special_tokens: bool,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            include_special_tokens: true,
        }
    }
}

const OPERATION: &str = "convert";

/// Converts `input` (format detected from its content) to `output` in format
/// `to`, atomically. Tensor files: bytes stream from the mapped input; nothing
/// is cast, so a dtype the target lacks is an error. Vocabularies:
/// `.tiktoken` ↔ BPE2. `progress` gets (bytes written, total bytes).
pub fn convert(
    input: &Path,
    output: &Path,
    to: Format,
    options: ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ConvertReport> {
    let from = detect::detect(input)?;
    if matches!(from, Format::Tiktoken | Format::Bpe2) {
        return convert_vocabulary(input, from, output, to, options);
    }
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

/// `.tiktoken` → BPE2 and BPE2 → `.tiktoken`.
fn convert_vocabulary(
    input: &Path,
    from: Format,
    output: &Path,
    to: Format,
    options: ConvertOptions,
) -> Result<ConvertReport> {
    let source = MappedFile::open(input)?;
    let bytes = match (from, to) {
        (Format::Tiktoken, Format::Bpe2) => {
            bpe2::build_from_tiktoken(&source, options.include_special_tokens)?
        }
        (Format::Bpe2, Format::Tiktoken) => {
            let mut out = Vec::new();
            bpe2::Bpe2::from_buffer(&*source)?
                .write_tiktoken(&mut out)
                .map_err(|e| Error::io(output, e))?;
            out
        }
        _ => {
            return Err(Error::UnsupportedFormat {
                format: to,
                operation: OPERATION,
            });
        }
    };
    let tokens = match to {
        Format::Bpe2 => bpe2::Bpe2::from_buffer(bytes.as_slice())?.tokens().count(),
        _ => bytes.iter().filter(|&&b| b == b'\n').count(),
    };
    let mut file = AtomicFile::create(output)?;
    file.write_all(&bytes).map_err(|e| Error::io(output, e))?;
    file.commit()?;
    Ok(ConvertReport {
        from,
        to,
        tensors: tokens,
        bytes_written: bytes.len() as u64,
    })
}
