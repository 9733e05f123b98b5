//! Argument types every command shares: token id lists, output paths,
//! formats and weight dtypes. Each parser turns a bad value into a clap
//! error, so invalid values exit 2 like unknown flags.

use std::path::{Path, PathBuf};

use clap::Args;
use modelbin_format::{DType, Format};

/// Token ids as one argument: numbers separated by commas and/or spaces
/// (`1,2,3`, `"1 2 3"`, `1, 2`); brackets are ignored, so a JSON array works.
#[derive(Debug, Clone)]
pub struct IdList(pub Vec<u32>);

/// Parses an [`IdList`].
pub fn parse_ids(text: &str) -> Result<IdList, String> {
    split_ids(text).map(IdList)
}

/// The ids in `text`, separated by whitespace, commas or brackets.
pub fn split_ids(text: &str) -> Result<Vec<u32>, String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | '[' | ']'))
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<u32>()
                .map_err(|_| format!("`{s}` is not a token id (a number from 0 to 4294967295)"))
        })
        .collect()
}

/// All the ids of repeated or space-separated [`IdList`] arguments, in order.
pub fn flatten_ids(lists: &[IdList]) -> Vec<u32> {
    lists
        .iter()
        .flat_map(|list| list.0.iter().copied())
        .collect()
}

/// Where a command writes its result: `-o/--out FILE`, or (kept for the
/// spellings of earlier versions) a last positional argument.
#[derive(Debug, Args)]
pub struct OutputPath {
    /// The file to write, atomically (a failure leaves no partial file; an
    /// existing file is replaced; `-` is standard output).
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// The file to write (same as -o).
    #[arg(value_name = "OUTPUT", conflicts_with = "out")]
    positional: Option<PathBuf>,
}

impl OutputPath {
    /// The output path; a usage error when none was given.
    pub fn path(&self) -> Result<&Path, crate::failure::Failure> {
        self.out
            .as_deref()
            .or(self.positional.as_deref())
            .ok_or_else(|| crate::failure::Failure::Usage("no output file: pass -o FILE".into()))
    }
}

/// Parses a format name (`bintensors`, `safetensors`, `tllm`, ...).
pub fn parse_format(name: &str) -> Result<Format, String> {
    Format::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        format!("unknown format `{name}` (known: {})", known.join(", "))
    })
}

/// Parses a storage dtype for model weights: f32, f16, bf16 or int8.
pub fn parse_weight_dtype(name: &str) -> Result<DType, String> {
    modelbin_format::convert::weight_dtype(name)
        .ok_or_else(|| format!("unknown weight dtype `{name}` (known: f32, f16, bf16, int8)"))
}

/// Parses a number and checks it with `valid`; `requirement` completes
/// "must be …" in the error.
fn parse_checked(
    text: &str,
    valid: impl Fn(f64) -> bool,
    requirement: &str,
) -> Result<f64, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    if valid(v) {
        Ok(v)
    } else {
        Err(format!("{v} must be {requirement}"))
    }
}

/// Parses a probability in (0, 1].
pub fn parse_probability(text: &str) -> Result<f32, String> {
    parse_checked(text, |p| p > 0.0 && p <= 1.0, "in (0, 1]").map(|p| p as f32)
}

/// Parses a finite number ≥ 0.
pub fn parse_non_negative(text: &str) -> Result<f32, String> {
    parse_coefficient(text).map(|v| v as f32)
}

/// Parses a number, leaving its range to the library that takes it.
pub fn parse_number(text: &str) -> Result<f64, String> {
    parse_checked(text, |_| true, "")
}

/// Parses `LATENT:ALPHA` (`--steer`): a latent and the finite multiple
/// of its decoder row to add.
pub fn parse_steer(text: &str) -> Result<(usize, f32), String> {
    let bad = || format!("`{text}` is not LATENT:ALPHA (a latent and a finite number)");
    let (latent, alpha) = text.split_once(':').ok_or_else(bad)?;
    let latent = latent.trim().parse().map_err(|_| bad())?;
    let alpha: f32 = alpha.trim().parse().map_err(|_| bad())?;
    if !alpha.is_finite() {
        return Err(bad());
    }
    Ok((latent, alpha))
}

/// Parses a finite number > 0 (a learning rate).
pub fn parse_positive(text: &str) -> Result<f64, String> {
    parse_checked(text, |v| v.is_finite() && v > 0.0, "a finite number > 0")
}

/// Parses a finite number ≥ 0 in double precision (a coefficient).
pub fn parse_coefficient(text: &str) -> Result<f64, String> {
    parse_checked(text, |v| v.is_finite() && v >= 0.0, "a finite number ≥ 0")
}

/// Parses a fraction in [0, 1).
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    parse_checked(text, |v| (0.0..1.0).contains(&v), "in [0, 1)")
}

/// Parses a thread count: 1 to [`modelbin_format::io::threads::MAX_THREADS`],
/// the limit every face shares.
pub fn parse_threads(text: &str) -> Result<usize, String> {
    let threads: usize = text
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number"))?;
    if threads == 0 {
        return Err("0 threads: at least 1".into());
    }
    modelbin_format::io::threads::check(threads).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_are_one_to_the_shared_limit() {
        assert_eq!(parse_threads("1"), Ok(1));
        assert_eq!(parse_threads("256"), Ok(256));
        for bad in ["0", "257", "1000000", "-1", "x"] {
            assert!(parse_threads(bad).is_err(), "{bad}");
        }
        assert!(parse_threads("257").unwrap_err().contains("limit of 256"));
    }

    #[test]
    fn ids_accept_commas_spaces_and_brackets() {
        assert_eq!(split_ids("1,2, 3 4").unwrap(), [1, 2, 3, 4]);
        assert_eq!(split_ids("[15339, 1917]").unwrap(), [15339, 1917]);
        assert_eq!(split_ids("").unwrap(), Vec::<u32>::new());
        assert!(
            split_ids("1,x")
                .unwrap_err()
                .contains("`x` is not a token id")
        );
        assert!(split_ids("-1").is_err());
    }

    #[test]
    fn probabilities_are_in_the_half_open_unit_interval() {
        assert_eq!(parse_probability("0.9").unwrap(), 0.9);
        assert_eq!(parse_probability("1").unwrap(), 1.0);
        for bad in ["0", "2", "-0.1", "NaN", "x"] {
            assert!(parse_probability(bad).is_err(), "{bad}");
        }
    }
}

/// `--jsonl` and `--field`: how the commands that read texts from files
/// read them (`modelbin_format::io::texts`).
#[derive(Debug, Clone, Args)]
pub struct TextFormatArgs {
    /// Read the inputs as JSON Lines (as `*.jsonl` and `*.ndjson` files
    /// always are): each non-empty line is a JSON string, or an object whose
    /// --field is one. `*.parquet` files are always Parquet: each row of the
    /// string column --field is a text.
    #[arg(long)]
    pub jsonl: bool,
    /// The field of a JSON Lines object, or the column of a Parquet file,
    /// read as the text.
    #[arg(long, value_name = "NAME", default_value = "text")]
    pub field: String,
}

impl TextFormatArgs {
    /// The library's reading rule for these flags.
    pub fn format(&self) -> modelbin_format::io::texts::TextFormat {
        modelbin_format::io::texts::TextFormat {
            jsonl: self.jsonl,
            field: Some(self.field.clone()),
        }
    }
}
