//! Lays out the hash indexes of the embedded vocabularies (see
//! `src/index.rs`) into `OUT_DIR`, so the binary uses them in place.

#[path = "src/index.rs"]
#[allow(dead_code)]
mod index;

use modelbin_format::bpe2::Bpe2;

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for name in ["cl100k_base", "o200k_base"] {
        let path = format!("vocab/{name}.bpe2");
        println!("cargo::rerun-if-changed={path}");
        let bytes = std::fs::read(&path).expect("the embedded vocabulary is in the repository");
        let file = Bpe2::from_buffer(bytes).expect("the embedded vocabulary is valid");
        let encoding = file.encoding().expect("a known encoding");
        let ordinary = || {
            file.tokens()
                .filter(|(rank, _)| !encoding.is_special(*rank))
        };
        let slots = index::build(file.token_count() as usize, ordinary());
        let pairs: Vec<u8> = index::pairs(ordinary())
            .iter()
            .flat_map(|p| p.to_le_bytes())
            .collect();
        std::fs::write(out.join(format!("{name}.pairs")), pairs).expect("OUT_DIR is writable");
        let bytes: Vec<u8> = slots
            .iter()
            .flatten()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        std::fs::write(out.join(format!("{name}.index")), bytes).expect("OUT_DIR is writable");
    }
    println!("cargo::rerun-if-changed=src/index.rs");
}
