//! `modelbin tokens`: encode, decode, count and cost text with tiktoken-exact
//! tokenizers, or a model's Hugging Face `tokenizer.json` (`--tokenizer`).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use modelbin_format::io::source::{self, MappedFile};
use modelbin_format::io::texts::{TextFormat, Texts};
use modelbin_tokenize::cost::chat::{Chat, ChatRules};
use modelbin_tokenize::cost::{CostEstimate, PriceTable, encoding_for_model};
use modelbin_tokenize::hf::HfTokenizer;
use modelbin_tokenize::{Pattern, Specials, Tokenizer};
use serde::Serialize;

use crate::args::{IdList, TextFormatArgs, flatten_ids, parse_ids, split_ids};
use crate::encode_jsonl::encode_jsonl;
use crate::failure::{Failure, at, invalid};
use crate::line_limit::{LineLimit, too_long};
use crate::stdout::{outln, print_json};
use modelbin_format::io::lines::{Line, read_line};

/// The default encoding when none is chosen: the one current models use.
const DEFAULT_ENCODING: &str = "o200k_base";

/// `modelbin tokens …`.
#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Print the token ids of each input as a JSON array (one line per input).
    Encode {
        #[command(flatten)]
        vocab: VocabChoice,
        #[command(flatten)]
        inputs: TextInputs,
        /// Recognise special tokens: `all`, or a comma-separated list.
        #[arg(long, value_name = "all|LIST")]
        special: Option<String>,
        /// One JSON object per input and line: {"input", "ids"} (and
        /// "record", the text's number in a JSON Lines file).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        line_limit: LineLimit,
    },
    /// Print the text of token ids (arguments, or JSON arrays / numbers on stdin).
    Decode {
        #[command(flatten)]
        vocab: VocabChoice,
        /// Read one JSON array of ids per stdin line; write one JSON string per line.
        #[arg(long)]
        jsonl: bool,
        /// Print {"text": ...} (JSON) instead of the raw text.
        #[arg(long, conflicts_with = "jsonl")]
        json: bool,
        /// Token ids: commas and/or spaces (`15339 1917`, `15339,1917`).
        #[arg(value_parser = parse_ids)]
        ids: Vec<IdList>,
        #[command(flatten)]
        line_limit: LineLimit,
    },
    /// Count tokens per input, wc-style, with a total.
    Count {
        #[command(flatten)]
        vocab: VocabChoice,
        #[command(flatten)]
        inputs: TextInputs,
        /// Also count a chat (a JSON array of OpenAI messages, or a request
        /// body with its tools), by OpenAI's rules for -m's model (gpt-4o's
        /// without one), as `tokens cost --messages` does.
        #[arg(long, value_name = "FILE.json")]
        messages: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Estimate the cost of sending the inputs to a model.
    Cost {
        /// The model (e.g. gpt-4o, gpt-4.1-mini, o3, gpt-5; `tokens models` lists them).
        #[arg(short, long)]
        model: String,
        #[command(flatten)]
        inputs: TextInputs,
        /// Expected output tokens, priced at the output rate.
        #[arg(long, default_value_t = 0)]
        output_tokens: u64,
        /// Input tokens served from the prompt cache (priced at the cached rate).
        #[arg(long, default_value_t = 0)]
        cached_tokens: u64,
        /// A price table JSON file whose entries add to or replace the
        /// bundled ones (a table in another currency replaces the bundled
        /// one), e.g. {"as_of": "2026-11-01", "currency": "EUR", "unit":
        /// "per 1K tokens", "models": {"my-model": {"input": 0.5,
        /// "cached_input": 0.05, "output": 1.5, "encoding": "o200k_base"}}}.
        /// unit: per 1M tokens, per 1K tokens or per token; encoding: for a
        /// model tiktoken does not map.
        #[arg(long, verbatim_doc_comment)]
        prices: Option<PathBuf>,
        /// A chat to count: a JSON array of OpenAI messages (text, image
        /// parts, tool calls and tool replies), or a request body {"model",
        /// "messages", "tools"}; counted by OpenAI's rules (docs/cli.md).
        #[arg(long)]
        messages: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the models with a price: their encoding and prices.
    Models {
        /// A price table JSON file overlaying the bundled one.
        #[arg(long)]
        prices: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The texts a command reads: `--text` arguments, files, or stdin.
#[derive(Debug, Args)]
pub struct TextInputs {
    /// A text to read (repeatable), instead of files or stdin.
    #[arg(short, long = "text", value_name = "TEXT", conflicts_with = "jsonl")]
    texts: Vec<String>,
    #[command(flatten)]
    format: TextFormatArgs,
    /// Files and directories to read (directories walked in sorted order
    /// for .txt, .text, .md, .rst, .jsonl, .ndjson and .parquet files; `-`
    /// or none, without --text: stdin).
    files: Vec<PathBuf>,
}

/// Which vocabulary to use.
#[derive(Debug, Args)]
pub struct VocabChoice {
    /// Encoding, one of tiktoken's (all built in): gpt2, r50k_base,
    /// p50k_base, p50k_edit, cl100k_base, o200k_base (default),
    /// o200k_harmony.
    #[arg(short, long, conflicts_with_all = ["model", "vocab", "tokenizer"], value_parser = parse_encoding)]
    encoding: Option<&'static str>,
    /// Model whose encoding to use (e.g. gpt-4o, gpt-4).
    #[arg(short, long, conflicts_with_all = ["vocab", "tokenizer"], value_parser = parse_model)]
    model: Option<ModelName>,
    /// A Hugging Face tokenizer: a `tokenizer.json`, or a model directory
    /// holding one (with its `tokenizer_config.json`). Texts are encoded as
    /// transformers' `tokenizer(text)["input_ids"]` is, special tokens
    /// (a BOS) added, and counted so.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["vocab", "pattern"])]
    tokenizer: Option<PathBuf>,
    /// A vocabulary file: BPE2, or tiktoken's `.tiktoken` (converted in
    /// memory, so `modelbin convert` it to `.bpe2` once when it is used
    /// often).
    #[arg(long, value_name = "FILE")]
    vocab: Option<PathBuf>,
    /// Pre-tokenizer regex (fancy-regex syntax) for a --vocab whose source
    /// is not a known encoding; overrides the built-in pattern otherwise.
    #[arg(long, requires = "vocab", value_name = "REGEX")]
    pattern: Option<String>,
}

/// A built-in encoding's name; other vocabularies need `--vocab`.
fn parse_encoding(name: &str) -> Result<&'static str, String> {
    match Tokenizer::embedded(name) {
        Ok(tokenizer) => tokenizer
            .name()
            .ok_or_else(|| format!("built-in encoding `{name}` has no name")),
        Err(e) => Err(e.to_string()),
    }
}

/// A model named by `-m`, with its encoding.
#[derive(Debug, Clone)]
struct ModelName {
    name: String,
    encoding: &'static str,
}

/// A model name and its encoding: tiktoken's mapping, or the bundled price
/// table's (which matches names in any case), so that `count -m` knows
/// every model `cost -m` does.
fn parse_model(model: &str) -> Result<ModelName, String> {
    let encoding = encoding_for_model(model).or_else(|_| {
        PriceTable::bundled()
            .pricing(model)
            .map(|pricing| pricing.encoding)
            .map_err(|e| format!("{e} (`modelbin tokens models` lists the known ones)"))
    })?;
    Ok(ModelName {
        name: model.to_owned(),
        encoding,
    })
}

impl VocabChoice {
    /// The tokenizer chosen: `--tokenizer`'s, else the vocabulary's.
    fn tokenizer(&self) -> Result<TextTokenizer, Failure> {
        let Some(path) = &self.tokenizer else {
            return self.vocabulary().map(TextTokenizer::Vocab);
        };
        let opened = if path.is_dir() {
            HfTokenizer::open_dir(path)
        } else {
            HfTokenizer::open(path)
        };
        opened
            .map(|t| TextTokenizer::Hf(Box::new(t)))
            .map_err(|e| at(path, e))
    }

    /// The tiktoken-exact vocabulary chosen (`--vocab`, `-m`, `-e`, or the
    /// default encoding).
    fn vocabulary(&self) -> Result<TokenizerRef, Failure> {
        if self.pattern.is_some() && self.vocab.is_none() {
            return Err(Failure::Usage(
                "--pattern needs --vocab FILE: a built-in encoding keeps its own pattern".into(),
            ));
        }
        if let Some(path) = &self.vocab {
            let pattern = self
                .pattern
                .as_deref()
                .map(Pattern::custom)
                .transpose()
                .map_err(|e| Failure::Usage(format!("--pattern: {e}")))?;
            return Tokenizer::open_vocabulary(path, pattern)
                .map(|t| TokenizerRef::Owned(Box::new(t)))
                .map_err(|e| at(path, e));
        }
        let name = self
            .model
            .as_ref()
            .map(|m| m.encoding)
            .or(self.encoding)
            .unwrap_or(DEFAULT_ENCODING);
        Tokenizer::embedded(name)
            .map(TokenizerRef::Embedded)
            .map_err(invalid)
    }
}

/// The tokenizer a command runs: a tiktoken-exact vocabulary, or a Hugging
/// Face `tokenizer.json` (which always recognises its added tokens and adds
/// its special tokens, as transformers' `tokenizer(text)` does).
enum TextTokenizer {
    Vocab(TokenizerRef),
    Hf(Box<HfTokenizer>),
}

impl TextTokenizer {
    /// The ids of `text`; `special` says which special tokens a vocabulary
    /// recognises.
    fn encode(&self, text: &str, special: Specials) -> Result<Vec<u32>, String> {
        match self {
            TextTokenizer::Vocab(t) => t
                .encode(text, special, Specials::None)
                .map_err(|e| e.to_string()),
            TextTokenizer::Hf(t) => t.encode(text, true).map_err(|e| e.to_string()),
        }
    }

    /// The number of ids of `text`.
    fn count(&self, text: &str) -> Result<usize, String> {
        match self {
            TextTokenizer::Vocab(t) => t.count_parallel(text).map_err(|e| e.to_string()),
            TextTokenizer::Hf(t) => t
                .encode(text, true)
                .map(|ids| ids.len())
                .map_err(|e| e.to_string()),
        }
    }

    /// The text of `ids` (a Hugging Face tokenizer's bytes read as UTF-8,
    /// invalid bytes as U+FFFD).
    fn decode(&self, ids: &[u32]) -> Result<String, Failure> {
        match self {
            TextTokenizer::Vocab(t) => t.decode(ids).map_err(invalid),
            TextTokenizer::Hf(t) => t
                .decode_bytes(ids)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .map_err(invalid),
        }
    }

    /// The vocabulary, when it is one (`None` for `--tokenizer`).
    fn vocabulary(&self) -> Option<&Tokenizer> {
        match self {
            TextTokenizer::Vocab(t) => Some(t),
            TextTokenizer::Hf(_) => None,
        }
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

/// Runs `modelbin tokens …`.
pub fn run(command: TokensCommand) -> Result<(), Failure> {
    match command {
        TokensCommand::Encode {
            vocab,
            inputs,
            special,
            json,
            line_limit,
        } => {
            let tokenizer = vocab.tokenizer()?;
            let stream = tokenizer
                .vocabulary()
                .filter(|_| inputs.reads_json_lines_from_stdin());
            if let Some(vocabulary) = stream {
                // The whole loop runs on a thread of the pool: a thread
                // outside it would hand each batch to the pool and sleep
                // until the batch is done (at one thread, a wake-up per
                // batch on each side).
                crate::work::thread_pool(None)?.install(|| {
                    encode_jsonl(
                        vocabulary,
                        &inputs.format.format(),
                        std::io::stdin().lock(),
                        std::io::BufWriter::new(std::io::stdout().lock()),
                        line_limit.max_line_bytes,
                    )
                })
            } else {
                encode(&tokenizer, special.as_deref(), &inputs, json)
            }
        }
        TokensCommand::Decode {
            vocab,
            jsonl,
            json,
            ids,
            line_limit,
        } => decode(
            &vocab.tokenizer()?,
            jsonl.then_some(line_limit.max_line_bytes),
            json,
            &flatten_ids(&ids),
        ),
        TokensCommand::Count {
            vocab,
            inputs,
            messages,
            json,
        } => count(
            &vocab.tokenizer()?,
            vocab.model.as_ref().map(|m| m.name.as_str()),
            &inputs,
            messages.as_deref(),
            json,
        ),
        TokensCommand::Cost {
            model,
            inputs,
            output_tokens,
            cached_tokens,
            prices,
            messages,
            json,
        } => estimate_cost(
            &CostRequest {
                model: &model,
                output_tokens,
                cached_tokens,
                prices: prices.as_deref(),
                messages: messages.as_deref(),
            },
            &inputs,
            json,
        ),
        TokensCommand::Models { prices, json } => models(prices.as_deref(), json),
    }
}

/// An input's text: a `--text` argument, or a file memory-mapped when it
/// is valid UTF-8, else converted lossily (invalid bytes become U+FFFD)
/// with a warning; or the texts of a JSON Lines file.
struct Input {
    name: String,
    text: Text,
}

enum Text {
    Mapped(MappedFile),
    Owned(String),
    Records(Vec<String>),
}

impl Input {
    fn read(path: &Path, format: &TextFormat) -> Result<Input, Failure> {
        let name = path.display().to_string();
        if path == Path::new("-") {
            let bytes = read_stdin()?;
            return match format.texts(path, &bytes)? {
                Texts::Records(texts) => Ok(Input::records(name, texts)),
                Texts::Plain(_) => Ok(Input::from_bytes(name, bytes)),
            };
        }
        let mapped = MappedFile::open_or_read(path).map_err(|e| at(path, e))?;
        if let Texts::Records(texts) = format.texts(path, &mapped)? {
            return Ok(Input::records(name, texts));
        }
        if std::str::from_utf8(&mapped).is_ok() {
            return Ok(Input {
                name,
                text: Text::Mapped(mapped),
            });
        }
        Ok(Input::from_bytes(name, mapped.to_vec()))
    }

    fn records(name: String, texts: Vec<String>) -> Input {
        Input {
            name,
            text: Text::Records(texts),
        }
    }

    fn from_bytes(name: String, bytes: Vec<u8>) -> Input {
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                crate::stderr::errln!(
                    "warning: {name} is not valid UTF-8; invalid bytes read as U+FFFD"
                );
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            }
        };
        Input {
            name,
            text: Text::Owned(text),
        }
    }

    /// The input's texts: one, or a JSON Lines file's, in order.
    fn texts(&self) -> Vec<&str> {
        match &self.text {
            Text::Mapped(m) => vec![std::str::from_utf8(m).expect("checked when read")],
            Text::Owned(s) => vec![s],
            Text::Records(texts) => texts.iter().map(String::as_str).collect(),
        }
    }

    /// Whether the input is a JSON Lines file's texts.
    fn is_records(&self) -> bool {
        matches!(self.text, Text::Records(_))
    }
}

impl TextInputs {
    /// Calls `each` on every input in order: the `--text` arguments (named
    /// `--text N`), then the files (stdin when there are neither). An input
    /// that cannot be read is reported and skipped; the others still run,
    /// and the result is then [`Failure::Reported`] (exit 1).
    fn for_each(&self, mut each: impl FnMut(&Input) -> Result<(), Failure>) -> Result<(), Failure> {
        for (index, text) in self.texts.iter().enumerate() {
            each(&Input {
                name: format!("--text {}", index + 1),
                text: Text::Owned(text.clone()),
            })?;
        }
        let format = self.format.format();
        let files = if self.files.is_empty() && self.texts.is_empty() {
            vec![PathBuf::from("-")]
        } else {
            self.files.clone()
        };
        crate::failure::for_each_path(&files, |path, _| {
            if path == Path::new("-") {
                return each(&Input::read(path, &format)?);
            }
            // A directory gives its text files; a file stands for itself.
            let files = format
                .text_files(std::slice::from_ref(&path.to_path_buf()))
                .map_err(|e| at(path, e))?;
            crate::failure::for_each_path(&files, |file, _| each(&Input::read(file, &format)?))
        })
    }

    /// Whether the inputs are JSON Lines on standard input, encoded as a
    /// stream (`tokens encode --jsonl`).
    fn reads_json_lines_from_stdin(&self) -> bool {
        self.format.jsonl
            && self.texts.is_empty()
            && (self.files.is_empty() || self.files == [PathBuf::from("-")])
    }
}

fn encode(
    tokenizer: &TextTokenizer,
    special: Option<&str>,
    inputs: &TextInputs,
    json: bool,
) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let names: Vec<&str>;
    if special.is_some() && tokenizer.vocabulary().is_none() {
        return Err(Failure::Usage(
            "--special: a tokenizer.json recognises its own added tokens".into(),
        ));
    }
    let allowed = match special {
        None => Specials::None,
        Some("all") => Specials::All,
        Some(list) => {
            names = list.split(',').map(str::trim).collect();
            Specials::Only(&names)
        }
    };
    let result = inputs.for_each(|input| {
        for (index, text) in input.texts().into_iter().enumerate() {
            let ids = tokenizer
                .encode(text, allowed)
                .map_err(|e| Failure::Invalid(format!("{}: {e}", input.name)))?;
            if !json {
                write_json_line(&mut out, &ids)?;
            } else if input.is_records() {
                let line =
                    serde_json::json!({"input": input.name, "record": index + 1, "ids": ids});
                write_json_line(&mut out, &line)?;
            } else {
                write_json_line(
                    &mut out,
                    &serde_json::json!({"input": input.name, "ids": ids}),
                )?;
            }
        }
        Ok(())
    });
    flush(out)?;
    result
}

/// Runs `tokens decode`; `jsonl_max_line` is `Some(the longest line
/// accepted)` for `--jsonl`.
fn decode(
    tokenizer: &TextTokenizer,
    jsonl_max_line: Option<usize>,
    json: bool,
    ids: &[u32],
) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if let Some(max) = jsonl_max_line {
        let mut input = std::io::stdin().lock();
        let mut line = Vec::new();
        for number in 1.. {
            line.clear();
            match read_line(&mut input, &mut line, max)
                .map_err(|e| Failure::Invalid(format!("stdin: {e}")))?
            {
                Line::End => break,
                Line::TooLong => return Err(too_long("stdin", number, max)),
                Line::Read(_) => {}
            }
            let ids: Vec<u32> = serde_json::from_slice(&line).map_err(|e| {
                Failure::Invalid(format!("stdin line {number}: not a JSON array of ids: {e}"))
            })?;
            write_json_line(&mut out, &tokenizer.decode(&ids)?)?;
        }
        return flush(out);
    }
    let ids = if ids.is_empty() {
        read_ids()?
    } else {
        ids.to_vec()
    };
    let text = tokenizer.decode(&ids)?;
    if json {
        write_json_line(&mut out, &serde_json::json!({ "text": text }))?;
    } else {
        let mut product = crate::printable::ProductText::for_stdout();
        product
            .write(&mut out, text.as_bytes())
            .and_then(|()| product.finish(&mut out))
            .map_err(crate::stdout::write_error)?;
    }
    flush(out)
}

