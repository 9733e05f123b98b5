//! Summaries of files, printed by `modelbin inspect` as text or JSON.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::any::AnyFile;
use crate::embd::{self, Embd, SpecialTokens, bert::BertConfig};
use crate::file::TensorFile;
use crate::stats::ValueStats;
use crate::tensor::TensorStore;
use crate::{DType, Format, bpe2, saev, tllm};

/// What `inspect` reports about a tensor file.
#[derive(Debug, Clone, Serialize)]
pub struct TensorFileSummary {
    /// The format.
    pub format: Format,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// Header size after the 8-byte prefix, padding included.
    pub header_size: u64,
    /// Absolute offset of the tensor data.
    pub data_offset: u64,
    /// Bytes of tensor data.
    pub data_size: u64,
    /// The string metadata, if the file has a metadata map.
    pub metadata: Option<BTreeMap<String, String>>,
    /// Number of tensors.
    pub tensor_count: usize,
    /// Elements of all tensors together.
    pub parameter_count: u64,
    /// Every tensor, in file order.
    pub tensors: Vec<TensorSummary>,
}

/// One tensor of a [`TensorFileSummary`].
#[derive(Debug, Clone, Serialize)]
pub struct TensorSummary {
    /// Its name.
    pub name: String,
    /// Its dtype.
    pub dtype: DType,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Absolute byte offset of its data in the file.
    pub offset: u64,
    /// Size of its data in bytes.
    pub bytes: u64,
}

impl TensorSummary {
    /// Every tensor of `store`, in file order.
    pub fn all(store: &impl TensorStore) -> Vec<TensorSummary> {
        store
            .tensors()
            .enumerate()
            .map(|(index, view)| TensorSummary {
                name: view.name().to_owned(),
                dtype: view.dtype(),
                shape: view.shape().to_vec(),
                offset: store.data_start(index).unwrap_or_default(),
                bytes: view.data().len() as u64,
            })
            .collect()
    }

    /// Elements of `tensors` together. Validation bounds every tensor's
    /// bytes by the file, so only a shape with a zero dimension could
    /// overflow the product: its factors saturate (and multiply by zero).
    pub fn parameter_count(tensors: &[TensorSummary]) -> u64 {
        tensors
            .iter()
            .map(|t| {
                if t.shape.contains(&0) {
                    0
                } else {
                    t.shape
                        .iter()
                        .fold(1u64, |n, &d| n.saturating_mul(d as u64))
                }
            })
            .fold(0u64, u64::saturating_add)
    }

    /// The headings of [`TensorSummary::table_row`]'s columns; the last
    /// [`TensorSummary::NUMERIC_COLUMNS`] are numbers (right-aligned).
    pub const TABLE_HEADINGS: [&str; 5] = ["NAME", "DTYPE", "SHAPE", "OFFSET", "BYTES"];
    /// How many of the last columns hold numbers.
    pub const NUMERIC_COLUMNS: usize = 2;

    /// The tensor as one row of `inspect`'s table.
    pub fn table_row(&self) -> Vec<String> {
        vec![
            self.name.clone(),
            self.dtype.to_string(),
            format!("{:?}", self.shape),
            self.offset.to_string(),
            self.bytes.to_string(),
        ]
    }
}

impl TensorFileSummary {
    /// Summarises a BinTensors or safetensors file whose header (after the
    /// 8-byte size prefix) is `header_len` bytes.
    fn of(format: Format, file: &impl TensorStore, header_len: u64) -> Self {
        let data_offset = 8 + header_len;
        let file_size = file.file_bytes().len() as u64;
        let tensors = TensorSummary::all(file);
        TensorFileSummary {
            format,
            file_size,
            header_size: header_len,
            data_offset,
            data_size: file_size - data_offset,
            metadata: file.metadata().cloned(),
            tensor_count: tensors.len(),
            parameter_count: TensorSummary::parameter_count(&tensors),
            tensors,
        }
    }
}

/// What `inspect` reports about a BPE2 vocabulary.
#[derive(Debug, Clone, Serialize)]
pub struct Bpe2Summary {
    /// The format.
    pub format: Format,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// The format version.
    pub version: u32,
    /// The header.
    #[serde(flatten)]
    pub header: bpe2::Header,
    /// Ranks that have a token.
    pub present_tokens: usize,
    /// The encoding the source hash names, if known.
    pub encoding: Option<&'static str>,
    /// The known encoding's special tokens present in the file.
    pub special_tokens: Vec<(String, u32)>,
}

impl Bpe2Summary {
    /// Summarises a `.tiktoken` file of `file_size` bytes through the BPE2
    /// it converts to: `source_hash` is the text file's SHA-256, `version`
    /// the converted BPE2's.
    pub fn of_tiktoken(vocabulary: &bpe2::Bpe2<Vec<u8>>, file_size: u64) -> Self {
        Bpe2Summary {
            format: Format::Tiktoken,
            file_size,
            ..Bpe2Summary::of(vocabulary)
        }
    }

