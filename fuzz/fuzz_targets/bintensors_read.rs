//! Fuzz the BinTensors reader: any input is Ok or Err, never a panic; what is
//! accepted can be read in full, sliced, and written back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_format::bintensors::{self, BinTensors};
use modelbin_format::{TensorStore, detect};

fuzz_target!(|data: &[u8]| {
    let _ = detect::detect_bytes(data);
    if let Ok(file) = BinTensors::from_buffer(data) {
        for t in file.tensors() {
            let _ = t.slice(&[]).map(|s| s.to_vec());
        }
        let again = bintensors::serialize(file.tensors(), file.metadata()).unwrap();
        assert!(BinTensors::from_buffer(again.as_slice()).is_ok());
    }
});
