//! Sentence embeddings equal sentence-transformers' (golden embeddings of
//! all-MiniLM-L6-v2 in tests/data/minilm, produced by sentence-transformers):
//! cosine ≥ 0.9999 with F32 weights, ≥ 0.999 with F16 or BF16 weights.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use modelbin_format::DType;
use modelbin_format::convert::{HfOptions, from_hf_dir};
use modelbin_format::embd;
use modelbin_infer::{Embedder, cosine};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model_dir() -> PathBuf {
    let dir = repo().join("target/test-data/all-MiniLM-L6-v2");
    assert!(
        dir.join("model.safetensors").is_file(),
        "{} is missing: run scripts/fetch-test-data.sh (scripts/test.sh does)",
        dir.display()
    );
    dir
}

fn golden_lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(repo().join("tests/data/minilm").join(name))
        .unwrap()
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

struct Golden {
    sentences: Vec<String>,
    tokens: Vec<Vec<u32>>,
    embeddings: Vec<Vec<f32>>,
}

fn golden() -> &'static Golden {
    static GOLDEN: OnceLock<Golden> = OnceLock::new();
    GOLDEN.get_or_init(|| Golden {
        sentences: golden_lines("sentences.jsonl")
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        tokens: golden_lines("tokens.jsonl")
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        embeddings: golden_lines("embeddings.jsonl")
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    })
}

/// Converts the model directory to EMBD (optionally recast) in `dir`.
fn convert(dir: &Path, dtype: Option<DType>) -> PathBuf {
    let out = dir.join("model.embd");
    from_hf_dir(
        &model_dir(),
        &out,
        HfOptions {
            dtype,
            quantizer: Some(modelbin_infer::quantize_weight_blocks),
        },
        &mut |_, _| {},
    )
    .unwrap();
    out
}

fn embedder(dtype: Option<DType>) -> Embedder {
    let dir = tempfile::tempdir().unwrap();
    Embedder::open(convert(dir.path(), dtype)).unwrap()
}

fn min_cosine(embedder: &Embedder, one_at_a_time: bool) -> f32 {
    let g = golden();
    let texts: Vec<&str> = g.sentences.iter().map(String::as_str).collect();
    let vectors = if one_at_a_time {
        texts
            .iter()
            .map(|t| embedder.embed(&[t]).unwrap().remove(0))
            .collect()
    } else {
        embedder.embed(&texts).unwrap()
    };
    assert_eq!(vectors.len(), g.embeddings.len());
    vectors
        .iter()
        .zip(&g.embeddings)
        .enumerate()
        .map(|(i, (ours, want))| {
            assert_eq!(ours.len(), 384);
            let c = cosine(ours, want);
            assert!(c.is_finite(), "sentence {i}");
            c
        })
        .fold(f32::INFINITY, f32::min)
}

#[test]
fn f32_embeddings_equal_sentence_transformers() {
    let embedder = embedder(None);
    let g = golden();
    assert_eq!(g.sentences.len(), 40);
    for (text, ids) in g.sentences.iter().zip(&g.tokens) {
        assert_eq!(&embedder.tokenize(text), ids, "{text:?}");
    }
    let single = min_cosine(&embedder, true);
    let packed = min_cosine(&embedder, false);
    println!("min cosine: one at a time {single:.9}, packed batch {packed:.9}");
    assert!(single >= 0.9999, "one at a time: min cosine {single}");
    assert!(packed >= 0.9999, "packed: min cosine {packed}");
}

/// Texts longer than the model's context are counted as cut, from the
/// same tokenization as their embeddings.
#[test]
fn truncated_texts_are_counted_with_their_embeddings() {
    let embedder = embedder(None);
    let max = embedder.config().max_seq_length;
    let long = "word ".repeat(max);
    let just_fits = "word ".repeat(max - 2);
    let texts = ["A cat sits.", long.as_str(), just_fits.as_str(), ""];
    let embedded = embedder.embed_counting_truncations(&texts).unwrap();
    assert_eq!(embedded.truncated, 1);
    assert_eq!(embedded.vectors, embedder.embed(&texts).unwrap());
}

