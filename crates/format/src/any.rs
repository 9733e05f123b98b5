//! Opening a file of any format: detect by content, then dispatch.

use std::path::Path;

use crate::bpe2::{self, Bpe2};
use crate::file::TensorFile;
use crate::io::source::MappedFile;
use crate::model::BertConfig;
use crate::saev::{self, Dataset};
use crate::tensor::TensorStore;
use crate::{Format, Result, detect};

/// A validated file (or SAEV dataset directory) of any format modelbin reads.
#[derive(Debug)]
pub enum AnyFile {
    /// A file of named tensors: BinTensors, safetensors, EMBD or TLLM.
    Tensors(TensorFile),
    /// A BPE2 vocabulary.
    Bpe2(Bpe2<MappedFile>),
    /// A `.tiktoken` text vocabulary, held as the BPE2 it converts to
    /// (without special tokens: the text file has none).
    Tiktoken {
        /// The converted vocabulary.
        vocabulary: Bpe2<Vec<u8>>,
        /// Size of the `.tiktoken` file in bytes.
        file_size: u64,
    },
    /// A SAEV activation dataset.
    Saev(Dataset),
}

/// Opens `path`, detecting its format from the content (the extension only
/// where the content is inconclusive), and validates it. A `.tiktoken`
/// text vocabulary is parsed and held as the BPE2 it converts to.
///
/// ```
/// # fn main() -> Result<(), modelbin_format::Error> {
/// # let dir = tempfile::tempdir().unwrap();
/// # let path = dir.path().join("model.safetensors");
/// use modelbin_format::{AnyFile, DType, Format, TensorStore, TensorView};
///
/// let data: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
/// let weight = TensorView::new("weight", DType::F32, &[2], &data)?;
/// modelbin_format::safetensors::write_file(&path, [weight], None, &mut |_, _| {})?;
///
/// let file = modelbin_format::open(&path)?;
/// assert_eq!(file.format(), Format::Safetensors);
/// file.verify()?;
/// let tensors = file.tensors().expect("safetensors files hold tensors");
/// assert_eq!(&*tensors.tensor("weight")?.to_f32()?, &[1.0, 2.0]);
/// # Ok(())
/// # }
/// ```
pub fn open(path: impl AsRef<Path>) -> Result<AnyFile> {
    let path = path.as_ref();
    open_as(path, detect::detect(path)?)
}

/// Opens `path` as `format`, whatever its content suggests.
pub fn open_as(path: impl AsRef<Path>, format: Format) -> Result<AnyFile> {
    let path = path.as_ref();
    match format {
        Format::Bpe2 => bpe2::open(path).map(AnyFile::Bpe2),
        Format::Saev => saev::open(path).map(AnyFile::Saev),
        Format::Tiktoken => {
            let source = MappedFile::open(path)?;
            let built = bpe2::build_from_tiktoken(&source, false)?;
            Ok(AnyFile::Tiktoken {
                vocabulary: Bpe2::from_buffer(built)?,
                file_size: source.len() as u64,
            })
        }
        _ => TensorFile::open_as(path, format).map(AnyFile::Tensors),
    }
}

impl AnyFile {
    /// The file's format.
    pub fn format(&self) -> Format {
        match self {
            AnyFile::Tensors(file) => file.format(),
            AnyFile::Bpe2(_) => Format::Bpe2,
            AnyFile::Tiktoken { .. } => Format::Tiktoken,
            AnyFile::Saev(_) => Format::Saev,
        }
    }

    /// Every check beyond those opening made: the EMBD checksums and that
    /// its tensors make a usable BERT model; for the other formats opening
    /// has checked everything and this returns `Ok`.
    pub fn verify(&self) -> Result<()> {
        match self {
            AnyFile::Tensors(TensorFile::Embd(file)) => {
                file.verify()?;
                BertConfig::validate(file)?;
                check_finite(file.tensors())
            }
            AnyFile::Tensors(file @ TensorFile::Tllm(_)) => {
                file.verify()?;
                check_finite(file.tensors())
            }
            AnyFile::Tensors(file) => file.verify(),
            AnyFile::Bpe2(file) => file.verify(),
            AnyFile::Tiktoken { vocabulary, .. } => vocabulary.verify(),
            AnyFile::Saev(dataset) => dataset.verify(),
        }
    }

    /// The file's tensors, when its format holds named tensors.
    pub fn tensors(&self) -> Option<&TensorFile> {
        match self {
            AnyFile::Tensors(file) => Some(file),
            _ => None,
        }
    }
}

/// Refuses model weights that hold a NaN or an infinity
/// ([`ModelError::NonFinite`](crate::ModelError::NonFinite), naming the
/// first): a model file's weights are all used, so any such value poisons
/// every output. Generic tensor files (BinTensors, safetensors) may hold
/// them on purpose and are not checked.
pub fn check_finite<'a>(
    tensors: impl Iterator<Item = crate::tensor::TensorView<'a>>,
) -> Result<()> {
    for tensor in tensors {
        crate::tensor::floats::require_finite(tensor.name(), tensor.dtype(), tensor.data())?;
    }
    Ok(())
}
