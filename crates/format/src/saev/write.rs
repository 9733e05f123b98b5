//! Writing a SAEV dataset: streamed image by image into `<HASH>.partial/`,
//! renamed to `<HASH>/` when complete.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::images::{ImageEntry, Images, VisionInfo};
use super::metadata::Metadata;
use super::shard_name;
use crate::SaevError;
use crate::{Error, Result};

/// A dataset being written.
#[derive(Debug)]
pub struct Writer {
    metadata: Metadata,
    partial: PathBuf,
    target: PathBuf,
    shard: Option<BufWriter<File>>,
    shard_index: u64,
    imgs_in_shard: u64,
    written: u64,
    /// Whether `partial` became the dataset; if not, dropping the writer
    /// (after an error, or without `finish`) removes it.
    renamed: bool,
}

/// What [`Writer::start`] found under the root.
#[derive(Debug)]
pub enum Start {
    /// The dataset is not there yet: write it.
    New(Box<Writer>),
    /// The same dataset (same metadata, so the same hash) is already
    /// complete at this path: there is nothing to write.
    Existing(PathBuf),
}

impl Writer {
    /// Starts the dataset described by `metadata` under `root`. Refuses when
    /// `<root>/<HASH>` exists: the same dataset is reported as already
    /// written, anything else is left alone. A stale `<HASH>.partial/` from
    /// an interrupted run is replaced.
    pub fn create(root: impl AsRef<Path>, metadata: Metadata) -> Result<Writer> {
        match Writer::start(root, metadata)? {
            Start::New(writer) => Ok(*writer),
            Start::Existing(path) => Err(Error::Saev(SaevError::DatasetExists {
                path,
                reason: "this dataset is already written (same metadata hash); nothing to do",
            })),
        }
    }

    /// Starts the dataset described by `metadata` under `root`, or finds
    /// it already written there ([`Start::Existing`]): a recording whose
    /// metadata names its inputs by their hashes can be run again as a
    /// no-op. A directory with the dataset's hash that holds anything else
    /// is refused and left alone. A stale `<HASH>.partial/` from an
    /// interrupted run is replaced.
    pub fn start(root: impl AsRef<Path>, metadata: Metadata) -> Result<Start> {
        metadata.validate()?;
        let root = root.as_ref();
        let hash = metadata.hash();
        let target = root.join(&hash);
        if target.exists() {
            if super::open(&target).is_ok_and(|d| d.metadata() == &metadata) {
                return Ok(Start::Existing(target));
            }
            return Err(Error::Saev(SaevError::DatasetExists {
                path: target,
                reason: "a directory with this dataset's hash exists but is not this dataset; refusing to overwrite it",
            }));
        }
        let partial = root.join(format!("{hash}.partial"));
        if partial.exists() {
            std::fs::remove_dir_all(&partial).map_err(|e| Error::io(&partial, e))?;
        }
        std::fs::create_dir_all(&partial).map_err(|e| Error::io(&partial, e))?;
        Ok(Start::New(Box::new(Writer {
            metadata,
            partial,
            target,
            shard: None,
            shard_index: 0,
            imgs_in_shard: 0,
            written: 0,
            renamed: false,
        })))
    }

    /// The metadata being written.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Appends one image's activations, `[L, T, D]` flattened in C order.
    pub fn push(&mut self, image: &[f32]) -> Result<()> {
        let m = &self.metadata;
        let expected = m.vectors_per_img() * m.d_vit;
        if image.len() as u64 != expected {
            return Err(Error::InvalidArgument(format!(
                "an image has {expected} values ([L, T, D] = [{}, {}, {}]), got {}",
                m.n_layers(),
                m.tokens_per_img(),
                m.d_vit,
                image.len()
            )));
        }
        if self.written == m.n_imgs {
            return Err(Error::InvalidArgument(format!(
                "the metadata says {} images; got more",
                m.n_imgs
            )));
        }
        if self.shard.is_none() {
            let path = self.partial.join(shard_name(self.shard_index));
            let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
            self.shard = Some(BufWriter::with_capacity(1 << 20, file));
        }
        let shard = self.shard.as_mut().expect("opened above");
        let result = if cfg!(target_endian = "little") {
            shard.write_all(bytemuck::cast_slice(image))
        } else {
            image
                .iter()
                .try_for_each(|v| shard.write_all(&v.to_le_bytes()))
        };
        result.map_err(|e| Error::io(&self.partial, e))?;
        self.written += 1;
        self.imgs_in_shard += 1;
        if self.imgs_in_shard == self.metadata.imgs_per_shard() {
            self.close_shard()?;
        }
        Ok(())
    }

