//! `modelbin embed`, `modelbin similarity` and `modelbin search`: sentence
//! embeddings from an EMBD model or a Hugging Face model directory.

use std::fs::File;
use std::io::{BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use modelbin_infer::search::{LineIndex, Segments};
use modelbin_infer::{Embedder, cosine};

use crate::args::TextFormatArgs;
use crate::failure::{Failure, at, invalid};
use crate::line_limit::{LineLimit, too_long};
use crate::progress::Progress;
use crate::stderr::errln;
use crate::stdout::{outln, print_json};
use modelbin_format::io::lines::{Line, read_line};
use modelbin_format::io::npy::NpyWriter;
use modelbin_format::io::source::MappedFile;
use modelbin_format::io::texts::{TEXT_EXTENSIONS, TextFormat, TextKind, Texts};

/// The model every embedding command opens.
#[derive(Debug, Args)]
pub struct ModelChoice {
    /// The model: an `.embd` file or a Hugging Face / sentence-transformers directory.
    #[arg(short, long)]
    pub model: PathBuf,
    /// Skip checking an EMBD file's checksums before using it (checked by
    /// default, so a damaged file is an error rather than wrong vectors).
    #[arg(long)]
    no_verify: bool,
    /// Check the checksums: the default, kept for scripts that pass it.
    #[arg(long, hide = true, conflicts_with = "no_verify")]
    verify: bool,
    /// Worker threads (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
}

impl ModelChoice {
    /// Opens the model (after `--verify`'s check) and the thread pool.
    fn open(&self) -> Result<(Embedder, rayon::ThreadPool), Failure> {
        if !self.no_verify && !self.model.is_dir() {
            modelbin_format::open(&self.model)
                .and_then(|file| file.verify())
                .map_err(|e| at(&self.model, e))?;
        }
        if self.model.is_dir() && !modelbin_format::convert::is_hf_model_dir(&self.model) {
            return Err(Failure::Invalid(crate::inspect::unknown_directory(
                &self.model,
            )));
        }
        crate::inspect::expect_format(
            &self.model,
            modelbin_format::Format::Embd,
            "embeddings need an EMBD model (`modelbin convert MODEL_DIR model.embd`) or a model directory",
        )?;
        let embedder = Embedder::open_model(&self.model).map_err(|e| at(&self.model, e))?;
        let pool = crate::work::thread_pool(self.threads.map(|t| t as usize))?;
        Ok((embedder, pool))
    }
}

/// How `embed` writes its vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    /// One JSON array of floats per text, per line.
    Jsonl,
    /// One NumPy float32 `[n, dim]` array (`-o FILE.npy`).
    Npy,
}

/// Arguments of `modelbin embed`.
#[derive(Debug, Args)]
pub struct EmbedArgs {
    #[command(flatten)]
    model: ModelChoice,
    /// Texts to embed; without any, lines are read from --input or stdin.
    texts: Vec<String>,
    /// Read input lines from this file instead of stdin (progress bar on a terminal).
    #[arg(long, conflicts_with = "texts")]
    input: Option<PathBuf>,
    #[command(flatten)]
    text_format: TextFormatArgs,
    /// Write the vectors to this file instead of stdout, atomically,
    /// replacing it (`.npy`: a NumPy array; `.safetensors` with --input: the
    /// lines' embeddings for `search --embeddings`).
    #[arg(short, long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Output format (default: npy for `-o *.npy`, else jsonl).
    #[arg(long, value_enum)]
    format: Option<OutputFormat>,
    /// One JSON object per text and line: {"index", "embedding"}.
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Sentences embedded together (memory stays constant for any input size).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    #[command(flatten)]
    line_limit: LineLimit,
}

/// Arguments of `modelbin similarity`.
#[derive(Debug, Args)]
pub struct SimilarityArgs {
    #[command(flatten)]
    model: ModelChoice,
    /// First text.
    a: String,
    /// Second text.
    b: String,
    /// Print JSON instead of the bare number.
    #[arg(long)]
    json: bool,
}