/// Standard input read whole, up to the cap on streams
/// ([`modelbin_format::io::source::MAX_STREAM_BYTES`]).
fn read_stdin() -> Result<Vec<u8>, Failure> {
    let (stdin, limit) = (std::io::stdin().lock(), source::MAX_STREAM_BYTES);
    source::read_stream_capped(stdin, Path::new("stdin"), "standard input", limit)
        .map_err(|e| Failure::Invalid(e.to_string()))
}

/// Ids from stdin: numbers separated by whitespace, commas or brackets.
fn read_ids() -> Result<Vec<u32>, Failure> {
    let bytes = read_stdin()?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| Failure::Invalid(format!("stdin: not UTF-8 text: {e}")))?;
    split_ids(text).map_err(|e| Failure::Invalid(format!("stdin: {e}")))
}

#[derive(Serialize)]
struct InputCount {
    input: String,
    tokens: usize,
}

#[derive(Serialize)]
struct CountReport {
    encoding: Option<&'static str>,
    inputs: Vec<InputCount>,
    total: usize,
}

/// The token count of every input that could be read, and whether all could.
fn count_inputs(
    tokenizer: &TextTokenizer,
    inputs: &TextInputs,
) -> (Vec<InputCount>, Result<(), Failure>) {
    let mut counts = Vec::new();
    let result = inputs.for_each(|input| {
        let mut tokens = 0;
        for text in input.texts() {
            tokens += tokenizer
                .count(text)
                .map_err(|e| Failure::Invalid(format!("{}: {e}", input.name)))?;
        }
        counts.push(InputCount {
            tokens,
            input: input.name.clone(),
        });
        Ok(())
    });
    (counts, result)
}

