//! Recording a model's residual stream as a SAEV dataset.
//!
//! Two sources fill a dataset: text, read by a TLLM or BERT model, one
//! SAEV image per window of tokens, the windows' token ids kept beside the
//! shards ([`Recording::start`]); and image files, read by a vision
//! transformer, one SAEV image per image file, the ordered list of files
//! kept beside the shards ([`Recording::start_images`]). The caller drives
//! the rounds, so it can show progress and stop between them (an
//! unfinished dataset leaves nothing behind); the finished recording's
//! summary is the one both faces print:
//!
//! ```no_run
//! use modelbin_infer::record::{Recording, RecordSettings};
//!
//! # fn main() -> modelbin_infer::Result<()> {
//! let files = ["corpus.txt".into()];
//! let mut recording = Recording::start("model.tllm".as_ref(), &files, RecordSettings::default(),
//!                                      "acts".as_ref())?;
//! while recording.record_round()? {
//!     println!("{} of {} {}", recording.done(), recording.total(), recording.unit());
//! }
//! let summary = recording.finish()?;
//! println!("{}: {} vectors", summary.path.display(), summary.vectors);
//! # Ok(())
//! # }
//! ```

pub(crate) mod error;
mod images;
mod text;
pub(crate) mod windows;

use std::path::{Path, PathBuf};
use std::time::Instant;

use modelbin_format::saev::{Metadata, Start, Writer};

use crate::Result;

pub use crate::lm::DEFAULT_LM_WINDOW;
pub use error::RecordError;
pub use images::{ImageRecordSettings, Skipped};
pub use text::{RecordSettings, TextInputs};

/// A recording between its checks and its finished dataset.
pub struct Recording {
    source: Source,
    output: Output,
    /// When the recording was started: the summary's time counts reading
    /// the inputs too.
    started: Instant,
}

/// Where a recording's images come from.
enum Source {
    Text(text::TextSource),
    Images(Box<images::ImageSource>),
}

/// Where a recording's images go.
enum Output {
    /// A new dataset, being written.
    New(Writer),
    /// The same recording (same model, inputs and settings, so the same
    /// metadata hash), already complete: nothing is computed again.
    Existing { path: PathBuf, metadata: Metadata },
}

impl Output {
    /// Starts the dataset `metadata` describes under `root`, writing the
    /// files beside its shards with `beside` (token ids, image list), or
    /// finds it already recorded there.
    fn start(
        root: &Path,
        metadata: Metadata,
        beside: impl FnOnce(&mut Writer) -> Result<()>,
    ) -> Result<Output> {
        match Writer::start(root, metadata.clone())? {
            Start::New(mut writer) => {
                beside(&mut writer)?;
                Ok(Output::New(*writer))
            }
            Start::Existing(path) => Ok(Output::Existing { path, metadata }),
        }
    }

    fn metadata(&self) -> &Metadata {
        match self {
            Output::New(writer) => writer.metadata(),
            Output::Existing { metadata, .. } => metadata,
        }
    }
}

/// What a finished recording reports, as `modelbin acts record` prints it
/// (its `--json` is this, serialized) and `modelbin.acts.record` reads it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RecordSummary {
    /// The dataset directory (`<root>/<HASH>`).
    pub path: PathBuf,
    /// SAEV images recorded (text windows or image files).
    pub images: usize,
    /// Text: the tokens recorded (windows × tokens per window); 0 for
    /// images.
    pub tokens: usize,
    /// Text under `max_tokens`: whole windows of the input left
    /// unrecorded (0 without a budget, and for images).
    pub windows_left: usize,
    /// Vectors recorded, over every layer.
    pub vectors: usize,
    /// Image files left out because they do not decode (0 for text).
    pub skipped: usize,
    /// Seconds since the recording was started.
    pub seconds: f64,
    /// Vectors recorded per second.
    pub vectors_per_second: f64,
    /// SAEV images recorded per second.
    pub images_per_second: f64,
    /// The files counted in `skipped`, each with why it was left out.
    pub skipped_files: Vec<Skipped>,
    /// Whether the dataset was already recorded (the same model, inputs
    /// and settings), so nothing was computed or written again.
    pub existing: bool,
}

impl Recording {
    /// Opens the model, reads and tokenizes `files` (concatenated in
    /// order), checks the settings, and starts the dataset under `root`.
    pub fn start(
        model_path: &Path,
        files: &[PathBuf],
        settings: RecordSettings,
        root: &Path,
    ) -> Result<Recording> {
        Recording::start_text(model_path, TextInputs::Files(files), settings, root)
    }

    /// [`Recording::start`] over files or over texts in memory.
    pub fn start_text(
        model_path: &Path,
        inputs: TextInputs<'_>,
        settings: RecordSettings,
        root: &Path,
    ) -> Result<Recording> {
        let started = Instant::now();
        let (source, output) = text::TextSource::start(model_path, inputs, settings, root)?;
        Ok(Recording {
            source: Source::Text(source),
            output,
            started,
        })
    }

