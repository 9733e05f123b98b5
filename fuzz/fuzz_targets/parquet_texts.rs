//! Fuzz reading texts from a Parquet file (`modelbin_format::io::texts`,
//! the column reader behind every command's `*.parquet` inputs): any input
//! is texts or an error, never a panic, a hang or an allocation beyond the
//! fuzzer's memory limit.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use modelbin_format::io::texts::{TextFormat, Texts};

fuzz_target!(|data: &[u8]| {
    if let Ok(texts) = TextFormat::default().texts(Path::new("train.parquet"), data) {
        assert!(matches!(texts, Texts::Records(_)));
    }
});
