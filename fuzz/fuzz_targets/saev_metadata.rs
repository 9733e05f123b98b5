//! Fuzz SAEV metadata parsing and its shard arithmetic: any input is Ok or Err,
//! never a panic; accepted metadata re-serialises to itself and its shards
//! cover every image.
#![no_main]

use libfuzzer_sys::fuzz_target;
use modelbin_format::saev::Metadata;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(m) = Metadata::parse(text) {
        assert_eq!(Metadata::parse(&m.to_json()).unwrap(), m);
        let _ = m.hash();
        assert!(m.imgs_per_shard() >= 1);
        assert!(m.n_shards() * m.imgs_per_shard() >= m.n_imgs);
    }
});
