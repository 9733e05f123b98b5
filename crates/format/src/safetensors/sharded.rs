//! A checkpoint split over several safetensors files, as `save_pretrained`
//! writes one above its `max_shard_size`: `model.safetensors.index.json`
//! maps every tensor name to the shard file that holds it.
//!
//! [`Sharded`] opens the shards the index names (each mapped and validated
//! as a safetensors file) and answers tensor look-ups across them. The
//! index is checked against the shards: a shard that is missing or named
//! as a path ([`ShardError`]), a tensor its shard does not hold, and a
//! tensor held by two shards are refused; a shard's tensors that the index
//! does not name are not the model's and are passed over, as transformers
//! does. [`Sharded::open_dir`] reads a model directory either way, one
//! `model.safetensors` or an index.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};

use super::SafeTensors;
use super::error::ShardError;
use crate::io::source::{self, JsonCaps, MappedFile};
use crate::tensor::{TensorStore, TensorView};
use crate::{Error, Result};

/// The index's file name in a model directory.
pub const INDEX_FILE: &str = "model.safetensors.index.json";
/// The single-file checkpoint's name in a model directory.
pub const SINGLE_FILE: &str = "model.safetensors";

/// The caps on an index: 16 MiB and a million JSON values, far above the
/// few thousand tensors of the largest checkpoints.
const INDEX_CAPS: JsonCaps = JsonCaps {
    bytes: 16 << 20,
    values: 1 << 20,
};

/// A parsed index: tensor name → shard file name, in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// Tensor name → the shard's file name.
    pub weight_map: BTreeMap<String, String>,
}

/// Parses the bytes of a `model.safetensors.index.json` (`path` names it
/// in errors): an object with a `weight_map` object of string values
/// (`metadata` and other keys are passed over). Shard names must be plain
/// file names.
pub fn parse_index(bytes: &[u8], path: &Path) -> Result<Index> {
    let bad = |reason: String| {
        Error::from(ShardError::BadIndex {
            path: path.to_path_buf(),
            reason,
        })
    };
    crate::io::json::check(bytes, "a safetensors index", INDEX_CAPS.values)?;
    let raw: RawIndex = serde_json::from_slice(bytes).map_err(|e| {
        bad(format!(
            "at byte {}: {e} (expected an object with a \"weight_map\" object of shard file names)",
            crate::io::json::error_offset(bytes, &e)
        ))
    })?;
    let mut weight_map = BTreeMap::new();
    for (tensor, shard) in raw.weight_map.0 {
        if !is_plain_file_name(&shard) {
            return Err(ShardError::BadShardName {
                index: path.to_path_buf(),
                shard,
                tensor,
            }
            .into());
        }
        if weight_map.contains_key(&tensor) {
            return Err(ShardError::NamedTwice {
                index: path.to_path_buf(),
                tensor,
            }
            .into());
        }
        weight_map.insert(tensor, shard);
    }
    if weight_map.is_empty() {
        return Err(bad("the weight_map names no tensor".into()));
    }
    Ok(Index { weight_map })
}

/// The index as written: only `weight_map` is read.
#[derive(Deserialize)]
struct RawIndex {
    weight_map: Pairs,
}

/// A JSON object's entries in file order, duplicates kept (a map would
/// keep one of them silently).
struct Pairs(Vec<(String, String)>);

impl<'de> Deserialize<'de> for Pairs {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PairsVisitor;
        impl<'de> Visitor<'de> for PairsVisitor {
            type Value = Pairs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of tensor names to shard file names")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry::<String, String>()? {
                    pairs.push(pair);
                }
                Ok(Pairs(pairs))
            }
        }
        deserializer.deserialize_map(PairsVisitor)
    }
}

/// Whether `name` is a file name with no directory part.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// The shards of a checkpoint, mapped, with the index over them.
#[derive(Debug)]
pub struct Sharded {
    shards: Vec<SafeTensors<MappedFile>>,
    /// Tensor name → its shard.
    names: HashMap<String, usize>,
}

