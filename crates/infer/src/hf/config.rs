//! What every Hugging Face `config.json` reader shares (the vision
//! transformers' and the decoder language models'): each key read as a
//! [`Raw`] value that keeps its JSON to name it in errors, counts and
//! numbers checked against their ranges, and the error that names a key.

use modelbin_format::ModelError;
use serde_json::Value;

use crate::Result;

/// The largest count (width, layers, image side...) a configuration may
/// give: far above any real model, low enough that products of a few of
/// them cannot overflow.
pub(crate) const MAX_COUNT: u64 = 1 << 16;

/// `config.json {key}` = `value` is not usable, because `reason`.
pub(crate) fn invalid(key: &str, value: &Value, reason: &str) -> crate::Error {
    modelbin_format::Error::Model(ModelError::InvalidMetadata {
        key: format!("config.json {key}"),
        value: value.to_string(),
        reason: reason.into(),
    })
    .into()
}

/// One key of `config.json` as read: its JSON (`null` when the key is
/// missing), kept to name it in errors, and the same as a `T` when it is
/// one. A value of another type is not an error here: the model's `validate`
/// refuses it where transformers would, and passes over it where the key
/// does not matter.
#[derive(Debug, Clone, Default)]
pub(crate) struct Raw<T> {
    pub json: Value,
    pub value: Option<T>,
}

impl<'de, T: serde::de::DeserializeOwned> serde::Deserialize<'de> for Raw<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let json = Value::deserialize(deserializer)?;
        let value = match json {
            Value::Null => None,
            ref json => T::deserialize(json).ok(),
        };
        Ok(Raw { json, value })
    }
}

impl Raw<u64> {
    /// The count, `default` when the key is missing.
    ///
    /// # Errors
    /// [`ModelError::InvalidMetadata`] naming `key` unless it is an integer
    /// from 1 to [`MAX_COUNT`].
    pub(crate) fn count(&self, key: &str, default: u64) -> Result<usize> {
        self.count_up_to(key, default, MAX_COUNT)
    }

    /// The count, `default` when the key is missing.
    ///
    /// # Errors
    /// [`ModelError::InvalidMetadata`] naming `key` unless it is an integer
    /// from 1 to `max`.
    pub(crate) fn count_up_to(&self, key: &str, default: u64, max: u64) -> Result<usize> {
        if self.json.is_null() {
            return Ok(default as usize);
        }
        self.value
            .filter(|n| (1..=max).contains(n))
            .map(|n| n as usize)
            .ok_or_else(|| {
                invalid(
                    key,
                    &self.json,
                    &format!("expected an integer from 1 to {max}"),
                )
            })
    }
}

impl Raw<f64> {
    /// The number, `default` when the key is missing.
    ///
    /// # Errors
    /// [`ModelError::InvalidMetadata`] naming `key` with `reason` unless it
    /// is a number that `accept` takes.
    pub(crate) fn number(
        &self,
        key: &str,
        default: f64,
        accept: fn(f64) -> bool,
        reason: &str,
    ) -> Result<f64> {
        if self.json.is_null() {
            return Ok(default);
        }
        self.value
            .filter(|&v| accept(v))
            .ok_or_else(|| invalid(key, &self.json, reason))
    }
}
