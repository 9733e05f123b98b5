//! TLLM (`.tllm`): the weights of a tiny GPT-style transformer.
//!
//! Layout (little-endian, packed): a 36-byte header (u32 magic 0x544C4C4D,
//! u32 version 1, i32 model_dim, n_layers, n_heads, ffn_hidden_dim,
//! max_seq_len, vocab_size, f32 dropout), then every tensor as a dimension
//! prefix (matrices: u64 rows, u64 cols; vectors: u64 len) and its f32 data,
//! in the order of [`Config::tensors`]. See `docs/formats/tllm.md`.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`Tllm`], [`open`], `from_buffer`, `verify` |
//! | `config.rs` | [`Config`] and the tensors it implies, which the reader, the writer and the model share |
//! | `read.rs` | parsing the header and every dimension prefix |
//! | `write.rs` | [`write_file`], [`to_bytes`] |
//! | `error.rs` | [`TllmError`] |
//! | `summary.rs` | [`TllmSummary`] for `inspect` |

mod config;
mod error;
mod read;
mod summary;
mod write;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

pub use config::{
    Config, LAYER_NORM_EPS, LayerTensor, ModelTensor, PerLayerTensor, Shape, TensorSpec,
};
pub use error::TllmError;
pub use summary::{TensorStats, TllmSummary};
pub use write::{to_bytes, write_file};

use crate::Result;
use crate::io::source::MappedFile;
use crate::tensor::TensorStore;
use crate::tensor::floats;
use crate::tensor::table::TensorTable;

/// The magic number (stored little-endian: bytes `4D 4C 4C 54`).
pub const MAGIC: u32 = 0x544C_4C4D;
/// The version this module reads and writes.
pub const VERSION: u32 = 1;
/// Size of the header.
pub const HEADER_LEN: u64 = 36;

/// A validated TLLM file over any byte buffer. Its tensors are read through
/// [`TensorStore`] (all F32, named as in [`Config::tensors`]).
#[derive(Debug)]
pub struct Tllm<B> {
    buf: B,
    config: Config,
    /// The configuration as `tllm.*` metadata.
    metadata: BTreeMap<String, String>,
    /// Every tensor, with its absolute data offset.
    table: TensorTable,
}

/// Opens and validates a TLLM file, memory-mapped.
pub fn open(path: impl AsRef<Path>) -> Result<Tllm<MappedFile>> {
    Tllm::from_buffer(MappedFile::open(path)?)
}

impl<B: AsRef<[u8]>> Tllm<B> {
    /// Validates `buf` as a whole TLLM file: header, the exact size the header
    /// implies (computed with checked arithmetic before anything else is
    /// read), and every dimension prefix.
    pub fn from_buffer(buf: B) -> Result<Self> {
        let (config, table) = read::parse(buf.as_ref())?;
        Ok(Tllm {
            buf,
            metadata: config.to_metadata(),
            config,
            table,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The values of tensor `name`: borrowed when the bytes are 4-byte aligned
    /// (always, in a mapped file: every data offset is a multiple of 4) on a
    /// little-endian machine, copied otherwise.
    pub fn values(&self, name: &str) -> Option<Cow<'_, [f32]>> {
        self.get(name).map(|t| floats::decode_f32(t.data()))
    }

    /// The values of `tensor`.
    pub fn model_values(&self, tensor: ModelTensor) -> Cow<'_, [f32]> {
        let index = match tensor {
            ModelTensor::TokEmbeddings => 0,
            ModelTensor::PosEmbeddings => 1,
            ModelTensor::Layer(layer, t) => 2 + 12 * layer as usize + t.position(),
            ModelTensor::Output => self.table.tensor_count() - 1,
        };
        floats::decode_f32(self.table.view(self.buf.as_ref(), index).data())
    }

    /// Opening checks every byte's place already (there is no checksum):
    /// a no-op, for the same face as the other formats.
    pub fn verify(&self) -> Result<()> {
        Ok(())
    }
}

impl<B: AsRef<[u8]>> crate::tensor::sealed::Sealed for Tllm<B> {
    fn table(&self) -> &TensorTable {
        &self.table
    }
}

impl<B: AsRef<[u8]>> TensorStore for Tllm<B> {
    fn file_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    fn metadata(&self) -> Option<&BTreeMap<String, String>> {
        Some(&self.metadata)
    }
}
