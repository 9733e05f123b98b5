//! SAEV: sharded transformer activations for sparse-autoencoder training
//! (protocol v1 of the `saev` project; every rule in `docs/formats/saev.md`).
//!
//! A dataset is a directory `<root>/<HASH>/` holding `metadata.json` and
//! shards `acts000000.bin`…: raw little-endian f32, C order
//! `[img, layer, token, dim]`, `S = max_patches_per_shard // (L·T)` images each.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the face: re-exports, [`shard_name`] |
//! | `read/` | [`Dataset`], [`open`], `verify`, the views (`mod.rs`); the batch [`Loader`] (`loader.rs`); [`Dataset::layer_stats`] (`stats.rs`); the recorded token ids (`tokens.rs`) and their text (`token_text.rs`) |
//! | `write.rs` | the streaming [`Writer`], [`write_synthetic`] |
//! | `metadata/` | [`Metadata`]: `metadata.json`'s keys, rules, hash and shard arithmetic; `pyjson.rs`: Python's `json.dumps`, which the hash is taken over |
//! | `images.rs` | `images.jsonl` and `vision.json`: the images an image recording was made from |
//! | `union.rs` | [`Union`]: datasets read as one, and their manifest `union.json` ([`write_union`]) |
//! | `error.rs` | [`SaevError`] |
//! | `summary.rs` | [`SaevSummary`] for `inspect` |
//!
//! A dataset is a directory, not one buffer, so it has no `from_buffer`, and
//! its reader is large enough to live in `read/` rather than in this face.
//! `metadata/` and `images.rs` sit beside `read/` and `write.rs` because
//! both directions use them: the writer builds the metadata and the image
//! files that the reader checks.

mod error;
mod images;
mod metadata;
mod read;
mod summary;
mod union;
mod write;

pub use error::{NonFiniteLayer, SaevError};
pub use images::{
    IMAGES_FILE, ImageCheck, ImageEntry, ImageFile, ImageState, Images, MAX_IMAGE_BYTES,
    MAX_IMAGE_LINE, VISION_FAMILIES, VISION_FILE, VisionInfo, read_image_file,
};
pub use metadata::{KEYS, Layout, Metadata, dumps, float_repr};
pub use read::{
    Batch, Dataset, Example, LayerChoice, LayerStats, Loader, LoaderOptions, Patches, TOKENS_FILE,
    TokenIds, TokenText, Unit, VOCAB_FILE, View, alone, datasets_in, open, visible,
};
pub use summary::SaevSummary;
pub use union::{UNION_FILE, Union, UnionSummary, UnionView, write_union};
pub use write::{Start, Writer, write_synthetic};

/// The file name of shard `index`.
pub fn shard_name(index: u64) -> String {
    format!("acts{index:06}.bin")
}
