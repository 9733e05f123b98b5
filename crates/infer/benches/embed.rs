//! Sentence-embedding throughput of our EMBD embedder against onnxruntime
//! running the same all-MiniLM-L6-v2 weights, in the same run, on the same
//! token ids: short (~20-token) and long (256-token) sentences, 1 and 2
//! threads. Also reports the FLOP rate and its fraction of the machine's
//! peak, and the same cases for the int8 file (against onnxruntime's f32
//! and dynamic-int8 models) and for f16 and bf16 files, with each file's
//! smallest cosine to the f32 embeddings on the golden sentences.
//!
//! Run: `scripts/fetch-test-data.sh && cargo bench -p modelbin-infer --bench embed`
//! (the onnxruntime side needs `python3 -m pip install -r scripts/bench/requirements.txt`;
//! without it only our figures are printed). Set `EMBED_BENCH_SECONDS` to
//! change the measuring time per case (default 5). With
//! `EMBED_BENCH_INT8_KERNELS=1` only the int8 file runs, at one thread, with
//! every int8 kernel this CPU has (each named as `MODELBIN_INT8_TIER` takes
//! it), against onnxruntime's f32 and int8 models in the same run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use modelbin_format::DType;
use modelbin_format::convert::{HfOptions, from_hf_dir};
use modelbin_format::embd;
use modelbin_infer::Embedder;
use modelbin_infer::bert::DEFAULT_BATCH_TOKENS;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Sentences of real text: the repository's documentation, split into runs
/// of `words` words.
fn sentences(words: usize, count: usize) -> Vec<String> {
    let mut text = String::new();
    for doc in [
        "README.md",
        "docs/benchmarks.md",
        "docs/formats/bintensors.md",
        "docs/formats/saev.md",
    ] {
        text.push_str(&std::fs::read_to_string(repo().join(doc)).unwrap_or_default());
    }
    let all: Vec<&str> = text.split_whitespace().collect();
    (0..count)
        .map(|i| {
            let start = (i * 7 * words) % all.len().saturating_sub(words).max(1);
            all[start..(start + words).min(all.len())].join(" ")
        })
        .collect()
}

/// Sentences per second embedding `ids` repeatedly for at least `seconds`.
fn measure(
    embedder: &Embedder,
    ids: &[Vec<u32>],
    threads: usize,
    batch: usize,
    seconds: Duration,
) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let run = |count: &mut usize| {
            for chunk in ids.chunks(batch) {
                embedder.embed_ids(chunk).unwrap();
                *count += chunk.len();
            }
        };
        run(&mut 0);
        let (start, mut count) = (Instant::now(), 0);
        while start.elapsed() < seconds {
            run(&mut count);
        }
        count as f64 / start.elapsed().as_secs_f64()
    })
}

/// onnxruntime's sentences per second on the same ids (its float graph, or
/// its `quantize_dynamic` int8 model of it), or why not.
fn onnxruntime(
    model_dir: &Path,
    ids_file: &Path,
    (threads, batch, int8): (usize, usize, bool),
    seconds: Duration,
) -> Result<f64, String> {
    let output = Command::new("python3")
        .arg(repo().join("scripts/bench/minilm_onnx.py"))
        .args(["--model-dir".as_ref(), model_dir.as_os_str()])
        .args([
            "--onnx".as_ref(),
            repo()
                .join("target/bench-data/all-MiniLM-L6-v2.onnx")
                .as_os_str(),
        ])
        .args(["--ids".as_ref(), ids_file.as_os_str()])
        .args([
            "--threads",
            &threads.to_string(),
            "--batch-size",
            &batch.to_string(),
        ])
        .args(["--seconds", &seconds.as_secs_f64().to_string()])
        .args(int8.then_some("--int8"))
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        return Err(err.lines().last().unwrap_or("failed").to_owned());
    }
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
    json["sentences_per_s"]
        .as_f64()
        .ok_or_else(|| "no sentences_per_s".into())
}

