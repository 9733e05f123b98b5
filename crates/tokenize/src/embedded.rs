//! The vocabularies compiled into the binary: cl100k_base and o200k_base as
//! BPE2 files made by modelbin's own converter (with special tokens), checked
//! against the official `.tiktoken` files by `tests/embedded.rs`, with the
//! tables `build.rs` lays out for them (see [`LaidOut`]).

use std::sync::OnceLock;

use modelbin_format::bpe2::Bpe2;

use crate::tokenizer::Tokenizer;
use crate::vocab::{LaidOut, Source};
use crate::{Error, Result};

/// Bytes aligned for reading as `u64`.
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);

/// The table `build.rs` wrote for a vocabulary (little-endian words).
macro_rules! laid_out {
    ($name:literal, $table:literal) => {
        &Aligned(*include_bytes!(concat!(
            env!("OUT_DIR"),
            "/",
            $name,
            ".",
            $table
        )))
    };
}

/// An embedded vocabulary and its laid-out tables.
struct Embedded {
    bpe2: &'static [u8],
    index: &'static Aligned<[u8]>,
    filter: &'static Aligned<[u8]>,
    pairs: &'static Aligned<[u8]>,
    backtracker: &'static Aligned<[u8]>,
    direct: &'static Aligned<[u8]>,
}

/// An embedded vocabulary by name: its BPE2 file and the tables
/// `build.rs` wrote for it.
macro_rules! embedded {
    ($name:literal) => {
        Embedded {
            bpe2: include_bytes!(concat!("../vocab/", $name, ".bpe2")),
            index: laid_out!($name, "index"),
            filter: laid_out!($name, "filter"),
            pairs: laid_out!($name, "pairs"),
            backtracker: laid_out!($name, "backtrack"),
            direct: laid_out!($name, "direct"),
        }
    };
}

static CL100K_BASE: Embedded = embedded!("cl100k_base");
static O200K_BASE: Embedded = embedded!("o200k_base");

impl Embedded {
    /// The parsed vocabulary.
    fn file(&self) -> Bpe2<Source> {
        // build.rs validated the files; tests/embedded.rs checks them again.
        Bpe2::from_trusted_buffer(Source::Static(self.bpe2))
            .expect("the embedded vocabularies are valid (checked by build.rs)")
    }

    /// The laid-out tables, where the target reads their little-endian
    /// words as they are; elsewhere `None`, and they are built instead.
    fn laid_out(&'static self) -> Option<LaidOut> {
        if !cfg!(target_endian = "little") {
            return None;
        }
        Some(LaidOut {
            slots: bytemuck::try_cast_slice(&self.index.0).ok()?,
            filter: bytemuck::try_cast_slice(&self.filter.0).ok()?,
            pairs: bytemuck::try_cast_slice(&self.pairs.0).ok()?,
            backtracker: &self.backtracker.0,
            direct: bytemuck::try_cast_slice(&self.direct.0).ok()?,
        })
    }
}

/// The names of the built-in encodings.
pub(crate) const NAMES: [&str; 2] = ["cl100k_base", "o200k_base"];

/// `name` as the `'static` name of a built-in encoding, if it is one.
pub(crate) fn name(name: &str) -> Option<&'static str> {
    NAMES.into_iter().find(|&known| known == name)
}

impl Tokenizer {
    /// A built-in encoding (`cl100k_base`, `o200k_base`), built once on
    /// first use.
    pub fn embedded(name: &str) -> Result<&'static Tokenizer> {
        static CL100K: OnceLock<Tokenizer> = OnceLock::new();
        static O200K: OnceLock<Tokenizer> = OnceLock::new();
        let (cell, embedded) = match name {
            "cl100k_base" => (&CL100K, &CL100K_BASE),
            "o200k_base" => (&O200K, &O200K_BASE),
            "p50k_base" | "r50k_base" => return Err(Error::NotEmbedded(name.to_owned())),
            _ => return Err(Error::UnknownEncodingName(name.to_owned())),
        };
        if let Some(t) = cell.get() {
            return Ok(t);
        }
        let built = Tokenizer::from_file(embedded.file(), None, embedded.laid_out())
            .expect("the embedded vocabularies are valid (checked by tests/embedded.rs)");
        Ok(cell.get_or_init(|| built))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Vocab;

    #[test]
    fn the_laid_out_tables_equal_a_fresh_build() {
        for embedded in [&CL100K_BASE, &O200K_BASE] {
            let file = embedded.file();
            let encoding = file.encoding().unwrap();
            let fresh = Vocab::new(file, |rank| encoding.is_special(rank));
            // The laid-out tables are used on little-endian targets, and
            // there they are the fresh ones.
            if !cfg!(target_endian = "little") {
                assert!(embedded.laid_out().is_none());
                continue;
            }
            let tables = embedded
                .laid_out()
                .expect("a little-endian target reads them");
            assert_eq!(fresh.index(), (tables.slots, tables.filter));
            assert_eq!(tables.pairs, fresh.pair_table());
            assert_eq!(tables.direct, fresh.direct_tables());
            let laid_out = Vocab::laid_out(embedded.file(), tables);
            assert!(laid_out.backtracker_is_ready());
            assert!(laid_out.backtracker().is_some());
            assert_eq!(laid_out.backtracker(), fresh.backtracker());
        }
    }
}
