//! safetensors (`.safetensors`): `u64 LE n` | `n` bytes of JSON header | data.
//!
//! An independent strict reader (the `safetensors` crate panics on offsets
//! near 2^64) and a writer. Dtypes outside modelbin's [`DType`] set (F4,
//! F6_*, F8_E8M0, the FNUZ floats, C64) are reported as unsupported.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

use crate::bintensors::{MAX_HEADER_SIZE, MAX_METADATA_ENTRIES};
use crate::bytes::ByteReader;
use crate::error::At;
use crate::source::MappedFile;
use crate::table::{TableBuilder, TensorTable};
use crate::tensor::{TensorStore, TensorView};
use crate::write::{canonical_order, write_atomic};
use crate::{DType, Error, Result};

const FORMAT: &str = "safetensors";
const METADATA_KEY: &str = "__metadata__";
const PREFIX_LEN: u64 = 8;

/// A validated safetensors file over any byte buffer. Tensor access is zero-copy.
#[derive(Debug)]
pub struct SafeTensors<B> {
    buf: B,
    metadata: Option<BTreeMap<String, String>>,
    table: TensorTable,
    header_len: u64,
}

/// Opens and validates a safetensors file, memory-mapped.
pub fn open(path: impl AsRef<Path>) -> Result<SafeTensors<MappedFile>> {
    SafeTensors::from_buffer(MappedFile::open(path)?)
}

impl<B: AsRef<[u8]>> SafeTensors<B> {
    /// Validates `buf` as a whole safetensors file.
    pub fn from_buffer(buf: B) -> Result<Self> {
        let file = buf.as_ref();
        let mut prefix = ByteReader::new(file, 0);
        let header_len = prefix.u64_le("header size")?;
        if header_len > MAX_HEADER_SIZE {
            return Err(Error::HeaderTooLarge {
                size: header_len,
                limit: MAX_HEADER_SIZE,
            });
        }
        let json = prefix
            .bytes(header_len, "header")
            .map_err(|_| Error::HeaderPastEnd {
                size: header_len,
                file_len: file.len() as u64,
            })?;
        let RawHeader { metadata, tensors } =
            serde_json::from_slice(json).map_err(|e| Error::InvalidHeader {
                format: FORMAT,
                offset: PREFIX_LEN + json_error_offset(json, &e),
                reason: e.to_string(),
            })?;
        let data_offset = PREFIX_LEN + header_len;
        let table = build_table(tensors)?.finish(data_offset, file.len() as u64 - data_offset)?;
        Ok(SafeTensors {
            buf,
            metadata,
            table,
            header_len,
        })
    }

    /// Header size `n` (JSON bytes after the 8-byte prefix, padding included).
    pub fn header_len(&self) -> u64 {
        self.header_len
    }
}

impl<B: AsRef<[u8]>> TensorStore for SafeTensors<B> {
    fn file_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    fn table(&self) -> &TensorTable {
        &self.table
    }

    fn metadata(&self) -> Option<&BTreeMap<String, String>> {
        self.metadata.as_ref()
    }
}

/// Byte offset within `json` of the line and column serde_json reports.
fn json_error_offset(json: &[u8], e: &serde_json::Error) -> u64 {
    let line_start = json
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .nth(e.line().saturating_sub(2))
        .map_or(0, |(i, _)| i + 1);
    let line_start = if e.line() <= 1 { 0 } else { line_start };
    (line_start + e.column().saturating_sub(1)) as u64
}

/// One tensor entry of the JSON header, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: (u64, u64),
}

/// The JSON header: an object of tensor entries plus optional `__metadata__`.
struct RawHeader {
    metadata: Option<BTreeMap<String, String>>,
    tensors: Vec<(String, RawEntry)>,
}

impl<'de> Deserialize<'de> for RawHeader {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RawHeaderVisitor)
    }
}

struct RawHeaderVisitor;

