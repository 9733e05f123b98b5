//! Vision transformers: DINOv2 (with or without register tokens), CLIP's
//! vision tower and SigLIP's vision tower, loaded from a Hugging Face model
//! directory (`config.json` and `model.safetensors`, as `save_pretrained`
//! writes them) and run on normalized pixel values to give each block's
//! hidden states, equal to transformers' `output_hidden_states`.
//!
//! All images of a batch form one tall matrix for the linear layers
//! (spread over the current rayon pool), attention runs per image and head.
//! DINOv2 resizes its position embeddings to the input's patch grid as
//! transformers does; CLIP and SigLIP take their configuration's image
//! size.
//!
//! [`ImageProcessor`] gives those pixel values from JPEG and PNG files as
//! the model's image processor does (`preprocessor_config.json`), and
//! [`image_files`] lists the images of directories in a stable order.
//!
//! ```no_run
//! # fn main() -> Result<(), modelbin_infer::Error> {
//! use modelbin_infer::vit::{Family, VisionModel};
//!
//! let model = VisionModel::open("dinov2-small".as_ref())?;
//! assert_eq!(model.family(), Family::Dinov2);
//! let (images, height, width) = (2, 224, 224);
//! // Normalized pixels, [images, 3, height, width], as an image processor gives them.
//! let pixels = vec![0.0f32; images * 3 * height * width];
//! let last = model.blocks() - 1;
//! let states = model.hidden_states(&pixels, images, height, width, &[6, last])?;
//! let (rows, columns) = model.patch_grid(height, width)?;
//! let tokens = 1 + model.registers() + rows * columns;
//! assert_eq!(states[1].len(), images * tokens * model.width());
//! # Ok(())
//! # }
//! ```

mod config;
pub(crate) mod error;
mod hooked;
mod image_files;
mod interpolate;
mod jpeg;
mod limits;
mod model;
pub mod preprocess;
pub mod resample;

pub use config::Family;
pub use error::ImageError;
pub use hooked::is_vision_model_type;
pub use image_files::image_files;
pub use model::VisionModel;
pub use preprocess::ImageProcessor;

#[cfg(test)]
mod tests;