    /// Opens the vision transformer in `model_dir` and its preprocessing
    /// (`preprocessor_config.json`), lists the image files of `inputs`
    /// (files, and directories walked in sorted order), reads each once
    /// (`scanned(done, total)` after each step; returning `false` stops
    /// with [`RecordError::Interrupted`]) and starts the dataset under
    /// `root`. Files that do not decode are left out ([`skipped`]) unless
    /// `settings.strict`.
    ///
    /// [`skipped`]: Self::skipped
    pub fn start_images(
        model_dir: &Path,
        inputs: &[PathBuf],
        settings: ImageRecordSettings,
        root: &Path,
        scanned: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<Recording> {
        let started = Instant::now();
        let (source, output) =
            images::ImageSource::start(model_dir, inputs, settings, root, scanned)?;
        Ok(Recording {
            source: Source::Images(Box::new(source)),
            output,
            started,
        })
    }

    /// The image files left out because they do not decode (none for
    /// text).
    pub fn skipped(&self) -> &[Skipped] {
        match &self.source {
            Source::Text(_) => &[],
            Source::Images(s) => s.skipped(),
        }
    }

    /// What [`done`](Self::done) and [`total`](Self::total) count:
    /// `tokens` for text, `images` for image files.
    pub fn unit(&self) -> &'static str {
        match &self.source {
            Source::Text(_) => "tokens",
            Source::Images(_) => "images",
        }
    }

    /// Units to record.
    pub fn total(&self) -> u64 {
        match &self.source {
            Source::Text(s) => s.tokens_total(),
            Source::Images(s) => s.total(),
        }
    }

    /// Units recorded so far (all of them for a recording found already
    /// done).
    pub fn done(&self) -> u64 {
        if matches!(self.output, Output::Existing { .. }) {
            return self.total();
        }
        match &self.source {
            Source::Text(s) => s.tokens_done(),
            Source::Images(s) => s.done(),
        }
    }

    /// Runs the model over the next round of inputs (on every core of the
    /// current rayon pool) and writes their images; `false` once every
    /// image is written (at once for a recording found already done).
    pub fn record_round(&mut self) -> Result<bool> {
        let Output::New(writer) = &mut self.output else {
            return Ok(false);
        };
        let first = match &self.source {
            Source::Text(s) => s.images_done(),
            Source::Images(s) => s.images_done(),
        };
        let images = match &mut self.source {
            Source::Text(s) => s.next_round()?,
            Source::Images(s) => s.next_round()?,
        };
        let Some(images) = images else {
            return Ok(false);
        };
        check_finite(&self.source, writer.metadata(), first, &images)?;
        for image in images {
            writer.push(&image)?;
        }
        Ok(true)
    }

    /// Finishes the dataset (every round must have been recorded) and
    /// reports the recording.
    pub fn finish(self) -> Result<RecordSummary> {
        let m = self.output.metadata();
        let images = m.n_imgs as usize;
        let vectors = (m.vectors_per_img() * m.n_imgs) as usize;
        let text = matches!(self.source, Source::Text(_));
        let tokens = if text {
            images * m.n_patches_per_img as usize
        } else {
            0
        };
        let windows_left = m.data["windows_left"].as_u64().unwrap_or(0) as usize;
        let skipped_files = self.skipped().to_vec();
        let (path, existing) = match self.output {
            Output::New(writer) => (writer.finish()?, false),
            Output::Existing { path, .. } => (path, true),
        };
        let seconds = self.started.elapsed().as_secs_f64();
        Ok(RecordSummary {
            path,
            images,
            tokens,
            windows_left,
            vectors,
            skipped: skipped_files.len(),
            seconds,
            vectors_per_second: vectors as f64 / seconds.max(1e-9),
            images_per_second: images as f64 / seconds.max(1e-9),
            skipped_files,
            existing,
        })
    }
}

/// Refuses a round whose images (the first being image `first`) hold a
/// NaN or an infinity ([`RecordError::NonFinite`], naming the input,
/// layer and token of the first): a dataset of them would poison every
/// autoencoder trained on it. This backstop catches what the checks at
/// load (weights, preprocessing constants) cannot foresee, in one pass
/// over rows already in memory.
fn check_finite(
    source: &Source,
    metadata: &Metadata,
    first: usize,
    images: &[Vec<f32>],
) -> Result<()> {
    let width = (metadata.d_vit as usize).max(1);
    let per_layer = (metadata.tokens_per_img() as usize).max(1) * width;
    for (i, image) in images.iter().enumerate() {
        let Some(at) = image.iter().position(|v| !v.is_finite()) else {
            continue;
        };
        let input = match source {
            Source::Text(s) => s.describe(first + i),
            Source::Images(s) => s.describe(first + i),
        };
        return Err(RecordError::NonFinite {
            input,
            layer: metadata.layers.get(at / per_layer).copied().unwrap_or(0),
            token: at % per_layer / width,
            value: image[at],
        }
        .into());
    }
    Ok(())
}

/// The blocks that `layers` name (negative values count from the end) in
/// a model of `n_blocks` blocks.
fn blocks_of(layers: &[i64], n_blocks: usize) -> Result<Vec<usize>> {
    layers
        .iter()
        .map(|&layer| {
            crate::model::resolve_layer(layer, n_blocks).ok_or_else(|| {
                RecordError::NoSuchLayer {
                    layer,
                    blocks: n_blocks,
                }
                .into()
            })
        })
        .collect()
}
