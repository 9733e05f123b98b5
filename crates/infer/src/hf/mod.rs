//! What the models loaded from Hugging Face directories share (the vision
//! transformers and the decoder language models): `config.json` keys read
//! with their JSON kept for errors ([`config`]), and the checkpoint's
//! tensors, one `model.safetensors` or shards, checked and widened to f32
//! ([`weights`]).

pub(crate) mod config;
pub(crate) mod weights;
