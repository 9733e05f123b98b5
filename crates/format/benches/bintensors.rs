//! BinTensors against the anchors, on the same input in the same run:
//! 500 tensors of F32 [1000, 500] (1 GB of data).
//!
//! - `open_validate_access`: parse and validate the header, then fetch every
//!   tensor by name — ours vs `bintensors` 0.1.1 vs `safetensors` 0.8.
//! - `write`: write the whole file — ours (atomic, fsynced) vs the reference
//!   serializer vs `cp` of the same bytes, with and without a final fsync.
//!
//! Run: `cargo bench -p modelbin-format --bench bintensors`.

use std::borrow::Cow;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use modelbin_format::bintensors::{self, BinTensors};
use modelbin_format::{DType, TensorStore, TensorView};

const TENSORS: usize = 500;
const SHAPE: [usize; 2] = [1000, 500];

struct Input {
    names: Vec<String>,
    data: Vec<u8>,
}

impl Input {
    fn new() -> Self {
        let data = (0..SHAPE[0] * SHAPE[1])
            .flat_map(|i| (i as f32).to_le_bytes())
            .collect();
        let names = (0..TENSORS).map(|i| format!("layers.{i}.weight")).collect();
        Input { names, data }
    }

    fn views(&self) -> impl Iterator<Item = TensorView<'_>> {
        self.names
            .iter()
            .map(|n| TensorView::new(n, DType::F32, &SHAPE, &self.data).unwrap())
    }
}

/// A tensor as the reference crates' `View` traits want it.
struct Anchor<'a>(&'a [u8]);

impl ::bintensors::tensor::View for Anchor<'_> {
    fn dtype(&self) -> ::bintensors::tensor::Dtype {
        ::bintensors::tensor::Dtype::F32
    }
    fn shape(&self) -> &[usize] {
        &SHAPE
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.0)
    }
    fn data_len(&self) -> usize {
        self.0.len()
    }
}

impl safetensors::View for Anchor<'_> {
    fn dtype(&self) -> safetensors::Dtype {
        safetensors::Dtype::F32
    }
    fn shape(&self) -> &[usize] {
        &SHAPE
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.0)
    }
    fn data_len(&self) -> usize {
        self.0.len()
    }
}

fn open_validate_access(c: &mut Criterion) {
    let input = Input::new();
    let bt = bintensors::serialize(input.views(), None).unwrap();
    let st = safetensors::serialize(
        input
            .names
            .iter()
            .map(|n| (n.as_str(), Anchor(&input.data))),
        None,
    )
    .unwrap();
    let mut group = c.benchmark_group("open_validate_access");
    group.bench_function("modelbin", |b| {
        b.iter(|| {
            let file = BinTensors::from_buffer(black_box(bt.as_slice())).unwrap();
            for name in &input.names {
                black_box(file.tensor(name).unwrap().data().as_ptr());
            }
        })
    });
    group.bench_function("bintensors-0.1.1", |b| {
        b.iter(|| {
            let file = ::bintensors::BinTensors::deserialize(black_box(&bt)).unwrap();
            for name in &input.names {
                black_box(file.tensor(name).unwrap().data().as_ptr());
            }
        })
    });
    group.bench_function("safetensors-0.8", |b| {
        b.iter(|| {
            let file = safetensors::SafeTensors::deserialize(black_box(&st)).unwrap();
            for name in &input.names {
                black_box(file.tensor(name).unwrap().data().as_ptr());
            }
        })
    });
    group.finish();
}

fn scratch_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-scratch");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(c: &mut Criterion) {
    let input = Input::new();
    let dir = scratch_dir();
    let ours = dir.join("ours.bt");
    let reference = dir.join("reference.bt");
    let copy = dir.join("copy.bt");
    let total = bintensors::write_file(&ours, input.views(), None, &mut |_, _| {}).unwrap();

    let mut group = c.benchmark_group("write");
    group.throughput(Throughput::Bytes(total));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("modelbin (atomic, fsync)", |b| {
        b.iter(|| bintensors::write_file(&ours, input.views(), None, &mut |_, _| {}).unwrap())
    });
    group.bench_function("bintensors-0.1.1 serialize_to_file (no fsync)", |b| {
        b.iter(|| {
            ::bintensors::serialize_to_file(
                input
                    .names
                    .iter()
                    .map(|n| (n.as_str(), Anchor(&input.data))),
                &None,
                &reference,
            )
            .unwrap()
        })
    });
    group.bench_function("cp (no fsync)", |b| {
        b.iter(|| run(Command::new("cp").arg(&ours).arg(&copy)))
    });
    group.bench_function("cp + sync", |b| {
        b.iter(|| {
            run(Command::new("cp").arg(&ours).arg(&copy));
            run(Command::new("sync").arg(&copy));
        })
    });
    group.finish();
    for path in [ours, reference, copy] {
        let _ = std::fs::remove_file(path);
    }
}

fn run(command: &mut Command) {
    assert!(command.status().unwrap().success(), "{command:?} failed");
}

criterion_group!(benches, open_validate_access, write);
criterion_main!(benches);
