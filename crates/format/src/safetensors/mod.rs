//! safetensors (`.safetensors`): `u64 LE n` | `n` bytes of JSON header | data.
//!
//! An independent strict reader (the `safetensors` crate panics on offsets
//! near 2^64) and a writer. Dtypes outside modelbin's [`DType`] set (F4,
//! F6_*, F8_E8M0, the FNUZ floats, C64) are reported as unsupported.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::LayoutError;
use crate::bintensors::{MAX_HEADER_SIZE, MAX_METADATA_ENTRIES};
use crate::bytes::size_prefixed_header;
use crate::source::MappedFile;
use crate::table::{TableBuilder, TensorTable};
use crate::tensor::{TensorStore, TensorView};
use crate::write::{canonical_order, write_atomic};
use crate::{DType, Error, Result, json};

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
        Ok(SafeTensors {
            buf,
            metadata,
            table,
            header_len,
        })
    }

    /// Absolute offset of the tensor data (after the size prefix and the
    /// header).
    pub fn data_offset(&self) -> u64 {
        8 + self.header_len()
    }

    /// Opening checks every rule already (the format has no checksum): a
    /// no-op, for the same face as the other formats.
    pub fn verify(&self) -> Result<()> {
        Ok(())
    }

    /// Header size `n` (JSON bytes after the 8-byte prefix, padding included).
    pub fn header_len(&self) -> u64 {
        self.header_len
    }
}

impl<B: AsRef<[u8]>> crate::tensor::sealed::Sealed for SafeTensors<B> {
    fn table(&self) -> &TensorTable {
        &self.table
    }
}

impl<B: AsRef<[u8]>> TensorStore for SafeTensors<B> {
    fn file_bytes(&self) -> &[u8] {
        self.buf.as_ref()
    }

    fn metadata(&self) -> Option<&BTreeMap<String, String>> {
        self.metadata.as_ref()
    }
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
            return Err(Error::Layout(LayoutError::ReservedName {
                name: METADATA_KEY.into(),
                format: FORMAT,
            }));
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
        return Err(Error::Layout(LayoutError::HeaderTooLarge {
            size: header.len() as u64,
            limit: MAX_HEADER_SIZE,
        }));
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

/// A safetensors file in memory (the bytes [`write_file`] writes).
pub fn serialize<'a>(
    tensors: impl IntoIterator<Item = TensorView<'a>>,
    metadata: Option<&BTreeMap<String, String>>,
) -> Result<Vec<u8>> {
    let (head, tensors) = plan(tensors, metadata)?;
    let mut out = head;
    for tensor in &tensors {
        out.extend_from_slice(tensor.data());
    }
    Ok(out)
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
