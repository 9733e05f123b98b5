//! Image recordings: a vision transformer (DINOv2, CLIP, SigLIP) over image
//! files, one SAEV image per file, as saev records them: the CLS token
//! where the family has one, then every patch in row-major order; register
//! tokens are left out. The ordered list of files (path and SHA-256) and
//! the model's input geometry are kept beside the shards, so every vector
//! maps back to its image and patch.
//!
//! Starting reads every file once (hash and check, in parallel) so the
//! dataset knows its image count: a file that does not decode is skipped
//! and reported, or refused in strict mode. The check reads all of a file's
//! data without making its pixels. Each round then reads a few files again,
//! checks that their bytes still hash the same, decodes them and runs the
//! model over them; memory stays bounded by the round, whatever the
//! number of files.

use std::path::{Path, PathBuf};

use modelbin_format::io::checksum::{hex, sha256};
use modelbin_format::io::source::{self, JsonCaps};
use modelbin_format::saev::{ImageEntry, Metadata, VisionInfo, read_image_file};
use rayon::prelude::*;

use super::{Output, blocks_of};
use crate::identity::checkpoint_id;
use crate::model::{HookedModel, Inputs, Site};

use crate::vit::preprocess::CONFIG_FILE;
use crate::vit::{ImageProcessor, VisionModel, image_files};
use crate::{RecordError, Result};

/// What to record from images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRecordSettings {
    /// Blocks whose output is recorded (0 is the first; negative values
    /// count from the end, -1 is the last).
    pub layers: Vec<i64>,
    /// The budget of vectors per shard.
    pub max_patches_per_shard: u64,
    /// Refuse the recording when a file does not decode, instead of
    /// skipping it.
    pub strict: bool,
    /// Run the blocks' linear layers on int8 weights
    /// ([`VisionModel::quantize_int8`]): faster, with activations about a
    /// percent from the float32 model's. The metadata's `vit_ckpt` says so.
    pub int8: bool,
}

impl Default for ImageRecordSettings {
    /// The last block, 2,400,000 vectors per shard, undecodable files
    /// skipped, float32: the command line's defaults.
    fn default() -> Self {
        let text = super::RecordSettings::default();
        ImageRecordSettings {
            layers: text.layers,
            max_patches_per_shard: text.max_patches_per_shard,
            strict: false,
            int8: false,
        }
    }
}

/// A file left out of a recording because it does not decode.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why it was left out.
    pub reason: String,
}

/// Images run through the model together: enough rows to keep both
/// cores' matrix products busy, few enough to bound memory.
const IMAGES_PER_ROUND: usize = 16;

/// Files hashed and decoded together while starting, between two calls
/// of the caller's progress.
const FILES_PER_SCAN_STEP: usize = 64;

/// The image files being recorded and how far it got.
pub(super) struct ImageSource {
    model: VisionModel,
    processor: ImageProcessor,
    blocks: Vec<usize>,
    images: Vec<ImageEntry>,
    /// The file of each of `images`, as listed: an entry's path is text,
    /// which a name that is not UTF-8 only shows lossily.
    files: Vec<PathBuf>,
    skipped: Vec<Skipped>,
    /// Images recorded.
    written: usize,
}