    /// Summarises a validated BPE2 file.
    pub fn of<B: AsRef<[u8]>>(file: &bpe2::Bpe2<B>) -> Self {
        let encoding = file.encoding();
        let special_tokens = encoding
            .map(|e| {
                e.special_tokens
                    .iter()
                    .filter(|&&(_, rank)| file.token(rank).is_some())
                    .map(|&(text, rank)| (text.to_owned(), rank))
                    .collect()
            })
            .unwrap_or_default();
        Bpe2Summary {
            format: Format::Bpe2,
            file_size: file.file_bytes().len() as u64,
            version: bpe2::VERSION,
            header: *file.header(),
            present_tokens: file.tokens().count(),
            encoding: encoding.map(|e| e.name),
            special_tokens,
        }
    }
}

/// What `inspect` reports about a TLLM model.
#[derive(Debug, Clone, Serialize)]
pub struct TllmSummary {
    /// The format.
    pub format: Format,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// The format version.
    pub version: u32,
    /// The configuration.
    pub config: tllm::Config,
    /// Number of parameters.
    pub parameter_count: u64,
    /// Every tensor with its value statistics.
    pub tensors: Vec<TensorStats>,
}

/// Value statistics of one f32 tensor.
#[derive(Debug, Clone, Serialize)]
pub struct TensorStats {
    /// Tensor name.
    pub name: String,
    /// Its dimensions.
    pub shape: Vec<usize>,
    /// Mean of the finite values.
    pub mean: f64,
    /// Standard deviation of the finite values.
    pub std: f64,
    /// Smallest finite value (`null` in JSON when there is none).
    pub min: Option<f32>,
    /// Largest finite value.
    pub max: Option<f32>,
    /// NaN count.
    pub nan: usize,
    /// ±Inf count.
    pub inf: usize,
}

impl TensorStats {
    /// Statistics of `values`.
    pub fn of(name: &str, shape: Vec<usize>, values: &[f32]) -> TensorStats {
        let stats = ValueStats::of(values);
        TensorStats {
            name: name.to_owned(),
            shape,
            mean: stats.mean(),
            std: stats.std(),
            min: stats.min(),
            max: stats.max(),
            nan: stats.nan() as usize,
            inf: stats.inf() as usize,
        }
    }
}

impl TllmSummary {
    /// Summarises a validated TLLM file, reading every value once.
    pub fn of<B: AsRef<[u8]>>(file: &tllm::Tllm<B>) -> Self {
        let config = *file.config();
        let tensors = file
            .tensors()
            .map(|t| {
                let values = crate::floats::decode_f32(t.data());
                TensorStats::of(t.name(), t.shape().to_vec(), &values)
            })
            .collect();
        TllmSummary {
            format: Format::Tllm,
            file_size: file.file_bytes().len() as u64,
            version: tllm::VERSION,
            config,
            // The file exists, so its parameter count fits.
            parameter_count: config.parameter_count().unwrap_or(u64::MAX),
            tensors,
        }
    }
}

/// What `inspect` reports about a SAEV dataset.
#[derive(Debug, Clone, Serialize)]
pub struct SaevSummary {
    /// The format.
    pub format: Format,
    /// The metadata as stored.
    pub metadata: serde_json::Value,
    /// The content hash (the directory name).
    pub hash: String,
    /// Layers recorded (L).
    pub n_layers: u64,
    /// Tokens per image (T = patches + CLS).
    pub tokens_per_img: u64,
    /// Images per shard (S).
    pub imgs_per_shard: u64,
    /// Shards the metadata implies.
    pub n_shards: u64,
    /// Bytes of a full shard.
    pub shard_bytes: u64,
    /// Activation vectors in the dataset (n_imgs × L × T).
    pub vectors: u64,
    /// Whether the reference writer's extra all-zero shard is present.
    pub extra_empty_shard: bool,
}

impl SaevSummary {
    /// Summarises a validated dataset.
    pub fn of(dataset: &saev::Dataset) -> Self {
        let m = dataset.metadata();
        SaevSummary {
            format: Format::Saev,
            metadata: m.to_value(),
            hash: m.hash(),
            n_layers: m.n_layers(),
            tokens_per_img: m.tokens_per_img(),
            imgs_per_shard: m.imgs_per_shard(),
            n_shards: m.n_shards(),
            shard_bytes: m.shard_bytes(),
            vectors: m.n_imgs * m.vectors_per_img(),
            extra_empty_shard: dataset.has_extra_empty_shard(),
        }
    }
}

