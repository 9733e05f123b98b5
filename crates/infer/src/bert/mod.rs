//! BERT sentence embeddings from an EMBD file: the encoder ([`Bert`]) and
//! the embedder around it ([`Embedder`]: WordPiece tokens → encoder →
//! pooling → L2 norm, equal to sentence-transformers').
//!
//! The two are apart because a recording or a feature scan runs the encoder
//! alone, block by block ([`Bert::hidden_states`]), while embedding adds the
//! tokenizer, batching and pooling on top.

pub mod embedder;
mod encoder;
mod hooked;

pub use embedder::{DEFAULT_BATCH_TOKENS, Embedder, cosine};
pub use encoder::Bert;