/// The tokens of the chat in `path` (a JSON array of messages, or a
/// request body with its tools), by the rules of `model` (gpt-4o's without
/// one, unless the body names one); what was assumed is warned on stderr.
fn count_messages(
    tokenizer: &Tokenizer,
    path: &Path,
    model: Option<&str>,
) -> Result<usize, Failure> {
    let text = modelbin_format::io::source::read_capped_text(path, "a chat conversation", 64 << 20)
        .map_err(|e| at(path, e))?;
    let chat = Chat::parse(&text).map_err(|e| at(path, e))?;
    let model = model
        .or(chat.model.as_deref())
        .unwrap_or(DEFAULT_CHAT_MODEL);
    let count = chat
        .count(tokenizer, &ChatRules::for_model(model))
        .map_err(|e| at(path, e))?;
    for warning in &count.warnings {
        crate::stderr::errln!("warning: {}: {warning}", path.display());
    }
    Ok(count.total())
}

/// The model whose chat rules count a chat that names none.
const DEFAULT_CHAT_MODEL: &str = "gpt-4o";

/// Whether the texts are read besides a chat: when given, or when there is
/// no chat (then stdin is read).
fn reads_texts(inputs: &TextInputs, messages: Option<&Path>) -> bool {
    messages.is_none() || !inputs.texts.is_empty() || !inputs.files.is_empty()
}