/// Arguments of `modelbin search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    #[command(flatten)]
    model: ModelChoice,
    /// What to look for.
    #[arg(short, long)]
    query: String,
    /// Text files and directories (walked in sorted order for .txt, .text,
    /// .md, .rst, .jsonl, .ndjson and .parquet files); each non-empty line
    /// (or record) is a candidate, or with --chunk-tokens each chunk
    /// (optional with --embeddings FILE, which then holds the candidates).
    #[arg(required_unless_present = "embeddings")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    text_format: TextFormatArgs,
    /// Rank chunks of at most N model tokens instead of lines: each file
    /// (or JSON Lines record, or Parquet row) is one document, cut at word
    /// boundaries; a hit shows the chunk's words and the line it starts on.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    chunk_tokens: Option<u64>,
    /// The most tokens of whole words a chunk repeats from the one before
    /// (default: a quarter of --chunk-tokens).
    #[arg(long, value_name = "M", requires = "chunk_tokens")]
    overlap: Option<u64>,
    /// How many lines to show.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    top: u64,
    /// The lines' embeddings (a safetensors file `embed --input F -o
    /// FILE.safetensors` writes, or this command with files): with files,
    /// kept in FILE and reused while the model and the files are unchanged;
    /// alone, searched as they are. Each query then embeds only itself.
    #[arg(long, value_name = "FILE")]
    embeddings: Option<PathBuf>,
    /// Print one JSON object per hit and line: {"score", "path", "line", "text"}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    line_limit: LineLimit,
}

impl SearchArgs {
    /// How the files are cut into candidates.
    fn segments(&self) -> Segments {
        match self.chunk_tokens {
            None => Segments::Lines,
            Some(tokens) => Segments::chunks(tokens as usize, self.overlap.map(|m| m as usize)),
        }
    }
}

/// Where `embed` sends each vector.
enum Sink {
    Lines {
        out: BufWriter<std::io::StdoutLock<'static>>,
        json: bool,
    },
    File(BufWriter<modelbin_format::io::output::OutputFile>),
    Npy(NpyWriter),
}

impl Sink {
    fn open(args: &EmbedArgs, dim: usize) -> Result<Sink, Failure> {
        let npy_by_name = args
            .out
            .as_deref()
            .is_some_and(|p| p.extension().is_some_and(|e| e == "npy"));
        let format = args.format.unwrap_or(if npy_by_name {
            OutputFormat::Npy
        } else {
            OutputFormat::Jsonl
        });
        match (&args.out, format) {
            (None, OutputFormat::Npy) => Err(Failure::Usage(
                "--format npy writes a file: pass -o FILE.npy".into(),
            )),
            (None, OutputFormat::Jsonl) => Ok(Sink::Lines {
                out: BufWriter::new(std::io::stdout().lock()),
                json: args.json,
            }),
            (Some(path), OutputFormat::Npy) => NpyWriter::create(path, dim)
                .map(Sink::Npy)
                .map_err(|e| at(path, e)),
            (Some(path), OutputFormat::Jsonl) => {
                modelbin_format::io::output::OutputFile::create(path)
                    .map(|f| Sink::File(BufWriter::new(f)))
                    .map_err(|e| at(path, e))
            }
        }
    }

    fn push(&mut self, index: u64, vector: &[f32]) -> Result<(), Failure> {
        match self {
            Sink::Lines { out, json: true } => {
                serde_json::to_writer(
                    &mut *out,
                    &serde_json::json!({"index": index, "embedding": vector}),
                )
                .map_err(invalid)?;
                out.write_all(b"\n").map_err(invalid)
            }
            Sink::Lines { out, json: false } => {
                serde_json::to_writer(&mut *out, vector).map_err(invalid)?;
                out.write_all(b"\n").map_err(invalid)
            }
            Sink::File(out) => {
                serde_json::to_writer(&mut *out, vector).map_err(invalid)?;
                out.write_all(b"\n").map_err(invalid)
            }
            Sink::Npy(writer) => writer.push(vector).map_err(invalid),
        }
    }

    fn finish(self) -> Result<(), Failure> {
        match self {
            Sink::Lines { mut out, .. } => out.flush().map_err(invalid),
            Sink::File(out) => out
                .into_inner()
                .map_err(|e| invalid(e.into_error()))?
                .commit()
                .map_err(invalid),
            Sink::Npy(writer) => writer.finish().map_err(invalid),
        }
    }
}

