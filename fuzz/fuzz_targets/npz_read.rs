//! Fuzz the `.npz` reader (Gemma Scope's `params.npz`): any archive is Ok
//! or Err, never a panic, and no allocation follows a declared size past
//! the memory bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = modelbin_format::io::npz::read_from(
        std::io::Cursor::new(data),
        std::path::Path::new("fuzz.npz"),
    );
    let _ = modelbin_format::io::npz::parse_npy(data);
});
