//! Fuzz the conversions that rebuild a configuration from a file's claims:
//! BinTensors or safetensors → TLLM (the configuration comes from `tllm.*`
//! metadata) and → EMBD. Any input ends in Ok or Err, never a panic, and
//! never allocates from a claimed count (the run's RSS limit catches that).
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_format::Format;
use modelbin_format::convert::{ConvertOptions, convert};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join(if selector & 1 == 0 { "in.bt" } else { "in.safetensors" });
    std::fs::write(&input, bytes).unwrap();
    let (to, name) = match selector >> 1 & 3 {
        0 => (Format::Tllm, "out.tllm"),
        1 => (Format::Embd, "out.embd"),
        2 => (Format::Safetensors, "out.safetensors"),
        _ => (Format::BinTensors, "out.bt"),
    };
    let output = dir.path().join(name);
    if convert(&input, &output, to, ConvertOptions::default(), &mut |_, _| {}).is_ok() {
        // What we wrote, we read back.
        let _ = convert(&output, &dir.path().join("again.bt"), Format::BinTensors, ConvertOptions::default(), &mut |_, _| {});
    }
});
