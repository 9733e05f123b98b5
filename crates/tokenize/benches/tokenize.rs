//! Tokenizer throughput against the anchors on the same text in the same run:
//! modelbin vs tiktoken-rs 0.12.1 vs bpe-openai 0.3.2, single thread, on
//! 8 MB of real prose and 8 MB of real source code (scripts/fetch-bench-data.sh),
//! both encodings; the parallel count on all cores; vocabulary load time; and
//! one huge piece.
//!
//! Run: `scripts/fetch-bench-data.sh && cargo bench -p modelbin-tokenize --bench tokenize`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use modelbin_tokenize::{Source, Tokenizer};

fn corpus(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/bench-data")
        .join(format!("{name}.txt"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run scripts/fetch-bench-data.sh", path.display()))
}

fn encode(c: &mut Criterion) {
    for corpus_name in ["prose", "source"] {
        let text = corpus(corpus_name);
        let mut group = c.benchmark_group(format!("encode/{corpus_name}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(10));
        for encoding in ["cl100k_base", "o200k_base"] {
            let ours = Tokenizer::embedded(encoding).unwrap();
            let (tiktoken, bpe) = match encoding {
                "cl100k_base" => (
                    tiktoken_rs::cl100k_base().unwrap(),
                    bpe_openai::cl100k_base(),
                ),
                _ => (tiktoken_rs::o200k_base().unwrap(), bpe_openai::o200k_base()),
            };
            assert_eq!(
                ours.encode_ordinary(&text).unwrap(),
                tiktoken.encode_ordinary(&text),
                "same ids"
            );
            group.bench_function(BenchmarkId::new("modelbin", encoding), |b| {
                b.iter(|| ours.encode_ordinary(black_box(&text)))
            });
            group.bench_function(BenchmarkId::new("tiktoken-rs", encoding), |b| {
                b.iter(|| tiktoken.encode_ordinary(black_box(&text)))
            });
            group.bench_function(BenchmarkId::new("bpe-openai", encoding), |b| {
                b.iter(|| bpe.encode(black_box(text.as_str())))
            });
            group.bench_function(BenchmarkId::new("modelbin count_parallel", encoding), |b| {
                b.iter(|| ours.count_parallel(black_box(&text)))
            });
        }
        group.finish();
    }
}

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load cl100k_base");
    group.sample_size(10);
    let bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vocab/cl100k_base.bpe2"),
    )
    .unwrap();
    let bytes: &'static [u8] = bytes.leak();
    group.bench_function("modelbin BPE2 (first token out)", |b| {
        b.iter(|| {
            let t = Tokenizer::from_bpe2(Source::Static(bytes), None).unwrap();
            t.encode_ordinary("hello")
        })
    });
    group.bench_function("tiktoken-rs .tiktoken (first token out)", |b| {
        b.iter(|| tiktoken_rs::cl100k_base().unwrap().encode_ordinary("hello"))
    });
    group.finish();
}

fn huge_piece(c: &mut Criterion) {
    let mut group = c.benchmark_group("one 1,000,000-byte piece");
    group.sample_size(10);
    let ours = Tokenizer::embedded("cl100k_base").unwrap();
    let tiktoken = tiktoken_rs::cl100k_base().unwrap();
    for (label, byte) in [("a", "a"), ("underscore", "_"), ("space", " ")] {
        let text = byte.repeat(1_000_000);
        group.bench_function(BenchmarkId::new("modelbin", label), |b| {
            b.iter(|| ours.encode_ordinary(black_box(&text)))
        });
        // tiktoken-rs's regex overflows its stack on a million spaces.
        if byte != " " {
            group.bench_function(BenchmarkId::new("tiktoken-rs", label), |b| {
                b.iter(|| tiktoken.encode_ordinary(black_box(&text)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, encode, load, huge_piece);
criterion_main!(benches);