/// Runs `modelbin embed`: one vector per input, in order; or, with `--input
/// FILE -o OUT.safetensors`, the embeddings of FILE's lines with where each
/// comes from, for `search --embeddings`.
pub fn embed(args: &EmbedArgs) -> Result<(), Failure> {
    if let Some(out) = &args.out {
        let inputs: Vec<&Path> = std::iter::once(args.model.model.as_path())
            .chain(args.input.as_deref())
            .collect();
        modelbin_format::io::output::refuse_input_as_output(&inputs, out)?;
    }
    if let Some(out) = args
        .out
        .as_deref()
        .filter(|p| p.extension().is_some_and(|e| e == "safetensors"))
    {
        return embed_lines(args, out);
    }
    let (embedder, pool) = args.model.open()?;
    let mut sink = Sink::open(args, embedder.dim())?;
    let max_tokens = embedder.config().max_seq_length;
    let (mut written, mut truncated) = (0u64, 0u64);
    let mut write_batch = |batch: &[String]| -> Result<(), Failure> {
        let texts: Vec<&str> = batch.iter().map(String::as_str).collect();
        let embedded = pool
            .install(|| embedder.embed_counting_truncations(&texts))
            .map_err(invalid)?;
        truncated += embedded.truncated as u64;
        for vector in embedded.vectors {
            sink.push(written, &vector)?;
            written += 1;
        }
        Ok(())
    };
    if !args.texts.is_empty() {
        for chunk in args.texts.chunks(args.batch_size as usize) {
            write_batch(chunk)?;
        }
    } else {
        read_batches(args, &mut write_batch)?;
    }
    sink.finish()?;
    if truncated > 0 {
        crate::stderr::errln!(
            "note: {truncated} of {written} texts were longer than the model's {max_tokens} tokens and were truncated"
        );
    }
    Ok(())
}

/// `embed --input FILE -o OUT.safetensors`: FILE's non-empty lines, their
/// embeddings and places, as `search --embeddings` reads them.
fn embed_lines(args: &EmbedArgs, out: &Path) -> Result<(), Failure> {
    let Some(input) = &args.input else {
        return Err(Failure::Usage(
            "-o FILE.safetensors keeps the lines of --input FILE with their embeddings: pass --input".into(),
        ));
    };
    let (embedder, pool) = args.model.open()?;
    let model = &args.model.model;
    let index = pool
        .install(|| {
            let inputs = std::slice::from_ref(input);
            let format = args.text_format.format();
            LineIndex::build(
                &embedder,
                model,
                inputs,
                &format,
                args.line_limit.max_line_bytes,
                Segments::Lines,
            )
        })
        .map_err(|e| at(input, e))?;
    index.save(out).map_err(|e| at(out, e))
}

/// Reads lines from `--input` or stdin in batches of `--batch-size`, with a
/// progress bar in sentences/s when the input is a file.
fn read_batches(
    args: &EmbedArgs,
    write_batch: &mut dyn FnMut(&[String]) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let format = args.text_format.format();
    let (source, reader, size): (String, Box<dyn Read>, Option<u64>) = match &args.input {
        Some(path) if format.kind(path) == TextKind::Parquet => {
            return write_rows(path, &format, args, write_batch);
        }
        Some(path) => {
            let file =
                File::open(path).map_err(|e| at(path, modelbin_format::Error::io(path, e)))?;
            let size = file.metadata().ok().map(|m| m.len());
            (path.display().to_string(), Box::new(file), size)
        }
        None => {
            if std::io::stdin().is_terminal() {
                crate::stderr::errln!("reading texts from stdin, one per line (end with Ctrl-D)");
            }
            ("stdin".to_owned(), Box::new(std::io::stdin()), None)
        }
    };
    let json_lines = format.is_json_lines(Path::new(&source));
    let mut progress = Progress::sentences(size);
    let mut lines = BufReader::new(reader);
    let mut batch = Vec::with_capacity(args.batch_size as usize);
    let max = args.line_limit.max_line_bytes;
    let (mut line, mut read, mut number) = (Vec::new(), 0u64, 0u64);
    loop {
        line.clear();
        let n = match read_line(&mut lines, &mut line, max)
            .map_err(|e| Failure::Invalid(format!("{source}: {e}")))?
        {
            Line::Read(n) => n,
            Line::End => 0,
            Line::TooLong => return Err(too_long(&source, number as usize + 1, max)),
        };
        if n > 0 {
            read += n as u64;
            number += 1;
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = std::str::from_utf8(text).map_err(|e| {
                Failure::Invalid(format!("{source} line {number}: not UTF-8 text: {e}"))
            })?;
            if json_lines {
                let path = Path::new(&source);
                if let Some(text) = format.line_text(path, number, text.as_bytes())? {
                    batch.push(text);
                }
            } else {
                batch.push(text.to_owned());
            }
        }
        if batch.len() == args.batch_size as usize || (n == 0 && !batch.is_empty()) {
            write_batch(&batch)?;
            batch.clear();
            progress.sentences_done(number, read);
        }
        if n == 0 {
            break;
        }
    }
    progress.finish();
    Ok(())
}

