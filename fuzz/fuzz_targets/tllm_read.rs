//! Fuzz the TLLM reader: any input is Ok or Err, never a panic; an accepted
//! model can be summarised.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_format::tllm::TllmSummary;
use modelbin_format::tllm::Tllm;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = Tllm::from_buffer(data) {
        let _ = TllmSummary::of(&file);
    }
});
