//! Converting between formats: [`convert`] picks the way from the input's
//! format (or a Hugging Face model directory) to the requested one.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`convert`], [`to_sentence_transformers`], and the conversions between tensor files and vocabularies |
//! | `hf.rs` | a Hugging Face / sentence-transformers BERT directory → EMBD ([`from_hf_dir`]) |
//! | `sentence_transformers.rs` | EMBD → a sentence-transformers model directory |

mod hf;
pub mod sentence_transformers;

use std::io::Write;
use std::path::Path;

pub use hf::{HfOptions, from_hf_dir, is_hf_model_dir};

use crate::file::TensorFile;
use crate::io::output::{self, OutputFile};
use crate::io::source::MappedFile;
use crate::tensor::TensorStore;
use crate::tensor::TensorView;
use crate::{DType, Error, Format, Result, bintensors, bpe2, detect, embd, safetensors, tllm};

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
    /// → EMBD: store float tensors as this dtype (F32, F16 or BF16), or
    /// the linear weights and word embeddings as int8 (I8).
    pub dtype: Option<DType>,
    /// → EMBD as I8: where the int8 values and scales come from
    /// (`modelbin_infer::quantize_weight_blocks`).
    pub quantizer: Option<embd::int8::Quantizer>,
}

/// A weight dtype for models converted to EMBD, by name: `f32`, `f16`,
/// `bf16` or `int8` (also `i8`), in any case.
pub fn weight_dtype(name: &str) -> Option<DType> {
    match name.to_ascii_lowercase().as_str() {
        "f32" => Some(DType::F32),
        "f16" => Some(DType::F16),
        "bf16" => Some(DType::BF16),
        "int8" | "i8" => Some(DType::I8),
        _ => None,
    }
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            include_special_tokens: true,
            dtype: None,
            quantizer: None,
        }
    }
}

/// The formats a `from` input converts to.
pub fn targets(from: Format) -> &'static [Format] {
    match from {
        Format::BinTensors | Format::Safetensors => {
            &[Format::BinTensors, Format::Safetensors, Format::Tllm]
        }
        Format::Tllm => &[Format::BinTensors, Format::Safetensors],
        Format::Embd => &[Format::Embd, Format::BinTensors, Format::Safetensors],
        Format::Tiktoken => &[Format::Bpe2],
        Format::Bpe2 => &[Format::Tiktoken],
        Format::Saev => &[],
    }
}

/// What a Hugging Face model directory converts to.
const MODEL_DIRECTORY_TARGETS: &[Format] = &[Format::Embd];

/// [`Error::UnsupportedConversion`] from `from` to `to`.
fn unsupported(from: Format, to: Format) -> Error {
    Error::UnsupportedConversion {
        from: from.name(),
        to,
        supported: targets(from),
    }
}

