//! `modelbin tokens`: encode, decode, count and cost text with tiktoken-exact
//! tokenizers.

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use modelbin_format::source::MappedFile;
use modelbin_tokenize::cost::{ChatMessage, PriceTable, cost, count_chat, encoding_for_model};
use modelbin_tokenize::{Pattern, Specials, Tokenizer};
use serde::Serialize;

use crate::{Failure, invalid, print_json};

/// The default encoding when none is chosen: the one current models use.
const DEFAULT_ENCODING: &str = "o200k_base";

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Print the token ids of each input as a JSON array (one line per input).
    Encode {
        #[command(flatten)]
        vocab: VocabChoice,
        /// Recognise special tokens: `all`, or a comma-separated list.
        #[arg(long, value_name = "all|LIST")]
        special: Option<String>,
        /// Read one JSON string per stdin line; write one JSON array of ids per line.
        #[arg(long)]
        jsonl: bool,
        /// Files to encode (`-` or none: stdin).
        files: Vec<PathBuf>,
    },
    /// Print the text of token ids (arguments, or JSON arrays / numbers on stdin).
    Decode {
        #[command(flatten)]
        vocab: VocabChoice,
        /// Read one JSON array of ids per stdin line; write one JSON string per line.
        #[arg(long)]
        jsonl: bool,
        /// Token ids.
        ids: Vec<u32>,
    },
    /// Count tokens per file, wc-style, with a total.
    Count {
        #[command(flatten)]
        vocab: VocabChoice,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Files to count (`-` or none: stdin).
        files: Vec<PathBuf>,
    },
    /// Estimate the cost of sending the inputs to a model.
    Cost {
        /// The model (e.g. gpt-4o, gpt-4.1-mini, o3, gpt-5).
        #[arg(short, long)]
        model: String,
        /// Expected output tokens, priced at the output rate.
        #[arg(long, default_value_t = 0)]
        output_tokens: u64,
        /// A price table JSON file to use instead of the bundled one.
        #[arg(long)]
        prices: Option<PathBuf>,
        /// A chat conversation (JSON array of {role, content, name?}) to count
        /// with OpenAI's per-message overhead.
        #[arg(long)]
        messages: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Files to count (`-` or none: stdin, unless --messages is given).
        files: Vec<PathBuf>,
    },
}

/// Which vocabulary to use.
#[derive(Debug, Args)]
pub struct VocabChoice {
    /// Encoding: cl100k_base or o200k_base (built in; default o200k_base).
    #[arg(short, long, conflicts_with_all = ["model", "vocab"])]
    encoding: Option<String>,
    /// Model whose encoding to use (e.g. gpt-4o, gpt-4).
    #[arg(short, long, conflicts_with = "vocab")]
    model: Option<String>,
    /// A BPE2 vocabulary file (e.g. p50k_base or r50k_base built with
    /// `modelbin convert p50k_base.tiktoken p50k_base.bpe2`).
    #[arg(long, value_name = "FILE.bpe2")]
    vocab: Option<PathBuf>,
    /// Pre-tokenizer regex (fancy-regex syntax) for a --vocab whose source
    /// is not a known encoding; overrides the built-in pattern otherwise.
    #[arg(long, requires = "vocab", value_name = "REGEX")]
    pattern: Option<String>,
}

impl VocabChoice {
    fn tokenizer(&self) -> Result<TokenizerRef, Failure> {
        if let Some(path) = &self.vocab {
            let pattern = self
                .pattern
                .as_deref()
                .map(Pattern::custom)
                .transpose()
                .map_err(invalid)?;
            return Tokenizer::open(path, pattern)
                .map(|t| TokenizerRef::Owned(Box::new(t)))
                .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())));
        }
        let name = match &self.model {
            Some(model) => encoding_for_model(model).map_err(invalid)?,
            None => self.encoding.as_deref().unwrap_or(DEFAULT_ENCODING),
        };
        Tokenizer::embedded(name)
            .map(TokenizerRef::Embedded)
            .map_err(|e| match e {
                modelbin_tokenize::Error::NotEmbedded(_) => {
                    Failure::Invalid(format!("{e}; pass it with --vocab FILE.bpe2"))
                }
                other => invalid(other),
            })
    }
}

