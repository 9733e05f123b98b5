//! Small JPEG pictures of the images a feature page shows, each of the
//! image the model saw (its "model view"), made once per page however many
//! latents show it.
//!
//! The model view comes from a function the caller passes, so this engine
//! does not depend on how a vision transformer's input is prepared: it
//! gets an image file's bytes and returns the picture the model saw.

use std::io::Cursor;

use base64::Engine;
use image::RgbImage;
use image::codecs::jpeg::JpegEncoder;
use modelbin_format::saev::{ImageFile, ImageState, Images, VisionInfo};
use rayon::prelude::*;
use serde_json::Value;

use crate::Result;
use crate::vit::ImageProcessor;

use super::Features;

/// The picture the model saw of an image file's bytes; `None` when they do
/// not decode.
pub type ModelView<'a> = &'a (dyn Fn(&[u8]) -> Option<RgbImage> + Sync);

/// The longest side of a thumbnail, in pixels.
pub const THUMBNAIL_SIDE: u32 = 160;
/// The JPEG quality of thumbnails: small files, faithful enough under a
/// heat map.
const JPEG_QUALITY: u8 = 80;

/// One image of a page.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Thumbnail {
    /// The image's index in the dataset (or in the union, whose list is
    /// its members' one after the other).
    pub img: u64,
    /// Its file name.
    pub name: String,
    /// Whether its file still holds the bytes recorded.
    pub state: ImageState,
    /// The model view, downscaled to [`THUMBNAIL_SIDE`], as a JPEG
    /// `data:` URI; `None` when the file is missing, changed or does not
    /// decode (the page then draws the heat map alone).
    pub uri: Option<String>,
}

impl Thumbnail {
    /// Why the picture is not shown, when it is not.
    pub fn note(&self) -> Option<&'static str> {
        match (self.state, &self.uri) {
            (ImageState::Missing, _) => Some("image file missing"),
            (ImageState::Changed, _) => Some("image file changed since the recording"),
            (ImageState::Unchanged, None) => Some("image file does not decode"),
            (ImageState::Unchanged, Some(_)) => None,
        }
    }
}

/// The images of a page, each once, with the model's geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct Thumbnails {
    /// The vision transformer and its input's geometry.
    pub vision: VisionInfo,
    /// The images, by index.
    pub list: Vec<Thumbnail>,
}

impl Thumbnails {
    /// The thumbnails of images `imgs` (repeats made once) of `images` (a
    /// dataset's list, or a union's: [`modelbin_format::saev::Union::images`]),
    /// made in parallel; `model_view` turns a file's bytes into what the
    /// model saw. An index past the list is left out.
    pub fn of(images: &Images, imgs: impl IntoIterator<Item = u64>, model_view: ModelView) -> Self {
        let mut imgs: Vec<u64> = imgs
            .into_iter()
            .filter(|&img| img < images.entries.len() as u64)
            .collect();
        imgs.sort_unstable();
        imgs.dedup();
        let list = imgs
            .into_par_iter()
            .map(|img| {
                let entry = &images.entries[img as usize];
                let file = ImageFile::read(entry);
                let uri = match (file.state, &file.bytes) {
                    (ImageState::Unchanged, Some(bytes)) => model_view(bytes).map(|v| jpeg_uri(&v)),
                    _ => None,
                };
                Thumbnail {
                    img,
                    name: entry.name().to_owned(),
                    state: file.state,
                    uri,
                }
            })
            .collect();
        Thumbnails {
            vision: images.vision.clone(),
            list,
        }
    }

    /// The thumbnails of every image `features` shows.
    pub fn of_features(images: &Images, features: &Features, model_view: ModelView) -> Self {
        let imgs = features.latents.iter().flat_map(|f| {
            let samples = f.quantiles.iter().flat_map(|q| &q.samples);
            f.top.iter().chain(samples).map(|c| c.img)
        });
        Thumbnails::of(images, imgs, model_view)
    }

    /// The thumbnails of the images one latent shows, given as the JSON
    /// object `sae features --json` prints for it.
    pub fn of_latent(images: &Images, feature: &Value, model_view: ModelView) -> Self {
        Thumbnails::of(
            images,
            super::page::contexts(feature).filter_map(|c| c["img"].as_u64()),
            model_view,
        )
    }
}

/// What the model saw of an image file's bytes (decoded, turned upright,
/// resized and cropped as the recording's image processor did, from the
/// `preprocessor_config.json` kept in `vision.json`); `None` for bytes that
/// no longer decode.
pub fn model_view(images: &Images) -> Result<impl Fn(&[u8]) -> Option<RgbImage> + Sync> {
    let config = Value::Object(images.vision.preprocessor_config.clone()).to_string();
    let processor = ImageProcessor::from_json(&config)?;
    Ok(move |bytes: &[u8]| processor.model_view(bytes).ok())
}

/// `view` downscaled to [`THUMBNAIL_SIDE`] on its longest side (never
/// enlarged), as a JPEG `data:` URI.
fn jpeg_uri(view: &RgbImage) -> String {
    let (width, height) = view.dimensions();
    let longest = width.max(height).max(1);
    let scale = f64::from(THUMBNAIL_SIDE.min(longest)) / f64::from(longest);
    let size = |side: u32| ((f64::from(side) * scale).round() as u32).max(1);
    let small = image::imageops::thumbnail(view, size(width), size(height));
    let mut jpeg = Vec::new();
    JpegEncoder::new_with_quality(Cursor::new(&mut jpeg), JPEG_QUALITY)
        .encode_image(&small)
        .expect("an RGB image of at least one pixel encodes as JPEG into memory");
    format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(jpeg)
    )
}
