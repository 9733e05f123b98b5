//! A Hugging Face image processor (`preprocessor_config.json`) applied to
//! JPEG and PNG bytes, as transformers' PIL image processors apply it to
//! `ImageOps.exif_transpose(Image.open(file))`: the orientation the EXIF
//! block names, conversion to RGB (grey replicated, transparency
//! composited on white, 16-bit samples reduced as PIL reduces them), resize
//! (shortest edge or a fixed size, with the configured filter), center
//! crop (zero-padded where the image is smaller), rescale and normalize.
//!
//! Decoding is bounded: a header declaring more than [`MAX_SIDE`] pixels a
//! side or more than [`MAX_BYTES`] of decoded pixels is refused before any
//! pixel is decoded, and so is a resize whose buffers would exceed it.
//!
//! ```no_run
//! # fn main() -> Result<(), modelbin_infer::Error> {
//! use modelbin_infer::vit::ImageProcessor;
//!
//! let processor = ImageProcessor::open("dinov2-small".as_ref())?;
//! let (height, width) = processor.output_size();
//! let pixels = processor.pixel_values(&std::fs::read("cat.jpg").unwrap())?;
//! assert_eq!(pixels.len(), 3 * height * width);
//! # Ok(())
//! # }
//! ```

use std::io::Cursor;
use std::path::Path;

use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits, RgbImage};
use modelbin_format::io::source::{self, JsonCaps};
use serde_json::{Map, Value};

use super::jpeg;
use super::resample::{Filter, crop, resize_part};
use crate::Result;
use crate::vit::error::ImageError;

pub use super::limits::{MAX_BYTES, MAX_SIDE};
/// The largest `size` or `crop_size` side a configuration may ask for.
const MAX_CONFIGURED_SIDE: u64 = 8192;
/// The file a model directory keeps its image processor in.
pub const CONFIG_FILE: &str = "preprocessor_config.json";

/// How the image is resized before the crop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resize {
    /// The shorter edge to this length, the aspect ratio kept.
    ShortestEdge(u32),
    /// To exactly this height and width.
    Exact { height: u32, width: u32 },
}

/// A vision model's image processor, read from its
/// `preprocessor_config.json`.
#[derive(Debug, Clone)]
pub struct ImageProcessor {
    convert_rgb: bool,
    resize: Option<(Resize, Filter)>,
    crop: Option<(u32, u32)>,
    rescale: Option<f64>,
    normalize: Option<([f32; 3], [f32; 3])>,
    output: (usize, usize),
}

/// The class defaults a key missing from the file takes, as transformers'
/// image processor classes declare them.
struct Defaults {
    do_resize: bool,
    do_center_crop: bool,
    do_rescale: bool,
    do_normalize: bool,
    do_convert_rgb: bool,
    size: Option<Resize>,
    crop_size: Option<(u32, u32)>,
    mean_std: Option<([f32; 3], [f32; 3])>,
    resample: Filter,
    default_to_square: bool,
}

const OPENAI_CLIP_MEAN: [f32; 3] = [0.481_454_66, 0.457_827_5, 0.408_210_73];
// transformers' OPENAI_CLIP_STD, to f32 precision.
const OPENAI_CLIP_STD: [f32; 3] = [0.268_629_54, 0.261_302_6, 0.275_777_1];

