//! `modelbin`: inspect, verify and convert the binary files that carry ML
//! models. Thin: parses arguments and calls the libraries.
//!
//! Exit codes: 0 success, 1 invalid input or failed operation (one line on
//! stderr naming the problem and its byte offset), 2 usage error.

mod acts;
mod convert;
mod embed;
mod inspect;
mod progress;
mod tllm;
mod tokens;
mod train;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use modelbin_format::Format;

/// Inspect, verify and convert ML model, vocabulary and activation files.
#[derive(Debug, Parser)]
#[command(name = "modelbin", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show a file's format, sizes, metadata and tensor table.
    Inspect {
        /// The file (or SAEV dataset directory).
        path: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Read as this format instead of detecting it.
        #[arg(long, value_parser = parse_format)]
        format: Option<Format>,
    },
    /// Check a file's full integrity; exit 0 when valid, 1 naming the problem.
    Verify {
        /// The file (or SAEV dataset directory).
        path: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Read as this format instead of detecting it.
        #[arg(long, value_parser = parse_format)]
        format: Option<Format>,
    },
    /// Convert a file to another format (e.g. safetensors <-> bintensors).
    Convert {
        /// The input file.
        input: PathBuf,
        /// The output file; written atomically.
        output: PathBuf,
        /// Output format; inferred from OUTPUT's extension when omitted.
        #[arg(long, value_parser = parse_format)]
        to: Option<Format>,
        /// Print a JSON report instead of text.
        #[arg(long)]
        json: bool,
        /// `.tiktoken` -> BPE2: leave the special tokens out (as llm-cost's files do).
        #[arg(long)]
        no_special_tokens: bool,
        /// -> EMBD: store the weights as f32, f16 or bf16 (half-size files).
        #[arg(long, value_parser = parse_weight_dtype)]
        dtype: Option<modelbin_format::DType>,
    },
    /// Encode, decode, count and price text with tiktoken-exact tokenizers.
    #[command(subcommand)]
    Tokens(tokens::TokensCommand),
    /// Run or train a TLLM model: logits, train.
    #[command(subcommand)]
    Tllm(tllm::TllmCommand),
    /// Generate tokens (or byte-level text) with a TLLM model.
    Generate(tllm::GenerateArgs),
    /// Write a randomly initialised TLLM model.
    InitTllm(tllm::InitArgs),
    /// Sentence embeddings with an EMBD model: one JSON array per text, per line.
    Embed(embed::EmbedArgs),
    /// Cosine similarity of two texts' sentence embeddings.
    Similarity(embed::SimilarityArgs),
    /// Inspect, verify, read, summarise, benchmark and create SAEV activation datasets.
    #[command(subcommand)]
    Acts(acts::ActsCommand),
}

fn parse_format(name: &str) -> Result<Format, String> {
    Format::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        format!("unknown format `{name}` (known: {})", known.join(", "))
    })
}

fn parse_weight_dtype(name: &str) -> Result<modelbin_format::DType, String> {
    use modelbin_format::DType;
    match name.to_ascii_lowercase().as_str() {
        "f32" => Ok(DType::F32),
        "f16" => Ok(DType::F16),
        "bf16" => Ok(DType::BF16),
        _ => Err(format!(
            "unknown weight dtype `{name}` (known: f32, f16, bf16)"
        )),
    }
}

/// How a command failed.
#[derive(Debug)]
enum Failure {
    /// Bad input or a failed operation: exit 1.
    Invalid(String),
    /// A usage problem clap could not catch: exit 2.
    Usage(String),
}

/// Any error as an exit-1 failure, with its own message.
fn invalid(e: impl std::fmt::Display) -> Failure {
    Failure::Invalid(e.to_string())
}

impl From<modelbin_format::Error> for Failure {
    fn from(e: modelbin_format::Error) -> Self {
        Failure::Invalid(e.to_string())
    }
}

/// Dies quietly on a closed pipe (`modelbin inspect F | head`), as Unix
/// tools do, instead of panicking on the failed write.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called once at start-up, before any thread exists; SIG_DFL is a
    // valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The message and exit status for a memory-mapped input that shrank under
/// us: reading a page past the new end of a mapped file raises SIGBUS.
const SHRANK_MESSAGE: &[u8] = b"error: an input file shrank while it was being read \
(another process truncated or rewrote it); no output file was replaced\n";

extern "C" fn input_shrank(_: libc::c_int) {
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer is a
    // static byte string.
    unsafe {
        libc::write(
            libc::STDERR_FILENO,
            SHRANK_MESSAGE.as_ptr().cast(),
            SHRANK_MESSAGE.len(),
        );
        libc::_exit(1);
    }
}

/// Turns SIGBUS (a mapped input truncated by another process) into exit 1
/// with a message instead of a crash. Temporary output files are left for
/// the next write to the same path to remove (see `atomic`).
fn exit_cleanly_on_sigbus() {
    let handler: extern "C" fn(libc::c_int) = input_shrank;
    // SAFETY: called once at start-up, before any thread exists; the
    // handler only calls async-signal-safe functions.
    unsafe {
        libc::signal(libc::SIGBUS, handler as libc::sighandler_t);
    }
}

fn main() -> ExitCode {
    restore_default_sigpipe();
    exit_cleanly_on_sigbus();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect { path, json, format } => inspect::run(&path, format, json),
        Command::Verify { path, json, format } => verify::run(&path, format, json),
        Command::Convert {
            input,
            output,
            to,
            json,
            no_special_tokens,
            dtype,
        } => {
            let options = modelbin_format::convert::ConvertOptions {
                include_special_tokens: !no_special_tokens,
                dtype,
            };
            convert::run(&input, &output, to, options, json)
        }
        Command::Tokens(command) => tokens::run(command),
        Command::Tllm(command) => tllm::run(command),
        Command::Generate(args) => tllm::generate_command(&args),
        Command::InitTllm(args) => tllm::init(&args),
        Command::Embed(args) => embed::embed(&args),
        Command::Similarity(args) => embed::similarity(&args),
        Command::Acts(command) => acts::run(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Invalid(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
        Err(Failure::Usage(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// Prints a serializable value as pretty JSON on stdout.
fn print_json(value: &impl serde::Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("summaries serialize to JSON")
    );
}
