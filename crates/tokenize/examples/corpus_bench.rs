//! Per-category tokenizer throughput on the benchmark corpus (issue 17), in
//! process, single thread, both encodings: modelbin vs tiktoken-rs vs
//! bpe-openai.
//!
//! Reads `target/bench-corpus/<category>.txt` (built by
//! `scripts/bench/corpus.py`) and splits each file into documents by the rule
//! `scripts/bench/corpus.py::split_documents` implements too: split on
//! `"\n\n"`, then merge consecutive parts (re-joined with `"\n\n"`, so a
//! document is a contiguous slice of the file) while the document stays at
//! most 4096 bytes; a longer part is a document by itself; empty documents are
//! dropped.
//!
//! Before anything is timed, modelbin's ids must equal tiktoken-rs's on every
//! document of every category, for both encodings (a panic names the first
//! document that differs); bpe-openai's are compared too and its differing
//! documents are counted (reported, not fatal). Then each implementation
//! encodes every document, one call per document; the best of `--repeat`
//! passes (passes interleaved across implementations) gives MB/s (10^6 bytes
//! of UTF-8 input per second). Each pass starts with modelbin's piece cache
//! empty (`clear_piece_cache`), so no pass times text it has seen.
//!
//! Prints JSON lines on stdout, in the shape `scripts/bench/tokenizer_python.py`
//! prints (`side: "rust"`, implementations `modelbin-rs`, `tiktoken-rs`,
//! `bpe-openai`, an `overall` line per encoding and implementation, a `check`
//! line per category and encoding with a digest of tiktoken-rs's ids), and a
//! markdown table on stderr.
//!
//! Run (pinned to one core, as `scripts/bench/tokenizer.sh` does):
//!
//! ```text
//! python3 scripts/bench/corpus.py
//! taskset -c 0 cargo run --release -p modelbin-tokenize --example corpus_bench -- \
//!     [--corpus DIR] [--categories a,b] [--encodings cl100k_base] [--repeat 3] [--sample BYTES]
//! ```

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use modelbin_tokenize::Tokenizer;

/// Documents are at most this many bytes, unless one part is longer.
const DOC_LIMIT: usize = 4096;
const IMPLS: [&str; 3] = ["modelbin-rs", "tiktoken-rs", "bpe-openai"];

/// The shared document rule (see the crate docs above).
fn split_documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    // The current document and the next part, as byte ranges of `text`: parts
    // are consecutive, two bytes ("\n\n") apart.
    let mut cur: Option<(usize, usize)> = None;
    let mut start = 0;
    for part in text.split("\n\n") {
        let end = start + part.len();
        cur = match cur {
            Some((s, e)) if (e - s) + 2 + part.len() <= DOC_LIMIT => Some((s, end)),
            done => {
                push_nonempty(&mut docs, text, done);
                Some((start, end))
            }
        };
        start = end + 2;
    }
    push_nonempty(&mut docs, text, cur);
    docs
}

fn push_nonempty<'a>(docs: &mut Vec<&'a str>, text: &'a str, range: Option<(usize, usize)>) {
    if let Some((s, e)) = range.filter(|(s, e)| e > s) {
        docs.push(&text[s..e]);
    }
}

fn bytes_of(docs: &[&str]) -> usize {
    docs.iter().map(|d| d.len()).sum()
}

/// `"<tokens>:<hex>"`: the sum over the category's ids, in order, of
/// (position + 1) * (id + 1), wrapping at 2^64; the Python script computes the
/// same over tiktoken's ids.
fn ids_digest(all: &[Vec<u32>]) -> String {
    let (mut n, mut acc) = (0u64, 0u64);
    for ids in all {
        for &id in ids {
            n += 1;
            acc = acc.wrapping_add(n.wrapping_mul(u64::from(id) + 1));
        }
    }
    format!("{n}:{acc:016x}")
}

