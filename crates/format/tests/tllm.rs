//! TLLM: round trips, and one test per rejection rule.

use modelbin_format::Error;
use modelbin_format::TensorStore;
use modelbin_format::tllm::{self, Config, Tllm};
use modelbin_format::{LayoutError, ModelError, TllmError};
use proptest::prelude::*;

fn config() -> Config {
    Config {
        model_dim: 4,
        n_layers: 2,
        n_heads: 2,
        ffn_hidden_dim: 6,
        max_seq_len: 3,
        vocab_size: 5,
        dropout: 0.25,
    }
}

/// Tensor data: each tensor's values count up from a seed.
fn data(config: &Config, seed: f32) -> Vec<Vec<u8>> {
    config
        .tensors()
        .iter()
        .enumerate()
        .map(|(t, spec)| {
            (0..spec.shape.len())
                .flat_map(|i| (seed + t as f32 * 100.0 + i as f32 * 0.5).to_le_bytes())
                .collect()
        })
        .collect()
}

fn written(config: &Config) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.tllm");
    let data = data(config, 1.0);
    let slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let size = tllm::write_file(&path, config, &slices, &mut |_, _| {}).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(size, bytes.len() as u64);
    bytes
}

fn parse(bytes: &[u8]) -> Result<(), Error> {
    Tllm::from_buffer(bytes).map(|_| ())
}

fn config_strategy() -> impl Strategy<Value = Config> {
    (1u32..4, 1u32..3, 1u32..6, 1u32..5, 1u32..40, 0.0f32..0.99).prop_map(
        |(heads, layers, per_head, seq, vocab, dropout)| Config {
            model_dim: heads * per_head,
            n_layers: layers,
            n_heads: heads,
            ffn_hidden_dim: per_head * 3,
            max_seq_len: seq,
            vocab_size: vocab,
            dropout,
        },
    )
}

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
fn ascii_magic_explains_the_byte_order() {
    let mut bytes = written(&config());
    bytes[..4].copy_from_slice(b"TLLM");
    let err = Tllm::from_buffer(bytes.as_slice()).unwrap_err();
    assert!(matches!(err, Error::Tllm(TllmError::TllmMagicByteOrder)));
    assert!(err.to_string().contains("little-endian"), "{err}");
    bytes[..4].copy_from_slice(b"GGUF");
    assert!(matches!(
        parse(&bytes),
        Err(Error::Layout(LayoutError::BadMagic { .. }))
    ));
}

#[test]
fn version_and_configuration_rules() {
    let base = written(&config());
    let set = |at: usize, value: [u8; 4]| {
        let mut b = base.clone();
        b[at..at + 4].copy_from_slice(&value);
        parse(&b)
    };
    assert!(matches!(
        set(4, 2u32.to_le_bytes()),
        Err(Error::Layout(LayoutError::UnsupportedVersion {
            found: 2,
            ..
        }))
    ));
    for (at, field) in [
        (8, "model_dim"),
        (12, "n_layers"),
        (16, "n_heads"),
        (20, "ffn_hidden_dim"),
        (24, "max_seq_len"),
        (28, "vocab_size"),
    ] {
        assert!(
            matches!(set(at, 0i32.to_le_bytes()), Err(Error::Tllm(TllmError::InvalidConfig { field: f, .. })) if f == field),
            "{field} = 0"
        );
        assert!(
            matches!(set(at, (-3i32).to_le_bytes()), Err(Error::Tllm(TllmError::InvalidConfig { field: f, ref value, .. })) if f == field && value == "-3")
        );
    }
    assert!(matches!(
        set(16, 3i32.to_le_bytes()),
        Err(Error::Tllm(TllmError::InvalidConfig {
            field: "n_heads",
            reason: "must divide model_dim",
            ..
        }))
    ));
    for dropout in [1.0f32, -0.5, f32::NAN] {
        assert!(matches!(
            set(32, dropout.to_le_bytes()),
            Err(Error::Tllm(TllmError::InvalidConfig {
                field: "dropout",
                ..
            }))
        ));
    }
}

#[test]
fn sizes_and_dimensions() {
    let bytes = written(&config());
    let size = bytes.len() as u64;
    assert!(matches!(
        parse(&bytes[..bytes.len() - 1]),
        Err(Error::Layout(LayoutError::FileSizeMismatch { expected, found }))
            if expected == size && found == size - 1
    ));
    assert!(matches!(
        parse(&bytes[..20]),
        Err(Error::Layout(LayoutError::Truncated { .. }))
    ));
    let mut longer = bytes.clone();
    longer.extend([0; 3]);
    assert!(matches!(
        parse(&longer),
        Err(Error::Layout(LayoutError::TrailingBytes { count: 3, .. }))
    ));
    // A dimension prefix that disagrees with the header.
    let mut wrong = bytes.clone();
    wrong[36..44].copy_from_slice(&6u64.to_le_bytes());
    assert!(matches!(
        parse(&wrong),
        Err(Error::Tllm(TllmError::DimensionMismatch { ref tensor, offset: 36, .. })) if tensor == "tok_embeddings"
    ));
    assert_eq!(parse(&wrong).unwrap_err().offset(), Some(36));
    assert_eq!(parse(&bytes[..bytes.len() - 1]).unwrap_err().offset(), None);
    // Huge dimensions: the implied size overflows before anything is read.
    let mut huge = bytes.clone();
    huge[8..12].copy_from_slice(&i32::MAX.to_le_bytes());
    huge[16..20].copy_from_slice(&1i32.to_le_bytes());
    huge[28..32].copy_from_slice(&i32::MAX.to_le_bytes());
    assert!(matches!(
        parse(&huge),
        Err(Error::Layout(LayoutError::FileSizeMismatch { .. })
            | Error::Layout(LayoutError::Overflow { .. }))
    ));
}

#[test]
fn writer_checks_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let config = config();
    let data = data(&config, 0.0);
    let mut slices: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    slices.pop();
    let too_few = tllm::write_file(dir.path().join("a.tllm"), &config, &slices, &mut |_, _| {});
    assert!(
        matches!(&too_few, Err(Error::InvalidArgument(m)) if m.contains("tensors given")),
        "{too_few:?}"
    );
    slices.push(&[0; 4]);
    assert!(matches!(
        tllm::write_file(dir.path().join("b.tllm"), &config, &slices, &mut |_, _| {}),
        Err(Error::InvalidArgument(m)) if m.contains("`output`")
    ));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing left behind"
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
