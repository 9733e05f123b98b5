//! What "the same model" means, everywhere a result is tied to the model
//! that made it: a recording's `vit_ckpt`, `sae eval --model` and
//! `sae features --model` against the dataset, steering against the
//! autoencoder's training, a search index against its embedder.
//!
//! A model's **checkpoint id** is a digest of what it computes with:
//!
//! * a model directory (`model.safetensors`, or the shards an index
//!   names): `sha256-tensors:` and 16 hex digits of the SHA-256 over its
//!   tensors in name order, each as its name, dtype, shape and bytes. The
//!   same tensors give the same id however they are sharded, wherever the
//!   directory is, and whatever else it holds; `config.json` is not part
//!   of it (an edit there that changes the computation is not seen);
//! * a model file (TLLM, EMBD): `sha256:` and 16 hex digits of the file's
//!   SHA-256.
//!
//! A recording on int8 weights names the same model (` (int8)` after the
//! id), as does a vision recording's `NAME@` before it. Ids written before
//! directories were identified by their tensors (`sha256:` of the
//! single file, or of the index and shards' digests) still match the
//! directory they were made from ([`matches()`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use modelbin_format::io::checksum::{hex, sha256, sha256_of_parts_unless, sha256_unless};
use modelbin_format::io::source::MappedFile;
use modelbin_format::safetensors::sharded::{INDEX_FILE, SINGLE_FILE, Sharded, parse_index};

use crate::Result;

/// The prefix of a directory's id.
const TENSORS: &str = "sha256-tensors:";
/// The prefix of a file's id (and of a directory's, before tensors).
const FILE: &str = "sha256:";

/// The checkpoint id of the model at `model` (a directory or a file).
pub fn checkpoint_id(model: &Path) -> Result<String> {
    checkpoint_id_unless(model, &AtomicBool::new(false)).map(|id| id.unwrap_or_default())
}

/// Whether `recorded` (an id as a recording, an autoencoder or an index
/// wrote it, with any ` (int8)` or `NAME@` around it) names the model at
/// `model`; also returns the model's id (for an error to show).
pub fn matches(model: &Path, recorded: &str) -> Result<(bool, String)> {
    let id = bare(recorded);
    let current = checkpoint_id(model)?;
    if current == id {
        return Ok((true, current));
    }
    if model.is_dir() && id.starts_with(FILE) {
        return Ok((legacy_dir_id(model)? == id, current));
    }
    Ok((false, current))
}

/// `recorded` without a vision recording's `NAME@` and an int8 recording's
/// ` (int8)`.
fn bare(recorded: &str) -> &str {
    let id = recorded.strip_suffix(" (int8)").unwrap_or(recorded);
    id.rsplit_once('@').map_or(id, |(_, id)| id)
}

/// Runs `work` while [`checkpoint_id`] hashes `model` on another thread,
/// and returns both. Hashing a checkpoint costs about as much as opening
/// it, and the two use different resources (one core's SHA instructions,
/// against the pool's copies and packing). When `work` fails, the hash is
/// abandoned at its next chunk rather than read to the end.
pub(crate) fn alongside_checkpoint_id<T: Send>(
    model: &Path,
    work: impl FnOnce() -> Result<T>,
) -> Result<(T, String)> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let hashing = scope.spawn(|| checkpoint_id_unless(model, &stop));
        let done = work();
        if done.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let id = hashing
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let done = done?;
        Ok((done, id?.unwrap_or_default()))
    })
}

/// [`checkpoint_id`], or `None` once `stop` is set.
fn checkpoint_id_unless(model: &Path, stop: &AtomicBool) -> Result<Option<String>> {
    if !model.is_dir() {
        let digest = sha256_unless(&MappedFile::open(model)?, stop);
        return Ok(digest.map(|d| short(FILE, &d)));
    }
    let checkpoint = Sharded::open_dir(model)?;
    let mut names: Vec<&str> = checkpoint.names().collect();
    names.sort_unstable();
    let mut records = Vec::with_capacity(names.len());
    for name in &names {
        let tensor = checkpoint.get(name).expect("a name the checkpoint lists");
        let mut head = Vec::new();
        for part in [name.as_bytes(), tensor.dtype().name().as_bytes()] {
            head.extend_from_slice(&(part.len() as u64).to_le_bytes());
            head.extend_from_slice(part);
        }
        head.extend_from_slice(&(tensor.shape().len() as u64).to_le_bytes());
        for &dim in tensor.shape() {
            head.extend_from_slice(&(dim as u64).to_le_bytes());
        }
        head.extend_from_slice(&(tensor.data().len() as u64).to_le_bytes());
        records.push((head, tensor.data()));
    }
    let parts = records
        .iter()
        .flat_map(|(head, data)| [head.as_slice(), *data]);
    Ok(sha256_of_parts_unless(parts, stop).map(|d| short(TENSORS, &d)))
}

/// `prefix` and the first 16 hex digits of `digest`.
fn short(prefix: &str, digest: &[u8; 32]) -> String {
    format!("{prefix}{}", &hex(digest)[..16])
}

/// The id a directory had before ids were made of tensors: the single
/// file's SHA-256, or for a sharded checkpoint the SHA-256 of its index
/// followed by each shard's (in name order, each once).
fn legacy_dir_id(model: &Path) -> Result<String> {
    let stop = AtomicBool::new(false);
    let hash = |path: &Path| -> Result<[u8; 32]> {
        Ok(sha256_unless(&MappedFile::open(path)?, &stop).expect("never stopped"))
    };
    let digest = if model.join(SINGLE_FILE).exists() || !model.join(INDEX_FILE).exists() {
        hash(&model.join(SINGLE_FILE))?
    } else {
        let index_path = model.join(INDEX_FILE);
        let index_bytes = MappedFile::open(&index_path)?;
        let index = parse_index(&index_bytes, &index_path)?;
        let mut shards: Vec<&String> = index.weight_map.values().collect();
        shards.sort();
        shards.dedup();
        let mut all = sha256(&index_bytes).to_vec();
        for shard in shards {
            all.extend_from_slice(&hash(&model.join(shard))?);
        }
        sha256(&all)
    };
    Ok(short(FILE, &digest))
}