impl<'de> Visitor<'de> for RawHeaderVisitor {
    type Value = RawHeader;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of tensor entries")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawHeader, A::Error> {
        let mut metadata = None;
        let mut tensors = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == METADATA_KEY {
                if metadata.is_some() {
                    return Err(de::Error::custom("duplicate key `__metadata__`"));
                }
                metadata = Some(map.next_value::<UniqueMap>()?.0);
            } else {
                tensors.push((key, map.next_value::<RawEntry>()?));
            }
        }
        Ok(RawHeader { metadata, tensors })
    }
}

/// A JSON object of strings whose keys must be unique.
struct UniqueMap(BTreeMap<String, String>);

impl<'de> Deserialize<'de> for UniqueMap {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = UniqueMap;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of string values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UniqueMap, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((key, value)) = map.next_entry::<String, String>()? {
                    if out.len() as u64 >= MAX_METADATA_ENTRIES {
                        return Err(de::Error::custom(format!(
                            "more than {MAX_METADATA_ENTRIES} metadata entries"
                        )));
                    }
                    if out.contains_key(&key) {
                        return Err(de::Error::custom(format!("duplicate metadata key `{key}`")));
                    }
                    out.insert(key, value);
                }
                Ok(UniqueMap(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Resolves dtypes and shapes and adds the entries in data-offset order, so
/// that the table checks they tile the data section.
fn build_table(mut raw: Vec<(String, RawEntry)>) -> Result<TableBuilder> {
    raw.sort_by_key(|(_, e)| e.data_offsets);
    let name_bytes = raw.iter().map(|(name, _)| name.len()).sum();
    let mut table = TableBuilder::with_capacity(raw.len(), name_bytes);
    for (name, entry) in raw {
        let dtype = DType::from_name(&entry.dtype).ok_or_else(|| Error::UnsupportedDtype {
            name: name.clone(),
            dtype: entry.dtype.clone(),
            format: "modelbin (its dtypes are those of BinTensors)",
        })?;
        let shape = entry
            .shape
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| Error::Overflow {
                what: format!("a dimension of tensor `{name}`"),
                at: At(Some(PREFIX_LEN)),
            })?;
        table.push(&name, dtype, &shape, entry.data_offsets, PREFIX_LEN)?;
    }
    Ok(table)
}

/// Encodes the prefix and JSON header for tensors in canonical order,
/// returning it with the tensors in that order.
fn plan<'a>(
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<(Vec<u8>, Vec<TensorView<'a>>)> {
    let tensors = canonical_order(tensors)?;
    let mut entries = Vec::with_capacity(tensors.len() + 1);
    if let Some(map) = metadata {
        entries.push(format!("{}:{}", json_string(METADATA_KEY), json_of(map)));
    }
    let mut offset = 0u64;
    for t in &tensors {
        if t.name() == METADATA_KEY {
            return Err(Error::ReservedName {
                name: METADATA_KEY.into(),
                format: FORMAT,
            });
        }
        let end = offset + t.data().len() as u64;
        entries.push(format!(
            "{}:{{\"dtype\":\"{}\",\"shape\":{},\"data_offsets\":[{offset},{end}]}}",
            json_string(t.name()),
            t.dtype().name(),
            json_of(t.shape()),
        ));
        offset = end;
    }
    let mut header = format!("{{{}}}", entries.join(",")).into_bytes();
    header.resize(header.len().next_multiple_of(8), b' ');
    if header.len() as u64 > MAX_HEADER_SIZE {
        return Err(Error::HeaderTooLarge {
            size: header.len() as u64,
            limit: MAX_HEADER_SIZE,
        });
    }
    let mut head = (header.len() as u64).to_le_bytes().to_vec();
    head.extend_from_slice(&header);
    Ok((head, tensors))
}

fn json_of<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("strings, maps of strings and integer lists serialize")
}

fn json_string(s: &str) -> String {
    json_of(&s)
}

/// Writes a safetensors file atomically, streaming tensor bytes from where
/// they are. `progress` gets (bytes written, total). Returns the file size.
pub fn write_file<'a>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64> {
    let (head, tensors) = plan(tensors, metadata)?;
    write_atomic(path.as_ref(), &head, &tensors, progress)
}
