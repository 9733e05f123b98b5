//! The vocabularies compiled into the binary: cl100k_base and o200k_base as
//! BPE2 files made by modelbin's own converter (with special tokens), checked
//! against the official `.tiktoken` files by `tests/embedded.rs`.

use std::sync::OnceLock;

use crate::tokenizer::Tokenizer;
use crate::vocab::Source;
use crate::{Error, Result};

/// cl100k_base as BPE2.
pub static CL100K_BASE: &[u8] = include_bytes!("../vocab/cl100k_base.bpe2");
/// o200k_base as BPE2.
pub static O200K_BASE: &[u8] = include_bytes!("../vocab/o200k_base.bpe2");

/// The built-in tokenizer called `name`, built once on first use.
pub fn tokenizer(name: &str) -> Result<&'static Tokenizer> {
    static CL100K: OnceLock<Tokenizer> = OnceLock::new();
    static O200K: OnceLock<Tokenizer> = OnceLock::new();
    let (cell, bytes) = match name {
        "cl100k_base" => (&CL100K, CL100K_BASE),
        "o200k_base" => (&O200K, O200K_BASE),
        "p50k_base" | "r50k_base" => return Err(Error::NotEmbedded(name.to_owned())),
        _ => return Err(Error::UnknownEncodingName(name.to_owned())),
    };
    if let Some(t) = cell.get() {
        return Ok(t);
    }
    let built = Tokenizer::from_bpe2(Source::Static(bytes), None)
        .expect("the embedded vocabularies are valid (checked by tests/embedded.rs)");
    Ok(cell.get_or_init(|| built))
}
