//! Reading the safetensors header: a strict JSON parser that builds the
//! tensor table in one pass and names the byte of every error.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::{FORMAT, METADATA_KEY};
use crate::LayoutError;
use crate::bintensors::{MAX_HEADER_SIZE, MAX_METADATA_ENTRIES};
use crate::io::bytes::size_prefixed_header;
use crate::io::json;
use crate::tensor::table::{PrefixedHeader, TableBuilder};
use crate::{DType, Error, Result};

/// Length of the header-size prefix.
const PREFIX_LEN: u64 = 8;

/// Parses and validates a whole safetensors file, including the rule that
/// the tensors tile the data section up to the end of `file`.
pub(super) fn parse(file: &[u8]) -> Result<PrefixedHeader> {
    let (header_len, json) = size_prefixed_header(file, MAX_HEADER_SIZE)?;
    let RawHeader {
        metadata,
        tensors,
        dims,
    } = serde_json::from_slice(json).map_err(|e| {
        Error::Layout(LayoutError::InvalidHeader {
            format: FORMAT,
            offset: PREFIX_LEN + json::error_offset(json, &e),
            reason: e.to_string(),
        })
    })?;
    let data_offset = PREFIX_LEN + header_len;
    let table = build_table(tensors, dims, &json::top_level_key_offsets(json))?
        .finish(data_offset, file.len() as u64 - data_offset)?;
    Ok(PrefixedHeader {
        metadata,
        table,
        header_len,
    })
}

/// One tensor entry of the JSON header, as written; its shape is a range
/// of the header's dims arena.
struct RawEntry {
    /// Which key of the header object it is (0 for the first).
    key_index: usize,
    dtype: String,
    shape: Range<usize>,
    data_offsets: (u64, u64),
}

/// The JSON header: an object of tensor entries plus optional `__metadata__`,
/// with every shape parsed straight into one arena (8 bytes per dimension,
/// which takes at least 2 bytes of JSON: no per-tensor vector, no copy).
struct RawHeader {
    metadata: Option<BTreeMap<String, String>>,
    tensors: Vec<(String, RawEntry)>,
    dims: Vec<usize>,
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
        let mut dims = Vec::new();
        let mut key_index = 0;
        while let Some(key) = map.next_key::<String>()? {
            key_index += 1;
            if key == METADATA_KEY {
                if metadata.is_some() {
                    return Err(de::Error::custom("duplicate key `__metadata__`"));
                }
                metadata = Some(map.next_value::<UniqueMap>()?.0);
            } else {
                let seed = EntrySeed {
                    dims: &mut dims,
                    key_index: key_index - 1,
                };
                tensors.push((key, map.next_value_seed(seed)?));
            }
        }
        Ok(RawHeader {
            metadata,
            tensors,
            dims,
        })
    }
}

const ENTRY_FIELDS: &[&str] = &["dtype", "shape", "data_offsets"];

/// Parses one tensor entry (key number `key_index` of the header),
/// appending its shape to the dims arena.
struct EntrySeed<'a> {
    dims: &'a mut Vec<usize>,
    key_index: usize,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = RawEntry;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<RawEntry, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = RawEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tensor entry (dtype, shape, data_offsets)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEntry, A::Error> {
        let (mut dtype, mut shape, mut data_offsets) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "dtype" if dtype.is_none() => dtype = Some(map.next_value::<String>()?),
                "shape" if shape.is_none() => {
                    shape = Some(map.next_value_seed(ShapeSeed(&mut *self.dims))?)
                }
                "data_offsets" if data_offsets.is_none() => {
                    data_offsets = Some(map.next_value::<(u64, u64)>()?)
                }
                "dtype" | "shape" | "data_offsets" => {
                    return Err(de::Error::custom(format!("duplicate field `{key}`")));
                }
                other => return Err(de::Error::unknown_field(other, ENTRY_FIELDS)),
            }
        }
        Ok(RawEntry {
            key_index: self.key_index,
            dtype: dtype.ok_or_else(|| de::Error::missing_field("dtype"))?,
            shape: shape.ok_or_else(|| de::Error::missing_field("shape"))?,
            data_offsets: data_offsets.ok_or_else(|| de::Error::missing_field("data_offsets"))?,
        })
    }
}

/// Parses a shape (an array of dimensions) into the dims arena.
struct ShapeSeed<'a>(&'a mut Vec<usize>);

impl<'de> DeserializeSeed<'de> for ShapeSeed<'_> {
    type Value = Range<usize>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Range<usize>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ShapeSeed<'_> {
    type Value = Range<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of dimensions")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Range<usize>, A::Error> {
        let start = self.0.len();
        while let Some(dim) = seq.next_element::<u64>()? {
            let dim = usize::try_from(dim)
                .map_err(|_| de::Error::custom("a dimension overflows this machine's usize"))?;
            self.0.push(dim);
        }
        Ok(start..self.0.len())
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

/// Resolves dtypes and adds the entries in data-offset order, so that the
/// table checks they tile the data section. The table adopts the dims arena.
/// The tensor table of the parsed entries; `key_offsets` (within the JSON)
/// locate each entry's key for errors.
fn build_table(
    mut raw: Vec<(String, RawEntry)>,
    dims: Vec<usize>,
    key_offsets: &[u64],
) -> Result<TableBuilder> {
    raw.sort_by_key(|(_, e)| e.data_offsets);
    let name_bytes = raw.iter().map(|(name, _)| name.len()).sum();
    let mut table = TableBuilder::with_dims(raw.len(), name_bytes, dims);
    for (name, entry) in raw {
        let dtype = DType::from_name(&entry.dtype).ok_or_else(|| {
            Error::Layout(LayoutError::UnsupportedDtype {
                name: name.clone(),
                dtype: entry.dtype.clone(),
                format: "modelbin (its dtypes are those of BinTensors)",
            })
        })?;
        let at = PREFIX_LEN + key_offsets.get(entry.key_index).copied().unwrap_or(0);
        table.push_with_dims(&name, dtype, entry.shape, entry.data_offsets, at)?;
    }
    Ok(table)
}
