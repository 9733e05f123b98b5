//! Timing of a decoder language model for scripts/bench/lm.py, which runs
//! transformers on the same model in the same run:
//!
//! ```text
//! lm_bench activations DIR WINDOWS WINDOW LAYER   # f32 and int8 seconds, int8 cosines
//! lm_bench generate DIR PROMPT_LEN NEW_TOKENS     # greedy, f32 and int8 seconds
//! lm_bench bandwidth MIB                          # memory read rate, GB/s
//! ```
//!
//! The read rate bounds generation at batch 1, which reads every weight
//! once per token: it sums `MIB` MiB of memory on every thread of the
//! pool, best of five passes.
//!
//! Token ids are a fixed pseudo-random sequence (below the vocabulary).
//! Loading is not timed. Prints one JSON object.

use std::path::Path;
use std::time::Instant;

use modelbin_infer::generation::Sampling;
use modelbin_infer::lm::{self, LanguageModel, LoadOptions, Site};

fn ids(n: usize, vocab: usize) -> Vec<u32> {
    let mut state = 12345u64;
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % vocab as u64) as u32
        })
        .collect()
}

/// The best of five passes summing `bytes` of memory in parallel, in
/// GB/s; integer sums, which the compiler vectorises, so that the pass is
/// bound by memory and not by the adds.
fn read_rate(bytes: usize) -> f64 {
    use rayon::prelude::*;
    let words: Vec<u64> = (0..bytes / 8).map(|i| i as u64).collect();
    let mut best = f64::INFINITY;
    let mut total = 0u64;
    for _ in 0..5 {
        let started = Instant::now();
        let sum = words
            .par_chunks(1 << 16)
            .map(|chunk| chunk.iter().fold(0u64, |a, &w| a.wrapping_add(w)))
            .reduce(|| 0, u64::wrapping_add);
        best = best.min(started.elapsed().as_secs_f64());
        total = total.wrapping_add(std::hint::black_box(sum));
    }
    std::hint::black_box(total);
    bytes as f64 / best / 1e9
}

fn arg(args: &[String], i: usize) -> usize {
    args[i].parse().expect("a count")
}

fn main() -> Result<(), modelbin_infer::Error> {
    let args: Vec<String> = std::env::args().collect();
    if args[1] == "bandwidth" {
        println!("{{\"gb_per_s\": {}}}", read_rate(arg(&args, 2) << 20));
        return Ok(());
    }
    let dir = Path::new(&args[2]);
    let f32_model = LanguageModel::open(dir)?;
    let int8 = LanguageModel::open_with(dir, LoadOptions::int8(true))?;
    let vocab = f32_model.config().vocab_size;
    match args[1].as_str() {
        "activations" => {
            let (windows, window, layer) = (arg(&args, 3), arg(&args, 4), arg(&args, 5));
            let tokens = ids(windows * window, vocab);
            let time = |model: &LanguageModel| -> Result<(f64, Vec<f32>), modelbin_infer::Error> {
                let started = Instant::now();
                let mut rows = model.activations(&tokens, window, &[layer], Site::ResidPost)?;
                Ok((started.elapsed().as_secs_f64(), rows.remove(0)))
            };
            let (f32_seconds, a) = time(&f32_model)?;
            let (int8_seconds, b) = time(&int8)?;
            let h = f32_model.config().hidden;
            let cosines: Vec<f32> = a
                .chunks_exact(h)
                .zip(b.chunks_exact(h))
                .map(|(a, b)| modelbin_infer::cosine(a, b))
                .collect();
            let min = cosines.iter().copied().fold(1.0f32, f32::min);
            let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
            println!(
                "{{\"f32\": {f32_seconds}, \"int8\": {int8_seconds}, \"cosine_min\": {min}, \"cosine_mean\": {mean}}}"
            );
        }
        "generate" => {
            let (prompt_len, new_tokens) = (arg(&args, 3), arg(&args, 4));
            let prompt = ids(prompt_len, vocab);
            let f32_run = lm::generate(
                &f32_model,
                &prompt,
                new_tokens,
                Sampling::default(),
                &[],
                |_| {},
            )?;
            let int8_run =
                lm::generate(&int8, &prompt, new_tokens, Sampling::default(), &[], |_| {})?;
            let same = f32_run
                .ids
                .iter()
                .zip(&int8_run.ids)
                .take_while(|(a, b)| a == b)
                .count();
            println!(
                "{{\"f32\": {}, \"int8\": {}, \"ids\": {:?}, \"int8_agree\": {same}}}",
                f32_run.seconds, int8_run.seconds, f32_run.ids
            );
        }
        other => panic!("unknown mode {other}"),
    }
    Ok(())
}
