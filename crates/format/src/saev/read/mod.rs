//! Reading a SAEV dataset: validation, the six views, random access.

mod loader;
mod stats;
mod token_text;
mod tokens;

use std::path::{Path, PathBuf};

pub use loader::{Batch, Loader, LoaderOptions};
pub use stats::LayerStats;
pub use token_text::{TokenText, alone, visible};
pub use tokens::{TOKENS_FILE, TokenIds, VOCAB_FILE};

/// What one example of a dataset (the format's "image") is, so that
/// messages about a text dataset speak of windows and tokens: the format's
/// keys (`n_imgs`, `n_patches_per_img`) keep their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// An image, its tokens the patches (and CLS).
    Image,
    /// A window of text tokens.
    Window,
}

impl Unit {
    /// The noun for one: "image" or "window".
    pub fn noun(self) -> &'static str {
        match self {
            Unit::Image => "image",
            Unit::Window => "window",
        }
    }

    /// The noun for several: "images" or "windows".
    pub fn plural(self) -> &'static str {
        match self {
            Unit::Image => "images",
            Unit::Window => "windows",
        }
    }
}

use super::images::Images;
use super::metadata::{self, Metadata};
use super::shard_name;
use crate::io::source::{self, MappedFile};
use crate::{Error, Result};
use crate::{LayoutError, SaevError};

/// A validated, memory-mapped dataset.
#[derive(Debug)]
pub struct Dataset {
    dir: PathBuf,
    metadata: Metadata,
    shards: Vec<MappedFile>,
    /// The reference writer's extra all-zero shard is present (accepted).
    extra_empty_shard: bool,
    /// `tokens.bin`, when the recording kept its token ids.
    token_ids: Option<TokenIds>,
}

/// The datasets directly under a SAEV root (the directories holding a
/// `metadata.json`), sorted; none for any other directory.
pub fn datasets_in(root: &Path) -> Vec<PathBuf> {
    let mut datasets: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.join("metadata.json").is_file())
        .collect();
    datasets.sort();
    datasets
}

/// Opens and validates the dataset in `dir`: metadata keys and types, the
/// directory name equal to the recomputed hash, shard count and sizes. A
/// SAEV root holding one dataset opens that one; holding several, it is
/// [`SaevError::Root`], naming them.
pub fn open(dir: impl AsRef<Path>) -> Result<Dataset> {
    let dir = dir.as_ref();
    let meta_path = dir.join("metadata.json");
    if dir.is_dir() && std::fs::symlink_metadata(&meta_path).is_err() {
        // A root with one dataset stands for it; with several, the error
        // names them.
        match datasets_in(dir).as_slice() {
            [] => {}
            [only] => return open(only),
            several => {
                return Err(Error::Saev(SaevError::Root {
                    root: dir.to_path_buf(),
                    datasets: several.to_vec(),
                }));
            }
        }
    }
    let text = source::read_capped_text(&meta_path, "SAEV metadata.json", metadata::MAX_BYTES)?;
    let metadata = Metadata::parse(&text).map_err(|e| match e {
        Error::Layout(LayoutError::InvalidHeader {
            format,
            offset,
            reason,
        }) => Error::Layout(LayoutError::InvalidHeader {
            format,
            offset,
            reason: format!("{}: {reason}", meta_path.display()),
        }),
        Error::Saev(SaevError::InvalidMetadata { reason }) => {
            Error::Saev(SaevError::InvalidMetadata {
                reason: format!("{}: {reason}", meta_path.display()),
            })
        }
        other => other,
    })?;
    let expected = metadata.hash();
    let name = std::fs::canonicalize(dir)
        .map_err(|e| Error::io(dir, e))?
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    if name.as_deref() != Some(expected.as_str()) {
        return Err(Error::Saev(SaevError::SaevHashMismatch {
            dir: dir.to_path_buf(),
            expected,
        }));
    }
    let n = metadata.n_shards();
    let mut shards = Vec::with_capacity(n.min(1 << 16) as usize);
    for index in 0..n {
        let path = dir.join(shard_name(index));
        if !path.is_file() {
            return Err(Error::Saev(SaevError::MissingShard { path, expected: n }));
        }
        let file = MappedFile::open(&path)?;
        let full = metadata.shard_bytes();
        let last_imgs = metadata.n_imgs - index * metadata.imgs_per_shard();
        let exact = last_imgs.min(metadata.imgs_per_shard()) * metadata.img_bytes();
        let found = file.len() as u64;
        if found != full && found != exact {
            return Err(Error::Saev(SaevError::ShardSize {
                path,
                expected: if full == exact {
                    full.to_string()
                } else {
                    format!("{full} or {exact}")
                },
                found,
            }));
        }
        shards.push(file);
    }
    let extra_empty_shard = check_extra_shards(dir, &metadata)?;
    let token_ids = TokenIds::open(dir, &metadata)?;
    Ok(Dataset {
        dir: dir.to_path_buf(),
        metadata,
        shards,
        extra_empty_shard,
        token_ids,
    })
}