/// FLOPs of one forward pass over a `tokens`-token sequence.
fn flops(embedder: &Embedder, tokens: usize) -> f64 {
    let c = embedder.config();
    let (h, f, t) = (
        c.hidden_size as f64,
        c.intermediate_size as f64,
        tokens as f64,
    );
    let linear = 2.0 * t * (4.0 * h * h + 2.0 * h * f);
    let attention = 4.0 * t * t * h;
    c.num_layers as f64 * (linear + attention)
}

/// The machine's peak f32 FLOP rate on one core: twelve independent AVX2
/// FMA chains (enough to fill both FMA pipes), in GFLOP/s.
#[cfg(target_arch = "x86_64")]
fn peak_gflops_per_core() -> Option<f64> {
    use std::arch::x86_64::*;
    #[target_feature(enable = "avx2,fma")]
    fn chains(iterations: u64) -> f32 {
        let mut acc = [_mm256_set1_ps(1.0); 12];
        let (b, c) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
        for _ in 0..iterations {
            for a in acc.iter_mut() {
                *a = _mm256_fmadd_ps(*a, b, c);
            }
        }
        let mut total = 0.0;
        for a in acc {
            let mut lanes = [0.0f32; 8];
            // SAFETY: `lanes` holds 8 floats.
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), a) };
            total += lanes.iter().sum::<f32>();
        }
        total
    }
    if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
        return None;
    }
    let iterations = 100_000_000;
    let start = Instant::now();
    // SAFETY: AVX2 and FMA were detected above.
    std::hint::black_box(unsafe { chains(iterations) });
    Some(iterations as f64 * 12.0 * 8.0 * 2.0 / start.elapsed().as_secs_f64() / 1e9)
}

#[cfg(not(target_arch = "x86_64"))]
fn peak_gflops_per_core() -> Option<f64> {
    None
}

