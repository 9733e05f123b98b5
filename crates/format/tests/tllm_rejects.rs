//! TLLM: one test per rejection rule, each matched on its variant.

mod common;

use common::tllm::*;
use modelbin_format::Error;
use modelbin_format::tllm::{self, Tllm};
use modelbin_format::{LayoutError, TllmError};

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
