//! `modelbin`: inspect, verify, convert and run the binary files that carry
//! ML models, vocabularies and activations. Thin: parses arguments and calls
//! the libraries.
//!
//! Grammar: `modelbin NOUN VERB` for the engines (`tokens`, `tllm`, `acts`),
//! `modelbin VERB` for what applies to every format (`inspect`, `verify`,
//! `convert`); inputs are positional, outputs `-o/--out`, `-m/--model` names
//! the model, `--json` prints one compact JSON document (or one JSON line
//! per item for streams).
//!
//! Exit codes: 0 success, 1 invalid input or failed operation (one line on
//! stderr naming the problem and where it is), 2 usage error (an unknown
//! flag or an invalid value).

mod acts;
mod args;
mod convert;
mod embed;
mod encode_jsonl;
mod failure;
mod inspect;
mod line_limit;
mod progress;
mod record;
mod sae;
mod sae_features;
mod stdout;
mod text_table;
mod tllm;
mod tokens;
mod train;
mod verify;
mod work;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Inspect, verify, convert and run ML model, vocabulary and activation files.
#[derive(Debug, Parser)]
#[command(name = "modelbin", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show each file's format, sizes, metadata and tensor table.
    Inspect(inspect::InspectArgs),
    /// Check each file's full integrity; exit 0 when all are valid, 1 otherwise.
    Verify(verify::VerifyArgs),
    /// Convert a file to another format (e.g. safetensors <-> bintensors).
    Convert(convert::ConvertArgs),
    /// Encode, decode, count and price text with tiktoken-exact tokenizers.
    #[command(subcommand)]
    Tokens(tokens::TokensCommand),
    /// TLLM language models: init, logits, generate, train.
    #[command(subcommand)]
    Tllm(tllm::TllmCommand),
    /// Sentence embeddings with an EMBD model: one JSON array per text, per line.
    Embed(embed::EmbedArgs),
    /// Cosine similarity of two texts' sentence embeddings.
    Similarity(embed::SimilarityArgs),
    /// The lines of text files closest in meaning to a query (sentence embeddings).
    Search(embed::SearchArgs),
    /// Inspect, verify, read, summarise, benchmark and create SAEV activation datasets.
    #[command(subcommand)]
    Acts(acts::ActsCommand),
    /// Sparse autoencoders on SAEV activations: train, eval.
    #[command(subcommand)]
    Sae(sae::SaeCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of modelbin and its commands.
    Man,
    /// Same as `tllm generate`.
    #[command(hide = true)]
    Generate(tllm::GenerateArgs),
    /// Same as `tllm init`.
    #[command(hide = true)]
    InitTllm(tllm::InitArgs),
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
    exit_cleanly_on_sigbus();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Tokens(command) => tokens::run(command),
        Command::Tllm(command) => tllm::run(command),
        Command::Generate(args) => tllm::generate_command(&args),
        Command::InitTllm(args) => tllm::init(&args),
        Command::Embed(args) => embed::embed(&args),
        Command::Similarity(args) => embed::similarity(&args),
        Command::Search(args) => embed::search(&args),
        Command::Acts(command) => acts::run(command),
        Command::Sae(command) => sae::run(command),
        Command::Completions { shell } => completions(shell),
        Command::Man => stdout::with_buffered(|out| man_pages(&Cli::command(), "modelbin", out)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// Prints the completion script for `shell`. clap_complete writes with
/// `write_all(..).expect(..)`, so the script is rendered in memory and
/// written here, where a write error can fail cleanly.
fn completions(shell: clap_complete::Shell) -> Result<(), failure::Failure> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "modelbin", &mut script);
    stdout::with_buffered(|out| out.write_all(&script))
}

/// The man page of `command` (titled `title`) followed by those of all its
/// subcommands, depth first (one roff document after another).
fn man_pages(
    command: &clap::Command,
    title: &str,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    clap_mangen::Man::new(command.clone())
        .title(title)
        .render(out)?;
    for sub in command.get_subcommands().filter(|c| !c.is_hide_set()) {
        man_pages(sub, &format!("{title}-{}", sub.get_name()), out)?;
    }
    Ok(())
}