#[test]
fn packing_and_thread_count_do_not_change_results() {
    let embedder = embedder(None);
    let g = golden();
    let texts: Vec<&str> = g.sentences.iter().map(String::as_str).collect();
    let reference = embedder.embed(&texts).unwrap();
    for (threads, batch_tokens) in [(1, 1), (2, 64), (3, 100_000)] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let small = embedder.clone().with_batch_tokens(batch_tokens);
        let vectors = pool.install(|| small.embed(&texts).unwrap());
        for (a, b) in vectors.iter().zip(&reference) {
            let c = cosine(a, b);
            assert!(
                c > 0.999_999,
                "threads {threads}, batch {batch_tokens}: cosine {c}"
            );
        }
    }
}

#[test]
fn half_precision_weights_stay_close() {
    for dtype in [DType::F16, DType::BF16] {
        let min = min_cosine(&embedder(Some(dtype)), false);
        println!("{dtype}: min cosine {min:.9}");
        assert!(min >= 0.999, "{dtype}: min cosine {min}");
    }
}

#[test]
fn the_embedder_is_thread_safe() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Embedder>();
    let embedder = embedder(None);
    let texts = ["one sentence", "another one", "a third"];
    let alone = embedder.embed(&texts).unwrap();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| embedder.embed(&texts).unwrap()))
            .collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap(), alone);
        }
    });
}

/// A weight's first product packs as it goes and later ones use the packed
/// weights: the embeddings are the same bits either way, for a short text
/// alone (its products split by columns on two threads) and for a batch
/// (split by rows).
#[test]
fn first_and_later_embeddings_are_the_same_bits() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let bits = |vectors: Vec<Vec<f32>>| -> Vec<Vec<u32>> {
        vectors
            .iter()
            .map(|v| v.iter().map(|x| x.to_bits()).collect())
            .collect()
    };
    let longer = "and a second, longer one: ".repeat(9);
    for texts in [
        &["hi there"][..],
        &["the first sentence embedded", longer.as_str()][..],
    ] {
        // A fresh embedder, so that its first products are the unpacked ones.
        let embedder = embedder(None);
        let first = bits(pool.install(|| embedder.embed(texts).unwrap()));
        for _ in 0..2 {
            let later = bits(pool.install(|| embedder.embed(texts).unwrap()));
            assert_eq!(later, first, "{texts:?}");
        }
    }
}

#[test]
fn any_text_embeds_without_panicking() {
    let embedder = embedder(None);
    let long = "word ".repeat(100_000);
    let weird = "\u{0}\u{FFFD}\u{200B}😀[SEP][PAD]\u{E000}\t\r\n";
    let texts = ["", " ", long.as_str(), weird, "[CLS][CLS][CLS]"];
    let vectors = embedder.embed(&texts).unwrap();
    for v in &vectors {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
    }
    assert_eq!(embedder.tokenize(&long).len(), 256);
}

/// Texts of 1 to 300 words drawn from the model's vocabulary (`##`
/// continuations glued to the word before), seeded.
fn generated_texts(count: usize) -> Vec<String> {
    let vocab = std::fs::read_to_string(model_dir().join("vocab.txt")).unwrap();
    let tokens: Vec<&str> = vocab.lines().collect();
    let mut rng = modelbin_infer::rng::Rng::new(2026);
    (0..count)
        .map(|_| {
            let words = 1 + rng.below(300);
            let mut text = String::new();
            for _ in 0..words {
                let token = tokens[rng.below(tokens.len())];
                match token.strip_prefix("##") {
                    Some(rest) => text.push_str(rest),
                    None => {
                        text.push(' ');
                        text.push_str(token);
                    }
                }
            }
            text
        })
        .collect()
}

/// Int8 linear layers (weights with a scale per block of 32 inputs,
/// activations quantized per row with their four largest values kept in
/// f32) and int8 word embeddings (a scale per row) reach the target, a cosine of at least 0.999 to f32 for
/// every text. Every kernel must give the portable kernel's embeddings
/// exactly.
#[test]
fn int8_weights_stay_close_to_f32_with_every_kernel() {
    let float = embedder(None);
    let mut int8 = embedder(Some(DType::I8));
    assert!(int8.encoder().is_int8() && !float.encoder().is_int8());
    let mut texts = golden().sentences.clone();
    texts.extend(generated_texts(60));
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let reference = float.embed(&texts).unwrap();
    let mut first: Option<Vec<Vec<f32>>> = None;
    for kernel in modelbin_infer::Int8Kernel::available() {
        int8.set_int8_kernel(kernel).unwrap();
        let vectors = int8.embed(&texts).unwrap();
        let (worst, at) = vectors
            .iter()
            .zip(&reference)
            .map(|(a, b)| cosine(a, b))
            .zip(0..)
            .fold(
                (f32::INFINITY, 0),
                |m, (c, i)| if c < m.0 { (c, i) } else { m },
            );
        println!(
            "int8 {}: min cosine to f32 {worst:.6} (text {at})",
            kernel.name()
        );
        assert!(
            worst >= 0.999,
            "{}: text {at}: cosine {worst}",
            kernel.name()
        );
        match &first {
            None => first = Some(vectors),
            Some(first) => assert_eq!(
                &vectors,
                first,
                "{} differs from the portable kernel",
                kernel.name()
            ),
        }
    }
}