impl Defaults {
    /// The defaults of the class `image_processor_type` (or the older
    /// `feature_extractor_type`) names; an unknown class has the base
    /// class's: nothing done unless the file says so.
    fn of(class: Option<&str>) -> Defaults {
        let class = class.unwrap_or("");
        let class = class
            .strip_suffix("Pil")
            .or_else(|| class.strip_suffix("Fast"))
            .unwrap_or(class);
        let square_224 = Resize::Exact {
            height: 224,
            width: 224,
        };
        match class {
            // DINOv2 uses BiT's processor.
            "BitImageProcessor" | "CLIPImageProcessor" | "CLIPFeatureExtractor" => Defaults {
                do_resize: true,
                do_center_crop: true,
                do_rescale: true,
                do_normalize: true,
                do_convert_rgb: true,
                size: Some(Resize::ShortestEdge(224)),
                crop_size: Some((224, 224)),
                mean_std: Some((OPENAI_CLIP_MEAN, OPENAI_CLIP_STD)),
                resample: Filter::Bicubic,
                default_to_square: false,
            },
            "SiglipImageProcessor" => Defaults {
                do_resize: true,
                do_center_crop: false,
                do_rescale: true,
                do_normalize: true,
                do_convert_rgb: true,
                size: Some(square_224),
                crop_size: None,
                mean_std: Some(([0.5; 3], [0.5; 3])),
                resample: Filter::Bicubic,
                default_to_square: false,
            },
            _ => Defaults {
                do_resize: false,
                do_center_crop: false,
                do_rescale: false,
                do_normalize: false,
                do_convert_rgb: false,
                size: None,
                crop_size: None,
                mean_std: None,
                // PilBackend resizes with BILINEAR when the class names no filter.
                resample: Filter::Bilinear,
                default_to_square: true,
            },
        }
    }
}

/// Keys that never change the pixels.
const INERT_KEYS: &[&str] = &[
    "image_processor_type",
    "feature_extractor_type",
    "processor_class",
    "return_tensors",
    "disable_grouping",
    "device",
    "model_input_names",
];

/// Keys this processor follows.
const FOLLOWED_KEYS: &[&str] = &[
    "do_resize",
    "size",
    "resample",
    "do_center_crop",
    "crop_size",
    "do_rescale",
    "rescale_factor",
    "do_normalize",
    "image_mean",
    "image_std",
    "do_convert_rgb",
    "default_to_square",
    "data_format",
];

fn bad(message: impl Into<String>) -> ImageError {
    ImageError::BadConfig(message.into())
}

/// The value of `key`, `None` when missing or null (transformers then takes
/// the class default).
fn get<'a>(config: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    config.get(key).filter(|v| !v.is_null())
}

fn flag(config: &Map<String, Value>, key: &str, default: bool) -> Result<bool, ImageError> {
    match get(config, key) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(bad(format!("{key} is {other}, not true or false"))),
    }
}

fn side(value: &Value, what: &str) -> Result<u32, ImageError> {
    match value.as_u64() {
        Some(n) if (1..=MAX_CONFIGURED_SIDE).contains(&n) => Ok(n as u32),
        _ => Err(bad(format!(
            "{what} is {value}, not a whole number of pixels from 1 to {MAX_CONFIGURED_SIDE}"
        ))),
    }
}

/// A `size` or `crop_size`, as transformers' `get_size_dict` reads it: a
/// number (square, or the shortest edge when `default_to_square` is
/// false), a `[height, width]` list, or a dictionary.
fn size(value: &Value, key: &str, default_to_square: bool) -> Result<Resize, ImageError> {
    match value {
        Value::Number(_) => {
            let n = side(value, key)?;
            Ok(if default_to_square {
                Resize::Exact {
                    height: n,
                    width: n,
                }
            } else {
                Resize::ShortestEdge(n)
            })
        }
        Value::Array(items) if items.len() == 2 => Ok(Resize::Exact {
            height: side(&items[0], key)?,
            width: side(&items[1], key)?,
        }),
        Value::Object(entries) => {
            let mut keys: Vec<&str> = entries
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, _)| k.as_str())
                .collect();
            keys.sort_unstable();
            match keys.as_slice() {
                ["shortest_edge"] => Ok(Resize::ShortestEdge(side(
                    &entries["shortest_edge"],
                    &format!("{key}.shortest_edge"),
                )?)),
                ["height", "width"] => Ok(Resize::Exact {
                    height: side(&entries["height"], &format!("{key}.height"))?,
                    width: side(&entries["width"], &format!("{key}.width"))?,
                }),
                _ => Err(ImageError::UnsupportedSetting {
                    key: key.to_owned(),
                    value: value.to_string(),
                }),
            }
        }
        other => Err(bad(format!("{key} is {other}, not a size"))),
    }
}