struct Args {
    corpus: PathBuf,
    categories: Option<Vec<String>>,
    encodings: Vec<String>,
    repeat: usize,
    sample: usize,
}

fn parse_args() -> Args {
    let mut args = Args {
        corpus: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-corpus"),
        categories: None,
        encodings: vec!["cl100k_base".into(), "o200k_base".into()],
        repeat: 3,
        sample: 0,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let [flag, value] = pair else {
            panic!("{} needs a value", pair[0]);
        };
        let list = || value.split(',').map(str::to_owned).collect::<Vec<_>>();
        match flag.as_str() {
            "--corpus" => args.corpus = PathBuf::from(value),
            "--categories" => args.categories = Some(list()),
            "--encodings" => args.encodings = list(),
            "--repeat" => args.repeat = value.parse().expect("--repeat N"),
            "--sample" => args.sample = value.parse().expect("--sample BYTES"),
            other => panic!(
                "unknown argument {other}; use --corpus DIR --categories a,b \
                 --encodings x,y --repeat N --sample BYTES"
            ),
        }
    }
    args
}

/// The category files, sorted by name (or those asked for, in that order).
fn load(args: &Args) -> Vec<(String, String)> {
    let names: Vec<String> = match &args.categories {
        Some(names) => names.clone(),
        None => {
            let dir = std::fs::read_dir(&args.corpus).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}; run scripts/bench/corpus.py",
                    args.corpus.display()
                )
            });
            let mut names: Vec<String> = dir
                .filter_map(|entry| {
                    let path = entry.ok()?.path();
                    if path.extension()? != "txt" {
                        return None;
                    }
                    Some(path.file_stem()?.to_str()?.to_owned())
                })
                .collect();
            names.sort();
            names
        }
    };
    assert!(
        !names.is_empty(),
        "{}: no categories; run scripts/bench/corpus.py",
        args.corpus.display()
    );
    names
        .into_iter()
        .map(|name| {
            let path = args.corpus.join(format!("{name}.txt"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}; run scripts/bench/corpus.py", path.display()));
            (name, text)
        })
        .collect()
}

fn emit(mut value: serde_json::Value) {
    let map = value.as_object_mut().expect("an object");
    map.insert("bench".into(), "tokenizer-corpus".into());
    map.insert("side".into(), "rust".into());
    println!("{value}");
}

