//! Byte-exactness with the reference crate `bintensors` 0.1.1, in both
//! directions, plus golden files.

mod common;

use std::borrow::Cow;

use common::{TensorSet, WORKED_EXAMPLE, bintensors_dtype, tensor_set};
use modelbin_format::LayoutError;
use modelbin_format::bintensors::{self, BinTensors};
use modelbin_format::{DType, Error, TensorStore, TensorView};
use proptest::prelude::*;

/// A tensor handed to the reference serializer.
struct RefTensor<'a>(TensorView<'a>);

impl ::bintensors::tensor::View for RefTensor<'_> {
    fn dtype(&self) -> ::bintensors::tensor::Dtype {
        bintensors_dtype(self.0.dtype())
    }
    fn shape(&self) -> &[usize] {
        self.0.shape()
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.0.data())
    }
    fn data_len(&self) -> usize {
        self.0.data().len()
    }
}

fn reference_bytes(set: &TensorSet) -> Vec<u8> {
    let views = set.views();
    ::bintensors::serialize(
        views.iter().map(|v| (v.name().to_owned(), RefTensor(*v))),
        &set.metadata_hashmap(),
    )
    .expect("the reference serializes a valid tensor set")
}

fn assert_reads_back(set: &TensorSet, bytes: &[u8]) {
    let file = BinTensors::from_buffer(bytes).expect("our reader accepts the bytes");
    assert_eq!(file.len(), set.tensors.len());
    assert_eq!(file.metadata(), set.metadata.as_ref());
    for t in &set.tensors {
        let view = file.tensor(&t.name).unwrap();
        assert_eq!(view.dtype(), t.dtype);
        assert_eq!(view.shape(), t.shape.as_slice());
        assert_eq!(view.data(), t.data.as_slice());
    }
}

fn assert_reference_reads_back(set: &TensorSet, bytes: &[u8]) {
    let file =
        ::bintensors::BinTensors::deserialize(bytes).expect("the reference accepts our bytes");
    assert_eq!(file.len(), set.tensors.len());
    assert_eq!(file.metadata().metadata(), &set.metadata_hashmap());
    for t in &set.tensors {
        let view = file.tensor(&t.name).unwrap();
        assert_eq!(view.dtype(), bintensors_dtype(t.dtype));
        assert_eq!(view.shape(), t.shape.as_slice());
        assert_eq!(view.data(), t.data.as_slice());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn bytes_equal_the_reference_serializer(set in tensor_set()) {
        let ours = bintensors::serialize(set.views(), set.metadata.as_ref()).unwrap();
        let reference = reference_bytes(&set);
        prop_assert_eq!(&ours, &reference);
        assert_reads_back(&set, &reference);
        assert_reference_reads_back(&set, &ours);
    }

    #[test]
    fn file_writer_equals_in_memory_serializer(set in tensor_set()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.bt");
        let mut last = (0, 0);
        let len = bintensors::write_file(&path, set.views(), set.metadata.as_ref(), &mut |done, total| last = (done, total)).unwrap();
        let written = std::fs::read(&path).unwrap();
        prop_assert_eq!(len, written.len() as u64);
        prop_assert_eq!(last, (len, len));
        prop_assert_eq!(written, bintensors::serialize(set.views(), set.metadata.as_ref()).unwrap());
    }
}

#[test]
fn design_worked_example_is_byte_exact() {
    let w: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let mask = [1u8, 0, 1];
    let tensors = [
        TensorView::new("w", DType::F32, &[2], &w).unwrap(),
        TensorView::new("mask", DType::Bool, &[3], &mask).unwrap(),
    ];
    let metadata = [("format", "pt"), ("a", "b")]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
    let bytes = bintensors::serialize(tensors, Some(&metadata)).unwrap();
    assert_eq!(bytes.len(), 59);
    assert_eq!(bytes, WORKED_EXAMPLE);

    let file = BinTensors::from_buffer(WORKED_EXAMPLE).unwrap();
    let names: Vec<&str> = file.tensors().map(|t| t.name()).collect();
    assert_eq!(names, ["w", "mask"], "file order: dtype descending");
    assert_eq!(file.tensor("w").unwrap().data(), w.as_slice());
    assert_eq!(file.tensor("mask").unwrap().data(), &mask);
    assert_eq!(file.metadata(), Some(&metadata));
    assert_eq!(file.header_len(), 40);
    assert_eq!(file.data_offset(), 48);
}

#[test]
fn reference_crate_test_vectors() {
    // From the reference's own tests: an empty file and one F32 [1, 2, 3].
    let empty = bintensors::serialize([], None).unwrap();
    assert_eq!(
        empty,
        [8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 32, 32, 32, 32, 32]
    );
    assert!(BinTensors::from_buffer(&empty).unwrap().is_empty());

    let data: Vec<u8> = (0..6).flat_map(|v| (v as f32).to_le_bytes()).collect();
    let view = TensorView::new("attn.0", DType::F32, &[1, 2, 3], &data).unwrap();
    let out = bintensors::serialize([view], None).unwrap();
    let mut expected = vec![
        16, 0, 0, 0, 0, 0, 0, 0, 0, 1, 6, 97, 116, 116, 110, 46, 48, 11, 3, 1, 2, 3, 0, 24,
    ];
    expected.extend_from_slice(&data);
    assert_eq!(out, expected);
}

#[test]
fn the_specs_stale_example_is_rejected() {
    // An older description of the format shows another layout (a tensor list plus an index
    // map); the reference no longer reads or writes it, and neither do we.
    let stale = b"\x10\x00\x00\x00\x00\x00\x00\x00\x00\x01\x09\x02\x01\x04\x00\x10\x01\x04\x74\x65\x73\x74\x00\x20\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";
    let err = BinTensors::from_buffer(&stale[..]).unwrap_err();
    assert!(
        matches!(err, Error::Layout(_) | Error::Bintensors(_)),
        "{err:?}"
    );
    assert!(::bintensors::BinTensors::deserialize(stale).is_err());
}

#[test]
fn empty_metadata_map_differs_from_none() {
    let none = bintensors::serialize([], None).unwrap();
    let empty = bintensors::serialize([], Some(&Default::default())).unwrap();
    assert_eq!(empty, [8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 32, 32, 32, 32, 32]);
    assert_ne!(none, empty);
    assert_eq!(
        BinTensors::from_buffer(&empty).unwrap().metadata(),
        Some(&Default::default())
    );
}

#[test]
fn writer_rejects_duplicate_names_and_oversized_headers() {
    let a = [0u8; 1];
    let dup = [
        TensorView::new("x", DType::U8, &[1], &a).unwrap(),
        TensorView::new("x", DType::I8, &[1], &a).unwrap(),
    ];
    assert!(matches!(
        bintensors::serialize(dup, None),
        Err(Error::Layout(LayoutError::DuplicateTensorName { .. }))
    ));

    let long = "k".repeat(60_000_000);
    let metadata = [(long.clone(), long)].into();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.bt");
    assert!(matches!(
        bintensors::write_file(&path, [], Some(&metadata), &mut |_, _| {}),
        Err(Error::Layout(LayoutError::HeaderTooLarge {
            limit: 100_000_000,
            ..
        }))
    ));
    assert!(
        !path.exists(),
        "nothing is written when the header is too large"
    );
}