/// An `image_mean` or `image_std`: three numbers, or one for all channels.
fn per_channel(value: &Value, key: &str) -> Result<[f32; 3], ImageError> {
    let number = |v: &Value| {
        v.as_f64()
            .filter(|x| x.is_finite())
            .map(|x| x as f32)
            .ok_or_else(|| bad(format!("{key} holds {v}, not a finite number")))
    };
    match value {
        Value::Array(items) if items.len() == 3 => {
            Ok([number(&items[0])?, number(&items[1])?, number(&items[2])?])
        }
        Value::Array(items) => Err(bad(format!(
            "{key} has {} values; an RGB image needs 3",
            items.len()
        ))),
        single => Ok([number(single)?; 3]),
    }
}

/// Refuses rescale and normalization constants with which
/// [`ImageProcessor::to_pixel_values`] could give a NaN or an infinity
/// ([`ImageError::UnusableConstant`], naming the key): each must be finite
/// as the f32 it is used as, a standard deviation must be a normal number
/// with a finite reciprocal, and the values of the darkest and brightest
/// samples (0 and 255), rescaled and normalized as that function computes
/// them, must be finite. Rescaling and normalizing are monotonic in the
/// sample, so those two bound every pixel.
fn check_constants(
    rescale: Option<f64>,
    normalize: Option<([f32; 3], [f32; 3])>,
) -> Result<(), ImageError> {
    let unusable = |key: String, value: String, reason: String| ImageError::UnusableConstant {
        key,
        value,
        reason,
    };
    let extremes = match rescale {
        Some(factor) => {
            let brightest = (255.0 * factor) as f32;
            if !brightest.is_finite() {
                return Err(unusable(
                    "rescale_factor".into(),
                    format!("{factor:?}"),
                    format!("a sample of 255 rescales to {brightest:?} in f32"),
                ));
            }
            [0.0, brightest]
        }
        None => [0.0, 255.0],
    };
    let Some((mean, std)) = normalize else {
        return Ok(());
    };
    for c in 0..3 {
        if !mean[c].is_finite() {
            return Err(unusable(
                format!("image_mean[{c}]"),
                format!("{:?}", mean[c]),
                "not a finite f32".into(),
            ));
        }
        if !std[c].is_normal() || !(1.0 / std[c]).is_finite() {
            return Err(unusable(
                format!("image_std[{c}]"),
                format!("{:?}", std[c]),
                "a standard deviation must be a normal f32 with a finite reciprocal (not 0, subnormal or infinite)".into(),
            ));
        }
        for sample in extremes {
            let normalized = (sample - mean[c]) / std[c];
            if !normalized.is_finite() {
                return Err(unusable(
                    format!("image_mean[{c}] and image_std[{c}]"),
                    format!("{:?} and {:?}", mean[c], std[c]),
                    format!("normalize a pixel value of {sample:?} to {normalized:?} in f32"),
                ));
            }
        }
    }
    Ok(())
}

/// PIL's resampling filter `code` (0 to 5).
fn filter(code: &Value) -> Result<Filter, ImageError> {
    let number = code
        .as_i64()
        .ok_or_else(|| bad(format!("resample is {code}, not a PIL resampling filter")))?;
    Filter::from_pil(number).ok_or(ImageError::UnsupportedResample { code: number })
}