fn main() {
    let args = parse_args();
    let files = load(&args);
    // Documents per category, cut to --sample bytes if asked.
    let categories: Vec<(&str, Vec<&str>)> = files
        .iter()
        .map(|(name, text)| {
            let mut docs = split_documents(text);
            if args.sample > 0 {
                // The leading documents, until --sample bytes are reached.
                let mut size = 0;
                docs.retain(|d| {
                    let keep = size < args.sample;
                    size += d.len();
                    keep
                });
            }
            (name.as_str(), docs)
        })
        .collect();

    let mut table: Vec<(String, String, [f64; 3])> = Vec::new();
    for encoding in &args.encodings {
        let ours = Tokenizer::embedded(encoding).expect("an embedded encoding");
        let (tiktoken, bpe) = match encoding.as_str() {
            "cl100k_base" => (
                tiktoken_rs::cl100k_base().expect("tiktoken-rs cl100k_base"),
                bpe_openai::cl100k_base(),
            ),
            "o200k_base" => (
                tiktoken_rs::o200k_base().expect("tiktoken-rs o200k_base"),
                bpe_openai::o200k_base(),
            ),
            other => panic!("unknown encoding {other}"),
        };

        // Exactness first, on everything, before any timing.
        let mut bpe_exact = Vec::new();
        for (name, docs) in &categories {
            let expected: Vec<Vec<u32>> =
                docs.iter().map(|d| tiktoken.encode_ordinary(d)).collect();
            for (i, (doc, want)) in docs.iter().zip(&expected).enumerate() {
                let got = ours.encode_ordinary(doc).unwrap();
                assert!(
                    got == *want,
                    "modelbin differs from tiktoken-rs: {encoding}, category {name}, document {i} \
                     ({} bytes, starts {:?})",
                    doc.len(),
                    doc.chars().take(80).collect::<String>()
                );
            }
            let differing = docs
                .iter()
                .zip(&expected)
                .filter(|(doc, want)| bpe.encode(**doc) != **want)
                .count();
            bpe_exact.push(differing == 0);
            emit(serde_json::json!({
                "check": "exact",
                "category": name,
                "encoding": encoding,
                "documents": docs.len(),
                "bytes": bytes_of(docs),
                "tokens": expected.iter().map(Vec::len).sum::<usize>(),
                "modelbin_equals_tiktoken_rs": true,
                "bpe_openai_differing_documents": differing,
                "tiktoken_rs_digest": ids_digest(&expected),
            }));
        }

        let mut totals = [Duration::ZERO; 3];
        for ((name, docs), bpe_ok) in categories.iter().zip(&bpe_exact) {
            let mut best = [Duration::MAX; 3];
            for _ in 0..args.repeat.max(1) {
                for (k, slot) in best.iter_mut().enumerate() {
                    // No pass times text modelbin's piece cache has seen.
                    modelbin_tokenize::clear_piece_cache();
                    let start = Instant::now();
                    match k {
                        0 => docs.iter().for_each(|d| {
                            black_box(ours.encode_ordinary(black_box(d)).unwrap());
                        }),
                        1 => docs.iter().for_each(|d| {
                            black_box(tiktoken.encode_ordinary(black_box(d)));
                        }),
                        _ => docs.iter().for_each(|d| {
                            black_box(bpe.encode(black_box(*d)));
                        }),
                    }
                    *slot = (*slot).min(start.elapsed());
                }
            }
            let size = bytes_of(docs);
            let rates = best.map(|t| size as f64 / t.as_secs_f64() / 1e6);
            for (total, time) in totals.iter_mut().zip(best) {
                *total += time;
            }
            for ((impl_name, rate), time) in IMPLS.iter().zip(rates).zip(best) {
                let mut line = serde_json::json!({
                    "category": name,
                    "encoding": encoding,
                    "impl": impl_name,
                    "bytes": size,
                    "documents": docs.len(),
                    "seconds": time.as_secs_f64(),
                    "MB/s": (rate * 1000.0).round() / 1000.0,
                });
                if *impl_name == "bpe-openai" {
                    line["exact"] = (*bpe_ok).into();
                }
                emit(line);
            }
            table.push((name.to_string(), encoding.clone(), rates));
        }
        let size: usize = categories.iter().map(|(_, docs)| bytes_of(docs)).sum();
        let documents: usize = categories.iter().map(|(_, docs)| docs.len()).sum();
        let rates = totals.map(|t| size as f64 / t.as_secs_f64() / 1e6);
        for ((impl_name, rate), total) in IMPLS.iter().zip(rates).zip(totals) {
            emit(serde_json::json!({
                "category": "overall",
                "encoding": encoding,
                "impl": impl_name,
                "bytes": size,
                "documents": documents,
                "seconds": total.as_secs_f64(),
                "MB/s": (rate * 1000.0).round() / 1000.0,
            }));
        }
        table.push(("overall".into(), encoding.clone(), rates));
    }

    eprintln!(
        "\n| category | encoding | modelbin-rs MB/s | tiktoken-rs MB/s | bpe-openai MB/s | \
         modelbin/tiktoken-rs | modelbin/bpe-openai |"
    );
    eprintln!("|---|---|---:|---:|---:|---:|---:|");
    for (name, encoding, [m, t, b]) in &table {
        eprintln!(
            "| {name} | {encoding} | {m:.1} | {t:.1} | {b:.1} | {:.2} | {:.2} |",
            m / t,
            m / b
        );
    }
}
