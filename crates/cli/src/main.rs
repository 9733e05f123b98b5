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
mod generating;
mod inspect;
mod line_limit;
mod lm;
mod model_shape;
mod printable;
mod progress;
mod record;
mod sae;
mod sae_features;
mod sae_import;
mod sae_view;
mod shell;
mod sigbus;
mod stderr;
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
    /// Decoder language models from Hugging Face directories (GPT-2,
    /// GPT-NeoX, Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3): logits, generate.
    #[command(subcommand)]
    Lm(lm::LmCommand),
    /// Sentence embeddings with an EMBD model: one JSON array per text, per line.
    Embed(embed::EmbedArgs),
    /// Cosine similarity of two texts' sentence embeddings.
    Similarity(embed::SimilarityArgs),
    /// The lines of text files closest in meaning to a query (sentence embeddings).
    Search(embed::SearchArgs),
    /// SAEV activation datasets: record a model's activations, inspect, verify, read, summarise, benchmark, create.
    #[command(subcommand)]
    Acts(acts::ActsCommand),
    /// Sparse autoencoders on SAEV activations: train, eval, features.
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

fn main() -> ExitCode {
    sigbus::exit_cleanly_on_sigbus();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect(args) => inspect::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Convert(args) => convert::run(&args),
        Command::Tokens(command) => tokens::run(command),
        Command::Tllm(command) => tllm::run(command),
        Command::Lm(command) => lm::run(command),
        Command::Generate(args) => tllm::generate_command(&args),
        Command::InitTllm(args) => tllm::init(&args),
        Command::Embed(args) => embed::embed(&args),
        Command::Similarity(args) => embed::similarity(&args),
        Command::Search(args) => embed::search(&args),
        Command::Acts(command) => acts::run(command),
        Command::Sae(command) => sae::run(command),
        Command::Completions { shell } => shell::completions(shell, &mut Cli::command()),
        Command::Man => shell::man(&Cli::command()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