impl ImageProcessor {
    /// The processor in `model_dir/preprocessor_config.json`, read as every
    /// model-directory JSON file is ([`source::read_json`]: a regular file
    /// of at most 1 MiB).
    pub fn open(model_dir: &Path) -> Result<ImageProcessor> {
        let path = model_dir.join(CONFIG_FILE);
        let value =
            source::read_json(&path, CONFIG_FILE, JsonCaps::CONFIG).map_err(|e| match e {
                modelbin_format::Error::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    ImageError::MissingConfig { path: path.clone() }.into()
                }
                other => crate::Error::from(other),
            })?;
        let Value::Object(config) = value else {
            return Err(bad("not a JSON object").into());
        };
        Ok(ImageProcessor::from_config(&config)?)
    }

    /// The processor a `preprocessor_config.json`'s text describes.
    pub fn from_json(text: &str) -> Result<ImageProcessor> {
        let value: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let Value::Object(config) = value else {
            return Err(bad("not a JSON object").into());
        };
        Ok(ImageProcessor::from_config(&config)?)
    }

    fn from_config(config: &Map<String, Value>) -> Result<ImageProcessor, ImageError> {
        for (key, value) in config {
            let inert = INERT_KEYS.contains(&key.as_str()) || value.is_null() || *value == false;
            if !inert && !FOLLOWED_KEYS.contains(&key.as_str()) {
                return Err(ImageError::UnsupportedSetting {
                    key: key.clone(),
                    value: value.to_string(),
                });
            }
        }
        if let Some(format) = get(config, "data_format")
            && format != "channels_first"
        {
            return Err(ImageError::UnsupportedSetting {
                key: "data_format".into(),
                value: format.to_string(),
            });
        }
        let class = get(config, "image_processor_type")
            .or_else(|| get(config, "feature_extractor_type"))
            .and_then(Value::as_str);
        let defaults = Defaults::of(class);
        let default_to_square = flag(config, "default_to_square", defaults.default_to_square)?;

        let resize = if flag(config, "do_resize", defaults.do_resize)? {
            let target = match get(config, "size") {
                Some(value) => size(value, "size", default_to_square)?,
                None => defaults
                    .size
                    .ok_or_else(|| bad("do_resize is true but size is not given"))?,
            };
            let filter = match get(config, "resample") {
                Some(code) => filter(code)?,
                None => defaults.resample,
            };
            Some((target, filter))
        } else {
            None
        };

        let crop = if flag(config, "do_center_crop", defaults.do_center_crop)? {
            let crop = match get(config, "crop_size") {
                Some(value) => match size(value, "crop_size", true)? {
                    Resize::Exact { height, width } => (height, width),
                    Resize::ShortestEdge(_) => {
                        return Err(ImageError::UnsupportedSetting {
                            key: "crop_size".into(),
                            value: value.to_string(),
                        });
                    }
                },
                None => defaults
                    .crop_size
                    .ok_or_else(|| bad("do_center_crop is true but crop_size is not given"))?,
            };
            Some(crop)
        } else {
            None
        };

        let rescale = if flag(config, "do_rescale", defaults.do_rescale)? {
            let factor = match get(config, "rescale_factor") {
                Some(v) => v
                    .as_f64()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| bad(format!("rescale_factor is {v}, not a finite number")))?,
                None => 1.0 / 255.0,
            };
            Some(factor)
        } else {
            None
        };

        let normalize = if flag(config, "do_normalize", defaults.do_normalize)? {
            let given = |key| get(config, key).map(|v| per_channel(v, key)).transpose();
            let (mean, std) = match (given("image_mean")?, given("image_std")?, defaults.mean_std) {
                (Some(mean), Some(std), _) => (mean, std),
                (mean, std, Some((default_mean, default_std))) => {
                    (mean.unwrap_or(default_mean), std.unwrap_or(default_std))
                }
                _ => {
                    return Err(bad(
                        "do_normalize is true but image_mean or image_std is not given",
                    ));
                }
            };
            if std.contains(&0.0) {
                return Err(bad("image_std holds a zero"));
            }
            Some((mean, std))
        } else {
            None
        };
        check_constants(rescale, normalize)?;

        let output = match (crop, resize) {
            (Some((height, width)), _) | (None, Some((Resize::Exact { height, width }, _))) => {
                (height as usize, width as usize)
            }
            _ => {
                return Err(bad(
                    "the output size would depend on each image (no center crop, and no resize to a fixed height and width); a vision transformer needs a fixed size",
                ));
            }
        };

        Ok(ImageProcessor {
            convert_rgb: flag(config, "do_convert_rgb", defaults.do_convert_rgb)?,
            resize,
            crop,
            rescale,
            normalize,
            output,
        })
    }

    /// The `(height, width)` of the images [`Self::pixel_values`] makes.
    pub fn output_size(&self) -> (usize, usize) {
        self.output
    }

    /// The image the model sees: `bytes` (JPEG or PNG) decoded, turned as
    /// its EXIF orientation says, converted to RGB, resized and cropped.
    pub fn model_view(&self, bytes: &[u8]) -> Result<RgbImage> {
        let image = decode(bytes, self.convert_rgb)?;
        let (height, width) = match self.resize {
            Some((target, _)) => {
                let (height, width) = resized_size(image.height(), image.width(), target);
                check_resize_budget(image.dimensions(), height, width)?;
                (height, width)
            }
            None => (image.height(), image.width()),
        };
        let (crop_height, crop_width) = self.crop.unwrap_or((height, width));
        let window = CenterCrop::new(height, width, crop_height, crop_width);
        // Only the part of the resized image that the crop keeps is made.
        let kept = match self.resize {
            Some((_, filter)) => resize_part(
                &image,
                width,
                height,
                filter,
                window.columns.clone(),
                window.rows.clone(),
            ),
            None => crop(&image, window.columns.clone(), window.rows.clone()),
        };
        Ok(window.padded(&kept))
    }

    /// Whether [`Self::model_view`] takes `bytes`, found without making the
    /// image: the same refusals (format, size limits, damaged data, the
    /// resize budget), a JPEG's pixels left unmade (it is decoded at an
    /// eighth of its size, which reads all its data).
    pub fn check(&self, bytes: &[u8]) -> Result<()> {
        let (width, height) = decoded_size(bytes, self.convert_rgb)?;
        if let Some((target, _)) = self.resize {
            let (resized_height, resized_width) = resized_size(height, width, target);
            check_resize_budget((width, height), resized_height, resized_width)?;
        }
        Ok(())
    }

    /// The model's input for `bytes`: `[3, height, width]` values,
    /// channel-major, equal to transformers' `pixel_values` for the image.
    pub fn pixel_values(&self, bytes: &[u8]) -> Result<Vec<f32>> {
        Ok(self.to_pixel_values(&self.model_view(bytes)?, true))
    }

    /// `[3, height, width]` values of a [`Self::model_view`] image: rescaled
    /// as configured, then normalized with the configured mean and standard
    /// deviation when `normalize` is true.
    pub fn to_pixel_values(&self, view: &RgbImage, normalize: bool) -> Vec<f32> {
        let (width, height) = view.dimensions();
        let plane = width as usize * height as usize;
        let mut out = vec![0.0f32; 3 * plane];
        for (i, pixel) in view.pixels().enumerate() {
            for (c, &sample) in pixel.0.iter().enumerate() {
                // transformers rescales in f64 and keeps f32.
                let value = match self.rescale {
                    Some(factor) => (f64::from(sample) * factor) as f32,
                    None => f32::from(sample),
                };
                out[c * plane + i] = match (normalize, self.normalize) {
                    (true, Some((mean, std))) => (value - mean[c]) / std[c],
                    _ => value,
                };
            }
        }
        out
    }
}