/// A tokenizer that is built in (static) or loaded for this command.
enum TokenizerRef {
    Embedded(&'static Tokenizer),
    Owned(Box<Tokenizer>),
}

impl std::ops::Deref for TokenizerRef {
    type Target = Tokenizer;
    fn deref(&self) -> &Tokenizer {
        match self {
            TokenizerRef::Embedded(t) => t,
            TokenizerRef::Owned(t) => t,
        }
    }
}

pub fn run(command: TokensCommand) -> Result<(), Failure> {
    match command {
        TokensCommand::Encode {
            vocab,
            special,
            jsonl,
            files,
        } => encode(&*vocab.tokenizer()?, special.as_deref(), jsonl, &files),
        TokensCommand::Decode { vocab, jsonl, ids } => decode(&*vocab.tokenizer()?, jsonl, &ids),
        TokensCommand::Count { vocab, json, files } => count(&*vocab.tokenizer()?, json, &files),
        TokensCommand::Cost {
            model,
            output_tokens,
            prices,
            messages,
            json,
            files,
        } => estimate_cost(
            &model,
            output_tokens,
            prices.as_deref(),
            messages.as_deref(),
            json,
            &files,
        ),
    }
}

/// An input's text: memory-mapped when it is valid UTF-8, else converted
/// lossily (invalid bytes become U+FFFD) with a warning.
struct Input {
    name: String,
    text: Text,
}

enum Text {
    Mapped(MappedFile),
    Owned(String),
}

impl Input {
    fn read(path: &Path) -> Result<Input, Failure> {
        let name = path.display().to_string();
        if path == Path::new("-") {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| Failure::Invalid(format!("stdin: {e}")))?;
            return Ok(Input::from_bytes(name, bytes));
        }
        let mapped = MappedFile::open_or_read(path).map_err(invalid)?;
        if std::str::from_utf8(&mapped).is_ok() {
            return Ok(Input {
                name,
                text: Text::Mapped(mapped),
            });
        }
        Ok(Input::from_bytes(name, mapped.to_vec()))
    }

    fn from_bytes(name: String, bytes: Vec<u8>) -> Input {
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("warning: {name} is not valid UTF-8; invalid bytes read as U+FFFD");
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            }
        };
        Input {
            name,
            text: Text::Owned(text),
        }
    }

    fn text(&self) -> &str {
        match &self.text {
            Text::Mapped(m) => std::str::from_utf8(m).expect("checked when read"),
            Text::Owned(s) => s,
        }
    }
}

/// The inputs named on the command line, or stdin.
fn inputs(files: &[PathBuf]) -> Vec<PathBuf> {
    if files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        files.to_vec()
    }
}

fn encode(
    tokenizer: &Tokenizer,
    special: Option<&str>,
    jsonl: bool,
    files: &[PathBuf],
) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if jsonl {
        for (index, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line.map_err(|e| Failure::Invalid(format!("stdin: {e}")))?;
            let text: String = serde_json::from_str(&line).map_err(|e| {
                Failure::Invalid(format!("stdin line {}: not a JSON string: {e}", index + 1))
            })?;
            write_json_line(&mut out, &tokenizer.encode_ordinary(&text))?;
        }
        return flush(out);
    }
    let names: Vec<&str>;
    let allowed = match special {
        None => Specials::None,
        Some("all") => Specials::All,
        Some(list) => {
            names = list.split(',').map(str::trim).collect();
            Specials::Only(&names)
        }
    };
    for path in inputs(files) {
        let input = Input::read(&path)?;
        let ids = tokenizer
            .encode(input.text(), allowed, Specials::None)
            .map_err(|e| Failure::Invalid(format!("{}: {e}", input.name)))?;
        write_json_line(&mut out, &ids)?;
    }
    flush(out)
}

fn decode(tokenizer: &Tokenizer, jsonl: bool, ids: &[u32]) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if jsonl {
        for (index, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line.map_err(|e| Failure::Invalid(format!("stdin: {e}")))?;
            let ids: Vec<u32> = serde_json::from_str(&line).map_err(|e| {
                Failure::Invalid(format!(
                    "stdin line {}: not a JSON array of ids: {e}",
                    index + 1
                ))
            })?;
            write_json_line(&mut out, &tokenizer.decode(&ids).map_err(invalid)?)?;
        }
        return flush(out);
    }
    let ids = if ids.is_empty() {
        read_ids()?
    } else {
        ids.to_vec()
    };
    out.write_all(tokenizer.decode(&ids).map_err(invalid)?.as_bytes())
        .map_err(|e| Failure::Invalid(format!("stdout: {e}")))?;
    flush(out)
}

