//! TLLM (`.tllm`): the weights of a tiny GPT-style transformer.
//!
//! Layout (little-endian, packed): a 36-byte header (u32 magic 0x544C4C4D,
//! u32 version 1, i32 model_dim, n_layers, n_heads, ffn_hidden_dim,
//! max_seq_len, vocab_size, f32 dropout), then every tensor as a dimension
//! prefix (matrices: u64 rows, u64 cols; vectors: u64 len) and its f32 data,
//! in the order of [`Config::tensors`]. See `docs/formats/tllm.md`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use crate::atomic::AtomicFile;
use crate::bytes::ByteReader;
use crate::source::MappedFile;
use crate::{Error, Result};

/// The magic number (stored little-endian: bytes `4D 4C 4C 54`).
pub const MAGIC: u32 = 0x544C_4C4D;
/// The version this module reads and writes.
pub const VERSION: u32 = 1;
/// Size of the header.
pub const HEADER_LEN: u64 = 36;

/// The model configuration stored in the header.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Config {
    /// Width of the residual stream (d).
    pub model_dim: u32,
    /// Number of transformer blocks.
    pub n_layers: u32,
    /// Attention heads; divides `model_dim`.
    pub n_heads: u32,
    /// Hidden width of the feed-forward network (F).
    pub ffn_hidden_dim: u32,
    /// Longest sequence (S), the rows of the position embeddings.
    pub max_seq_len: u32,
    /// Vocabulary size (V).
    pub vocab_size: u32,
    /// Dropout rate used in training; unused at inference. 0 ≤ dropout < 1.
    pub dropout: f32,
}

/// The shape of a stored tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `rows × cols`, stored with a (u64, u64) prefix.
    Matrix(usize, usize),
    /// `len`, stored with a u64 prefix.
    Vector(usize),
}

impl Shape {
    /// Number of f32 values.
    pub fn len(self) -> usize {
        match self {
            Shape::Matrix(r, c) => r * c,
            Shape::Vector(n) => n,
        }
    }

    /// Whether the tensor holds no value.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The dimensions as a list.
    pub fn dims(self) -> Vec<usize> {
        match self {
            Shape::Matrix(r, c) => vec![r, c],
            Shape::Vector(n) => vec![n],
        }
    }
}

/// A tensor of the format: its name (as used in conversions) and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    /// e.g. `layers.0.attn.q`.
    pub name: String,
    /// Its shape.
    pub shape: Shape,
}

/// The name suffixes of each layer's tensors, in file order.
pub const LAYER_TENSOR_NAMES: [&str; 12] = [
    "attn.q",
    "attn.k",
    "attn.v",
    "attn.o",
    "ffn.linear1",
    "ffn.bias1",
    "ffn.linear2",
    "ffn.bias2",
    "ln1.weight",
    "ln1.bias",
    "ln2.weight",
    "ln2.bias",
];