/// The decoding limits: sides and bytes bounded before any pixel is decoded.
fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_BYTES);
    limits
}

fn decode_error(e: image::ImageError) -> ImageError {
    match e {
        image::ImageError::Limits(e) => ImageError::TooLarge(e.to_string()),
        image::ImageError::Unsupported(e) => ImageError::Unsupported(e.to_string()),
        other => ImageError::Decode(other.to_string()),
    }
}

/// The format of `bytes`, refused unless JPEG or PNG.
fn format_of(bytes: &[u8]) -> Result<ImageFormat, ImageError> {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| ImageError::Decode(e.to_string()))?;
    match reader.format() {
        Some(format @ (ImageFormat::Jpeg | ImageFormat::Png)) => Ok(format),
        Some(other) => Err(ImageError::Unsupported(format!(
            "{other:?} images are not read; JPEG and PNG are"
        ))),
        None => Err(ImageError::Decode(
            "the bytes are neither a JPEG nor a PNG image".into(),
        )),
    }
}

/// `bytes` decoded (JPEG or PNG only), as RGB, turned upright; JPEGs by
/// libjpeg-turbo, as PIL decodes them ([`jpeg`]).
fn decode(bytes: &[u8], convert_rgb: bool) -> Result<RgbImage, ImageError> {
    match format_of(bytes)? {
        ImageFormat::Jpeg => jpeg::decode(bytes, convert_rgb),
        _ => decode_png(bytes, convert_rgb),
    }
}

