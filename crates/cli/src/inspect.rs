//! `modelbin inspect`.

use std::path::Path;

use modelbin_format::Format;
use modelbin_format::inspect::TensorFileSummary;

use crate::{Failure, open_tensor_file, print_json};

pub fn run(path: &Path, format: Option<Format>, json: bool) -> Result<(), Failure> {
    let file = open_tensor_file(path, format, "inspect")?;
    let summary = TensorFileSummary::of(&file);
    if json {
        print_json(&summary);
    } else {
        print_text(path, &summary);
    }
    Ok(())
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
