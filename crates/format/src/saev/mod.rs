//! SAEV: sharded transformer activations for sparse-autoencoder training
//! (protocol v1 of the `saev` project; every rule in `docs/formats/saev.md`).
//!
//! A dataset is a directory `<root>/<HASH>/` holding `metadata.json` and
//! shards `acts000000.bin`…: raw little-endian f32, C order
//! `[img, layer, token, dim]`, `S = max_patches_per_shard // (L·T)` images each.

mod dataset;
mod images;
mod loader;
mod metadata;
mod pyjson;
mod stats;
mod token_text;
mod tokens;
mod writer;

pub use dataset::{Dataset, Example, LayerChoice, Patches, View, datasets_in, open};
pub use images::{
    IMAGES_FILE, ImageCheck, ImageEntry, ImageFile, ImageState, Images, MAX_IMAGE_BYTES,
    MAX_IMAGE_LINE, VISION_FAMILIES, VISION_FILE, VisionInfo, read_image_file,
};
pub use loader::{Batch, Loader, LoaderOptions};
pub use metadata::{KEYS, Metadata};
pub use pyjson::{Layout, dumps, float_repr};
pub use stats::LayerStats;
pub use token_text::{TokenText, visible};
pub use tokens::{TOKENS_FILE, TokenIds, VOCAB_FILE};
pub use writer::{Writer, write_synthetic};

/// The file name of shard `index`.
pub fn shard_name(index: u64) -> String {
    format!("acts{index:06}.bin")
}
