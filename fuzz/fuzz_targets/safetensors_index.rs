//! Fuzz the sharded-safetensors index parser (`model.safetensors.index.json`):
//! any input is Ok or Err, never a panic; what is accepted names only plain
//! shard file names.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use modelbin_format::safetensors::sharded::parse_index;

fuzz_target!(|data: &[u8]| {
    if let Ok(index) = parse_index(data, Path::new("model.safetensors.index.json")) {
        assert!(!index.weight_map.is_empty());
        for shard in index.weight_map.values() {
            assert!(!shard.contains('/') && shard != ".." && !shard.is_empty());
        }
    }
});