fn count(
    tokenizer: &TextTokenizer,
    model: Option<&str>,
    inputs: &TextInputs,
    messages: Option<&Path>,
    json: bool,
) -> Result<(), Failure> {
    let mut counts = Vec::new();
    if let Some(path) = messages {
        let Some(vocabulary) = tokenizer.vocabulary() else {
            return Err(Failure::Usage(
                "--messages counts by OpenAI's chat rules: use -m, -e or --vocab".into(),
            ));
        };
        counts.push(InputCount {
            tokens: count_messages(vocabulary, path, model)?,
            input: path.display().to_string(),
        });
    }
    let result = if reads_texts(inputs, messages) {
        let (more, result) = count_inputs(tokenizer, inputs);
        counts.extend(more);
        result
    } else {
        Ok(())
    };
    let total = counts.iter().map(|c| c.tokens).sum();
    if json {
        print_json(&CountReport {
            encoding: tokenizer.vocabulary().and_then(Tokenizer::name),
            inputs: counts,
            total,
        })?;
        return result;
    }
    let width = total.to_string().len().max(7);
    for c in &counts {
        outln!("{:>width$} {}", c.tokens, c.input)?;
    }
    if counts.len() > 1 {
        outln!("{total:>width$} total")?;
    }
    result
}

/// What `tokens cost` is asked.
struct CostRequest<'a> {
    model: &'a str,
    output_tokens: u64,
    cached_tokens: u64,
    prices: Option<&'a Path>,
    messages: Option<&'a Path>,
}