impl Sharded {
    /// Opens the checkpoint of the model directory `dir`:
    /// `model.safetensors` when it exists, else the shards of
    /// `model.safetensors.index.json`.
    pub fn open_dir(dir: &Path) -> Result<Sharded> {
        let single = dir.join(SINGLE_FILE);
        if single.exists() {
            let file = super::open(&single)?;
            let names = file
                .names()
                .map(|name| (name.to_owned(), 0))
                .collect::<HashMap<_, _>>();
            return Ok(Sharded {
                shards: vec![file],
                names,
            });
        }
        let index = dir.join(INDEX_FILE);
        if !index.exists() {
            return Err(Error::io(
                &single,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no such file (nor {INDEX_FILE} for a sharded checkpoint)"),
                ),
            ));
        }
        Sharded::open_index(&index)
    }

    /// Opens the shards that the index file `path` names, in its
    /// directory.
    pub fn open_index(path: &Path) -> Result<Sharded> {
        let bytes = source::read_capped(path, "a safetensors index", INDEX_CAPS.bytes)?;
        let index = parse_index(&bytes, path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut shard_of: HashMap<&str, usize> = HashMap::new();
        let mut shard_names: Vec<&str> = Vec::new();
        let mut shards = Vec::new();
        let mut names = HashMap::with_capacity(index.weight_map.len());
        for (tensor, shard) in &index.weight_map {
            let slot = match shard_of.get(shard.as_str()) {
                Some(&slot) => slot,
                None => {
                    let file = dir.join(shard);
                    if !file.exists() {
                        return Err(ShardError::MissingShard {
                            index: path.to_path_buf(),
                            shard: shard.clone(),
                            tensor: tensor.clone(),
                        }
                        .into());
                    }
                    shards.push(super::open(&file)?);
                    shard_names.push(shard);
                    shard_of.insert(shard, shards.len() - 1);
                    shards.len() - 1
                }
            };
            if shards[slot].get(tensor).is_none() {
                return Err(ShardError::NotInShard {
                    index: path.to_path_buf(),
                    tensor: tensor.clone(),
                    shard: shard.clone(),
                }
                .into());
            }
            names.insert(tensor.clone(), slot);
        }
        // A tensor of the index also held by another shard.
        for (slot, file) in shards.iter().enumerate() {
            for name in file.names() {
                if let Some(&home) = names.get(name)
                    && home != slot
                {
                    return Err(ShardError::TensorTwice {
                        index: path.to_path_buf(),
                        tensor: name.to_owned(),
                        first: shard_names[home].to_owned(),
                        second: shard_names[slot].to_owned(),
                    }
                    .into());
                }
            }
        }
        Ok(Sharded { shards, names })
    }

    /// The tensor called `name`, from whichever shard holds it.
    pub fn get(&self, name: &str) -> Option<TensorView<'_>> {
        let &slot = self.names.get(name)?;
        self.shards[slot].get(name)
    }

    /// Every tensor name of the checkpoint, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.names.keys().map(String::as_str)
    }

    /// How many shard files the checkpoint has.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Index> {
        parse_index(json.as_bytes(), Path::new("i.json"))
    }

    #[test]
    fn an_index_maps_names_to_plain_shard_names() {
        let index = parse(
            r#"{"metadata": {"total_size": 8}, "weight_map": {"b": "2.safetensors", "a": "1.safetensors"}}"#,
        )
        .unwrap();
        let names: Vec<_> = index.weight_map.iter().collect();
        assert_eq!(
            names,
            [
                (&"a".to_owned(), &"1.safetensors".to_owned()),
                (&"b".to_owned(), &"2.safetensors".to_owned())
            ]
        );
    }

    #[test]
    fn malformed_indexes_are_refused() {
        let shard = |r: Result<Index>| match r {
            Err(Error::Shard(e)) => e,
            other => panic!("{other:?}"),
        };
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"weight_map": {}}"#,
            r#"{"weight_map": {"a": 1}}"#,
            r#"{"weight_map": {"a": "x"}"#,
        ] {
            assert!(
                matches!(shard(parse(bad)), ShardError::BadIndex { .. }),
                "{bad}"
            );
        }
        for name in ["../x", "/etc/passwd", "", "..", "a\\\\b"] {
            let json = format!(r#"{{"weight_map": {{"t": "{name}"}}}}"#);
            assert!(
                matches!(shard(parse(&json)), ShardError::BadShardName { .. }),
                "{name}"
            );
        }
        assert!(matches!(
            shard(parse(r#"{"weight_map": {"t": "a", "t": "a"}}"#)),
            ShardError::NamedTwice { .. }
        ));
    }
}