/// `bytes` (a PNG file) decoded by the `image` crate, as RGB, turned
/// upright.
fn decode_png(bytes: &[u8], convert_rgb: bool) -> Result<RgbImage, ImageError> {
    let mut reader = ImageReader::with_format(Cursor::new(bytes), ImageFormat::Png);
    reader.limits(limits());
    let mut decoder = reader.into_decoder().map_err(decode_error)?;
    let (width, height) = decoder.dimensions();
    let rgb_bytes = u64::from(width) * u64::from(height) * 3;
    if decoder.total_bytes() > MAX_BYTES || rgb_bytes > MAX_BYTES {
        return Err(ImageError::TooLarge(format!(
            "{width}×{height} pixels take more than {} MiB",
            MAX_BYTES >> 20
        )));
    }
    // As PIL's `exif_transpose`, an unreadable EXIF block turns nothing.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let image = DynamicImage::from_decoder(decoder).map_err(decode_error)?;
    let mut image = DynamicImage::ImageRgb8(to_rgb(image, convert_rgb)?);
    image.apply_orientation(orientation);
    Ok(image.into_rgb8())
}

/// The upright `(width, height)` of `bytes` if [`decode`] takes them: a
/// JPEG checked without making its pixels ([`jpeg::check`]), a PNG
/// decoded.
fn decoded_size(bytes: &[u8], convert_rgb: bool) -> Result<(u32, u32), ImageError> {
    match format_of(bytes)? {
        ImageFormat::Jpeg => jpeg::check(bytes, convert_rgb),
        _ => Ok(decode_png(bytes, convert_rgb)?.dimensions()),
    }
}

/// `channel` over an opaque white background with opacity `alpha`, rounded
/// as PIL's `alpha_composite` (7 extra bits, division by 255 by shifts).
fn over_white(channel: u8, alpha: u8) -> u8 {
    if alpha == 0 {
        return 255;
    }
    let (c, a) = (u32::from(channel), u32::from(alpha));
    let blended = 128 * (c * a + 255 * (255 - a)) + (0x80 << 7);
    ((((blended >> 8) + blended) >> 8) >> 7) as u8
}

/// 16-bit samples to 8 bits as PIL reads 16-bit colour PNGs: the high byte.
fn high_byte(sample: u16) -> u8 {
    (sample >> 8) as u8
}

/// `image` as 8-bit RGB, converted as transformers' `convert_to_rgb` does
/// on the image PIL decodes: grey replicated, alpha (or a `tRNS`
/// transparency, which the decoder expands to alpha) composited on white.
/// 16-bit grey PNGs are clipped at 255, as PIL's `I;16` to `RGB`
/// conversion does. With `convert_rgb` false only RGB images are taken.
fn to_rgb(image: DynamicImage, convert_rgb: bool) -> Result<RgbImage, ImageError> {
    let (width, height) = (image.width(), image.height());
    let grey = |l: u8| image::Rgb([l, l, l]);
    let rgba =
        |[r, g, b, a]: [u8; 4]| image::Rgb([over_white(r, a), over_white(g, a), over_white(b, a)]);
    let from = |f: &dyn Fn(u32, u32) -> image::Rgb<u8>| RgbImage::from_fn(width, height, f);
    if !convert_rgb
        && !matches!(
            image,
            DynamicImage::ImageRgb8(_) | DynamicImage::ImageRgb16(_)
        )
    {
        return Err(ImageError::Unsupported(format!(
            "a {:?} image, and the processor does not convert to RGB (do_convert_rgb is false)",
            image.color()
        )));
    }
    Ok(match image {
        DynamicImage::ImageRgb8(image) => image,
        DynamicImage::ImageLuma8(image) => from(&|x, y| grey(image.get_pixel(x, y).0[0])),
        DynamicImage::ImageLumaA8(image) => from(&|x, y| {
            let [l, a] = image.get_pixel(x, y).0;
            grey(over_white(l, a))
        }),
        DynamicImage::ImageRgba8(image) => from(&|x, y| rgba(image.get_pixel(x, y).0)),
        DynamicImage::ImageLuma16(image) => {
            from(&|x, y| grey(image.get_pixel(x, y).0[0].min(255) as u8))
        }
        DynamicImage::ImageLumaA16(image) => from(&|x, y| {
            let [l, a] = image.get_pixel(x, y).0.map(high_byte);
            grey(over_white(l, a))
        }),
        DynamicImage::ImageRgb16(image) => {
            from(&|x, y| image::Rgb(image.get_pixel(x, y).0.map(high_byte)))
        }
        DynamicImage::ImageRgba16(image) => {
            from(&|x, y| rgba(image.get_pixel(x, y).0.map(high_byte)))
        }
        other => {
            return Err(ImageError::Unsupported(format!(
                "{:?} pixels",
                other.color()
            )));
        }
    })
}