/// Rejects shard files past the last one, except the reference writer's one
/// extra full-size shard when S divides n_imgs.
fn check_extra_shards(dir: &Path, metadata: &Metadata) -> Result<bool> {
    let n = metadata.n_shards();
    let mut extra = false;
    for entry in std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(index) = name
            .strip_prefix("acts")
            .and_then(|r| r.strip_suffix(".bin"))
            .and_then(|d| d.parse::<u64>().ok())
        else {
            continue;
        };
        if index < n {
            continue;
        }
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        let divides = metadata.n_imgs.is_multiple_of(metadata.imgs_per_shard());
        if index == n && divides && size == metadata.shard_bytes() {
            extra = true;
        } else {
            return Err(Error::Saev(SaevError::UnexpectedShard {
                path: entry.path(),
                expected: n,
            }));
        }
    }
    Ok(extra)
}

/// Which tokens a view walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patches {
    /// Only CLS (token 0); needs `cls_token`.
    Cls,
    /// Only image patches (token = patch + CLS).
    Image,
    /// CLS (if any) and patches.
    All,
}

/// Which layers a view walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerChoice {
    /// One recorded layer, by value (may be negative).
    One(i64),
    /// Every recorded layer.
    All,
}

/// One activation vector and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Example<'a> {
    /// Image index in the dataset.
    pub img: u64,
    /// Layer value (as in `layers`).
    pub layer: i64,
    /// Physical token index (0 is CLS when there is one).
    pub token: u64,
    /// The D values, borrowed from the mapped shard.
    pub vector: &'a [f32],
}

impl Dataset {
    /// Opening checks the metadata, the hash, every shard's size and the
    /// size of `tokens.bin`; this also checks every kept token id against
    /// the vocabulary (`data.vocab_size`, else `vocab.txt`'s lines). The
    /// activations themselves can be anything (see
    /// [`Dataset::layer_stats`] to scan them). The image side files, when
    /// present, are checked too ([`Dataset::images`]); the image files they
    /// list are not read ([`Images::check_files`] does).
    pub fn verify(&self) -> Result<()> {
        self.images()?;
        let Some(ids) = &self.token_ids else {
            return Ok(());
        };
        let vocab_size = match self.metadata.data["vocab_size"].as_u64() {
            Some(size) => Some(size),
            None => self.vocabulary()?.map(|v| v.len() as u64),
        };
        match vocab_size {
            Some(size) => ids.check_range(&self.dir, size),
            None => Ok(()),
        }
    }

    /// The images the dataset was recorded from and the vision
    /// transformer's geometry (`images.jsonl` and `vision.json`), read and
    /// checked against the metadata; `None` when neither file is there (a
    /// text or foreign dataset).
    pub fn images(&self) -> Result<Option<Images>> {
        Images::read(&self.dir, &self.metadata)
    }

    /// The token ids each image was recorded from (`tokens.bin`), if kept.
    pub fn token_ids(&self) -> Option<&TokenIds> {
        self.token_ids.as_ref()
    }

    /// What one of the dataset's examples (the format's "image", `n_imgs`
    /// of them) is: a window of text tokens where the recording kept its
    /// token ids, else an image.
    pub fn unit(&self) -> Unit {
        if self.token_ids.is_some() {
            Unit::Window
        } else {
            Unit::Image
        }
    }

    /// The recording's vocabulary (`vocab.txt`), if kept: line `i` is the
    /// string of token id `i`.
    pub fn vocabulary(&self) -> Result<Option<Vec<String>>> {
        tokens::read_vocabulary(&self.dir)
    }

    /// The metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The dataset directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the reference writer's extra all-zero shard is present.
    pub fn has_extra_empty_shard(&self) -> bool {
        self.extra_empty_shard
    }

