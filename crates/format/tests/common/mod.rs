//! Helpers shared by the integration tests: generated tensor sets and the
//! mapping of our dtypes onto the reference crates' enums.
#![allow(dead_code)] // each test binary uses a different subset

use std::collections::{BTreeMap, HashMap};

use modelbin_format::{DType, TensorView};
use proptest::prelude::*;

/// An owned tensor, as a test generates it.
#[derive(Debug, Clone)]
pub struct OwnedTensor {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

impl OwnedTensor {
    pub fn view(&self) -> TensorView<'_> {
        TensorView::new(&self.name, self.dtype, &self.shape, &self.data).unwrap()
    }
}

/// A generated file's content: tensors with unique names, optional metadata.
#[derive(Debug, Clone)]
pub struct TensorSet {
    pub tensors: Vec<OwnedTensor>,
    pub metadata: Option<BTreeMap<String, String>>,
}

impl TensorSet {
    pub fn views(&self) -> Vec<TensorView<'_>> {
        self.tensors.iter().map(OwnedTensor::view).collect()
    }

    pub fn metadata_hashmap(&self) -> Option<HashMap<String, String>> {
        self.metadata
            .as_ref()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

pub fn bintensors_dtype(dtype: DType) -> ::bintensors::tensor::Dtype {
    use ::bintensors::tensor::Dtype as D;
    match dtype {
        DType::Bool => D::BOOL,
        DType::U8 => D::U8,
        DType::I8 => D::I8,
        DType::F8E5M2 => D::F8_E5M2,
        DType::F8E4M3 => D::F8_E4M3,
        DType::I16 => D::I16,
        DType::U16 => D::U16,
        DType::F16 => D::F16,
        DType::BF16 => D::BF16,
        DType::I32 => D::I32,
        DType::U32 => D::U32,
        DType::F32 => D::F32,
        DType::F64 => D::F64,
        DType::I64 => D::I64,
        DType::U64 => D::U64,
    }
}

pub fn safetensors_dtype(dtype: DType) -> safetensors::Dtype {
    use safetensors::Dtype as D;
    match dtype {
        DType::Bool => D::BOOL,
        DType::U8 => D::U8,
        DType::I8 => D::I8,
        DType::F8E5M2 => D::F8_E5M2,
        DType::F8E4M3 => D::F8_E4M3,
        DType::I16 => D::I16,
        DType::U16 => D::U16,
        DType::F16 => D::F16,
        DType::BF16 => D::BF16,
        DType::I32 => D::I32,
        DType::U32 => D::U32,
        DType::F32 => D::F32,
        DType::F64 => D::F64,
        DType::I64 => D::I64,
        DType::U64 => D::U64,
    }
}

/// Shapes: scalars, small ones, zero-size ones whose dimensions need
/// multi-byte varints (251.., 65536.., 2^32..), and a long vector.
fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        3 => prop::collection::vec(1usize..5, 0..4),
        1 => Just(vec![]),
        1 => prop::sample::select(vec![251usize, 65_535, 65_536, 1 << 32, usize::MAX])
            .prop_map(|big| vec![0, big]),
        1 => (251usize..400).prop_map(|n| vec![n]),
    ]
}

fn tensor_body() -> impl Strategy<Value = (DType, Vec<usize>, u64)> {
    (
        prop::sample::select(DType::ALL.to_vec()),
        shape(),
        any::<u64>(),
    )
}

/// Deterministic bytes for a tensor, from a seed.
fn fill(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9_.]{0,12}",
        "\\PC{0,6}",
        Just(String::new()),
        "[a-z]{300,310}",
    ]
}

fn metadata() -> impl Strategy<Value = Option<BTreeMap<String, String>>> {
    prop::option::of(prop::collection::btree_map("\\PC{0,8}", "\\PC{0,20}", 0..5))
}

/// Random tensor sets over all 15 dtypes.
pub fn tensor_set() -> impl Strategy<Value = TensorSet> {
    (
        prop::collection::btree_map(name(), tensor_body(), 0..8),
        metadata(),
    )
        .prop_map(|(bodies, metadata)| {
            let tensors = bodies
                .into_iter()
                .map(|(name, (dtype, shape, seed))| {
                    let len = dtype.size() * shape.iter().product::<usize>();
                    OwnedTensor {
                        name,
                        dtype,
                        data: fill(len, seed),
                        shape,
                    }
                })
                .collect();
            TensorSet { tensors, metadata }
        })
}

/// The 59-byte worked example of docs/formats/bintensors.md.
pub const WORKED_EXAMPLE: &[u8] = include_bytes!("../../../../tests/data/worked-example.bt");

/// Location of the real all-MiniLM-L6-v2 `model.safetensors`, fetched by
/// `scripts/fetch-test-data.sh` (the README's test command runs it).
pub fn minilm_safetensors() -> std::path::PathBuf {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-data/all-MiniLM-L6-v2/model.safetensors");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/fetch-test-data.sh (scripts/test.sh does)",
        path.display()
    );
    path
}

/// One of our views handed to the `safetensors` crate's serializer.
pub struct SafeRef<'a>(pub TensorView<'a>);

impl safetensors::View for SafeRef<'_> {
    fn dtype(&self) -> safetensors::Dtype {
        safetensors_dtype(self.0.dtype())
    }
    fn shape(&self) -> &[usize] {
        self.0.shape()
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(self.0.data())
    }
    fn data_len(&self) -> usize {
        self.0.data().len()
    }
}

/// The first value of every row a SAEV loader yields: in the SAEV tests it
/// identifies the row's (image, layer, token).
pub fn loader_keys(loader: modelbin_format::saev::Loader) -> Vec<u32> {
    loader
        .flat_map(|b| {
            assert_eq!(b.data.len(), b.rows * b.dim);
            b.data
                .chunks_exact(b.dim)
                .map(|r| r[0] as u32)
                .collect::<Vec<_>>()
        })
        .collect()
}
pub mod embd;
pub mod saev;
pub mod tllm;
