//! Decoder language models from Hugging Face model directories: GPT-2
//! (`gpt2`), GPT-NeoX / Pythia (`gpt_neox`), Llama (`llama`: TinyLlama,
//! SmolLM, Llama 3.x) and Qwen2 (`qwen2`), by `config.json`'s
//! `model_type`, with weights in `model.safetensors` or shards
//! (`model.safetensors.index.json`), F32, F16 or BF16 (widened to f32).
//!
//! [`LanguageModel::activations`] gives the residual stream at a
//! [`Site`] (SAELens's hook points) of some layers over whole windows of
//! tokens, all windows through each linear layer as one tall matrix: what
//! recording runs. [`LanguageModel::logits`] gives logits; a [`Session`]
//! decodes with a KV cache (and lets a hook read or replace the rows at
//! any site), and [`generate`] samples from it with the sampler the TLLM
//! model shares ([`crate::generation`]). Results equal transformers' in
//! f32 (checked against it on random models of every family).
//!
//! | file | job |
//! |---|---|
//! | `family/` | one file per family: the `config.json` keys it reads, its defaults, its tensors |
//! | `config.rs` | the block description every family's configuration becomes; shared key readers |
//! | `weights.rs` | loading a family's tensors into the one block's layout |
//! | `rope.rs` | rotary embeddings (default, linear, llama3) |
//! | `block.rs` | the decoder block and its family variants |
//! | `model.rs` | loading, the batched pass, logits |
//! | `session.rs` | one sequence with a KV cache, hooks at the sites |
//! | `generate.rs` | generation over the shared sampler |
//! | `hooked.rs` | the model and its tokenizer behind the one model interface (`crate::model`) |
//!
//! ```no_run
//! # fn main() -> Result<(), modelbin_infer::Error> {
//! use modelbin_infer::generation::Sampling;
//! use modelbin_infer::lm::{LanguageModel, Site, generate};
//!
//! let model = LanguageModel::open("gpt2".as_ref())?;
//! let ids = [464u32, 3290, 318, 257];
//! let logits = model.logits(&ids)?; // [4, vocab]
//! let rows = model.activations(&ids, 4, &[6], Site::ResidPost)?;
//! assert_eq!(rows[0].len(), 4 * model.config().hidden);
//! let stop = model.config().eos_token_ids.clone();
//! let out = generate(&model, &ids, 20, Sampling::default(), &stop, |_| {})?;
//! # Ok(())
//! # }
//! ```

mod block;
mod config;
pub(crate) mod error;
mod family;
mod generate;
mod hooked;
mod model;
mod rope;
mod session;
mod weights;

pub use crate::model::Site;
pub use crate::model::{Steered, SteeredSession, Steering, generate_steered};
pub use config::{Family, LmConfig, model_type_of_dir};
pub use error::LmError;
pub use generate::generate;
pub use hooked::{DEFAULT_LM_WINDOW, TokenizedModel};
pub use model::{LanguageModel, LoadOptions};
pub use session::Session;