    /// Keeps the token ids every image was recorded from (`tokens.bin`,
    /// `n_imgs × n_patches_per_img` of them, image by image) and, for ids
    /// that are not bytes, the vocabulary (`vocab.txt`, one token per line;
    /// a token holding a line break is refused).
    pub fn write_tokens(&mut self, ids: &[u32], vocabulary: Option<&[&str]>) -> Result<()> {
        let m = &self.metadata;
        let expected = m.n_imgs.saturating_mul(m.n_patches_per_img);
        if ids.len() as u64 != expected {
            return Err(Error::InvalidArgument(format!(
                "{} token ids for {} images of {} tokens",
                ids.len(),
                m.n_imgs,
                m.n_patches_per_img
            )));
        }
        let mut files = vec![(
            super::TOKENS_FILE,
            ids.iter()
                .flat_map(|id| id.to_le_bytes())
                .collect::<Vec<u8>>(),
        )];
        if let Some(vocabulary) = vocabulary {
            if let Some(token) = vocabulary.iter().find(|t| t.contains(['\n', '\r'])) {
                return Err(Error::InvalidArgument(format!(
                    "the vocabulary's token {token:?} holds a line break"
                )));
            }
            let mut text = vocabulary.join("\n");
            text.push('\n');
            files.push((super::VOCAB_FILE, text.into_bytes()));
        }
        for (name, bytes) in files {
            let path = self.partial.join(name);
            let mut file = File::create(&path).map_err(|e| Error::io(&path, e))?;
            file.write_all(&bytes)
                .and_then(|()| file.sync_all())
                .map_err(|e| Error::io(&path, e))?;
        }
        Ok(())
    }

    /// Keeps the images the dataset was recorded from (`images.jsonl`, one
    /// entry per image in image order; `n_imgs` of them, each path
    /// absolute and each hash 64 lowercase hex digits) and the vision
    /// transformer's geometry (`vision.json`, whose patch grid must hold
    /// `n_patches_per_img` patches within its input size).
    pub fn write_images(&mut self, images: &[ImageEntry], vision: &VisionInfo) -> Result<()> {
        super::images::check_new(images, vision, &self.metadata)?;
        Images::write(&self.partial, images, vision)
    }

    /// Closes the current shard, zero-padded to full size, and fsyncs it.
    fn close_shard(&mut self) -> Result<()> {
        let Some(shard) = self.shard.take() else {
            return Ok(());
        };
        let path = self.partial.join(shard_name(self.shard_index));
        let file = shard
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        file.set_len(self.metadata.shard_bytes())
            .map_err(|e| Error::io(&path, e))?;
        file.sync_all().map_err(|e| Error::io(&path, e))?;
        self.shard_index += 1;
        self.imgs_in_shard = 0;
        Ok(())
    }

    /// Writes `metadata.json`, and renames the directory into place once all
    /// `n_imgs` images are in. Returns the dataset directory.
    pub fn finish(mut self) -> Result<PathBuf> {
        if self.written != self.metadata.n_imgs {
            return Err(Error::InvalidArgument(format!(
                "{} of {} images written; the dataset is incomplete",
                self.written, self.metadata.n_imgs
            )));
        }
        self.close_shard()?;
        let meta = self.partial.join("metadata.json");
        let mut file = File::create(&meta).map_err(|e| Error::io(&meta, e))?;
        file.write_all(self.metadata.to_json().as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| Error::io(&meta, e))?;
        std::fs::rename(&self.partial, &self.target).map_err(|e| Error::io(&self.target, e))?;
        self.renamed = true;
        if let Some(root) = self.target.parent() {
            crate::io::output::sync_directory(root);
        }
        Ok(self.target.clone())
    }
}

/// A dataset that was not finished leaves nothing behind: a failed write
/// (a full disk) or an abandoned writer removes `<HASH>.partial/`. A process
/// killed outright leaves it, and the next write of the same dataset
/// replaces it.
impl Drop for Writer {
    fn drop(&mut self) {
        if !self.renamed {
            drop(self.shard.take());
            let _ = std::fs::remove_dir_all(&self.partial);
        }
    }
}

/// Writes a dataset of the shape `metadata` describes under `root`, its
/// values drawn from N(0, 1) by a generator seeded with the metadata's seed
/// (every image the same first image when `repeat`, which writes faster),
/// for loader benchmarks and tests. `progress` gets (bytes written, total).
/// Returns the dataset directory.
pub fn write_synthetic(
    root: &Path,
    metadata: Metadata,
    repeat: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<PathBuf> {
    let values_per_img = (metadata.vectors_per_img() * metadata.d_vit) as usize;
    let n_imgs = metadata.n_imgs;
    let mut rng = crate::io::rng::Rng::new(metadata.seed as u64);
    let mut writer = Writer::create(root, metadata)?;
    let mut image = vec![0.0f32; values_per_img];
    let image_bytes = values_per_img as u64 * 4;
    for img in 0..n_imgs {
        if img == 0 || !repeat {
            image.iter_mut().for_each(|v| *v = rng.normal(1.0) as f32);
        }
        writer.push(&image)?;
        progress((img + 1) * image_bytes, n_imgs * image_bytes);
    }
    writer.finish()
}