    /// The mapped shards, in order.
    pub fn shards(&self) -> &[MappedFile] {
        &self.shards
    }

    /// Index of a layer value in `layers`.
    pub fn layer_index(&self, layer: i64) -> Result<usize> {
        self.metadata
            .layers
            .iter()
            .position(|&l| l == layer)
            .ok_or_else(|| {
                Error::Saev(SaevError::InvalidCoordinate(format!(
                    "layer {layer} was not recorded (layers: {:?})",
                    self.metadata.layers
                )))
            })
    }

    /// The vector of (image, layer value, physical token).
    pub fn vector(&self, img: u64, layer: i64, token: u64) -> Result<&[f32]> {
        let m = &self.metadata;
        if img >= m.n_imgs {
            return Err(Error::Saev(SaevError::InvalidCoordinate(format!(
                "image {img} is out of range (n_imgs {})",
                m.n_imgs
            ))));
        }
        if token >= m.tokens_per_img() {
            return Err(Error::Saev(SaevError::InvalidCoordinate(format!(
                "token {token} is out of range ({} tokens per image{})",
                m.tokens_per_img(),
                if m.cls_token { ", token 0 is CLS" } else { "" }
            ))));
        }
        Ok(self.vector_at(img, self.layer_index(layer)?, token))
    }

    /// The vector at validated coordinates.
    fn vector_at(&self, img: u64, layer_index: usize, token: u64) -> &[f32] {
        let m = &self.metadata;
        let (shard, in_shard) = (img / m.imgs_per_shard(), img % m.imgs_per_shard());
        let vector = (in_shard * m.n_layers() + layer_index as u64) * m.tokens_per_img() + token;
        let start = (vector * m.d_vit * 4) as usize;
        let bytes = &self.shards[shard as usize][start..start + m.d_vit as usize * 4];
        bytemuck::try_cast_slice(bytes)
            .expect("mapped shards are page-aligned and offsets are multiples of 4")
    }

    /// A view over some tokens of some layers.
    pub fn view(&self, patches: Patches, layer: LayerChoice) -> Result<View<'_>> {
        let m = &self.metadata;
        if patches == Patches::Cls && !m.cls_token {
            return Err(Error::InvalidArgument(
                "a CLS view of a dataset without a CLS token".into(),
            ));
        }
        let layer_index = match layer {
            LayerChoice::One(l) => Some(self.layer_index(l)?),
            LayerChoice::All => None,
        };
        let tokens = match patches {
            Patches::Cls => 1,
            Patches::Image => m.n_patches_per_img,
            Patches::All => m.tokens_per_img(),
        };
        let layers = if layer_index.is_some() {
            1
        } else {
            m.n_layers()
        };
        Ok(View {
            dataset: self,
            patches,
            layer_index,
            tokens,
            per_img: layers * tokens,
        })
    }
}

/// A flat, indexable walk over the dataset (spec §5.1): images, then layers
/// (for `LayerChoice::All`), then tokens.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    dataset: &'a Dataset,
    patches: Patches,
    layer_index: Option<usize>,
    /// Tokens per (image, layer) in this view.
    tokens: u64,
    /// Examples per image.
    per_img: u64,
}

impl<'a> View<'a> {
    /// Number of examples.
    pub fn len(&self) -> u64 {
        self.dataset.metadata.n_imgs * self.per_img
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Examples per image.
    pub fn per_img(&self) -> u64 {
        self.per_img
    }

    /// Example `i`: its vector (zero-copy) and coordinates.
    pub fn get(&self, i: u64) -> Result<Example<'a>> {
        if i >= self.len() {
            return Err(Error::Saev(SaevError::InvalidCoordinate(format!(
                "index {i} is out of range for a view of {}",
                self.len()
            ))));
        }
        let (img, rest) = (i / self.per_img, i % self.per_img);
        let (layer_index, local) = match self.layer_index {
            Some(l) => (l, rest),
            None => ((rest / self.tokens) as usize, rest % self.tokens),
        };
        let token = match self.patches {
            Patches::Cls => 0,
            Patches::Image => local + u64::from(self.dataset.metadata.cls_token),
            Patches::All => local,
        };
        Ok(Example {
            img,
            layer: self.dataset.metadata.layers[layer_index],
            token,
            vector: self.dataset.vector_at(img, layer_index, token),
        })
    }
}
