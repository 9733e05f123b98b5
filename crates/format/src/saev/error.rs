//! SAEV dataset rules (metadata, hash, shards) and its coordinates.

use std::path::PathBuf;

/// Errors of the SAEV dataset rules (metadata, hash, shards) and its coordinates.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaevError {
    /// A SAEV root (the directory `<root>/<HASH>/` datasets are made in)
    /// holding several datasets, given where one dataset was expected.
    #[error("{}: is a SAEV root; name one of its datasets: {}", .root.display(), .datasets.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(" "))]
    Root {
        /// The root.
        root: PathBuf,
        /// Its datasets.
        datasets: Vec<PathBuf>,
    },
    /// A SAEV directory whose name is not its metadata's hash.
    #[error(
        "{dir}: the directory name is not the metadata's hash {expected} (metadata.json was changed, or the directory renamed)"
    )]
    SaevHashMismatch {
        /// The dataset directory.
        dir: PathBuf,
        /// The hash of its metadata.
        expected: String,
    },
    /// A SAEV shard the metadata requires is missing.
    #[error("{path}: shard missing (the metadata implies {expected} shards)")]
    MissingShard {
        /// The missing file.
        path: PathBuf,
        /// How many shards there should be.
        expected: u64,
    },
    /// A SAEV shard of the wrong size.
    #[error("{path}: shard is {found} bytes, expected {expected}")]
    ShardSize {
        /// The shard.
        path: PathBuf,
        /// Allowed size(s).
        expected: String,
        /// Its size.
        found: u64,
    },
    /// A shard file beyond what the metadata describes.
    #[error("{path}: unexpected shard (the metadata implies {expected} shards)")]
    UnexpectedShard {
        /// The file.
        path: PathBuf,
        /// How many shards there should be.
        expected: u64,
    },
    /// An (image, layer, token) coordinate outside the dataset.
    #[error("{0}")]
    InvalidCoordinate(String),
    /// A dataset is already there.
    #[error("{path}: {reason}")]
    DatasetExists {
        /// The existing directory.
        path: PathBuf,
        /// Same dataset, or a different one.
        reason: &'static str,
    },
    /// `metadata.json` parses but breaks a rule of the protocol (a key
    /// missing or of the wrong type, a value out of range).
    #[error("SAEV metadata.json: {reason}")]
    InvalidMetadata {
        /// What is wrong (with the file's path, when read from a dataset).
        reason: String,
    },
    /// `tokens.bin` whose size does not match the metadata.
    #[error(
        "{path}: {found} bytes, expected {expected} (n_imgs × n_patches_per_img ids of 4 bytes)"
    )]
    TokensSize {
        /// The file.
        path: PathBuf,
        /// Its size per the metadata.
        expected: u64,
        /// Its size.
        found: u64,
    },
    /// A recorded token id outside the vocabulary.
    #[error(
        "{path}: image {img}, token {token} has id {id}, outside the vocabulary of {vocab_size}"
    )]
    TokenOutOfRange {
        /// `tokens.bin`.
        path: PathBuf,
        /// The image.
        img: u64,
        /// The token within the image's window.
        token: u64,
        /// The id.
        id: u32,
        /// The vocabulary's size.
        vocab_size: u64,
    },
    /// `images.jsonl` or `vision.json` present without the other.
    #[error("{present}: the image list needs {missing} beside it, which is missing")]
    ImagesIncomplete {
        /// The side file found.
        present: PathBuf,
        /// The one missing.
        missing: PathBuf,
    },
    /// `images.jsonl` listing another number of images than the metadata's.
    #[error("{path}: lists {found} images; the dataset has {expected}")]
    ImageCount {
        /// `images.jsonl`.
        path: PathBuf,
        /// The metadata's `n_imgs`.
        expected: u64,
        /// Lines in the file.
        found: u64,
    },
    /// A line of `images.jsonl` that is not an entry: malformed JSON, a
    /// key missing or unknown, a relative path, a hash that is not 64
    /// lowercase hex digits.
    #[error("{path}: line {line}: {reason}")]
    ImageEntry {
        /// `images.jsonl`.
        path: PathBuf,
        /// The line, from 1.
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// A line of `images.jsonl` longer than any entry may be.
    #[error("{path}: line {line} is longer than {max} bytes")]
    ImageLineTooLong {
        /// `images.jsonl`.
        path: PathBuf,
        /// The line, from 1.
        line: u64,
        /// The cap.
        max: usize,
    },
    /// `vision.json` whose fields are missing, unknown or of the wrong
    /// type, or name an unknown family or a grid outside the input.
    #[error("{path}: {reason}")]
    InvalidVision {
        /// `vision.json`.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// `vision.json`'s patch grid not holding the metadata's patches.
    #[error(
        "{path}: a patch grid of {rows}×{cols} does not hold the dataset's {n_patches} patches per image"
    )]
    PatchGrid {
        /// `vision.json`.
        path: PathBuf,
        /// Rows of the grid.
        rows: u64,
        /// Columns.
        cols: u64,
        /// The metadata's `n_patches_per_img`.
        n_patches: u64,
    },
    /// Layers holding NaN or ±Inf values, found by a scan of every value
    /// (`Dataset::verify_values`): the structure is sound, the values are
    /// not fit to train on.
    #[error("{dir}: {}", .layers.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    NonFiniteValues {
        /// The dataset directory.
        dir: PathBuf,
        /// Each layer holding any, in the dataset's order.
        layers: Vec<NonFiniteLayer>,
    },
    /// A union of no datasets.
    #[error("a union needs at least one dataset")]
    EmptyUnion,
    /// A member of a union that disagrees with the first member on what
    /// its vectors are: the model, the layers, the tokens per image or
    /// their width.
    #[error(
        "{member}: cannot join this dataset to the union: its `{field}` is {found}, the first member's is {expected}"
    )]
    UnionMismatch {
        /// The disagreeing member.
        member: PathBuf,
        /// The metadata field (`vit_family`, `vit_ckpt`, `layers`,
        /// `n_patches_per_img`, `cls_token` or `d_vit`); for the image
        /// side files ([`crate::saev::Union::images`]), `images.jsonl` or a
        /// field of `vision.json` as `vision.<field>`.
        field: &'static str,
        /// The first member's value.
        expected: String,
        /// This member's value.
        found: String,
    },
    /// A union manifest (`union.json`) that parses as JSON but is not a
    /// manifest: a key missing, unknown or of the wrong type.
    #[error("{path}: not a union manifest: {reason}")]
    InvalidUnion {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A union member whose path is absolute, climbs with `..`, or
    /// resolves (through links) outside the manifest's directory.
    #[error(
        "{manifest}: member `{member}` is not inside the union's directory (paths are relative, below it)"
    )]
    UnionPathEscapes {
        /// The manifest.
        manifest: PathBuf,
        /// The member's path as listed.
        member: String,
    },
    /// A union member that is not there.
    #[error("{manifest}: member {member} is missing")]
    UnionMemberMissing {
        /// The manifest.
        manifest: PathBuf,
        /// The member's directory.
        member: PathBuf,
    },
    /// A union member whose metadata hash is not the one the manifest lists.
    #[error("{manifest}: member {member} has hash {found}, the manifest lists {expected}")]
    UnionHashMismatch {
        /// The manifest.
        manifest: PathBuf,
        /// The member's directory.
        member: PathBuf,
        /// The hash listed.
        expected: String,
        /// The member's hash.
        found: String,
    },
    /// A union member whose image count is not the one the manifest lists.
    #[error("{manifest}: member {member} holds {found} images, the manifest lists {stated}")]
    UnionCountMismatch {
        /// The manifest.
        manifest: PathBuf,
        /// The member's directory.
        member: PathBuf,
        /// The count listed.
        stated: u64,
        /// The member's `n_imgs`.
        found: u64,
    },
}

/// How many NaN and ±Inf values one layer of a dataset holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct NonFiniteLayer {
    /// The layer value.
    pub layer: i64,
    /// NaN values.
    pub nan: u64,
    /// ±Inf values.
    pub inf: u64,
}

impl std::fmt::Display for NonFiniteLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "layer {}: {} NaN, {} Inf",
            self.layer, self.nan, self.inf
        )
    }
}
