//! `modelbin inspect`.

use std::path::Path;

use modelbin_format::Format;
use modelbin_format::checksum::hex;
use modelbin_format::inspect::{Bpe2Summary, Summary, TensorFileSummary};

use crate::{Failure, print_json};

pub fn run(path: &Path, format: Option<Format>, json: bool) -> Result<(), Failure> {
    let summary = Summary::of_path(path, format, "inspect")
        .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))?;
    match (&summary, json) {
        (_, true) => print_json(&summary),
        (Summary::Tensors(s), false) => print_text(path, s),
        (Summary::Vocabulary(s), false) => print_vocabulary(path, s),
    }
    Ok(())
}

fn print_vocabulary(path: &Path, s: &Bpe2Summary) {
    println!(
        "{}: {} version {}, {} bytes",
        path.display(),
        s.format,
        s.version,
        s.file_size
    );
    println!(
        "encoding: {}",
        s.encoding
            .unwrap_or("unknown (needs an explicit pre-tokenizer pattern)")
    );
    println!("source sha256: {}", hex(&s.header.source_hash));
    println!(
        "tokens: {} present of {} ranks; longest {} bytes; blob {} bytes",
        s.present_tokens, s.header.token_count, s.header.max_token_len, s.header.blob_size
    );
    if s.special_tokens.is_empty() {
        println!("special tokens: none in the table");
    } else {
        println!("special tokens:");
        for (text, rank) in &s.special_tokens {
            println!("  {rank:>7} {text}");
        }
    }
}

fn print_text(path: &Path, s: &TensorFileSummary) {
    println!("{}: {}, {} bytes", path.display(), s.format, s.file_size);
    println!(
        "header: {} bytes; data: {} bytes at byte {}",
        s.header_size, s.data_size, s.data_offset
    );
    match &s.metadata {
        None => println!("metadata: none"),
        Some(map) if map.is_empty() => println!("metadata: empty"),
        Some(map) => {
            println!("metadata:");
            for (key, value) in map {
                println!("  {key} = {value}");
            }
        }
    }
    println!("tensors: {}", s.tensor_count);
    if s.tensors.is_empty() {
        return;
    }
    let rows: Vec<[String; 5]> = s
        .tensors
        .iter()
        .map(|t| {
            [
                t.name.clone(),
                t.dtype.to_string(),
                format!("{:?}", t.shape),
                t.offset.to_string(),
                t.bytes.to_string(),
            ]
        })
        .collect();
    let headings = ["NAME", "DTYPE", "SHAPE", "OFFSET", "BYTES"];
    let widths: Vec<usize> = (0..5)
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([headings[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: [&str; 5]| {
        let text: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &w))| {
                if c >= 3 {
                    format!("{cell:>w$}")
                } else {
                    format!("{cell:<w$}")
                }
            })
            .collect();
        println!("  {}", text.join("  ").trim_end());
    };
    line(headings);
    for r in &rows {
        line([&r[0], &r[1], &r[2], &r[3], &r[4]]);
    }
}
