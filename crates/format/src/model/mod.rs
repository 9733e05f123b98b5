//! What a model needs of a file beyond its format: the BERT encoder an EMBD
//! file must make ([`BertConfig`], checked against the metadata and the
//! tensors), and the errors of those checks ([`ModelError`], also raised
//! when a TLLM configuration or a tensor's values cannot make a model).
//!
//! A format's reader checks only the format's own rules, so a file can be a
//! valid EMBD file and still not a usable model; `verify` and the model
//! loaders add these checks on top.

mod bert;
mod error;

pub use bert::{BertConfig, Pooling};
pub use error::ModelError;
