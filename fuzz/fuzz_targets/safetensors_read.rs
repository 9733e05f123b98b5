//! Fuzz the safetensors reader: any input is Ok or Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_format::TensorStore;
use modelbin_format::safetensors::SafeTensors;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = SafeTensors::from_buffer(data) {
        for t in file.tensors() {
            let _ = t.slice(&[]).map(|s| s.to_vec());
        }
    }
});
