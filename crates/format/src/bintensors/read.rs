//! Reading the BinTensors header: `u64 LE n`, `n` bytes of bincode-2 `standard()`
//! encoding of `(Option<BTreeMap<String, String>>, Vec<(String, TensorInfo)>)`,
//! then spaces up to an 8-byte boundary.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use super::varint;
use crate::error::At;
use crate::io::bytes::{ByteReader, bounded_capacity, size_prefixed_header};
use crate::tensor::table::{PrefixedHeader, TableBuilder};
use crate::{BintensorsError, LayoutError};
use crate::{DType, Error, Result};

/// Largest header the reader accepts and the writer produces.
pub const MAX_HEADER_SIZE: u64 = 100_000_000;
/// The most string metadata entries a tensor file may hold (BinTensors and
/// safetensors alike): a map entry costs about a hundred bytes of memory
/// however short its text, so the map is bounded (real files hold a few).
pub const MAX_METADATA_ENTRIES: u64 = 1 << 16;
/// Length of the header-size prefix.
pub(crate) const PREFIX_LEN: u64 = 8;
/// The padding byte.
pub(super) const PAD: u8 = b' ';
/// Smallest encoded tensor entry: empty name, dtype, rank 0, two offsets.
const MIN_ENTRY_LEN: usize = 5;

/// Parses and validates the header of a whole BinTensors file, including the
/// rule that the data section ends exactly at the end of `file`.
pub(crate) fn parse(file: &[u8]) -> Result<PrefixedHeader> {
    let (header_len, header_bytes) = size_prefixed_header(file, MAX_HEADER_SIZE)?;
    let mut r = ByteReader::new(header_bytes, PREFIX_LEN);
    let metadata = read_metadata(&mut r)?;
    let tensors = read_tensors(&mut r)?;
    check_padding(&r)?;
    let data_offset = PREFIX_LEN + header_len;
    let table = tensors.finish(data_offset, file.len() as u64 - data_offset)?;
    Ok(PrefixedHeader {
        metadata,
        table,
        header_len,
    })
}

fn read_string(r: &mut ByteReader<'_>, what: &'static str) -> Result<String> {
    let len = varint::read(r, what)?;
    Ok(r.str(len, what)?.to_owned())
}

fn read_metadata(r: &mut ByteReader<'_>) -> Result<Option<BTreeMap<String, String>>> {
    let offset = r.offset();
    match r.u8("metadata option tag")? {
        0 => Ok(None),
        1 => {
            let count_offset = r.offset();
            let count = varint::read(r, "metadata entry count")?;
            if count > MAX_METADATA_ENTRIES {
                return Err(Error::Layout(LayoutError::CountTooLarge {
                    what: "metadata entry count",
                    offset: count_offset,
                    count,
                    limit: MAX_METADATA_ENTRIES,
                }));
            }
            let mut map = BTreeMap::new();
            for _ in 0..count {
                let entry_offset = r.offset();
                let key = read_string(r, "metadata key")?;
                let value = read_string(r, "metadata value")?;
                match map.entry(key) {
                    Entry::Vacant(slot) => {
                        slot.insert(value);
                    }
                    Entry::Occupied(slot) => {
                        return Err(Error::Layout(LayoutError::DuplicateMetadataKey {
                            key: slot.key().clone(),
                            at: At(Some(entry_offset)),
                        }));
                    }
                }
            }
            Ok(Some(map))
        }
        tag => Err(Error::Bintensors(BintensorsError::InvalidOptionTag {
            offset,
            tag,
        })),
    }
}

fn read_tensors(r: &mut ByteReader<'_>) -> Result<TableBuilder> {
    let count = varint::read(r, "tensor count")?;
    let mut table = TableBuilder::with_capacity(
        bounded_capacity(count, r.remaining(), MIN_ENTRY_LEN),
        r.remaining(),
    );
    for _ in 0..count {
        let entry_offset = r.offset();
        let name_len = varint::read(r, "tensor name")?;
        let name = r.str(name_len, "tensor name")?;
        let dtype_offset = r.offset();
        let code = varint::read(r, "dtype")?;
        let dtype =
            DType::from_bintensors_code(code).ok_or(Error::Layout(LayoutError::UnknownDtype {
                offset: dtype_offset,
                found: code.to_string(),
            }))?;
        let rank = varint::read(r, "shape length")?;
        // Straight into the table's arena: 8 bytes per dimension, which
        // takes at least one header byte.
        let shape_start = table.dims_len();
        for _ in 0..rank {
            let dim = varint::read(r, "shape dimension")?;
            table.push_dim(usize::try_from(dim).map_err(|_| {
                Error::Layout(LayoutError::Overflow {
                    what: format!("dimension {dim} of tensor `{name}`"),
                    at: At(Some(entry_offset)),
                })
            })?);
        }
        let start = varint::read(r, "data start offset")?;
        let end = varint::read(r, "data end offset")?;
        let shape = shape_start..table.dims_len();
        table.push_with_dims(name, dtype, shape, (start, end), entry_offset)?;
    }
    Ok(table)
}

/// After the payload: exactly `(8 - len % 8) % 8` spaces and nothing else.
fn check_padding(r: &ByteReader<'_>) -> Result<()> {
    let payload_len = r.position();
    let expected = (8 - payload_len % 8) % 8;
    let rest = r.rest();
    let payload_end = r.offset();
    if rest.len() > expected {
        return Err(Error::Layout(LayoutError::JunkAfterHeader {
            offset: payload_end,
            count: (rest.len() - expected) as u64,
        }));
    }
    if rest.len() < expected {
        return Err(Error::Layout(LayoutError::ShortPadding {
            offset: payload_end + rest.len() as u64,
            expected: expected as u64,
            found: rest.len() as u64,
        }));
    }
    match rest.iter().position(|&b| b != PAD) {
        Some(i) => Err(Error::Layout(LayoutError::BadPadding {
            offset: payload_end + i as u64,
            byte: rest[i],
            expected: PAD,
        })),
        None => Ok(()),
    }
}
