//! `safe_open(...).get_slice(name)[index]` as safetensors reads a Python
//! index: ints, slices with a positive step, one `...`, or an empty list,
//! checked against the tensor's shape with safetensors' rules and
//! messages. The result is one [`DimIndex`] per leading dimension, for a
//! caller to apply as a basic (view-making) index.
//!
//! Beyond safetensors, negative bounds count from the end (as numpy reads
//! them); a bound still below zero is refused like a negative int out of
//! range.
//!
//! ```
//! use modelbin_format::safetensors::slicing::{resolve, DimIndex, SliceItem, SliceRequest};
//!
//! // `[1:, -1]` on a 10 x 5 tensor.
//! let request = SliceRequest::Items(vec![
//!     SliceItem::Range { start: Some(1), stop: None, step: None },
//!     SliceItem::Int(-1),
//! ]);
//! assert_eq!(
//!     resolve(&request, &[10, 5]).unwrap(),
//!     vec![DimIndex::Range { start: 1, stop: 10, step: 1 }, DimIndex::Select(4)],
//! );
//! let refused = resolve(&SliceRequest::Items(vec![SliceItem::Int(10)]), &[10, 5]);
//! assert_eq!(
//!     refused.unwrap_err().to_string(),
//!     "Error during slicing [10] with shape [10, 5]: index 10 out of bounds for tensor dimension #0 of size 10",
//! );
//! ```

use std::fmt;

/// One item of a Python index, as the caller received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceItem {
    /// An integer (anything with `__index__`).
    Int(i64),
    /// A slice `start:stop:step`; `None` for an absent part.
    Range {
        /// The first position, if given.
        start: Option<i64>,
        /// The end (exclusive), if given.
        stop: Option<i64>,
        /// The step, if given (1 when absent).
        step: Option<i64>,
    },
    /// `...`: as many whole dimensions as the other items leave.
    Ellipsis,
    /// Anything else (a float, a string, `None`): refused at its position.
    Unsupported,
}

/// A whole index: the items of a tuple (a single item is a tuple of one),
/// or a list, which safetensors reads only when it is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SliceRequest {
    /// A tuple of items.
    Items(Vec<SliceItem>),
    /// A list of `len` items (`[]` selects nothing of the first dimension).
    List {
        /// How many items the list holds.
        len: usize,
    },
}

/// One resolved dimension of a slice, within the tensor's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimIndex {
    /// One position; the dimension disappears from the result.
    Select(usize),
    /// Positions `start, start + step, …` below `stop`.
    Range {
        /// The first position.
        start: usize,
        /// The end (exclusive).
        stop: usize,
        /// The step (at least 1).
        step: usize,
    },
}

/// Why an index cannot slice a tensor; each message is safetensors' own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SliceError {
    /// A list index that is not empty.
    #[error("Non empty lists are not implemented")]
    NonEmptyList,
    /// More than one `...`.
    #[error("Only one ellipsis (...) is allowed in slice index")]
    TwoEllipses,
    /// A slice step of zero or below.
    #[error("Slice step must be a positive integer, got {step}")]
    NonPositiveStep {
        /// The step given.
        step: i64,
    },
    /// A negative int or bound that stays negative from the end.
    #[error("Invalid index {value} for dimension {position} of size {size}")]
    NegativeOutOfRange {
        /// The index given.
        value: i64,
        /// Its dimension.
        position: usize,
        /// The dimension's size.
        size: usize,
    },
    /// An item that is neither an int, a slice nor `...`.
    #[error("Unsupported slice index at position {position}: expected slice, int, or ellipsis")]
    Unsupported {
        /// Its dimension.
        position: usize,
    },
    /// More indexes than dimensions, or a position beyond a dimension.
    #[error("Error during slicing [{shown}] with shape {shape:?}: {problem}")]
    OutOfBounds {
        /// The index as safetensors prints it (`2:, 0`).
        shown: String,
        /// The tensor's shape.
        shape: Vec<usize>,
        /// What is out of bounds.
        problem: String,
    },
}

/// A parsed dimension before the bounds check: absent bounds stay absent,
/// as safetensors prints them.
#[derive(Debug, Clone, Copy)]
enum Parsed {
    Select(u64),
    Range {
        start: Option<u64>,
        stop: Option<u64>,
        step: u64,
    },
}

