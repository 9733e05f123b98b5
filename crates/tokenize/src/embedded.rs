//! The vocabularies compiled into the binary: cl100k_base, o200k_base,
//! p50k_base and r50k_base as BPE2 files made by modelbin's own converter
//! (with special tokens), checked against the official `.tiktoken` files by
//! `tests/embedded.rs`, with the tables `build.rs` lays out for them (see
//! [`LaidOut`]); and tiktoken's seven encodings over them.

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
static P50K_BASE: Embedded = embedded!("p50k_base");
static R50K_BASE: Embedded = embedded!("r50k_base");

/// A built-in encoding: the vocabulary it merges with and the special
/// tokens tiktoken gives it beyond those of the vocabulary's own encoding.
struct BuiltIn {
    name: &'static str,
    vocabulary: &'static Embedded,
    extra_specials: fn() -> Vec<(String, u32)>,
}

/// tiktoken's encodings (`tiktoken_ext/openai_public.py`), in its order.
/// gpt2 is r50k_base under another name (tiktoken builds its ranks from
/// GPT-2's original `encoder.json`; they are r50k_base's, checked by
/// `tests/embedded.rs`); p50k_edit and o200k_harmony add special tokens to
/// p50k_base and o200k_base.
static BUILT_IN: [BuiltIn; 7] = [
    BuiltIn {
        name: "gpt2",
        vocabulary: &R50K_BASE,
        extra_specials: Vec::new,
    },
    BuiltIn {
        name: "r50k_base",
        vocabulary: &R50K_BASE,
        extra_specials: Vec::new,
    },
    BuiltIn {
        name: "p50k_base",
        vocabulary: &P50K_BASE,
        extra_specials: Vec::new,
    },
    BuiltIn {
        name: "p50k_edit",
        vocabulary: &P50K_BASE,
        extra_specials: p50k_edit_specials,
    },
    BuiltIn {
        name: "cl100k_base",
        vocabulary: &CL100K_BASE,
        extra_specials: Vec::new,
    },
    BuiltIn {
        name: "o200k_base",
        vocabulary: &O200K_BASE,
        extra_specials: Vec::new,
    },
    BuiltIn {
        name: "o200k_harmony",
        vocabulary: &O200K_BASE,
        extra_specials: o200k_harmony_specials,
    },
];

/// p50k_edit's fill-in-the-middle tokens.
fn p50k_edit_specials() -> Vec<(String, u32)> {
    let fim = [
        ("<|fim_prefix|>", 50281),
        ("<|fim_middle|>", 50282),
        ("<|fim_suffix|>", 50283),
    ];
    fim.map(|(text, id)| (text.to_owned(), id)).into()
}

/// o200k_harmony's chat-format tokens, and a reserved token for every
/// other id from 200,000 to 201,087 (200,018 then has two texts, as in
/// tiktoken: `<|endofprompt|>` and `<|reserved_200018|>`).
fn o200k_harmony_specials() -> Vec<(String, u32)> {
    let named = [
        ("<|startoftext|>", 199998),
        ("<|return|>", 200002),
        ("<|constrain|>", 200003),
        ("<|channel|>", 200005),
        ("<|start|>", 200006),
        ("<|end|>", 200007),
        ("<|message|>", 200008),
        ("<|call|>", 200012),
    ];
    let mut specials: Vec<(String, u32)> = named
        .iter()
        .map(|&(text, id)| (text.to_owned(), id))
        .collect();
    let reserved = (200_000..201_088).filter(|id| !named.iter().any(|&(_, n)| n == *id));
    specials.extend(reserved.map(|id| (format!("<|reserved_{id}|>"), id)));
    specials
}

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

/// The names of the built-in encodings, in tiktoken's order.
pub(crate) const NAMES: [&str; 7] = [
    "gpt2",
    "r50k_base",
    "p50k_base",
    "p50k_edit",
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
];

/// `name` as the `'static` name of a built-in encoding, if it is one.
pub(crate) fn name(name: &str) -> Option<&'static str> {
    NAMES.into_iter().find(|&known| known == name)
}

impl Tokenizer {
    /// The names of the built-in encodings: tiktoken's, in its order.
    pub fn built_in_names() -> &'static [&'static str] {
        &NAMES
    }

    /// A built-in encoding, built once on first use: any of tiktoken's
    /// (gpt2, r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base,
    /// o200k_harmony).
    pub fn embedded(name: &str) -> Result<&'static Tokenizer> {
        static TOKENIZERS: [OnceLock<Tokenizer>; 7] = [const { OnceLock::new() }; 7];
        let index = NAMES
            .iter()
            .position(|&known| known == name)
            .ok_or_else(|| Error::UnknownEncodingName(name.to_owned()))?;
        let cell = &TOKENIZERS[index];
        if let Some(t) = cell.get() {
            return Ok(t);
        }
        let built_in = &BUILT_IN[index];
        let vocabulary = built_in.vocabulary;
        let built = Tokenizer::from_file(vocabulary.file(), None, vocabulary.laid_out())
            .expect("the embedded vocabularies are valid (checked by tests/embedded.rs)")
            .renamed(built_in.name, (built_in.extra_specials)());
        Ok(cell.get_or_init(|| built))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Vocab;

    #[test]
    fn the_laid_out_tables_equal_a_fresh_build() {
        for embedded in [&CL100K_BASE, &O200K_BASE, &P50K_BASE, &R50K_BASE] {
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