fn main() {
    let model_dir = repo().join("target/test-data/all-MiniLM-L6-v2");
    assert!(model_dir.is_dir(), "run scripts/fetch-test-data.sh first");
    let bench_dir = repo().join("target/bench-data");
    std::fs::create_dir_all(&bench_dir).unwrap();
    let model = bench_dir.join("all-MiniLM-L6-v2.embd");
    if !model.is_file() {
        from_hf_dir(&model_dir, &model, HfOptions::default(), &mut |_, _| {}).unwrap();
    }
    let embedder = Embedder::open(&model).unwrap();
    let seconds = Duration::from_secs_f64(
        std::env::var("EMBED_BENCH_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5.0),
    );
    let peak = peak_gflops_per_core();
    match peak {
        Some(p) => println!("peak f32 FMA rate: {p:.1} GFLOP/s per core (AVX2 FMA loop)"),
        None => println!("peak f32 FMA rate: not measured (needs x86-64 AVX2 + FMA)"),
    }
    println!(
        "element-wise kernels (LayerNorm, GELU, softmax, int8 input quantization): {}",
        modelbin_infer::elementwise_instruction_set()
    );
    println!(
        "case                  threads batch  tokens/sent  ours sent/s  GFLOP/s  % peak  onnxruntime sent/s  ratio"
    );
    let int8_model = bench_dir.join("all-MiniLM-L6-v2-int8.embd");
    embd::recast(
        &embd::open(&model).unwrap(),
        &int8_model,
        Some(DType::I8),
        Some(modelbin_infer::quantize_weight_blocks),
        &mut |_, _| {},
    )
    .unwrap();
    let int8 = Embedder::open(&int8_model).unwrap();
    // f16 and bf16 storage: decoded to f32 at load, so their speed should
    // be f32's; measured anyway, with their cosine.
    let half_precision: Vec<(&str, Embedder)> = [("f16", DType::F16), ("bf16", DType::BF16)]
        .into_iter()
        .map(|(name, dtype)| {
            let path = bench_dir.join(format!("all-MiniLM-L6-v2-{name}.embd"));
            embd::recast(
                &embd::open(&model).unwrap(),
                &path,
                Some(dtype),
                None,
                &mut |_, _| {},
            )
            .unwrap();
            (name, Embedder::open(&path).unwrap())
        })
        .collect();
    if std::env::var_os("EMBED_BENCH_INT8_KERNELS").is_some() {
        int8_kernels(&embedder, int8, &model_dir, &bench_dir, seconds);
        return;
    }
    let mut int8_rows = Vec::new();
    let mut half_rows = Vec::new();
    for (name, words, count) in CASES {
        let (ids, ids_file, mean_tokens) = case_ids(&embedder, &bench_dir, name, words, count);
        let flops_per_sentence =
            ids.iter().map(|s| flops(&embedder, s.len())).sum::<f64>() / ids.len() as f64;
        for threads in [1, 2] {
            for batch in [1, 32] {
                let ours = measure(&embedder, &ids, threads, batch, seconds);
                let gflops = ours * flops_per_sentence / 1e9;
                let theirs = onnxruntime(&model_dir, &ids_file, (threads, batch, false), seconds);
                let ratio = theirs
                    .as_ref()
                    .map_or("-".into(), |v| format!("{:.2}x", ours / v));
                let halves: Vec<f64> = half_precision
                    .iter()
                    .map(|(_, e)| measure(e, &ids, threads, batch, seconds))
                    .collect();
                half_rows.push((name, threads, batch, ours, halves));
                let ours_int8 = measure(&int8, &ids, threads, batch, seconds);
                let theirs_int8 =
                    onnxruntime(&model_dir, &ids_file, (threads, batch, true), seconds);
                int8_rows.push((name, threads, batch, ours_int8, theirs.clone(), theirs_int8));
                let theirs = theirs.map_or_else(|e| format!("n/a ({e})"), |v| format!("{v:.1}"));
                let fraction = peak.map_or("-".into(), |p| {
                    format!("{:.0}%", 100.0 * gflops / (p * threads as f64))
                });
                println!(
                    "{name:<21} {threads:>7} {batch:>5} {mean_tokens:>12.1} {ours:>12.1} {gflops:>8.1} {fraction:>7} {theirs:>19} {ratio:>6}"
                );
            }
        }
    }
    println!(
        "(ours packs each batch without padding, at most {DEFAULT_BATCH_TOKENS} tokens per pass; onnxruntime pads each batch to its longest sentence)"
    );
    println!(
        "\nint8 (linear layers int8, activations quantized per row; kernel {}; CPU has {})",
        int8.encoder().int8_kernel().name(),
        cpu_features()
    );
    println!(
        "case   threads batch  ours int8 sent/s  ort f32 sent/s  ratio  ort int8 sent/s  ratio"
    );
    for (name, threads, batch, ours, f32_theirs, int8_theirs) in int8_rows {
        let (f, fr) = shown(&f32_theirs, ours);
        let (i, ir) = shown(&int8_theirs, ours);
        println!("{name:<6} {threads:>7} {batch:>5} {ours:>17.1} {f:>15} {fr:>6} {i:>16} {ir:>6}");
    }
    let golden = golden_min_cosine(&embedder, &int8);
    println!("int8 min cosine to f32 on the 40 golden sentences: ours {golden:.6}");
    let names: Vec<&str> = half_precision.iter().map(|(name, _)| *name).collect();
    println!("\nhalf-precision storage (decoded to f32 at load), sent/s and ratio to our f32 file");
    println!("case   threads batch  ours f32  {}", names.join("  "));
    for (name, threads, batch, f32_rate, rates) in half_rows {
        let cells: Vec<String> = rates
            .iter()
            .map(|r| format!("{r:.1} ({:.2}x)", r / f32_rate))
            .collect();
        println!(
            "{name:<6} {threads:>7} {batch:>5} {f32_rate:>9.1}  {}",
            cells.join("  ")
        );
    }
    for (name, half) in &half_precision {
        let golden = golden_min_cosine(&embedder, half);
        println!("{name} min cosine to f32 on the 40 golden sentences: {golden:.6}");
    }
}

/// The sentence cases: name, words per sentence, sentences.
const CASES: [(&str, usize, usize); 2] = [("short", 9, 256), ("long", 400, 32)];

/// A case's token ids, written to a JSON-lines file for onnxruntime too:
/// the ids, the file, the mean tokens per sentence.
fn case_ids(
    embedder: &Embedder,
    bench_dir: &Path,
    name: &str,
    words: usize,
    count: usize,
) -> (Vec<Vec<u32>>, PathBuf, f64) {
    let ids: Vec<Vec<u32>> = sentences(words, count)
        .iter()
        .map(|s| embedder.tokenize(s))
        .collect();
    let mean_tokens = ids.iter().map(Vec::len).sum::<usize>() as f64 / ids.len() as f64;
    let ids_file = bench_dir.join(format!("embed-{name}.jsonl"));
    let lines: Vec<String> = ids
        .iter()
        .map(|s| serde_json::to_string(s).unwrap())
        .collect();
    std::fs::write(&ids_file, lines.join("\n") + "\n").unwrap();
    (ids, ids_file, mean_tokens)
}

/// The int8 file at one thread with each int8 kernel this CPU has, and
/// onnxruntime's f32 and int8 models, on each case at batch 1 and 32.
fn int8_kernels(
    embedder: &Embedder,
    mut int8: Embedder,
    model_dir: &Path,
    bench_dir: &Path,
    seconds: Duration,
) {
    let kernels: Vec<_> = modelbin_infer::Int8Kernel::available()
        .into_iter()
        .filter(|k| *k != modelbin_infer::Int8Kernel::Portable)
        .collect();
    println!(
        "\nint8 kernels, one thread (CPU has {}); sent/s and ratios to onnxruntime's f32 and int8 models",
        cpu_features()
    );
    println!(
        "case   batch  tokens/sent  kernel        ours sent/s  ort f32 sent/s  ratio  ort int8 sent/s  ratio"
    );
    for (name, words, count) in CASES {
        let (ids, ids_file, mean_tokens) = case_ids(embedder, bench_dir, name, words, count);
        for batch in [1, 32] {
            let theirs_f32 = onnxruntime(model_dir, &ids_file, (1, batch, false), seconds);
            let theirs_int8 = onnxruntime(model_dir, &ids_file, (1, batch, true), seconds);
            for &kernel in &kernels {
                int8.set_int8_kernel(kernel).unwrap();
                let ours = measure(&int8, &ids, 1, batch, seconds);
                let (f, fr) = shown(&theirs_f32, ours);
                let (i, ir) = shown(&theirs_int8, ours);
                println!(
                    "{name:<6} {batch:>5} {mean_tokens:>12.1}  {:<12} {ours:>12.1} {f:>15} {fr:>6} {i:>16} {ir:>6}",
                    kernel.name()
                );
            }
        }
    }
}

/// An onnxruntime rate and our rate's ratio to it, as table cells.
fn shown(theirs: &Result<f64, String>, ours: f64) -> (String, String) {
    match theirs {
        Ok(v) => (format!("{v:.1}"), format!("{:.2}x", ours / v)),
        Err(e) => (format!("n/a ({e})"), "-".into()),
    }
}

/// The smallest cosine between the two embedders' embeddings of the golden
/// sentences (`tests/data/minilm`).
fn golden_min_cosine(a: &Embedder, b: &Embedder) -> f32 {
    let text = std::fs::read_to_string(repo().join("tests/data/minilm/sentences.jsonl")).unwrap();
    let sentences: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let texts: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let (x, y) = (a.embed(&texts).unwrap(), b.embed(&texts).unwrap());
    x.iter()
        .zip(&y)
        .map(|(x, y)| modelbin_infer::cosine(x, y))
        .fold(f32::INFINITY, f32::min)
}

/// The SIMD features the kernels look for that this CPU has.
fn cpu_features() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let mut found = Vec::new();
        macro_rules! probe {
            ($($f:tt),*) => {$(if std::arch::is_x86_feature_detected!($f) { found.push($f); })*};
        }
        probe!(
            "avx2",
            "fma",
            "avx512f",
            "avx512bw",
            "avx512vnni",
            "avxvnni"
        );
        found.join(" ")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        "no x86-64 features".to_owned()
    }
}