impl fmt::Display for Parsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bound = |b: Option<u64>| b.map(|v| v.to_string()).unwrap_or_default();
        match *self {
            Parsed::Select(i) => write!(f, "{i}"),
            Parsed::Range { start, stop, step } => {
                write!(f, "{}:{}", bound(start), bound(stop))?;
                if step != 1 {
                    write!(f, ":{step}")?;
                }
                Ok(())
            }
        }
    }
}

/// The index `request` on a tensor of `shape`, checked with safetensors'
/// rules: one [`DimIndex`] per leading dimension it names (the rest are
/// taken whole).
pub fn resolve(request: &SliceRequest, shape: &[usize]) -> Result<Vec<DimIndex>, SliceError> {
    let parsed = parse(request, shape)?;
    check(&parsed, shape)
}

/// `request` as one [`Parsed`] per dimension it names (safetensors'
/// `parse_indexers`), negative positions counted from the end.
fn parse(request: &SliceRequest, shape: &[usize]) -> Result<Vec<Parsed>, SliceError> {
    let items = match request {
        SliceRequest::List { len: 0 } => {
            return Ok(vec![Parsed::Range {
                start: Some(0),
                stop: Some(0),
                step: 1,
            }]);
        }
        SliceRequest::List { .. } => return Err(SliceError::NonEmptyList),
        SliceRequest::Items(items) => items,
    };
    let ellipses = items.iter().filter(|i| **i == SliceItem::Ellipsis).count();
    if ellipses > 1 {
        return Err(SliceError::TwoEllipses);
    }
    let expansion = shape.len().saturating_sub(items.len() - ellipses);
    let mut parsed = Vec::with_capacity(items.len() + expansion);
    for item in items {
        let position = parsed.len();
        let size = shape.get(position).copied().unwrap_or(0);
        let counted = |value: i64| from_end(value, position, size);
        match *item {
            SliceItem::Ellipsis => parsed.extend(std::iter::repeat_n(
                Parsed::Range {
                    start: None,
                    stop: None,
                    step: 1,
                },
                expansion,
            )),
            SliceItem::Range { start, stop, step } => {
                let step = step.unwrap_or(1);
                if step <= 0 {
                    return Err(SliceError::NonPositiveStep { step });
                }
                parsed.push(Parsed::Range {
                    start: start.map(counted).transpose()?,
                    stop: stop.map(counted).transpose()?,
                    step: step.unsigned_abs(),
                });
            }
            SliceItem::Int(value) => parsed.push(Parsed::Select(counted(value)?)),
            SliceItem::Unsupported => return Err(SliceError::Unsupported { position }),
        }
    }
    Ok(parsed)
}

/// `value` as a position in a dimension of `size`, a negative one counted
/// from the end.
fn from_end(value: i64, position: usize, size: usize) -> Result<u64, SliceError> {
    if value >= 0 {
        return Ok(value.unsigned_abs());
    }
    let back = value.unsigned_abs();
    (size as u64)
        .checked_sub(back)
        .ok_or(SliceError::NegativeOutOfRange {
            value,
            position,
            size,
        })
}

/// The bounds check, innermost dimension first, as safetensors reports it.
fn check(parsed: &[Parsed], shape: &[usize]) -> Result<Vec<DimIndex>, SliceError> {
    let problem = if parsed.len() > shape.len() {
        Some("more slicing indexes than dimensions in tensor".to_string())
    } else {
        parsed
            .iter()
            .zip(shape)
            .enumerate()
            .rev()
            .find_map(|(position, (index, &size))| out_of_range(index, size, position))
    };
    if let Some(problem) = problem {
        let shown: Vec<String> = parsed.iter().map(Parsed::to_string).collect();
        return Err(SliceError::OutOfBounds {
            shown: shown.join(", "),
            shape: shape.to_vec(),
            problem,
        });
    }
    // Every position is now within its dimension, so fits a usize.
    let within = |v: u64| v as usize;
    Ok(parsed
        .iter()
        .zip(shape)
        .map(|(index, &size)| match *index {
            Parsed::Select(i) => DimIndex::Select(within(i)),
            Parsed::Range { start, stop, step } => DimIndex::Range {
                start: start.map_or(0, within),
                stop: stop.map_or(size, within),
                step: within(step),
            },
        })
        .collect())
}