/// The bundled price table, overlaid with `path`'s entries; a warning on
/// stderr when its prices are stale.
fn price_table(path: Option<&Path>) -> Result<PriceTable, Failure> {
    let table = PriceTable::with_overlays(path, None).map_err(|e| match path {
        Some(path) => at(path, e),
        None => invalid(e),
    })?;
    if let Some(stale) = table.staleness() {
        crate::stderr::errln!("warning: {stale}: pass --prices FILE with current ones");
    }
    Ok(table)
}

/// `tokens cost`: counts the inputs with the model's encoding and prices
/// them.
fn estimate_cost(request: &CostRequest, inputs: &TextInputs, json: bool) -> Result<(), Failure> {
    let table = price_table(request.prices)?;
    let model = request.model;
    let pricing = table.pricing(model).map_err(cost_failure)?;
    let tokenizer = Tokenizer::embedded(pricing.encoding).map_err(invalid)?;
    let mut input_tokens = 0;
    if let Some(path) = request.messages {
        input_tokens += count_messages(tokenizer, path, Some(model))?;
    }
    if reads_texts(inputs, request.messages) {
        let vocabulary = TextTokenizer::Vocab(TokenizerRef::Embedded(tokenizer));
        let (counts, result) = count_inputs(&vocabulary, inputs);
        result?;
        input_tokens += counts.iter().map(|c| c.tokens).sum::<usize>();
    }
    let estimate = table
        .estimate(
            model,
            input_tokens as u64,
            request.cached_tokens,
            request.output_tokens,
        )
        .map_err(cost_failure)?;
    if json {
        return print_json(&estimate);
    }
    let CostEstimate {
        priced_as,
        encoding,
        cached_tokens: cached,
        input_cost,
        output_cost,
        total_cost,
        ..
    } = &estimate;
    let priced = if priced_as == model {
        String::new()
    } else {
        format!(", priced as {priced_as}")
    };
    let cached_note = if *cached > 0 {
        format!(" ({cached} cached)")
    } else {
        String::new()
    };
    let money = |amount: f64| match table.currency.as_str() {
        "USD" => format!("${amount:.6}"),
        code => format!("{amount:.6} {code}"),
    };
    outln!(
        "{model} ({encoding}{priced}): {input_tokens} input tokens{cached_note} = {}; {} output tokens = {}; total {} {} (prices as of {})",
        money(*input_cost),
        request.output_tokens,
        money(*output_cost),
        money(*total_cost),
        table.currency,
        table.as_of
    )
}