/// What `inspect` reports about an EMBD sentence-embedding model.
#[derive(Debug, Clone, Serialize)]
pub struct EmbdSummary {
    /// The format.
    pub format: Format,
    /// Size of the file in bytes.
    pub file_size: u64,
    /// The header, as stored.
    pub header: embd::Header,
    /// Names of the flags that are set.
    pub flags: Vec<&'static str>,
    /// The footer's checksums.
    pub footer: embd::Footer,
    /// The metadata.
    pub metadata: BTreeMap<String, String>,
    /// Vocabulary tokens (0 without a vocabulary).
    pub token_count: usize,
    /// The special token ids, with a vocabulary.
    pub special_tokens: Option<SpecialTokens>,
    /// The BERT configuration, when the tensors make a usable model.
    pub model: Option<BertConfig>,
    /// Why the tensors do not make a usable model, otherwise.
    pub model_error: Option<String>,
    /// Number of tensors.
    pub tensor_count: usize,
    /// Elements of all tensors together.
    pub parameter_count: u64,
    /// Every tensor, in data order.
    pub tensors: Vec<TensorSummary>,
}

impl EmbdSummary {
    /// Summarises a validated EMBD file.
    pub fn of<B: AsRef<[u8]>>(file: &Embd<B>) -> Self {
        let header = *file.header();
        let flags = [
            (embd::flags::VOCAB_EMBEDDED, "VOCAB_EMBEDDED"),
            (embd::flags::TENSORS_ALIGNED, "TENSORS_ALIGNED"),
            (embd::flags::CHECKSUM_ENABLED, "CHECKSUM_ENABLED"),
        ]
        .into_iter()
        .filter(|&(bit, _)| header.has(bit))
        .map(|(_, name)| name)
        .collect();
        let (model, model_error) = match BertConfig::validate(file) {
            Ok(config) => (Some(config), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let tensors = TensorSummary::all(file);
        EmbdSummary {
            format: Format::Embd,
            file_size: file.file_bytes().len() as u64,
            header,
            flags,
            footer: *file.footer(),
            metadata: file.metadata().cloned().unwrap_or_default(),
            token_count: file.token_count(),
            special_tokens: file.special_tokens(),
            model,
            model_error,
            tensor_count: tensors.len(),
            parameter_count: TensorSummary::parameter_count(&tensors),
            tensors,
        }
    }
}

/// The summary of any file modelbin can read; its JSON form is what
/// `modelbin inspect --json` prints.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Summary {
    /// A BinTensors or safetensors file.
    Tensors(TensorFileSummary),
    /// A BPE2 vocabulary.
    Bpe2(Bpe2Summary),
    /// A TLLM model.
    Tllm(TllmSummary),
    /// A SAEV activation dataset.
    Saev(SaevSummary),
    /// An EMBD sentence-embedding model.
    Embd(EmbdSummary),
}

impl Summary {
    /// Summarises an opened file.
    pub fn of(file: &AnyFile) -> Summary {
        match file {
            AnyFile::Tensors(TensorFile::BinTensors(f)) => {
                Summary::Tensors(TensorFileSummary::of(Format::BinTensors, f, f.header_len()))
            }
            AnyFile::Tensors(TensorFile::Safetensors(f)) => Summary::Tensors(
                TensorFileSummary::of(Format::Safetensors, f, f.header_len()),
            ),
            AnyFile::Tensors(TensorFile::Embd(f)) => Summary::Embd(EmbdSummary::of(f)),
            AnyFile::Tensors(TensorFile::Tllm(f)) => Summary::Tllm(TllmSummary::of(f)),
            AnyFile::Bpe2(f) => Summary::Bpe2(Bpe2Summary::of(f)),
            AnyFile::Tiktoken {
                vocabulary,
                file_size,
            } => Summary::Bpe2(Bpe2Summary::of_tiktoken(vocabulary, *file_size)),
            AnyFile::Saev(d) => Summary::Saev(SaevSummary::of(d)),
        }
    }

    /// A one-line description: format, main counts, size.
    pub fn one_line(&self) -> String {
        match self {
            Summary::Tensors(s) => format!(
                "{}, {} tensors, {} bytes",
                s.format, s.tensor_count, s.file_size
            ),
            Summary::Bpe2(s) => format!(
                "{}{}, {} tokens, {} bytes",
                s.format,
                s.encoding.map(|e| format!(" ({e})")).unwrap_or_default(),
                s.present_tokens,
                s.file_size
            ),
            Summary::Saev(s) => format!(
                "{}, {} vectors of {} in {} shards",
                s.format, s.vectors, s.metadata["d_vit"], s.n_shards
            ),
            Summary::Tllm(s) => format!(
                "{}, {} parameters, {} bytes",
                s.format, s.parameter_count, s.file_size
            ),
            Summary::Embd(s) => format!(
                "{} ({}), {} tensors, {} tokens, {} bytes",
                s.format,
                s.metadata.get("model_name").map_or("?", String::as_str),
                s.tensor_count,
                s.token_count,
                s.file_size
            ),
        }
    }
}
