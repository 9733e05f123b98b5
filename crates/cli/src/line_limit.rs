//! The `--max-line-bytes` flag of the commands that read lines, and the
//! error for a line past it.

use modelbin_format::io::lines::DEFAULT_MAX_LINE_BYTES;

use crate::failure::Failure;

/// The `--max-line-bytes` flag of the commands that read lines.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct LineLimit {
    /// The longest input line accepted, in bytes, its line break not
    /// counted; a longer line is an error.
    #[arg(
        long = "max-line-bytes",
        value_name = "BYTES",
        default_value_t = DEFAULT_MAX_LINE_BYTES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
    )]
    pub max_line_bytes: usize,
}

/// The error for line `number` (1-based) of `source` that is longer than
/// `max` bytes.
pub fn too_long(source: &str, number: usize, max: usize) -> Failure {
    Failure::Invalid(format!(
        "{source} line {number} is longer than {max} bytes; pass --max-line-bytes to raise the limit"
    ))
}
