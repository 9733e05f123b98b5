//! Any bytes as an autoencoder's SAELens `cfg.json`: a configuration or a
//! typed error naming a key, never a panic; an accepted one has positive
//! widths whose product fits, and a TopK `k` within its latents.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use modelbin_infer::sae::config::{Kind, SaeConfig};

fuzz_target!(|data: &[u8]| {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(config) = SaeConfig::parse(Path::new("sae"), &json) else {
        return;
    };
    assert!(config.d_in >= 1 && config.d_sae >= 1);
    assert!(config.d_in.checked_mul(config.d_sae).is_some());
    if let Kind::TopK(k) = config.kind {
        assert!((1..=config.d_sae).contains(&k));
    }
});
