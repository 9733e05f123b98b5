//! `modelbin inspect`: one summary per path (files, SAEV datasets, SAEV
//! roots, Hugging Face model directories).

use std::path::{Path, PathBuf};

use crate::text_table;
use modelbin_format::bpe2::Bpe2Summary;
use modelbin_format::embd::EmbdSummary;
use modelbin_format::inspect::{Summary, TensorFileSummary, TensorSummary};
use modelbin_format::io::checksum::hex;
use modelbin_format::saev::SaevSummary;
use modelbin_format::tllm::TllmSummary;
use modelbin_format::{AnyFile, Format};

use crate::args::parse_format;
use crate::failure::{Failure, at};
use crate::stdout::{outln, print_json};

/// Arguments of `modelbin inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// Files, SAEV dataset directories (or their root), Hugging Face model directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Print one JSON document per path (one line each).
    #[arg(long)]
    json: bool,
    /// Read as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,
    /// Show only the tensors whose name matches this regular expression.
    #[arg(long, value_name = "REGEX", value_parser = parse_filter)]
    filter: Option<fancy_regex::Regex>,
}

impl InspectArgs {
    /// `inspect --format saev DIR` (what `acts inspect DIR` runs).
    pub fn dataset(dir: PathBuf, json: bool) -> Self {
        InspectArgs {
            paths: vec![dir],
            json,
            format: Some(Format::Saev),
            filter: None,
        }
    }
}

fn parse_filter(pattern: &str) -> Result<fancy_regex::Regex, String> {
    fancy_regex::Regex::new(pattern).map_err(|e| format!("not a regular expression: {e}"))
}

/// Runs `modelbin inspect`: every path in turn; an error about one path is
/// printed and the others are still shown (exit 1 at the end).
pub fn run(args: &InspectArgs) -> Result<(), Failure> {
    crate::failure::for_each_path(&args.paths, |path, first| {
        let mut summary = Summary::of(&open(path, args.format)?);
        if let Some(filter) = &args.filter {
            keep_matching(&mut summary, filter);
        }
        if args.json {
            let mut document = serde_json::to_value(&summary).map_err(crate::failure::invalid)?;
            document["path"] = serde_json::json!(path);
            print_json(&document)?;
            return Ok(());
        }
        if !first {
            outln!()?;
        }
        match &summary {
            Summary::Tensors(s) => print_text(path, s),
            Summary::Bpe2(s) => print_vocabulary(path, s),
            Summary::Tllm(s) => print_model(path, s),
            Summary::Saev(s) => print_activations(path, s),
            Summary::Embd(s) => print_embeddings(path, s),
        }
    })
}

/// Drops the tensors whose names do not match `filter` (the counts still
/// describe the whole file).
fn keep_matching(summary: &mut Summary, filter: &fancy_regex::Regex) {
    let matches = |name: &str| filter.is_match(name).unwrap_or(false);
    match summary {
        Summary::Tensors(s) => s.tensors.retain(|t| matches(&t.name)),
        Summary::Embd(s) => s.tensors.retain(|t| matches(&t.name)),
        Summary::Tllm(s) => s.tensors.retain(|t| matches(&t.name)),
        Summary::Bpe2(_) | Summary::Saev(_) => {}
    }
}

/// Opens `path` as `format`, or as its content says. A directory is a SAEV
/// dataset, or a Hugging Face model directory (its `model.safetensors`).
pub fn open(path: &Path, format: Option<Format>) -> Result<AnyFile, Failure> {
    let weights = if modelbin_format::convert::is_hf_model_dir(path) {
        Some(path.join("model.safetensors"))
    } else {
        sae_weights(path)
    };
    let model_dir = weights.is_some();
    let file = weights.unwrap_or_else(|| path.to_path_buf());
    let opened = match format {
        Some(format) => modelbin_format::open_as(&file, format),
        None => modelbin_format::open(&file),
    };
    match opened {
        Err(_) if !model_dir && is_not_a_dataset(path) => {
            Err(Failure::Invalid(unknown_directory(path)))
        }
        other => other.map_err(|e| at(&file, e)),
    }
}

/// The weights of an autoencoder directory in SAELens's layout (`cfg.json`
/// and `sae_weights.safetensors`, as `sae train` writes it).
fn sae_weights(path: &Path) -> Option<std::path::PathBuf> {
    let weights = path.join(modelbin_infer::sae::saelens::WEIGHTS_FILE);
    (path
        .join(modelbin_infer::sae::saelens::CONFIG_FILE)
        .is_file()
        && weights.is_file())
    .then_some(weights)
}