/// Per-layer tensors: name suffix and shape, in file order.
fn layer_tensors(d: usize, f: usize) -> [(&'static str, Shape); 12] {
    let shapes = [
        Shape::Matrix(d, d),
        Shape::Matrix(d, d),
        Shape::Matrix(d, d),
        Shape::Matrix(d, d),
        Shape::Matrix(d, f),
        Shape::Vector(f),
        Shape::Matrix(f, d),
        Shape::Vector(d),
        Shape::Vector(d),
        Shape::Vector(d),
        Shape::Vector(d),
        Shape::Vector(d),
    ];
    std::array::from_fn(|i| (LAYER_TENSOR_NAMES[i], shapes[i]))
}

impl Config {
    /// Every tensor in file order: `tok_embeddings` [V, d], `pos_embeddings`
    /// [S, d], per layer N `layers.N.{attn.q, attn.k, attn.v, attn.o,
    /// ffn.linear1, ffn.bias1, ffn.linear2, ffn.bias2, ln1.weight, ln1.bias,
    /// ln2.weight, ln2.bias}`, then `output` [d, V].
    pub fn tensors(&self) -> Vec<TensorSpec> {
        let (d, f) = (self.model_dim as usize, self.ffn_hidden_dim as usize);
        let mut out = vec![
            TensorSpec {
                name: "tok_embeddings".into(),
                shape: Shape::Matrix(self.vocab_size as usize, d),
            },
            TensorSpec {
                name: "pos_embeddings".into(),
                shape: Shape::Matrix(self.max_seq_len as usize, d),
            },
        ];
        for layer in 0..self.n_layers {
            out.extend(
                layer_tensors(d, f)
                    .into_iter()
                    .map(|(suffix, shape)| TensorSpec {
                        name: format!("layers.{layer}.{suffix}"),
                        shape,
                    }),
            );
        }
        out.push(TensorSpec {
            name: "output".into(),
            shape: Shape::Matrix(d, self.vocab_size as usize),
        });
        out
    }

    /// How many tensors a file of this configuration holds
    /// (2 + 12 · n_layers + 1).
    pub fn tensor_count(&self) -> u64 {
        3 + 12 * u64::from(self.n_layers)
    }

    /// The position of tensor `name` in file order, in constant time; `None`
    /// for a name the configuration does not have.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        let layers = self.n_layers as usize;
        match name {
            "tok_embeddings" => return Some(0),
            "pos_embeddings" => return Some(1),
            "output" => return Some(2 + 12 * layers),
            _ => {}
        }
        let (layer, suffix) = name.strip_prefix("layers.")?.split_once('.')?;
        let index: usize = layer.parse().ok()?;
        if index >= layers || index.to_string() != layer {
            return None;
        }
        let within = LAYER_TENSOR_NAMES.iter().position(|&s| s == suffix)?;
        Some(2 + 12 * index + within)
    }

    /// Number of parameters, or `None` if it overflows.
    pub fn parameter_count(&self) -> Option<u64> {
        let (d, f, v, s, l) = (
            u64::from(self.model_dim),
            u64::from(self.ffn_hidden_dim),
            u64::from(self.vocab_size),
            u64::from(self.max_seq_len),
            u64::from(self.n_layers),
        );
        let per_layer = (4 * d)
            .checked_mul(d)?
            .checked_add((2 * d).checked_mul(f)?)?
            .checked_add(f + 5 * d)?;
        (2 * v)
            .checked_mul(d)?
            .checked_add(s.checked_mul(d)?)?
            .checked_add(l.checked_mul(per_layer)?)
    }

    /// The exact size of a file with this configuration, or `None` if it overflows.
    pub fn file_size(&self) -> Option<u64> {
        let prefixes = 16 * 3 + u64::from(self.n_layers) * (16 * 6 + 8 * 6);
        self.parameter_count()?
            .checked_mul(4)?
            .checked_add(prefixes)?
            .checked_add(HEADER_LEN)
    }

    /// The 36-byte file header for this configuration.
    pub fn header_bytes(&self) -> Vec<u8> {
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend(MAGIC.to_le_bytes());
        header.extend(VERSION.to_le_bytes());
        for v in [
            self.model_dim,
            self.n_layers,
            self.n_heads,
            self.ffn_hidden_dim,
            self.max_seq_len,
            self.vocab_size,
        ] {
            header.extend((v as i32).to_le_bytes());
        }
        header.extend(self.dropout.to_le_bytes());
        header
    }

    /// Checks every rule: positive dims, `model_dim % n_heads == 0`, 0 ≤ dropout < 1.
    pub fn validate(&self) -> Result<()> {
        let fields = [
            ("model_dim", self.model_dim, 8),
            ("n_layers", self.n_layers, 12),
            ("n_heads", self.n_heads, 16),
            ("ffn_hidden_dim", self.ffn_hidden_dim, 20),
            ("max_seq_len", self.max_seq_len, 24),
            ("vocab_size", self.vocab_size, 28),
        ];
        for (field, value, offset) in fields {
            if value == 0 || value > i32::MAX as u32 {
                return Err(Error::InvalidConfig {
                    field,
                    value: (value as i32).to_string(),
                    offset,
                    reason: "must be positive",
                });
            }
        }
        if self.model_dim % self.n_heads != 0 {
            return Err(Error::InvalidConfig {
                field: "n_heads",
                value: self.n_heads.to_string(),
                offset: 16,
                reason: "must divide model_dim",
            });
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(Error::InvalidConfig {
                field: "dropout",
                value: self.dropout.to_string(),
                offset: 32,
                reason: "must be in [0, 1)",
            });
        }
        Ok(())
    }

    /// The configuration as string metadata (`tllm.model_dim`, ...), for conversion.
    pub fn to_metadata(&self) -> BTreeMap<String, String> {
        [
            ("format", "tllm".to_owned()),
            ("tllm.version", VERSION.to_string()),
            ("tllm.model_dim", self.model_dim.to_string()),
            ("tllm.n_layers", self.n_layers.to_string()),
            ("tllm.n_heads", self.n_heads.to_string()),
            ("tllm.ffn_hidden_dim", self.ffn_hidden_dim.to_string()),
            ("tllm.max_seq_len", self.max_seq_len.to_string()),
            ("tllm.vocab_size", self.vocab_size.to_string()),
            ("tllm.dropout", self.dropout.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }

    /// Reads a configuration back from [`Config::to_metadata`]'s keys.
    pub fn from_metadata(metadata: &BTreeMap<String, String>) -> Result<Config> {
        fn field<T: std::str::FromStr>(
            m: &BTreeMap<String, String>,
            key: &'static str,
        ) -> Result<T> {
            let value = m.get(key).ok_or_else(|| Error::InvalidHeader {
                format: "TLLM metadata",
                offset: 0,
                reason: format!("missing key `{key}`"),
            })?;
            value.parse().map_err(|_| Error::InvalidHeader {
                format: "TLLM metadata",
                offset: 0,
                reason: format!("`{key}` = `{value}` is not a number"),
            })
        }
        let config = Config {
            model_dim: field(metadata, "tllm.model_dim")?,
            n_layers: field(metadata, "tllm.n_layers")?,
            n_heads: field(metadata, "tllm.n_heads")?,
            ffn_hidden_dim: field(metadata, "tllm.ffn_hidden_dim")?,
            max_seq_len: field(metadata, "tllm.max_seq_len")?,
            vocab_size: field(metadata, "tllm.vocab_size")?,
            dropout: field(metadata, "tllm.dropout")?,
        };
        config.validate()?;
        Ok(config)
    }
}

/// A validated TLLM file over any byte buffer.
#[derive(Debug)]
pub struct Tllm<B> {
    buf: B,
    config: Config,
    /// Each tensor and the absolute offset of its data.
    tensors: Vec<(TensorSpec, usize)>,
}

/// Opens and validates a TLLM file, memory-mapped.
pub fn open(path: impl AsRef<Path>) -> Result<Tllm<MappedFile>> {
    Tllm::from_buffer(MappedFile::open(path)?)
}

fn read_config(r: &mut ByteReader<'_>) -> Result<Config> {
    let magic = r.array::<4>("magic")?;
    if &magic == b"TLLM" {
        return Err(Error::TllmMagicByteOrder);
    }
    if u32::from_le_bytes(magic) != MAGIC {
        return Err(Error::BadMagic {
            expected: "4D 4C 4C 54 (the u32 0x544C4C4D, little-endian)",
            found: format!(
                "{:02X} {:02X} {:02X} {:02X}",
                magic[0], magic[1], magic[2], magic[3]
            ),
        });
    }
    let version = r.u32_le("version")?;
    if version != VERSION {
        return Err(Error::UnsupportedVersion {
            format: "TLLM",
            offset: 4,
            found: version,
            expected: VERSION,
        });
    }
    let mut dim = |what| r.i32_le(what).map(|v| v as u32);
    let config = Config {
        model_dim: dim("model_dim")?,
        n_layers: dim("n_layers")?,
        n_heads: dim("n_heads")?,
        ffn_hidden_dim: dim("ffn_hidden_dim")?,
        max_seq_len: dim("max_seq_len")?,
        vocab_size: dim("vocab_size")?,
        dropout: r.f32_le("dropout")?,
    };
    config.validate()?;
    Ok(config)
}

impl<B: AsRef<[u8]>> Tllm<B> {
    /// Validates `buf` as a whole TLLM file: header, the exact size the header
    /// implies (computed with checked arithmetic before anything else is
    /// read), and every dimension prefix.
    pub fn from_buffer(buf: B) -> Result<Self> {
        let file = buf.as_ref();
        let mut r = ByteReader::new(file, 0);
        let config = read_config(&mut r)?;
        let expected = config.file_size().ok_or_else(|| Error::Overflow {
            what: "the file size this configuration implies".into(),
            at: crate::At(Some(8)),
        })?;
        let found = file.len() as u64;
        if found < expected {
            return Err(Error::Truncated {
                what: "TLLM weights",
                offset: found,
                needed: expected,
                available: found,
            });
        }
        if found > expected {
            return Err(Error::TrailingBytes {
                offset: expected,
                count: found - expected,
            });
        }
        let mut tensors = Vec::new();
        for spec in config.tensors() {
            let offset = r.offset();
            let stored = match spec.shape {
                Shape::Matrix(..) => (r.u64_le("rows")?, Some(r.u64_le("cols")?)),
                Shape::Vector(_) => (r.u64_le("length")?, None),
            };
            let wanted = match spec.shape {
                Shape::Matrix(rows, cols) => (rows as u64, Some(cols as u64)),
                Shape::Vector(n) => (n as u64, None),
            };
            if stored != wanted {
                let show = |(a, b): (u64, Option<u64>)| match b {
                    Some(b) => format!("[{a}, {b}]"),
                    None => format!("[{a}]"),
                };
                return Err(Error::DimensionMismatch {
                    tensor: spec.name,
                    offset,
                    expected: show(wanted),
                    found: show(stored),
                });
            }
            let data_offset = r.position();
            r.bytes(spec.shape.len() as u64 * 4, "tensor data")?;
            tensors.push((spec, data_offset));
        }
        Ok(Tllm {
            buf,
            config,
            tensors,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The tensors in file order.
    pub fn specs(&self) -> impl Iterator<Item = &TensorSpec> {
        self.tensors.iter().map(|(spec, _)| spec)
    }

    /// The raw little-endian f32 bytes of tensor `name` (found in constant time).
    pub fn bytes(&self, name: &str) -> Option<&[u8]> {
        let (spec, offset) = &self.tensors[self.config.index_of(name)?];
        Some(&self.buf.as_ref()[*offset..*offset + spec.shape.len() * 4])
    }

    /// The values of tensor `name`: borrowed when the bytes are 4-byte aligned
    /// (always, in a mapped file: every data offset is a multiple of 4) on a
    /// little-endian machine, copied otherwise.
    pub fn values(&self, name: &str) -> Option<Cow<'_, [f32]>> {
        self.bytes(name).map(f32_values)
    }

    /// The whole file's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }
}

/// Little-endian f32 bytes as values, without copying when possible.
pub fn f32_values(bytes: &[u8]) -> Cow<'_, [f32]> {
    #[cfg(target_endian = "little")]
    if let Ok(values) = bytemuck::try_cast_slice::<u8, f32>(bytes) {
        return Cow::Borrowed(values);
    }
    Cow::Owned(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect(),
    )
}

/// Writes a TLLM file atomically: the header, then each tensor of
/// [`Config::tensors`] from `data` (raw little-endian f32 bytes, in that
/// order and of those sizes).
pub fn write_file(path: impl AsRef<Path>, config: &Config, data: &[&[u8]]) -> Result<u64> {
    let path = path.as_ref();
    config.validate()?;
    let specs = config.tensors();
    if specs.len() != data.len() {
        return Err(Error::InvalidHeader {
            format: "TLLM",
            offset: 0,
            reason: format!(
                "{} tensors given, the configuration has {}",
                data.len(),
                specs.len()
            ),
        });
    }
    for (spec, bytes) in specs.iter().zip(data) {
        if bytes.len() != spec.shape.len() * 4 {
            return Err(Error::DimensionMismatch {
                tensor: spec.name.clone(),
                offset: 0,
                expected: format!("{:?} ({} bytes)", spec.shape.dims(), spec.shape.len() * 4),
                found: format!("{} bytes", bytes.len()),
            });
        }
    }
    let mut file = AtomicFile::create(path)?;
    let mut write = |bytes: &[u8]| file.write_all(bytes).map_err(|e| Error::io(path, e));
    write(&config.header_bytes())?;
    for (spec, bytes) in specs.iter().zip(data) {
        match spec.shape {
            Shape::Matrix(rows, cols) => {
                write(&(rows as u64).to_le_bytes())?;
                write(&(cols as u64).to_le_bytes())?;
            }
            Shape::Vector(n) => write(&(n as u64).to_le_bytes())?,
        }
        write(bytes)?;
    }
    file.commit()?;
    Ok(config.file_size().expect("validated configurations fit"))
}
