//! modelbin-infer: the engines over modelbin's formats.
//!
//! [`tllm`] runs the TLLM tiny GPT-style transformer: full forward passes
//! with logits at every position, incremental decoding with a KV cache, and
//! sampling-based generation; [`tllm::train`] trains it on bytes
//! (hand-written backward pass, AdamW, resumable checkpoints). [`Embedder`]
//! ([`bert`]) computes sentence embeddings with the BERT encoder of an EMBD
//! file, equal to sentence-transformers'. [`record`] writes a model's residual stream over
//! text as a SAEV dataset; [`search`] ranks the lines of text files by
//! meaning, with an index saved to query a corpus many times; [`sae`] trains, evaluates and reads sparse
//! autoencoders (TopK, BatchTopK, ReLU) on such datasets, saved in SAELens's
//! layout. [`vit`] runs vision transformers (DINOv2, CLIP, SigLIP) on
//! images, decoded and resized as Hugging Face's image processors do.
//! [`lm`] runs decoder language models (GPT-2, Pythia, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3) from
//! Hugging Face directories: logits, the residual stream at SAELens's hook
//! points, a KV cache and generation.
//!
//! The kernels under every model run the instruction sets [`Kernels`]
//! names: by default the fastest this CPU has, or what [`set_kernels`] set
//! before the first model loaded.
//!
//! ```
//! # fn main() -> Result<(), modelbin_infer::Error> {
//! use modelbin_format::tllm::Config;
//! use modelbin_infer::tllm::Model;
//!
//! let config = Config {
//!     model_dim: 8, n_layers: 1, n_heads: 2, ffn_hidden_dim: 16,
//!     max_seq_len: 4, vocab_size: 256, dropout: 0.0,
//! };
//! let model = Model::random(config, 42, 0.02)?;
//! let logits = model.forward(&[104, 105])?; // [2, vocab_size]
//! assert_eq!(logits.len(), 2 * 256);
//! # Ok(())
//! # }
//! ```
//!
//! ```no_run
//! # fn main() -> Result<(), modelbin_infer::Error> {
//! use modelbin_infer::{Embedder, cosine};
//!
//! let embedder = Embedder::open("all-MiniLM-L6-v2.embd")?;
//! let vectors = embedder.embed(&["A cat sits.", "A kitten is sitting."])?;
//! println!("cosine {:.3}", cosine(&vectors[0], &vectors[1]));
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod bert;
mod error;
pub mod generation;
mod hf;
pub mod identity;
pub mod lm;
pub mod model;
mod nn;
pub mod record;
pub mod sae;
pub mod search;
pub mod threads;
pub mod tllm;
pub mod vit;

pub use bert::{Embedder, cosine};
pub use error::{Error, Result};
pub use lm::LmError;
pub use record::RecordError;
pub use sae::{SaeError, SettingDifference};
pub use tllm::train::TrainingError;
pub use vit::ImageError;

/// A run of a known number of steps that its caller drives one step at a
/// time (so a face can draw progress and stop between steps): the SAE and
/// TLLM training runs.
pub trait Stepped {
    /// Steps done, a resumed run's earlier ones included.
    fn steps_done(&self) -> u64;
    /// Steps asked for.
    fn steps(&self) -> u64;
    /// Whether every step asked for is done.
    fn is_done(&self) -> bool {
        self.steps_done() >= self.steps()
    }
}
/// The seed-stable random number generator (from modelbin-format).
pub use modelbin_format::io::rng;
pub use nn::f32_tier::F32Tier;
pub use nn::int8::{Int8Kernel, QuantizedWeights, quantize_weight_blocks};
pub use nn::packed::PackedWeights;
pub use nn::tiers::{INT8_TIER_VARIABLE, Kernels, set_kernels};

/// The instruction set the f32 kernels run (LayerNorm, GELU, softmax,
/// packed products, and the quantization of int8 layers' inputs):
/// `avx512`, `avx2` or `portable`, the [chosen](Kernels::chosen) tier.
///
/// ```
/// let tier = modelbin_infer::elementwise_instruction_set();
/// assert!(["avx512", "avx2", "portable"].contains(&tier));
/// ```
pub fn elementwise_instruction_set() -> &'static str {
    F32Tier::chosen().name()
}

/// The README's Rust examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
