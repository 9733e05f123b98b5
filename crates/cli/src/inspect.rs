//! `modelbin inspect`.

use std::path::Path;

use modelbin_format::checksum::hex;
use modelbin_format::inspect::{
    Bpe2Summary, EmbdSummary, SaevSummary, Summary, TensorFileSummary, TensorSummary, TllmSummary,
};
use modelbin_format::text_table;
use modelbin_format::{AnyFile, Format};

use crate::{Failure, print_json};

pub fn run(path: &Path, format: Option<Format>, json: bool) -> Result<(), Failure> {
    let summary = open(path, format)
        .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))?
        .summary();
    match (&summary, json) {
        (_, true) => print_json(&summary),
        (Summary::Tensors(s), false) => print_text(path, s),
        (Summary::Bpe2(s), false) => print_vocabulary(path, s),
        (Summary::Tllm(s), false) => print_model(path, s),
        (Summary::Saev(s), false) => print_activations(path, s),
        (Summary::Embd(s), false) => print_embeddings(path, s),
    }
    Ok(())
}

/// Opens `path` as `format`, or as its content says.
pub fn open(path: &Path, format: Option<Format>) -> modelbin_format::Result<AnyFile> {
    match format {
        Some(format) => modelbin_format::open_as(path, format),
        None => modelbin_format::open(path),
    }
}

/// `PATH: FORMAT version V, N bytes`.
fn print_title(path: &Path, format: Format, version: u32, size: u64) {
    println!(
        "{}: {format} version {version}, {size} bytes",
        path.display()
    );
}

fn print_model(path: &Path, s: &TllmSummary) {
    let c = &s.config;
    print_title(path, s.format, s.version, s.file_size);
    println!(
        "config: model_dim {}, n_layers {}, n_heads {}, ffn_hidden_dim {}, max_seq_len {}, vocab_size {}, dropout {}",
        c.model_dim,
        c.n_layers,
        c.n_heads,
        c.ffn_hidden_dim,
        c.max_seq_len,
        c.vocab_size,
        c.dropout
    );
    println!("parameters: {}", s.parameter_count);
    let rows: Vec<Vec<String>> = s
        .tensors
        .iter()
        .map(|t| {
            let show = |v: Option<f32>| v.map_or("-".into(), |v| format!("{v:.4}"));
            vec![
                t.name.clone(),
                format!("{:?}", t.shape),
                format!("{:.4}", t.mean),
                format!("{:.4}", t.std),
                show(t.min),
                show(t.max),
                t.nan.to_string(),
                t.inf.to_string(),
            ]
        })
        .collect();
    print_table(
        &["NAME", "SHAPE", "MEAN", "STD", "MIN", "MAX", "NAN", "INF"],
        &rows,
        2,
    );
}

fn print_activations(path: &Path, s: &SaevSummary) {
    println!("{}: {} dataset {}", path.display(), s.format, s.hash);
    for key in modelbin_format::saev::KEYS {
        println!("  {key}: {}", s.metadata[key]);
    }
    println!(
        "layers {} x tokens {} per image; {} images per shard; {} shards of {} bytes; {} vectors",
        s.n_layers, s.tokens_per_img, s.imgs_per_shard, s.n_shards, s.shard_bytes, s.vectors
    );
    if s.extra_empty_shard {
        println!("note: an extra all-zero shard (reference writer) is present");
    }
}

fn print_vocabulary(path: &Path, s: &Bpe2Summary) {
    print_title(path, s.format, s.version, s.file_size);
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

fn print_embeddings(path: &Path, s: &EmbdSummary) {
    let h = &s.header;
    println!(
        "{}: {} version {}.{}, {} bytes",
        path.display(),
        s.format,
        h.version_major,
        h.version_minor,
        s.file_size
    );
    println!("flags: {}", s.flags.join(", "));
    println!("metadata:");
    for (key, value) in &s.metadata {
        println!("  {key} = {value}");
    }
    match &s.special_tokens {
        Some(t) => println!(
            "vocabulary: {} tokens; [PAD] {}, [UNK] {}, [CLS] {}, [SEP] {}, [MASK] {}",
            s.token_count, t.pad, t.unk, t.cls, t.sep, t.mask
        ),
        None => println!("vocabulary: none"),
    }
    match (&s.model, &s.model_error) {
        (Some(m), _) => println!(
            "model: BERT, {} layers, hidden {}, {} heads, FFN {}, max {} tokens, {} pooling{}",
            m.num_layers,
            m.hidden_size,
            m.num_heads,
            m.intermediate_size,
            m.max_seq_length,
            m.pooling.name(),
            if m.normalize { ", L2-normalised" } else { "" }
        ),
        (None, Some(e)) => println!("model: not usable: {e}"),
        (None, None) => {}
    }
    println!(
        "checksums: data 0x{:08X}, file 0x{:08X} (run `modelbin verify` to check them)",
        s.footer.data_checksum, s.footer.file_checksum
    );
    print_tensors(s.tensor_count, &s.tensors);
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
    print_tensors(s.tensor_count, &s.tensors);
}

fn print_tensors(count: usize, tensors: &[TensorSummary]) {
    println!("tensors: {count}");
    if tensors.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = tensors.iter().map(TensorSummary::table_row).collect();
    let headings = TensorSummary::TABLE_HEADINGS;
    print_table(
        &headings,
        &rows,
        headings.len() - TensorSummary::NUMERIC_COLUMNS,
    );
}

/// Prints an aligned table, indented by two spaces; columns from
/// `left_columns` on are right-aligned (numbers).
fn print_table(headings: &[&str], rows: &[Vec<String>], left_columns: usize) {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    // A closed pipe ends the process (SIGPIPE is restored at start-up).
    let _ = text_table::write(&mut out, headings, rows, left_columns)
        .and_then(|()| std::io::Write::flush(&mut out));
}
