//! modelbin-infer: the engines over modelbin's formats.
//!
//! [`tllm`] runs the TLLM tiny GPT-style transformer: full forward passes
//! with logits at every position, incremental decoding with a KV cache, and
//! sampling-based generation; [`train`] trains it on bytes (hand-written
//! backward pass, AdamW, resumable checkpoints). [`Embedder`] computes
//! sentence embeddings with the BERT encoder of an EMBD file, equal to
//! sentence-transformers'.

pub mod bert;
pub mod embedder;
mod error;
mod kernels;
mod packed;
pub mod tllm;
pub mod train;

pub use embedder::{Embedder, cosine};
pub use error::{Error, Result, TrainingError};
/// The seed-stable random number generator (from modelbin-format).
pub use modelbin_format::rng;
