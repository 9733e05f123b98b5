//! The rules of a sharded safetensors checkpoint: the index
//! (`model.safetensors.index.json`) and the shard files it names.

use std::path::PathBuf;

/// Why a sharded checkpoint cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// The index is not the JSON object `save_pretrained` writes: a
    /// `weight_map` object from tensor names to shard file names.
    #[error("{path}: {reason}")]
    BadIndex {
        /// The index file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A shard name that is not a plain file name in the index's directory
    /// (a path with a separator, `..`, or empty): refused so an index never
    /// reads outside its directory.
    #[error(
        "{index}: shard {shard:?} (of tensor `{tensor}`) is not a file name in the index's directory"
    )]
    BadShardName {
        /// The index file.
        index: PathBuf,
        /// The shard's name as written.
        shard: String,
        /// A tensor the index puts in it.
        tensor: String,
    },
    /// A shard the index names that is not in the directory.
    #[error("{index}: shard {shard:?} (of tensor `{tensor}`) does not exist")]
    MissingShard {
        /// The index file.
        index: PathBuf,
        /// The shard's file name.
        shard: String,
        /// A tensor the index puts in it.
        tensor: String,
    },
    /// A tensor the index puts in a shard that does not hold it.
    #[error("{index}: tensor `{tensor}` is not in its shard {shard:?}")]
    NotInShard {
        /// The index file.
        index: PathBuf,
        /// The tensor.
        tensor: String,
        /// The shard the index names.
        shard: String,
    },
    /// A tensor held by two shards: which one the model gets would depend
    /// on the reader.
    #[error("{index}: tensor `{tensor}` is in both {first:?} and {second:?}")]
    TensorTwice {
        /// The index file.
        index: PathBuf,
        /// The tensor.
        tensor: String,
        /// One shard that holds it.
        first: String,
        /// The other.
        second: String,
    },
    /// A tensor name the index's `weight_map` gives twice.
    #[error("{index}: tensor `{tensor}` is named twice in the weight_map")]
    NamedTwice {
        /// The index file.
        index: PathBuf,
        /// The tensor.
        tensor: String,
    },
}
