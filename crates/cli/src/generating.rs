//! What `tllm generate` and `lm generate` print: the text streamed as it
//! is generated (raw to a pipe, escaped on a terminal) with a speed line on
//! stderr, or one JSON report.

use std::io::Write;

use clap::Args;
use modelbin_infer::generation::{Generation, Sampling};

use crate::args::{parse_non_negative, parse_probability};
use crate::failure::Failure;
use crate::stdout::{outln, print_json};

/// The sampling flags both generate commands take.
#[derive(Debug, Args)]
pub struct SamplingArgs {
    /// Tokens to generate at most (past the context the window slides).
    #[arg(long, default_value_t = 64)]
    pub max_tokens: usize,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0, value_parser = parse_non_negative, allow_negative_numbers = true)]
    pub temperature: f32,
    /// Sample among the k most likely tokens (k ≥ 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub top_k: Option<u64>,
    /// Sample among the most likely tokens whose probability reaches p, in (0, 1].
    #[arg(long, value_parser = parse_probability)]
    pub top_p: Option<f32>,
    /// Sampler seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print a JSON report (ids, text, why it stopped, speed) instead of streaming text.
    #[arg(long)]
    pub json: bool,
}

impl SamplingArgs {
    /// The library's sampling settings.
    pub fn sampling(&self) -> Sampling {
        Sampling {
            temperature: self.temperature,
            top_k: self.top_k.map(|k| k as usize),
            top_p: self.top_p,
            seed: self.seed,
        }
    }
}

/// How generated ids read as text.
pub trait Render {
    /// The bytes to stream after `ids` (the ids generated so far, the last
    /// one new).
    fn next_piece(&mut self, ids: &[u32]) -> Vec<u8>;
    /// The generated ids' text for the JSON report, if they have one.
    fn text(&self, ids: &[u32]) -> Option<String>;
}

/// Runs `generate` (which calls its argument with each new id) and prints
/// its text as `json` asks.
pub fn print_generation(
    json: bool,
    render: &mut dyn Render,
    generate: impl FnOnce(&mut dyn FnMut(u32)) -> Result<Generation, Failure>,
) -> Result<(), Failure> {
    let stream = !json;
    let mut stdout = std::io::stdout().lock();
    let mut product = crate::printable::ProductText::for_stdout();
    // The first failed write is kept and returned once generation ends;
    // nothing more is written after it.
    let mut write_failure = None;
    let mut ids = Vec::new();
    let result = generate(&mut |id| {
        ids.push(id);
        if stream && write_failure.is_none() {
            let piece = render.next_piece(&ids);
            let written = product
                .write(&mut stdout, &piece)
                .and_then(|()| stdout.flush());
            if let Err(e) = written {
                write_failure = Some(crate::stdout::write_error(e));
            }
        }
    })?;
    if stream
        && write_failure.is_none()
        && let Err(e) = product.finish(&mut stdout)
    {
        write_failure = Some(crate::stdout::write_error(e));
    }
    drop(stdout);
    if let Some(failure) = write_failure {
        return Err(failure);
    }
    if json {
        #[derive(serde::Serialize)]
        struct Report<'a> {
            ids: &'a [u32],
            text: Option<String>,
            stopped: &'a str,
            tokens_per_second: f64,
        }
        print_json(&Report {
            ids: &result.ids,
            text: render.text(&result.ids),
            stopped: result.stopped,
            tokens_per_second: result.tokens_per_second,
        })?;
    } else {
        outln!()?;
        crate::stderr::errln!(
            "{} tokens in {:.3} s ({:.1} tokens/s), stopped: {}",
            result.ids.len(),
            result.seconds,
            result.tokens_per_second,
            result.stopped
        );
    }
    Ok(())
}
