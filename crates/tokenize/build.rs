//! Lays out the tables of the embedded vocabularies into `OUT_DIR`, so the
//! binary uses them in place instead of building them at run time: the hash
//! index, its filter, the two-byte pair table and the direct tables of single
//! bytes and three digits (see `src/index.rs`) and the backtracking
//! encoder's tables (see `src/bpe/backtrack.rs` and `src/layout.rs`); and
//! the table of every char's pre-tokenizer class
//! (`src/pretokenize/class_table.rs`). The modules are the crate's own,
//! compiled into this script in the same module tree.

#![allow(dead_code)]

// The same module tree as the crate's, for the modules it uses.
#[path = "src/bpe"]
mod bpe {
    pub mod backtrack;
    pub mod prefix_trie;
}
#[path = "src/pretokenize"]
mod pretokenize {
    pub mod class_table;
}
#[path = "src/index.rs"]
mod index;
#[path = "src/layout.rs"]
mod layout;
#[path = "src/vocab.rs"]
mod vocab;

use modelbin_format::bpe2::Bpe2;

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let write = |name: &str, ext: &str, bytes: Vec<u8>| {
        std::fs::write(out.join(format!("{name}.{ext}")), bytes).expect("OUT_DIR is writable");
    };
    for name in ["cl100k_base", "o200k_base", "p50k_base", "r50k_base"] {
        let path = format!("vocab/{name}.bpe2");
        println!("cargo::rerun-if-changed={path}");
        let bytes = std::fs::read(&path).expect("the embedded vocabulary is in the repository");
        let file = Bpe2::from_buffer(vocab::Source::Owned(bytes))
            .expect("the embedded vocabulary is valid");
        let encoding = file.encoding().expect("a known encoding");
        let vocab = vocab::Vocab::new(file, |rank| encoding.is_special(rank));
        let (slots, filter) = vocab.index();
        let words = |words: &[u64]| words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let ranks = |ranks: Vec<u32>| ranks.iter().flat_map(|r| r.to_le_bytes()).collect();
        write(name, "index", words(slots.as_flattened()));
        write(name, "filter", words(filter));
        write(name, "pairs", ranks(vocab.pair_table()));
        write(name, "direct", ranks(vocab.direct_tables()));
        let mut tables = layout::Writer::default();
        vocab
            .backtracker()
            .expect("the embedded vocabularies are merge-ordered")
            .write(&mut tables);
        write(name, "backtrack", tables.finish());
    }
    write("classes", "bin", pretokenize::class_table::table());
    for module in [
        "backtrack",
        "class_table",
        "index",
        "layout",
        "prefix_trie",
        "vocab",
    ] {
        println!("cargo::rerun-if-changed=src/{module}.rs");
    }
}