impl ImageSource {
    /// Opens the model and its preprocessing, lists and checks the files
    /// of `inputs` (`scanned(done, total)` after each step; `false` stops
    /// with [`RecordError::Interrupted`]), and starts the dataset under
    /// `root`.
    pub(super) fn start(
        model_dir: &Path,
        inputs: &[PathBuf],
        settings: ImageRecordSettings,
        root: &Path,
        scanned: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<(ImageSource, Output)> {
        let mut model = VisionModel::open(model_dir)?;
        if settings.int8 {
            model.quantize_int8();
        }
        let processor = ImageProcessor::open(model_dir)?;
        let blocks = blocks_of(&settings.layers, model.blocks())?;
        let (height, width) = processor.output_size();
        let (rows, cols) = model.patch_grid(height, width)?;
        let files = image_files(inputs)?;
        let (decoded, images, skipped) = scan(&processor, &files, settings.strict, scanned)?;
        if images.is_empty() {
            return Err(RecordError::NoImages { files: files.len() }.into());
        }
        let model_hash = checkpoint_id(model_dir)?;
        let metadata = Metadata {
            vit_family: model.family().name().into(),
            vit_ckpt: format!(
                "{}@{model_hash}{}",
                crate::model::model_name(model_dir),
                if settings.int8 { " (int8)" } else { "" }
            ),
            layers: settings.layers.clone(),
            n_patches_per_img: (rows * cols) as u64,
            cls_token: model.has_cls(),
            d_vit: model.width() as u64,
            seed: 0,
            n_imgs: images.len() as u64,
            max_patches_per_shard: settings.max_patches_per_shard,
            data: serde_json::Value::String(describe(inputs, &images)),
        };
        let vision = VisionInfo {
            family: model.family().name().into(),
            model: model_dir.display().to_string(),
            patch_size: model.patch_size() as u64,
            patch_grid: [rows as u64, cols as u64],
            input_size: [height as u64, width as u64],
            registers: model.registers() as u64,
            preprocessor_config: preprocessor_config(model_dir)?,
        };
        let output = Output::start(root, metadata, |writer| {
            Ok(writer.write_images(&images, &vision)?)
        })?;
        let source = ImageSource {
            model,
            processor,
            blocks,
            images,
            files: decoded,
            skipped,
            written: 0,
        };
        Ok((source, output))
    }

    /// Images to record.
    pub(super) fn total(&self) -> u64 {
        self.images.len() as u64
    }

    /// Images recorded so far.
    pub(super) fn done(&self) -> u64 {
        self.written as u64
    }

    /// Images recorded so far.
    pub(super) fn images_done(&self) -> usize {
        self.written
    }

    /// How an error names image `img`: its file.
    pub(super) fn describe(&self, img: usize) -> String {
        self.images
            .get(img)
            .map_or_else(|| format!("image {img}"), |entry| entry.path.clone())
    }

    /// The files left out while starting.
    pub(super) fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The images of the next round of files, or `None` once every file
    /// is recorded.
    pub(super) fn next_round(&mut self) -> Result<Option<Vec<Vec<f32>>>> {
        if self.written == self.images.len() {
            return Ok(None);
        }
        let end = (self.written + IMAGES_PER_ROUND).min(self.images.len());
        let round = &self.images[self.written..end];
        let pixels: Vec<Vec<f32>> = self.files[self.written..end]
            .par_iter()
            .zip(round)
            .map(|entry| self.reread(entry))
            .collect::<Result<_>>()?;
        let (height, width) = self.processor.output_size();
        let inputs = Inputs::Pixels {
            values: &pixels.concat(),
            images: round.len(),
            height,
            width,
        };
        let images = self
            .model
            .activations(inputs, &self.blocks, Site::ResidPost)?;
        self.written = end;
        Ok(Some(images))
    }

    /// An image's pixel values, refused when the file changed since the
    /// start.
    fn reread(&self, (path, entry): (&PathBuf, &ImageEntry)) -> Result<Vec<f32>> {
        let changed = || RecordError::ImageChanged { path: path.clone() };
        let bytes = read_image_file(path).map_err(|_| changed())?;
        if hex(&sha256(&bytes)) != entry.sha256 {
            return Err(changed().into());
        }
        self.processor
            .pixel_values(&bytes)
            .map_err(|_| changed().into())
    }
}

/// The files that decode, their list entries, and the files that do not.
type Scanned = (Vec<PathBuf>, Vec<ImageEntry>, Vec<Skipped>);

/// Hashes and decodes every file, in steps of [`FILES_PER_SCAN_STEP`]
/// files across the rayon pool; the files that decode, in order, with
/// their entries, and the ones that do not (an error in `strict` mode).
fn scan(
    processor: &ImageProcessor,
    files: &[PathBuf],
    strict: bool,
    scanned: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Scanned> {
    let mut decoded = Vec::with_capacity(files.len());
    let mut images = Vec::with_capacity(files.len());
    let mut skipped = Vec::new();
    for (step, chunk) in files.chunks(FILES_PER_SCAN_STEP).enumerate() {
        let checked: Vec<std::result::Result<ImageEntry, String>> = chunk
            .par_iter()
            .map(|path| check(processor, path))
            .collect();
        for (path, outcome) in chunk.iter().zip(checked) {
            match outcome {
                Ok(entry) => {
                    decoded.push(path.clone());
                    images.push(entry);
                }
                Err(reason) if strict => {
                    let path = path.clone();
                    return Err(RecordError::BadImage { path, reason }.into());
                }
                Err(reason) => skipped.push(Skipped {
                    path: path.clone(),
                    reason,
                }),
            }
        }
        let done = (step * FILES_PER_SCAN_STEP + chunk.len()).min(files.len());
        if !scanned(done as u64, files.len() as u64) {
            return Err(RecordError::Interrupted.into());
        }
    }
    Ok((decoded, images, skipped))
}

/// A file's list entry once it is read and decodes; else why not. The
/// check makes no pixels ([`ImageProcessor::check`]): each image is decoded
/// once, in its round.
fn check(processor: &ImageProcessor, path: &Path) -> std::result::Result<ImageEntry, String> {
    let bytes = read_image_file(path).map_err(|e| e.to_string())?;
    processor.check(&bytes).map_err(|e| e.to_string())?;
    let absolute = std::path::absolute(path).map_err(|e| e.to_string())?;
    Ok(ImageEntry::of(&absolute, &bytes))
}

/// The model's `preprocessor_config.json`, kept with the dataset so that
/// its images can be shown as the model saw them.
fn preprocessor_config(model_dir: &Path) -> Result<serde_json::Map<String, serde_json::Value>> {
    let path = model_dir.join(CONFIG_FILE);
    match source::read_json(&path, CONFIG_FILE, JsonCaps::CONFIG)? {
        serde_json::Value::Object(config) => Ok(config),
        _ => Err(modelbin_format::Error::InvalidArgument(format!(
            "{}: not a JSON object",
            path.display()
        ))
        .into()),
    }
}

/// The `data` of an image recording's metadata: the inputs as given, the
/// image count and a digest of the ordered list, so that another image set
/// behind the same paths makes another dataset.
fn describe(inputs: &[PathBuf], images: &[ImageEntry]) -> String {
    let listed: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let mut digest_input = String::new();
    for image in images {
        digest_input.push_str(&image.sha256);
        digest_input.push('\n');
    }
    format!(
        "ImageFiles(inputs={}, n_imgs={}, list_sha256='{}')",
        serde_json::Value::from(listed),
        images.len(),
        &hex(&sha256(digest_input.as_bytes()))[..16]
    )
}