/// Converts `input` (format detected from its content) to `output` in format
/// `to`, atomically. Tensor files: bytes stream from the mapped input; nothing
/// is cast, so a dtype the target lacks is an error. Vocabularies:
/// `.tiktoken` ↔ BPE2. Sentence-embedding models: a Hugging Face model
/// directory → EMBD (reported as from safetensors, its weights' format),
/// EMBD → EMBD (to change the dtype), EMBD → BinTensors or safetensors (the
/// tensors and metadata; the vocabulary stays behind). `progress` gets
/// (bytes written, total bytes).
pub fn convert(
    input: &Path,
    output: &Path,
    to: Format,
    options: ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ConvertReport> {
    output::refuse_input_as_output(&[input], output)?;
    if input.is_dir() && is_hf_model_dir(input) {
        return hf_to_embd(input, output, to, options, progress);
    }
    let from = detect::detect(input)?;
    if from == Format::Saev {
        return Err(unsupported(from, to));
    }
    if matches!(from, Format::Tiktoken | Format::Bpe2) {
        return convert_vocabulary(input, from, output, to, options, progress);
    }
    let source = TensorFile::open_as(input, from)?;
    let bytes_written = match (&source, to) {
        (TensorFile::Embd(file), Format::Embd) => {
            embd::recast(file, output, options.dtype, options.quantizer, progress)?
        }
        (_, Format::Embd) => {
            return Err(Error::Unrepresentable {
                format: "EMBD",
                reason: "an EMBD file needs a vocabulary: convert a model directory \
                         (config.json, model.safetensors, vocab.txt) instead"
                    .into(),
            });
        }
        (TensorFile::BinTensors(_) | TensorFile::Safetensors(_), Format::Tllm) => {
            tensors_to_tllm(&source, output, progress)?
        }
        _ if !targets(from).contains(&to) => return Err(unsupported(from, to)),
        _ => write_tensors(to, output, source.tensors(), source.metadata(), progress)?,
    };
    Ok(ConvertReport {
        from,
        to,
        tensors: source.len(),
        bytes_written,
    })
}

/// Converts a sentence-embedding model — an EMBD file or a Hugging Face
/// model directory — to a sentence-transformers model directory at
/// `output` (see [`sentence_transformers`]). A model directory is
/// converted to EMBD first (beside `output`, removed afterwards), so both
/// give the directory modelbin's own model would.
pub fn to_sentence_transformers(
    input: &Path,
    output: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<sentence_transformers::ExportReport> {
    output::check_directory_output(output)?;
    output::refuse_input_as_output(&[input], output)?;
    // Named (and what killed runs left under the name removed) whatever the
    // input, so an interrupted export from a model directory leaves no
    // debris past the next export to the same path.
    let staged = output::staging_path(output, "embd");
    if input.is_dir() && is_hf_model_dir(input) {
        let exported = from_hf_dir(input, &staged, HfOptions::default(), &mut |_, _| {})
            .and_then(|_| sentence_transformers::export(&embd::open(&staged)?, output, progress));
        let _ = std::fs::remove_file(&staged);
        let report = exported?;
        return Ok(sentence_transformers::ExportReport {
            from: Format::Safetensors,
            ..report
        });
    }
    let from = detect::detect(input)?;
    if from != Format::Embd {
        return Err(Error::Unrepresentable {
            format: "a sentence-transformers directory",
            reason: format!(
                "it holds a sentence-embedding model; the input is {}, not an EMBD \
                 file or a Hugging Face BERT directory",
                from.name()
            ),
        });
    }
    sentence_transformers::export(&embd::open(input)?, output, progress)
}

/// Writes `tensors` as a BinTensors or safetensors file (`to`; the caller
/// checked it is one of them).
fn write_tensors<'a>(
    to: Format,
    output: &Path,
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&std::collections::BTreeMap<String, String>>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    match to {
        Format::BinTensors => bintensors::write_file(output, tensors, metadata, progress),
        _ => safetensors::write_file(output, tensors, metadata, progress),
    }
}

/// `.tiktoken` → BPE2 and BPE2 → `.tiktoken`.
fn convert_vocabulary(
    input: &Path,
    from: Format,
    output: &Path,
    to: Format,
    options: ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ConvertReport> {
    let source = MappedFile::open(input)?;
    let (tokens, bytes_written) = match (from, to) {
        (Format::Tiktoken, Format::Bpe2) => {
            let (tokens, hash) =
                bpe2::tokens_from_tiktoken(&source, options.include_special_tokens)?;
            (
                tokens.len(),
                bpe2::write_file(output, &tokens, hash, progress)?,
            )
        }
        (Format::Bpe2, Format::Tiktoken) => {
            let vocabulary = bpe2::Bpe2::from_buffer(&*source)?;
            let mut text = Vec::new();
            vocabulary
                .write_tiktoken(&mut text)
                .map_err(|e| Error::io(output, e))?;
            let mut file = OutputFile::create(output)?;
            file.write_all(&text).map_err(|e| Error::io(output, e))?;
            file.commit()?;
            progress(text.len() as u64, text.len() as u64);
            let lines = text.iter().filter(|&&b| b == b'\n').count();
            (lines, text.len() as u64)
        }
        _ => return Err(unsupported(from, to)),
    };
    Ok(ConvertReport {
        from,
        to,
        tensors: tokens,
        bytes_written,
    })
}

/// BinTensors or safetensors → TLLM: the configuration from `tllm.*`
/// metadata, then exactly the configuration's tensors, F32, of its shapes.
fn tensors_to_tllm(
    source: &TensorFile,
    output: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    let metadata = source.metadata().cloned().unwrap_or_default();
    let config = tllm::Config::from_metadata(&metadata)?;
    // The metadata's claim is checked against the tensors really present
    // before the per-layer list is built from it.
    if let Some(extra) = source
        .tensors()
        .find(|t| config.index_of(t.name()).is_none())
    {
        return Err(Error::Unrepresentable {
            format: "TLLM",
            reason: format!(
                "tensor `{}` is not part of a TLLM model with this configuration",
                extra.name()
            ),
        });
    }
    if source.len() as u64 != config.tensor_count() {
        return Err(Error::Unrepresentable {
            format: "TLLM",
            reason: format!(
                "the tllm.* metadata describes {} tensors, the file has {}",
                config.tensor_count(),
                source.len()
            ),
        });
    }
    let specs = config.tensors();
    let mut data = Vec::with_capacity(specs.len());
    for spec in &specs {
        let view = source.tensor(&spec.name)?;
        if view.dtype() != DType::F32 || view.shape() != spec.shape.dims().as_slice() {
            return Err(Error::Unrepresentable {
                format: "TLLM",
                reason: format!(
                    "tensor `{}` is {} {:?}; the configuration needs F32 {:?}",
                    spec.name,
                    view.dtype(),
                    view.shape(),
                    spec.shape.dims()
                ),
            });
        }
        data.push(view.data());
    }
    tllm::write_file(output, &config, &data, progress)
}

/// A Hugging Face / sentence-transformers model directory → EMBD.
fn hf_to_embd(
    input: &Path,
    output: &Path,
    to: Format,
    options: ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ConvertReport> {
    if to != Format::Embd {
        return Err(Error::UnsupportedConversion {
            from: "model directory",
            to,
            supported: MODEL_DIRECTORY_TARGETS,
        });
    }
    let hf_options = HfOptions {
        dtype: options.dtype,
        quantizer: options.quantizer,
    };
    let (tensors, bytes_written) = from_hf_dir(input, output, hf_options, progress)?;
    Ok(ConvertReport {
        from: Format::Safetensors,
        to,
        tensors,
        bytes_written,
    })
}
