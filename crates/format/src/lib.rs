//! modelbin-format: readers, writers and validators for the binary files that
//! carry ML models, vocabularies and activations.
//!
//! Every parser in this crate treats its input as hostile: offsets, lengths and
//! counts are checked (with checked arithmetic) before use, nothing is allocated
//! from an untrusted count beyond what the remaining bytes can hold, and every
//! failure is an [`Error`] that says what went wrong and at which byte.
//!
//! The formats share one shape: `open` / `from_buffer` (validated, zero-copy
//! views), a streaming atomic writer, `verify` and an `inspect` summary.

pub mod atomic;
pub mod bintensors;
pub mod bpe2;
pub mod bytes;
pub mod checksum;
pub mod convert;
pub mod detect;
mod dtype;
pub mod embd;
mod error;
pub mod file;
pub mod inspect;
mod json_budget;
pub mod rng;
pub mod saev;
pub mod safetensors;
pub mod source;
mod table;
pub mod tensor;
pub mod text_table;
pub mod tllm;
mod write;

pub use detect::Format;
pub use dtype::DType;
pub use error::{At, Error, Result};
pub use file::TensorFile;
pub use tensor::{Index, SlicedView, TensorStore, TensorView};