/// A refusal of `tokens cost`: a usage error naming the flag to change, or
/// (for a cost the prices make too large to hold) exit 1.
fn cost_failure(e: modelbin_tokenize::Error) -> Failure {
    use modelbin_tokenize::Error;
    if let Error::CostNotFinite { .. } = e {
        // The prices, not the flags, are at fault.
        return Failure::Invalid(format!("{e}; check the prices (--prices)"));
    }
    Failure::Usage(match e {
        Error::UnknownModel { .. } => format!(
            "{e}; add its prices with --prices FILE (`modelbin tokens models` lists the known ones)"
        ),
        Error::CachedAboveInput { cached, input } => {
            format!("--cached-tokens {cached} is more than the {input} input tokens")
        }
        Error::NoCachedPrice(model) => {
            format!("{model} has no cached-input price; leave out --cached-tokens")
        }
        Error::NoOutputPrice(model) => format!(
            "{model} has no output price (it produces no output tokens); leave out --output-tokens"
        ),
        e => e.to_string(),
    })
}

/// `tokens models`: every priced model with its encoding and prices.
fn models(prices: Option<&Path>, json: bool) -> Result<(), Failure> {
    let table = price_table(prices)?;
    #[derive(Serialize)]
    struct Row<'a> {
        model: &'a str,
        encoding: Option<&'static str>,
        input: f64,
        cached_input: Option<f64>,
        output: Option<f64>,
    }
    let rows: Vec<Row> = table
        .models
        .iter()
        .map(|(name, price)| Row {
            model: name,
            encoding: table.pricing(name).ok().map(|pricing| pricing.encoding),
            input: price.input,
            cached_input: price.cached_input,
            output: price.output,
        })
        .collect();
    if json {
        print_json(&serde_json::json!({
            "currency": table.currency, "unit": table.unit, "as_of": table.as_of, "models": rows
        }))?;
        return Ok(());
    }
    outln!("{} {}, as of {}", table.currency, table.unit, table.as_of)?;
    let show = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v}"));
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.model.to_string(),
                r.encoding.unwrap_or("-").to_string(),
                format!("{}", r.input),
                show(r.cached_input),
                show(r.output),
            ]
        })
        .collect();
    let mut out = std::io::stdout().lock();
    crate::text_table::write(
        &mut out,
        &["MODEL", "ENCODING", "INPUT", "CACHED", "OUTPUT"],
        &cells,
        2,
    )
    .map_err(crate::stdout::write_error)
}

/// `value` as one line of JSON, with no control character in it (see
/// [`crate::stdout::json_text`]).
fn write_json_line(out: &mut impl Write, value: &impl Serialize) -> Result<(), Failure> {
    out.write_all(crate::stdout::json_text(value).as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .map_err(crate::stdout::write_error)
}

fn flush(mut out: impl Write) -> Result<(), Failure> {
    out.flush().map_err(crate::stdout::write_error)
}
