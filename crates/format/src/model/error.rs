//! What a model needs of a file beyond its format (BERT in EMBD, TLLM in a tensor file).

/// Errors of the what a model needs of a file beyond its format (BERT in EMBD, TLLM in a tensor file).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A required metadata key is absent.
    #[error("required metadata key `{key}` is missing")]
    MissingMetadata {
        /// The key.
        key: &'static str,
    },
    /// A metadata value that cannot be used.
    #[error("metadata `{key}` = {value:?}: {reason}")]
    InvalidMetadata {
        /// The key.
        key: String,
        /// Its value.
        value: String,
        /// Why it is invalid.
        reason: String,
    },
    /// A model file lacks a tensor the model needs.
    #[error("required tensor `{name}` is missing")]
    MissingTensor {
        /// The tensor.
        name: String,
    },
    /// A tensor whose dtype the model cannot use.
    #[error("tensor `{name}` is {dtype}; {expected}")]
    WrongDtype {
        /// The tensor.
        name: String,
        /// Its dtype.
        dtype: crate::DType,
        /// What is allowed.
        expected: &'static str,
    },
    /// A tensor whose shape is not the one the model's configuration implies.
    #[error("tensor `{name}` has shape {found:?}; the configuration implies {expected:?}")]
    WrongShape {
        /// The tensor.
        name: String,
        /// The shape the configuration implies.
        expected: Vec<usize>,
        /// Its shape.
        found: Vec<usize>,
    },
    /// A model weight that is NaN or infinite: every output computed from
    /// it would be too.
    #[error("tensor `{name}` holds {value} at element {index}; model weights must be finite")]
    NonFinite {
        /// The tensor.
        name: String,
        /// The element's index (row-major).
        index: usize,
        /// The value (NaN, inf or -inf).
        value: f32,
    },
    /// An int8 weight's scale that is negative or not finite.
    #[error(
        "tensor `{name}` row {row} is {value}; int8 weight scales must be finite and not negative"
    )]
    InvalidScale {
        /// The scale tensor.
        name: String,
        /// The row (output feature) of the bad scale.
        row: usize,
        /// Its value.
        value: f32,
    },
}
