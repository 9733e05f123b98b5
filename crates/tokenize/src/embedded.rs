//! The vocabularies compiled into the binary: cl100k_base and o200k_base as
//! BPE2 files made by modelbin's own converter (with special tokens), checked
//! against the official `.tiktoken` files by `tests/embedded.rs`.

use std::sync::OnceLock;

use modelbin_format::bpe2::Bpe2;

use crate::index::Slot;
use crate::tokenizer::Tokenizer;
use crate::vocab::{LaidOut, Source};
use crate::{Error, Result};

/// cl100k_base as BPE2.
pub static CL100K_BASE: &[u8] = include_bytes!("../vocab/cl100k_base.bpe2");
/// o200k_base as BPE2.
pub static O200K_BASE: &[u8] = include_bytes!("../vocab/o200k_base.bpe2");

/// Bytes aligned for reading as `u64`.
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);

/// The vocabularies' hash indexes, laid out by `build.rs` (little-endian).
static CL100K_INDEX: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/cl100k_base.index"
)));
static O200K_INDEX: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/o200k_base.index"
)));
/// Their two-byte pair tables, laid out by `build.rs` (little-endian u32).
static CL100K_PAIRS: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/cl100k_base.pairs"
)));
static O200K_PAIRS: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/o200k_base.pairs"
)));

/// Their backtracking encoders' tables, laid out by `build.rs` (see
/// [`crate::layout`]).
static CL100K_BACKTRACK: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/cl100k_base.backtrack"
)));
static O200K_BACKTRACK: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/o200k_base.backtrack"
)));

/// An index's slots, where the target reads the little-endian layout as
/// is; elsewhere `None`, and the index is built at first use instead.
fn slots(index: &'static Aligned<[u8]>) -> Option<&'static [Slot]> {
    if !cfg!(target_endian = "little") {
        return None;
    }
    bytemuck::try_cast_slice(&index.0).ok()
}

/// The built-in tokenizer called `name`, built once on first use.
pub fn tokenizer(name: &str) -> Result<&'static Tokenizer> {
    static CL100K: OnceLock<Tokenizer> = OnceLock::new();
    static O200K: OnceLock<Tokenizer> = OnceLock::new();
    let (cell, bytes, index, pairs, backtracker) = match name {
        "cl100k_base" => (
            &CL100K,
            CL100K_BASE,
            CL100K_INDEX,
            CL100K_PAIRS,
            CL100K_BACKTRACK,
        ),
        "o200k_base" => (
            &O200K,
            O200K_BASE,
            O200K_INDEX,
            O200K_PAIRS,
            O200K_BACKTRACK,
        ),
        "p50k_base" | "r50k_base" => return Err(Error::NotEmbedded(name.to_owned())),
        _ => return Err(Error::UnknownEncodingName(name.to_owned())),
    };
    if let Some(t) = cell.get() {
        return Ok(t);
    }
    // The bytes and their index were checked when the crate was built
    // (build.rs validates the files) and by tests/embedded.rs.
    let file = Bpe2::from_trusted_buffer(Source::Static(bytes))
        .expect("the embedded vocabularies are valid (checked by build.rs)");
    let laid_out = slots(index)
        .zip(bytemuck::try_cast_slice(&pairs.0).ok())
        .map(|(slots, pairs)| LaidOut {
            slots,
            pairs,
            backtracker: &backtracker.0,
        });
    let built = Tokenizer::from_file(file, None, laid_out)
        .expect("the embedded vocabularies are valid (checked by tests/embedded.rs)");
    Ok(cell.get_or_init(|| built))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Vocab;

    #[test]
    fn the_laid_out_tables_equal_a_fresh_build() {
        for (bytes, index, pairs, backtrack) in [
            (CL100K_BASE, CL100K_INDEX, CL100K_PAIRS, CL100K_BACKTRACK),
            (O200K_BASE, O200K_INDEX, O200K_PAIRS, O200K_BACKTRACK),
        ] {
            let file = Bpe2::from_buffer(Source::Static(bytes)).unwrap();
            let encoding = file.encoding().unwrap();
            let fresh = Vocab::new(file, |rank| encoding.is_special(rank));
            let laid_out_pairs: &[u32] = bytemuck::cast_slice(&pairs.0);
            let fresh_pairs: Vec<u32> = (0..=u16::MAX)
                .map(|ab| {
                    let [a, b] = ab.to_be_bytes();
                    fresh.pair_rank(a, b)
                })
                .collect();
            assert_eq!(laid_out_pairs, fresh_pairs);
            // The laid-out tables are used on little-endian targets, and
            // there they are the fresh ones.
            if cfg!(target_endian = "little") {
                let slots = slots(index).expect("a little-endian target reads the index");
                assert_eq!(fresh.index(), slots);
                let laid_out = Vocab::laid_out(
                    Bpe2::from_buffer(Source::Static(bytes)).unwrap(),
                    LaidOut {
                        slots,
                        pairs: laid_out_pairs,
                        backtracker: &backtrack.0,
                    },
                );
                assert!(laid_out.backtracker_is_ready());
                assert!(laid_out.backtracker().is_some());
                assert_eq!(laid_out.backtracker(), fresh.backtracker());
            }
        }
    }
}
