//! `modelbin embed` and `modelbin similarity`: sentence embeddings from an
//! EMBD model.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use modelbin_infer::{Embedder, cosine};

use crate::progress::Progress;
use crate::{Failure, invalid};

/// Arguments of `modelbin embed`.
#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// The EMBD model (make one with `modelbin convert MODEL_DIR model.embd`).
    #[arg(long)]
    model: PathBuf,
    /// Texts to embed; without any, lines are read from --input or stdin.
    texts: Vec<String>,
    /// Read input lines from this file instead of stdin (progress bar on a terminal).
    #[arg(long, conflicts_with = "texts")]
    input: Option<PathBuf>,
    /// Input lines are JSON strings (one per line), not plain text.
    #[arg(long)]
    jsonl: bool,
    /// Sentences embedded together (memory stays constant for any input size).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
}

/// Arguments of `modelbin similarity`.
#[derive(Debug, Args)]
pub struct SimilarityArgs {
    /// The EMBD model.
    #[arg(long)]
    model: PathBuf,
    /// First text.
    a: String,
    /// Second text.
    b: String,
    /// Print JSON instead of the bare number.
    #[arg(long)]
    json: bool,
}

fn open_model(path: &Path) -> Result<Embedder, Failure> {
    Embedder::open(path).map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))
}

/// Runs `modelbin embed`: one JSON array per input, one per line, in order.
pub fn embed(args: &EmbedArgs) -> Result<(), Failure> {
    let embedder = open_model(&args.model)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0) as usize)
        .build()
        .map_err(invalid)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut write_batch = |batch: &[String]| -> Result<(), Failure> {
        let texts: Vec<&str> = batch.iter().map(String::as_str).collect();
        let vectors = pool.install(|| embedder.embed(&texts)).map_err(invalid)?;
        for vector in vectors {
            serde_json::to_writer(&mut out, &vector).map_err(invalid)?;
            out.write_all(b"\n").map_err(invalid)?;
        }
        Ok(())
    };
    if !args.texts.is_empty() {
        for chunk in args.texts.chunks(args.batch_size as usize) {
            write_batch(chunk)?;
        }
        return out.flush().map_err(invalid);
    }
    let (reader, size): (Box<dyn Read>, Option<u64>) = match &args.input {
        Some(path) => {
            let file = File::open(path)
                .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))?;
            let size = file.metadata().ok().map(|m| m.len());
            (Box::new(file), size)
        }
        None => {
            if std::io::stdin().is_terminal() {
                eprintln!("reading texts from stdin, one per line (end with Ctrl-D)");
            }
            (Box::new(std::io::stdin()), None)
        }
    };
    let mut progress = Progress::new("embedding");
    let mut lines = BufReader::new(reader);
    let mut batch = Vec::with_capacity(args.batch_size as usize);
    let (mut line, mut read, mut number) = (String::new(), 0u64, 0u64);
    loop {
        line.clear();
        let n = lines.read_line(&mut line).map_err(invalid)?;
        if n > 0 {
            read += n as u64;
            number += 1;
            let text = line.strip_suffix('\n').unwrap_or(&line);
            let text = text.strip_suffix('\r').unwrap_or(text);
            batch.push(if args.jsonl {
                serde_json::from_str::<String>(text).map_err(|e| {
                    Failure::Invalid(format!("line {number}: not a JSON string: {e}"))
                })?
            } else {
                text.to_owned()
            });
        }
        if batch.len() == args.batch_size as usize || (n == 0 && !batch.is_empty()) {
            write_batch(&batch)?;
            batch.clear();
            if let Some(total) = size {
                progress.update(read, total);
            }
        }
        if n == 0 {
            break;
        }
    }
    progress.finish();
    out.flush().map_err(invalid)
}

/// Runs `modelbin similarity`: the cosine of the two texts' embeddings.
pub fn similarity(args: &SimilarityArgs) -> Result<(), Failure> {
    let embedder = open_model(&args.model)?;
    let vectors = embedder
        .embed(&[args.a.as_str(), args.b.as_str()])
        .map_err(invalid)?;
    let value = cosine(&vectors[0], &vectors[1]);
    if args.json {
        crate::print_json(&serde_json::json!({ "a": args.a, "b": args.b, "cosine": value }));
    } else {
        println!("{value:.6}");
    }
    Ok(())
}
