//! Times `HfTokenizer` (modelbin's engine) against Hugging Face's
//! `tokenizers` crate on the same tokenizer.json and corpus: one thread
//! each, in the same process, alternating, best of several passes. The ids
//! must be equal on every document before anything is timed.
//!
//! ```text
//! cargo run --release -p modelbin-tokenize --example hf_bench -- \
//!     TOKENIZER.json CORPUS_DIR [PASSES]
//! ```
//!
//! CORPUS_DIR holds `<category>.txt` files (scripts/bench/corpus.py); each is
//! cut into documents of at most 4 kB at line ends, one `encode` call per
//! document, without special tokens. Prints one line per category and a
//! total, with MB/s for both and modelbin's ratio.

use std::path::Path;
use std::time::Instant;

use modelbin_tokenize::HfTokenizer;

/// Documents of at most `max` bytes, cut after a newline where there is one.
fn documents(text: &str, max: usize) -> Vec<&str> {
    let mut out = vec![];
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.len().min(max);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end < rest.len()
            && let Some(nl) = rest[..end].rfind('\n')
        {
            end = nl + 1;
        }
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (json, corpus) = (Path::new(&args[1]), Path::new(&args[2]));
    let passes: usize = args.get(3).map_or(Ok(5), |p| p.parse())?;
    let ours = HfTokenizer::open(json)?;
    let theirs = tokenizers::Tokenizer::from_file(json).map_err(|e| e.to_string())?;
    println!("engine: {}  vocab: {}", ours.engine(), ours.vocab_size());
    let mut files: Vec<_> = std::fs::read_dir(corpus)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    let (mut total_bytes, mut total_ours, mut total_theirs) = (0usize, 0f64, 0f64);
    println!(
        "{:<18} {:>10} {:>12} {:>12} {:>7}",
        "category", "bytes", "modelbin MB/s", "tokenizers MB/s", "ratio"
    );
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        let docs = documents(&text, 4096);
        for doc in &docs {
            let a = ours.encode(doc, false)?;
            let b = theirs.encode(*doc, false).map_err(|e| e.to_string())?;
            assert_eq!(a, b.get_ids(), "{}: ids differ on {doc:?}", file.display());
        }
        let (mut best_ours, mut best_theirs) = (f64::MAX, f64::MAX);
        for _ in 0..passes {
            let start = Instant::now();
            for doc in &docs {
                std::hint::black_box(ours.encode(doc, false)?);
            }
            best_ours = best_ours.min(start.elapsed().as_secs_f64());
            let start = Instant::now();
            for doc in &docs {
                std::hint::black_box(theirs.encode(*doc, false).map_err(|e| e.to_string())?);
            }
            best_theirs = best_theirs.min(start.elapsed().as_secs_f64());
        }
        let mb = text.len() as f64 / 1e6;
        let name = file.file_stem().unwrap().to_string_lossy();
        println!(
            "{name:<18} {:>10} {:>12.1} {:>12.1} {:>7.2}",
            text.len(),
            mb / best_ours,
            mb / best_theirs,
            best_theirs / best_ours
        );
        total_bytes += text.len();
        total_ours += best_ours;
        total_theirs += best_theirs;
    }
    let mb = total_bytes as f64 / 1e6;
    println!(
        "{:<18} {:>10} {:>12.1} {:>12.1} {:>7.2}",
        "overall",
        total_bytes,
        mb / total_ours,
        mb / total_theirs,
        total_theirs / total_ours
    );
    Ok(())
}
