//! What `modelbin inspect` reports about a SAEV dataset: its metadata and
//! the shard arithmetic it implies.

use serde::Serialize;

use super::Dataset;
use crate::Format;

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
    /// What one example is: an image, or a text window.
    pub unit: super::Unit,
    /// Tokens per image or window (T = patches + CLS).
    pub tokens_per_img: u64,
    /// Images (or windows) per shard (S).
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
    pub fn of(dataset: &Dataset) -> Self {
        let m = dataset.metadata();
        SaevSummary {
            format: Format::Saev,
            metadata: m.to_value(),
            hash: m.hash(),
            n_layers: m.n_layers(),
            unit: dataset.unit(),
            tokens_per_img: m.tokens_per_img(),
            imgs_per_shard: m.imgs_per_shard(),
            n_shards: m.n_shards(),
            shard_bytes: m.shard_bytes(),
            vectors: m.n_imgs * m.vectors_per_img(),
            extra_empty_shard: dataset.has_extra_empty_shard(),
        }
    }
}