/// The `(height, width)` an image of `height`×`width` is resized to, as
/// transformers' `get_resize_output_image_size` computes it: the shortest
/// edge set, the longest `int(shortest * long / short)`.
fn resized_size(height: u32, width: u32, target: Resize) -> (u32, u32) {
    match target {
        Resize::Exact { height, width } => (height, width),
        Resize::ShortestEdge(edge) => {
            let (short, long) = (height.min(width), height.max(width));
            // Exact integer floor; equal to Python's int() of the quotient
            // for any sides below 2^31.
            let scaled = (u64::from(edge) * u64::from(long) / u64::from(short)) as u32;
            if width <= height {
                (scaled, edge)
            } else {
                (edge, scaled)
            }
        }
    }
}

/// Refuses a resize whose buffers exceed [`MAX_BYTES`]: an extreme aspect
/// ratio makes the long edge huge. When rows are resampled first, the
/// intermediate image has the output's width and the source's height; when
/// columns are, it is smaller than the source.
fn check_resize_budget(
    (source_width, source_height): (u32, u32),
    height: u32,
    width: u32,
) -> Result<(), ImageError> {
    let intermediate = u64::from(width) * u64::from(source_height) * 3;
    let output = u64::from(width) * u64::from(height) * 3;
    if intermediate.max(output) > MAX_BYTES {
        return Err(ImageError::TooLarge(format!(
            "resizing {source_width}×{source_height} to {width}×{height} takes more than {} MiB",
            MAX_BYTES >> 20
        )));
    }
    Ok(())
}

/// transformers' `center_crop` of a `height`×`width` image to
/// `crop_height`×`crop_width`: its offsets (`(size - crop) // 2`), the
/// columns and rows of the image it keeps, and zero padding where the image
/// is smaller than the crop.
struct CenterCrop {
    top: i64,
    left: i64,
    crop_height: u32,
    crop_width: u32,
    columns: std::ops::Range<u32>,
    rows: std::ops::Range<u32>,
}

impl CenterCrop {
    fn new(height: u32, width: u32, crop_height: u32, crop_width: u32) -> CenterCrop {
        let offset = |size: u32, crop: u32| (i64::from(size) - i64::from(crop)).div_euclid(2);
        let (top, left) = (offset(height, crop_height), offset(width, crop_width));
        let kept = |start: i64, crop: u32, size: u32| {
            let end = (start + i64::from(crop)).min(i64::from(size));
            start.max(0) as u32..end.max(0) as u32
        };
        CenterCrop {
            top,
            left,
            crop_height,
            crop_width,
            columns: kept(left, crop_width, width),
            rows: kept(top, crop_height, height),
        }
    }

    /// The crop, from `kept` (the image's `columns` × `rows`), zero-padded.
    fn padded(&self, kept: &RgbImage) -> RgbImage {
        if kept.dimensions() == (self.crop_width, self.crop_height) {
            return kept.clone();
        }
        let x0 = i64::from(self.columns.start) - self.left;
        let y0 = i64::from(self.rows.start) - self.top;
        RgbImage::from_fn(self.crop_width, self.crop_height, |x, y| {
            let (kx, ky) = (i64::from(x) - x0, i64::from(y) - y0);
            if (0..i64::from(kept.width())).contains(&kx)
                && (0..i64::from(kept.height())).contains(&ky)
            {
                *kept.get_pixel(kx as u32, ky as u32)
            } else {
                image::Rgb([0, 0, 0])
            }
        })
    }
}