/// Whether `path` is a directory without a `metadata.json` of any kind (a
/// special file there is the SAEV reader's to refuse) and without datasets
/// under it (a SAEV root is the reader's to open or explain).
pub fn is_not_a_dataset(path: &Path) -> bool {
    path.is_dir()
        && std::fs::symlink_metadata(path.join("metadata.json")).is_err()
        && modelbin_format::saev::datasets_in(path).is_empty()
}

/// Refuses a file whose content is not `expected`, saying what it is and
/// `what_to_do`; files of unknown format and directories pass (the reader
/// that follows names their problem).
pub fn expect_format(path: &Path, expected: Format, what_to_do: &str) -> Result<(), Failure> {
    if path.is_dir() {
        return Ok(());
    }
    match modelbin_format::detect::detect(path) {
        Ok(found) if found != expected => Err(Failure::Invalid(format!(
            "{}: the file's format is {found}; {what_to_do}",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// What to say of a directory that is neither a dataset, nor a SAEV root,
/// nor a model.
pub fn unknown_directory(path: &Path) -> String {
    format!(
        "{}: is a directory, but neither a SAEV dataset (metadata.json and acts*.bin), a model directory (config.json and model.safetensors) nor an autoencoder (cfg.json and sae_weights.safetensors)",
        path.display()
    )
}

/// `PATH: FORMAT version V, N bytes`.
fn print_title(path: &Path, format: Format, version: u32, size: u64) -> Result<(), Failure> {
    outln!(
        "{}: {format} version {version}, {size} bytes",
        path.display()
    )?;
    Ok(())
}

fn print_model(path: &Path, s: &TllmSummary) -> Result<(), Failure> {
    let c = &s.config;
    print_title(path, s.format, s.version, s.file_size)?;
    outln!(
        "config: model_dim {}, n_layers {}, n_heads {}, ffn_hidden_dim {}, max_seq_len {}, vocab_size {}, dropout {}",
        c.model_dim,
        c.n_layers,
        c.n_heads,
        c.ffn_hidden_dim,
        c.max_seq_len,
        c.vocab_size,
        c.dropout
    )?;
    outln!("parameters: {}", s.parameter_count)?;
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
    )?;
    Ok(())
}

fn print_activations(path: &Path, s: &SaevSummary) -> Result<(), Failure> {
    outln!("{}: {} dataset {}", path.display(), s.format, s.hash)?;
    for key in modelbin_format::saev::KEYS {
        outln!("  {key}: {}", s.metadata[key])?;
    }
    outln!(
        "layers {} x tokens {} per {}; {} {} per shard; {} shards of {} bytes; {} vectors",
        s.n_layers,
        s.tokens_per_img,
        s.unit.noun(),
        s.imgs_per_shard,
        s.unit.plural(),
        s.n_shards,
        s.shard_bytes,
        s.vectors
    )?;
    if s.extra_empty_shard {
        outln!("note: an extra all-zero shard (reference writer) is present")?;
    }
    Ok(())
}

fn print_vocabulary(path: &Path, s: &Bpe2Summary) -> Result<(), Failure> {
    if s.format == Format::Tiktoken {
        outln!("{}: tiktoken, {} bytes", path.display(), s.file_size)?;
    } else {
        print_title(path, s.format, s.version, s.file_size)?;
    }
    outln!(
        "encoding: {}",
        s.encoding
            .unwrap_or("unknown (needs an explicit pre-tokenizer pattern)")
    )?;
    outln!("source sha256: {}", hex(&s.header.source_hash))?;
    outln!(
        "tokens: {} present of {} ranks; longest {} bytes; blob {} bytes",
        s.present_tokens,
        s.header.token_count,
        s.header.max_token_len,
        s.header.blob_size
    )?;
    if s.format == Format::Tiktoken {
        outln!(
            "special tokens: none (a .tiktoken file holds none; `convert` to BPE2 adds the encoding's)"
        )?;
    } else if s.special_tokens.is_empty() {
        outln!("special tokens: none in the table")?;
    } else {
        outln!("special tokens:")?;
        for (text, rank) in &s.special_tokens {
            outln!("  {rank:>7} {text}")?;
        }
    }
    Ok(())
}

fn print_embeddings(path: &Path, s: &EmbdSummary) -> Result<(), Failure> {
    let h = &s.header;
    outln!(
        "{}: {} version {}.{}, {} bytes",
        path.display(),
        s.format,
        h.version_major,
        h.version_minor,
        s.file_size
    )?;
    outln!("flags: {}", s.flags.join(", "))?;
    outln!("metadata:")?;
    for (key, value) in &s.metadata {
        outln!("  {key} = {value}")?;
    }
    match &s.special_tokens {
        Some(t) => outln!(
            "vocabulary: {} tokens; [PAD] {}, [UNK] {}, [CLS] {}, [SEP] {}, [MASK] {}",
            s.token_count,
            t.pad,
            t.unk,
            t.cls,
            t.sep,
            t.mask
        ),
        None => outln!("vocabulary: none"),
    }?;
    match (&s.model, &s.model_error) {
        (Some(m), _) => outln!(
            "model: BERT, {} layers, hidden {}, {} heads, FFN {}, max {} tokens, {} pooling{}",
            m.num_layers,
            m.hidden_size,
            m.num_heads,
            m.intermediate_size,
            m.max_seq_length,
            m.pooling.name(),
            if m.normalize { ", L2-normalised" } else { "" }
        ),
        (None, Some(e)) => outln!("model: not usable: {e}"),
        (None, None) => Ok(()),
    }?;
    outln!(
        "checksums: data 0x{:08X}, file 0x{:08X} (run `modelbin verify` to check them)",
        s.footer.data_checksum,
        s.footer.file_checksum
    )?;
    print_tensors(s.tensor_count, s.parameter_count, &s.tensors)?;
    Ok(())
}

fn print_text(path: &Path, s: &TensorFileSummary) -> Result<(), Failure> {
    outln!(
        "{}: {}, {}",
        path.display(),
        s.format,
        with_human(s.file_size, "bytes", human_bytes)
    )?;
    outln!(
        "header: {} bytes; data: {} bytes at byte {}",
        s.header_size,
        s.data_size,
        s.data_offset
    )?;
    match &s.metadata {
        None => outln!("metadata: none"),
        Some(map) if map.is_empty() => outln!("metadata: empty"),
        Some(map) => {
            outln!("metadata:")?;
            for (key, value) in map {
                outln!("  {key} = {value}")?;
            }
            Ok(())
        }
    }?;
    print_tensors(s.tensor_count, s.parameter_count, &s.tensors)?;
    Ok(())
}

/// `n` in B, kB, MB or GB (powers of 1000), three significant digits.
pub fn human_bytes(n: u64) -> String {
    human(n, &[" B", " kB", " MB", " GB", " TB"])
}

/// `n` as 1.23k, 45.6M, 7.89G.
fn human_count(n: u64) -> String {
    human(n, &["", "k", "M", "G", "T"])
}

/// `N unit`, followed by the short form in parentheses when it differs
/// (`90868376 bytes (90.9 MB)`, `5 parameters`).
fn with_human(n: u64, unit: &str, short: fn(u64) -> String) -> String {
    if n < 1000 {
        format!("{n} {unit}")
    } else {
        format!("{n} {unit} ({})", short(n))
    }
}

fn human(n: u64, units: &[&str]) -> String {
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 999.5 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    match unit {
        0 => format!("{n}{}", units[0]),
        _ if value >= 99.95 => format!("{value:.0}{}", units[unit]),
        _ if value >= 9.995 => format!("{value:.1}{}", units[unit]),
        _ => format!("{value:.2}{}", units[unit]),
    }
}

fn print_tensors(count: usize, parameters: u64, tensors: &[TensorSummary]) -> Result<(), Failure> {
    outln!(
        "tensors: {count}, {}",
        with_human(parameters, "parameters", human_count)
    )?;
    if tensors.is_empty() {
        return Ok(());
    }
    let rows: Vec<Vec<String>> = tensors.iter().map(TensorSummary::table_row).collect();
    let headings = TensorSummary::TABLE_HEADINGS;
    print_table(
        &headings,
        &rows,
        headings.len() - TensorSummary::NUMERIC_COLUMNS,
    )?;
    Ok(())
}

/// Prints an aligned table, indented by two spaces; columns from
/// `left_columns` on are right-aligned (numbers).
fn print_table(
    headings: &[&str],
    rows: &[Vec<String>],
    left_columns: usize,
) -> Result<(), Failure> {
    crate::stdout::with_buffered(|mut out| {
        text_table::write(&mut out, headings, rows, left_columns)
    })
}