/// Ids from stdin: numbers separated by whitespace, commas or brackets.
fn read_ids() -> Result<Vec<u32>, Failure> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| Failure::Invalid(format!("stdin: {e}")))?;
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']'))
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u32>()
                .map_err(|_| Failure::Invalid(format!("stdin: `{s}` is not a token id")))
        })
        .collect()
}

#[derive(Serialize)]
struct FileCount {
    path: String,
    tokens: usize,
}

#[derive(Serialize)]
struct CountReport {
    encoding: Option<&'static str>,
    files: Vec<FileCount>,
    total: usize,
}

fn count_inputs(tokenizer: &Tokenizer, files: &[PathBuf]) -> Result<Vec<FileCount>, Failure> {
    inputs(files)
        .iter()
        .map(|path| {
            let input = Input::read(path)?;
            Ok(FileCount {
                tokens: tokenizer.count_parallel(input.text()),
                path: input.name,
            })
        })
        .collect()
}

fn count(tokenizer: &Tokenizer, json: bool, files: &[PathBuf]) -> Result<(), Failure> {
    let counts = count_inputs(tokenizer, files)?;
    let total = counts.iter().map(|c| c.tokens).sum();
    if json {
        print_json(&CountReport {
            encoding: tokenizer.name(),
            files: counts,
            total,
        });
        return Ok(());
    }
    let width = total.to_string().len().max(7);
    for c in &counts {
        println!("{:>width$} {}", c.tokens, c.path);
    }
    if counts.len() > 1 {
        println!("{total:>width$} total");
    }
    Ok(())
}

#[derive(Serialize)]
struct CostReport<'a> {
    model: &'a str,
    priced_as: &'a str,
    encoding: &'static str,
    input_tokens: usize,
    output_tokens: u64,
    input_cost: f64,
    output_cost: f64,
    total_cost: f64,
    currency: &'a str,
    prices_as_of: &'a str,
}

fn estimate_cost(
    model: &str,
    output_tokens: u64,
    prices: Option<&Path>,
    messages: Option<&Path>,
    json: bool,
    files: &[PathBuf],
) -> Result<(), Failure> {
    let table = match prices {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))?;
            PriceTable::parse(&text)
                .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))?
        }
        None => PriceTable::bundled(),
    };
    let (priced_as, price) = table.price(model).map_err(invalid)?;
    let encoding = encoding_for_model(model).map_err(invalid)?;
    let tokenizer = Tokenizer::embedded(encoding).map_err(invalid)?;
    let mut input_tokens = 0;
    if let Some(path) = messages {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))?;
        let conversation: Vec<ChatMessage> = serde_json::from_str(&text).map_err(|e| {
            Failure::Invalid(format!(
                "{}: not a JSON array of chat messages: {e}",
                path.display()
            ))
        })?;
        input_tokens += count_chat(tokenizer, &conversation);
    }
    if messages.is_none() || !files.is_empty() {
        input_tokens += count_inputs(tokenizer, files)?
            .iter()
            .map(|c| c.tokens)
            .sum::<usize>();
    }
    let input_cost = cost(price, input_tokens as u64, 0);
    let output_cost = cost(price, 0, output_tokens);
    let report = CostReport {
        model,
        priced_as,
        encoding,
        input_tokens,
        output_tokens,
        input_cost,
        output_cost,
        total_cost: input_cost + output_cost,
        currency: &table.currency,
        prices_as_of: &table.as_of,
    };
    if json {
        print_json(&report);
    } else {
        println!(
            "{model} ({encoding}): {input_tokens} input tokens = ${input_cost:.6}; {output_tokens} output tokens = ${output_cost:.6}; total ${:.6} {} (prices as of {})",
            report.total_cost, table.currency, table.as_of
        );
    }
    Ok(())
}

fn write_json_line(out: &mut impl Write, value: &impl Serialize) -> Result<(), Failure> {
    serde_json::to_writer(&mut *out, value)
        .map_err(|e| Failure::Invalid(format!("stdout: {e}")))?;
    out.write_all(b"\n")
        .map_err(|e| Failure::Invalid(format!("stdout: {e}")))
}

fn flush(mut out: impl Write) -> Result<(), Failure> {
    out.flush()
        .map_err(|e| Failure::Invalid(format!("stdout: {e}")))
}
