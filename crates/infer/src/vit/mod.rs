//! Vision transformers' inputs: images decoded, converted and resized as
//! the model's Hugging Face image processor does it.

pub mod image_files;
pub mod preprocess;
pub mod resample;

pub use image_files::image_files;
pub use preprocess::ImageProcessor;
