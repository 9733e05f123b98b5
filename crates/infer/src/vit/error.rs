//! Why an image cannot become a vision transformer's input.

use std::path::PathBuf;

/// Why an image cannot become a model's input. The variants about one
/// image carry the reason only: the caller, which knows where the bytes
/// came from, names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The model directory has no `preprocessor_config.json`.
    #[error(
        "{path}: no such file; the model directory needs its image processor's preprocessor_config.json (as `save_pretrained` writes it)"
    )]
    MissingConfig {
        /// The file looked for.
        path: PathBuf,
    },
    /// `preprocessor_config.json` is not JSON, or a value has the wrong
    /// type or range.
    #[error("preprocessor_config.json: {0}")]
    BadConfig(String),
    /// A `resample` code that names no PIL filter.
    #[error(
        "preprocessor_config.json: resample {code} is not a PIL filter (NEAREST 0, LANCZOS 1, BILINEAR 2, BICUBIC 3, BOX 4, HAMMING 5)"
    )]
    UnsupportedResample {
        /// The code.
        code: i64,
    },
    /// A rescale or normalization constant that would make a pixel value
    /// NaN or infinite in f32 (where transformers would hand the model
    /// such values): not finite as f32, a standard deviation that is zero,
    /// subnormal or has no finite reciprocal, or constants that take a
    /// pixel of 0 to 255 beyond f32's range.
    #[error("preprocessor_config.json: {key} = {value}: {reason}")]
    UnusableConstant {
        /// The key, with the channel where it has one (`image_std[0]`).
        key: String,
        /// Its value, as f32 where it is used so.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A setting that changes the pixels in a way not supported here.
    #[error("preprocessor_config.json: {key} = {value} is not supported")]
    UnsupportedSetting {
        /// The key.
        key: String,
        /// Its value, as JSON.
        value: String,
    },
    /// The bytes are not a JPEG or PNG image, or are corrupt or truncated.
    #[error("cannot decode the image: {0}")]
    Decode(String),
    /// The image's header declares more pixels or memory than the decoding
    /// limits allow.
    #[error("the image is too large to decode: {0}")]
    TooLarge(String),
    /// A pixel layout the processor cannot convert to what the model takes.
    #[error("unsupported image: {0}")]
    Unsupported(String),
    /// An input (file or directory) that does not exist.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The input.
        path: PathBuf,
    },
    /// A file or directory that cannot be read.
    #[error("{path}: {reason}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        reason: String,
    },
}
