//! modelbin-tokenize: tokenizers over modelbin's vocabulary formats.
//!
//! [`Tokenizer`] gives exactly tiktoken's token ids for cl100k_base,
//! o200k_base, p50k_base and r50k_base over a BPE2 vocabulary, with
//! pre-tokenizers that run in linear time and BPE merging that stays linear
//! on one huge piece (a backtracking encoder). cl100k_base and o200k_base are
//! compiled in.
//!
//! [`WordPiece`] gives exactly Hugging Face's BERT WordPiece ids.

mod backtrack;
mod bpe;
mod classify;
pub mod cost;
mod embedded;
mod error;
mod parallel;
mod prefix_trie;
pub mod pretokenize;
mod tokenizer;
mod vocab;
pub mod wordpiece;

pub use error::{Error, Result};
pub use modelbin_format::embd::SpecialTokens;
pub use pretokenize::Pattern;
pub use tokenizer::{Specials, Tokenizer};
pub use vocab::Source;
pub use wordpiece::WordPiece;