/// `--dtype int8` stores the word embeddings as int8 too (a scale per row),
/// which makes the int8 file smaller than the f16 one.
#[test]
fn an_int8_file_is_smaller_than_an_f16_one() {
    use modelbin_format::tensor::TensorStore;
    let size = |dtype: DType| {
        let dir = tempfile::tempdir().unwrap();
        let path = convert(dir.path(), Some(dtype));
        let word = embd::open(&path)
            .unwrap()
            .tensor(embd::int8::WORD_EMBEDDINGS)
            .unwrap()
            .dtype();
        (std::fs::metadata(&path).unwrap().len(), word)
    };
    let (int8, int8_word) = size(DType::I8);
    let (f16, f16_word) = size(DType::F16);
    println!("int8 file {int8} bytes, f16 file {f16} bytes");
    assert_eq!((int8_word, f16_word), (DType::I8, DType::F16));
    assert!(int8 < f16, "int8 {int8} bytes, f16 {f16} bytes");
}

/// A file from the first int8 converter (one scale per row of the linear
/// weights, the scale tensor `[n]`; the word embeddings F32) still loads
/// and embeds; that scheme's accuracy was about 0.986.
#[test]
fn int8_files_with_one_scale_per_row_still_embed() {
    use modelbin_format::embd::int8::{QMAX, is_linear_weight, scale_name};
    use modelbin_format::tensor::{TensorStore, TensorView};
    let dir = tempfile::tempdir().unwrap();
    let float_path = convert(dir.path(), None);
    let float = embd::open(&float_path).unwrap();
    // Each linear weight quantized the first converter's way: name, scale
    // tensor name, scale shape, values, scales.
    let mut quantized = Vec::new();
    for tensor in float.tensors().filter(|t| is_linear_weight(t.name())) {
        let k = tensor.shape()[1];
        let values = tensor.to_f32().unwrap();
        let (mut q, mut scales) = (Vec::new(), Vec::new());
        for row in values.chunks_exact(k) {
            let scale = row.iter().fold(0.0f32, |m, v| m.max(v.abs())) / QMAX;
            q.extend(row.iter().map(|v| (v / scale).round() as i8 as u8));
            scales.extend(scale.to_le_bytes());
        }
        let name = tensor.name().to_string();
        quantized.push((scale_name(&name), name, [tensor.shape()[0]], q, scales));
    }
    let mut views = Vec::new();
    for tensor in float.tensors() {
        match quantized.iter().find(|(_, name, ..)| name == tensor.name()) {
            Some((scale, name, rows, q, scales)) => {
                views.push(TensorView::new(name, DType::I8, tensor.shape(), q).unwrap());
                views.push(TensorView::new(scale, DType::F32, rows, scales).unwrap());
            }
            None => views.push(tensor),
        }
    }
    let tokens: Vec<&str> = float.tokens().collect();
    let vocabulary = embd::Vocabulary {
        tokens: &tokens,
        specials: float.special_tokens().unwrap(),
    };
    let path = dir.path().join("per-row.embd");
    embd::write_file(
        &path,
        &views,
        float.metadata().unwrap(),
        Some(&vocabulary),
        &embd::WriteOptions::default(),
        &mut |_, _| {},
    )
    .unwrap();
    let per_row = Embedder::open(&path).unwrap();
    assert!(per_row.encoder().is_int8());
    let reference = Embedder::open(&float_path).unwrap();
    let texts: Vec<&str> = golden().sentences.iter().map(String::as_str).collect();
    let worst = per_row
        .embed(&texts)
        .unwrap()
        .iter()
        .zip(&reference.embed(&texts).unwrap())
        .map(|(a, b)| cosine(a, b))
        .fold(f32::INFINITY, f32::min);
    assert!(worst > 0.98, "min cosine {worst}");
}