/// Embeds the rows of the Parquet file `path` in batches of
/// `--batch-size`, with a progress bar in sentences/s.
fn write_rows(
    path: &Path,
    format: &TextFormat,
    args: &EmbedArgs,
    write_batch: &mut dyn FnMut(&[String]) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let bytes = MappedFile::open(path).map_err(|e| at(path, e))?;
    let Texts::Records(rows) = format.texts(path, &bytes)? else {
        unreachable!("a Parquet file gives records")
    };
    let mut progress = Progress::sentences(Some(bytes.len() as u64));
    let mut done = 0u64;
    for batch in rows.chunks(args.batch_size as usize) {
        write_batch(batch)?;
        done += batch.len() as u64;
        progress.sentences_done(done, bytes.len() as u64 * done / rows.len() as u64);
    }
    progress.finish();
    Ok(())
}

/// Runs `modelbin similarity`: the cosine of the two texts' embeddings.
pub fn similarity(args: &SimilarityArgs) -> Result<(), Failure> {
    let (embedder, pool) = args.model.open()?;
    let vectors = pool
        .install(|| embedder.embed(&[args.a.as_str(), args.b.as_str()]))
        .map_err(invalid)?;
    let value = cosine(&vectors[0], &vectors[1]);
    if args.json {
        print_json(&serde_json::json!({ "a": args.a, "b": args.b, "cosine": value }))?;
    } else {
        outln!("{value:.6}")?;
    }
    Ok(())
}

/// Runs `modelbin search`: the lines closest to the query by cosine.
pub fn search(args: &SearchArgs) -> Result<(), Failure> {
    let format = args.text_format.format();
    let files = format.text_files(&args.files)?;
    if files.is_empty() && !args.files.is_empty() {
        return Err(Failure::Invalid(format!(
            "no text files (.{}) under {}",
            TEXT_EXTENSIONS.join(", ."),
            args.files[0].display()
        )));
    }
    let (embedder, pool) = args.model.open()?;
    let model = &args.model.model;
    let build = || -> Result<LineIndex, Failure> {
        pool.install(|| {
            LineIndex::build(
                &embedder,
                model,
                &files,
                &format,
                args.line_limit.max_line_bytes,
                args.segments(),
            )
        })
        .map_err(|e| at(model, e))
    };
    let index = match &args.embeddings {
        None => build()?,
        Some(path) if args.files.is_empty() => {
            let index = LineIndex::load(path).map_err(|e| at(path, e))?;
            if !index.has_model(model).map_err(|e| at(model, e))? {
                return Err(Failure::Usage(format!(
                    "{} holds embeddings of another model than {}",
                    path.display(),
                    model.display()
                )));
            }
            index
        }
        Some(path) => {
            let inputs: Vec<&Path> = std::iter::once(model.as_path())
                .chain(files.iter().map(PathBuf::as_path))
                .collect();
            modelbin_format::io::output::refuse_input_as_output(&inputs, path)?;
            let kept = if path.exists() {
                let index = LineIndex::load(path).map_err(|e| at(path, e))?;
                let current = index
                    .is_current(model, &files, &format, args.segments())
                    .map_err(|e| at(model, e))?;
                if !current {
                    errln!(
                        "note: {} was built from another model, other files or other chunks; embedding them again",
                        path.display()
                    );
                }
                current.then_some(index)
            } else {
                None
            };
            match kept {
                Some(index) => index,
                None => {
                    let index = build()?;
                    index.save(path).map_err(|e| at(path, e))?;
                    index
                }
            }
        }
    };
    let hits = pool
        .install(|| index.search(&embedder, &args.query, args.top as usize))
        .map_err(invalid)?;
    for hit in &hits {
        if args.json {
            print_json(hit)?;
        } else {
            outln!(
                "{:.4}  {}:{}  {}",
                hit.score,
                hit.path.display(),
                hit.line,
                hit.text
            )?;
        }
    }
    Ok(())
}
