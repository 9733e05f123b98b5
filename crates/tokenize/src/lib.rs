//! modelbin-tokenize: tokenizers over modelbin's vocabulary formats.
//!
//! [`Tokenizer`] gives exactly tiktoken's token ids for cl100k_base,
//! o200k_base, p50k_base and r50k_base over a BPE2 vocabulary, with
//! pre-tokenizers that run in linear time and BPE merging that stays linear
//! on one huge piece (a backtracking encoder). cl100k_base and o200k_base are
//! compiled in.
//!
//! [`WordPiece`] gives exactly Hugging Face's BERT WordPiece ids.
//!
//! ```
//! # fn main() -> Result<(), modelbin_tokenize::Error> {
//! use modelbin_tokenize::Tokenizer;
//!
//! let cl100k = Tokenizer::embedded("cl100k_base")?;
//! let ids = cl100k.encode_ordinary("hello world")?;
//! assert_eq!(ids, [15339, 1917]);
//! assert_eq!(cl100k.decode(&ids)?, "hello world");
//! assert_eq!(cl100k.count("hello world")?, 2);
//! # Ok(())
//! # }
//! ```
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use modelbin_tokenize::WordPiece;
//!
//! let model = modelbin_format::embd::open("all-MiniLM-L6-v2.embd")?;
//! let wordpiece = WordPiece::from_embd(&model)?;
//! let ids = wordpiece.encode("Hello, world!", 256); // [CLS] ... [SEP]
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

pub mod batch;
mod bpe;
pub mod cost;
mod embedded;
mod error;
pub mod hf;
mod index;
mod layout;
mod parallel;
pub mod pretokenize;
mod tokenizer;
mod vocab;
pub mod wordpiece;

pub use error::{Error, Result};
pub use hf::{HfTokenizer, HfTokenizerError, hf_byte_char};
pub use modelbin_format::embd::SpecialTokens;
pub use pretokenize::Pattern;
pub use tokenizer::{Specials, Tokenizer, check_disallowed, clear_piece_cache};
pub use vocab::Source;
pub use wordpiece::WordPiece;
