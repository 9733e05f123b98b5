//! Reading a TLLM file: the header's configuration, the size it implies,
//! and each tensor's dimension prefix against the shape the configuration
//! gives it.

use super::{Config, MAGIC, Shape, TllmError, VERSION};
use crate::io::bytes::ByteReader;
use crate::tensor::table::{TableBuilder, TensorTable};
use crate::{DType, Error, LayoutError, Result};

/// Validates a whole TLLM file: header, the exact size the header implies
/// (computed with checked arithmetic before anything else is read), and
/// every dimension prefix. Returns the configuration and the tensor table.
pub(super) fn parse(file: &[u8]) -> Result<(Config, TensorTable)> {
    let mut r = ByteReader::new(file, 0);
    let config = read_config(&mut r)?;
    let expected = config.file_size().ok_or_else(|| {
        Error::Layout(LayoutError::Overflow {
            what: "the file size this configuration implies".into(),
            at: crate::At(Some(8)),
        })
    })?;
    let found = file.len() as u64;
    if found < expected {
        return Err(Error::Layout(LayoutError::FileSizeMismatch {
            expected,
            found,
        }));
    }
    if found > expected {
        return Err(Error::Layout(LayoutError::TrailingBytes {
            offset: expected,
            count: found - expected,
        }));
    }
    let mut table = TableBuilder::gapped(config.tensor_count() as usize);
    for tensor in config.model_tensors() {
        let offset = r.offset();
        let shape = tensor.shape(&config);
        let stored = match shape {
            Shape::Matrix(..) => (r.u64_le("rows")?, Some(r.u64_le("cols")?)),
            Shape::Vector(_) => (r.u64_le("length")?, None),
        };
        let wanted = match shape {
            Shape::Matrix(rows, cols) => (rows as u64, Some(cols as u64)),
            Shape::Vector(n) => (n as u64, None),
        };
        if stored != wanted {
            let show = |(a, b): (u64, Option<u64>)| match b {
                Some(b) => format!("[{a}, {b}]"),
                None => format!("[{a}]"),
            };
            return Err(Error::Tllm(TllmError::DimensionMismatch {
                tensor: tensor.name(),
                offset,
                expected: show(wanted),
                found: show(stored),
            }));
        }
        let start = r.offset();
        let len = shape.len() as u64 * 4;
        r.bytes(len, "tensor data")?;
        table.push(
            &tensor.name(),
            DType::F32,
            &shape.dims(),
            (start, start + len),
            offset,
        )?;
    }
    let table = table.finish(0, found)?;
    Ok((config, table))
}

/// Reads the 36-byte header and validates the configuration it stores.
fn read_config(r: &mut ByteReader<'_>) -> Result<Config> {
    let magic = r.array::<4>("magic")?;
    if &magic == b"TLLM" {
        return Err(Error::Tllm(TllmError::TllmMagicByteOrder));
    }
    if u32::from_le_bytes(magic) != MAGIC {
        return Err(Error::Layout(LayoutError::BadMagic {
            expected: "4D 4C 4C 54 (the u32 0x544C4C4D, little-endian)",
            found: format!(
                "{:02X} {:02X} {:02X} {:02X}",
                magic[0], magic[1], magic[2], magic[3]
            ),
        }));
    }
    let version = r.u32_le("version")?;
    if version != VERSION {
        return Err(Error::Layout(LayoutError::UnsupportedVersion {
            format: "TLLM",
            offset: 4,
            found: version,
            expected: VERSION,
        }));
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