/// What is out of range about `index` in a dimension of `size`, if anything.
fn out_of_range(index: &Parsed, size: usize, position: usize) -> Option<String> {
    let size64 = size as u64;
    let (start, stop, whole) = match *index {
        Parsed::Select(i) => (i, i.saturating_add(1), false),
        // A whole dimension of size 0 is an empty selection, not out of range.
        Parsed::Range { start, stop, .. } => (
            start.unwrap_or(0),
            stop.unwrap_or(size64),
            start.is_none() && size == 0,
        ),
    };
    let start_out = start >= size64 && !whole;
    if !start_out && stop <= size64 {
        return None;
    }
    let asked = if start_out { start } else { stop - 1 };
    Some(format!(
        "index {asked} out of bounds for tensor dimension #{position} of size {size}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> SliceItem {
        SliceItem::Range { start, stop, step }
    }

    #[test]
    fn an_ellipsis_takes_the_dimensions_the_rest_leave() {
        let request = SliceRequest::Items(vec![SliceItem::Ellipsis, SliceItem::Int(1)]);
        assert_eq!(
            resolve(&request, &[10, 5]).unwrap(),
            vec![
                DimIndex::Range {
                    start: 0,
                    stop: 10,
                    step: 1
                },
                DimIndex::Select(1)
            ]
        );
    }

    #[test]
    fn each_refusal_is_its_variant() {
        let shape = [10, 5];
        let refused = |items: Vec<SliceItem>| resolve(&SliceRequest::Items(items), &shape);
        assert_eq!(
            resolve(&SliceRequest::List { len: 2 }, &shape),
            Err(SliceError::NonEmptyList)
        );
        assert_eq!(
            refused(vec![SliceItem::Ellipsis, SliceItem::Ellipsis]),
            Err(SliceError::TwoEllipses)
        );
        assert_eq!(
            refused(vec![range(None, None, Some(0))]),
            Err(SliceError::NonPositiveStep { step: 0 })
        );
        assert_eq!(
            refused(vec![range(Some(2), None, None), SliceItem::Int(-6)]),
            Err(SliceError::NegativeOutOfRange {
                value: -6,
                position: 1,
                size: 5
            })
        );
        assert_eq!(
            refused(vec![SliceItem::Int(0), SliceItem::Unsupported]),
            Err(SliceError::Unsupported { position: 1 })
        );
        let Err(SliceError::OutOfBounds { shown, problem, .. }) = refused(vec![
            SliceItem::Int(0),
            SliceItem::Int(0),
            SliceItem::Int(0),
        ]) else {
            panic!("three indexes on two dimensions are out of bounds");
        };
        assert_eq!(
            (shown.as_str(), problem.as_str()),
            ("0, 0, 0", "more slicing indexes than dimensions in tensor")
        );
    }

    #[test]
    fn bounds_are_checked_innermost_first_and_shown_as_given() {
        let request = SliceRequest::Items(vec![
            range(Some(20), None, Some(2)),
            range(None, Some(20), None),
        ]);
        assert_eq!(
            resolve(&request, &[10, 5]).unwrap_err().to_string(),
            "Error during slicing [20::2, :20] with shape [10, 5]: index 19 out of bounds for tensor dimension #1 of size 5"
        );
    }

    #[test]
    fn extreme_values_neither_overflow_nor_panic() {
        let request = SliceRequest::Items(vec![SliceItem::Int(i64::MIN), SliceItem::Int(i64::MAX)]);
        assert!(matches!(
            resolve(&request, &[usize::MAX, 0]),
            Err(SliceError::OutOfBounds { .. })
        ));
        let request =
            SliceRequest::Items(vec![range(Some(i64::MAX), Some(i64::MIN), Some(i64::MAX))]);
        assert_eq!(
            resolve(&request, &[3]),
            Err(SliceError::NegativeOutOfRange {
                value: i64::MIN,
                position: 0,
                size: 3
            })
        );
    }
}
