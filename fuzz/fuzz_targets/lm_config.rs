//! Any bytes as a decoder language model's `config.json`: a configuration
//! or a typed error, never a panic; an accepted one is a shape the block
//! can run (heads that divide the width, key/value heads that divide the
//! heads, an even rotating width within a head) whatever the family.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_infer::lm::LmConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(config) = LmConfig::from_json(data) else {
        return;
    };
    assert!(config.hidden >= 1 && config.layers >= 1 && config.heads >= 1);
    assert!(config.kv_heads >= 1 && config.heads % config.kv_heads == 0);
    assert!(config.head_dim >= 1 && config.intermediate >= 1);
    assert!(config.vocab_size >= 1 && config.max_positions >= 1);
    assert_eq!(config.family.name(), config.model_type);
});
