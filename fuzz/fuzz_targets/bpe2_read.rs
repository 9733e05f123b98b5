//! Fuzz the BPE2 reader: any input is Ok or Err, never a panic; an accepted
//! vocabulary can be walked and written back as `.tiktoken`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_format::bpe2::{self, Bpe2};

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = Bpe2::from_buffer(data) {
        let _ = file.tokens().count();
        let mut out = Vec::new();
        file.write_tiktoken(&mut out).unwrap();
        let _ = bpe2::parse_tiktoken(&out).unwrap();
    }
    let _ = bpe2::parse_tiktoken(data);
});
