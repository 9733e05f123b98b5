//! TLLM: round trips, the header layout and metadata against the layout the docs state.

mod common;

use common::tllm::*;
use modelbin_format::Error;
use modelbin_format::ModelError;
use modelbin_format::TensorStore;
use modelbin_format::tllm::{self, Config};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn write_then_read_round_trips(config in config_strategy(), seed in -100.0f32..100.0) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.tllm");
        let data = data(&config, seed);
        let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        tllm::write_file(&path, &config, &slices, &mut |_, _| {}).unwrap();
        let file = tllm::open(&path).unwrap();
        prop_assert_eq!(file.config(), &config);
        prop_assert_eq!(file.file_bytes().len() as u64, config.file_size().unwrap());
        for (spec, bytes) in config.tensors().iter().zip(&data) {
            prop_assert_eq!(file.tensor(&spec.name).unwrap().data(), bytes.as_slice());
            let values = file.values(&spec.name).unwrap();
            prop_assert!(matches!(values, std::borrow::Cow::Borrowed(_)), "mapped data is aligned");
        }
    }
}

#[test]
fn header_layout() {
    let bytes = written(&config());
    assert_eq!(&bytes[..4], &[0x4D, 0x4C, 0x4C, 0x54]);
    assert_eq!(&bytes[4..8], &1u32.to_le_bytes());
    assert_eq!(&bytes[8..12], &4i32.to_le_bytes());
    assert_eq!(&bytes[32..36], &0.25f32.to_le_bytes());
    assert_eq!(
        &bytes[36..52],
        &[5, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0],
        "tok_embeddings [5, 4]"
    );
    assert_eq!(
        config().parameter_count(),
        Some(2 * 5 * 4 + 3 * 4 + 2 * (4 * 16 + 2 * 24 + 6 + 5 * 4))
    );
}

#[test]
fn metadata_round_trip() {
    let config = config();
    assert_eq!(
        Config::from_metadata(&config.to_metadata()).unwrap(),
        config
    );
    let mut m = config.to_metadata();
    m.remove("tllm.n_heads");
    assert!(matches!(
        Config::from_metadata(&m),
        Err(Error::Model(ModelError::MissingMetadata {
            key: "tllm.n_heads"
        }))
    ));
}
