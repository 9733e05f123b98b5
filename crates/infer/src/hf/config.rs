//! What every Hugging Face `config.json` reader shares (the vision
//! transformers' and the decoder language models'): each key read as a
//! [`Raw`] value that keeps its JSON to name it in errors, typed accessors
//! that refuse a value of the wrong type naming the key, counts and numbers
//! checked against their ranges.
//!
//! The rule: every key a loader reads goes through an accessor here, so a
//! value of the wrong type is an error (never the default taken silently,
//! where transformers would read Python's truthiness of `"no"` as true); a
//! key the loader does not read is passed over, as transformers passes
//! over it. JSON `null` counts as the key left out, but for the keys read
//! as [`Nullable`], where `null` turns a feature off.

use modelbin_format::ModelError;
use serde_json::{Map, Value};

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

/// A JSON type a key is read as, and how an error names it.
pub(crate) trait JsonType: Sized + Clone {
    /// What a value of the type is, for an error: "expected {EXPECTED}".
    const EXPECTED: &'static str;
    /// The value as this type, if it is one.
    fn from_json(json: &Value) -> Option<Self>;
}

impl JsonType for bool {
    const EXPECTED: &'static str = "true or false";
    fn from_json(json: &Value) -> Option<Self> {
        json.as_bool()
    }
}

impl JsonType for u64 {
    const EXPECTED: &'static str = "an integer";
    fn from_json(json: &Value) -> Option<Self> {
        json.as_u64()
    }
}

impl JsonType for f64 {
    const EXPECTED: &'static str = "a number";
    fn from_json(json: &Value) -> Option<Self> {
        json.as_f64()
    }
}

impl JsonType for String {
    const EXPECTED: &'static str = "a string";
    fn from_json(json: &Value) -> Option<Self> {
        json.as_str().map(str::to_owned)
    }
}

impl JsonType for Map<String, Value> {
    const EXPECTED: &'static str = "an object";
    fn from_json(json: &Value) -> Option<Self> {
        json.as_object().cloned()
    }
}

impl JsonType for Vec<String> {
    const EXPECTED: &'static str = "an array of strings";
    fn from_json(json: &Value) -> Option<Self> {
        json.as_array()?
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect()
    }
}

/// One key of `config.json` as read: its JSON (`null` when the key is
/// missing), kept to name it in errors. Its value is reached only through
/// the typed accessors, which refuse a value of another type.
#[derive(Debug, Clone, Default)]
pub(crate) struct Raw<T> {
    json: Value,
    _type: std::marker::PhantomData<T>,
}

impl<'de, T> serde::Deserialize<'de> for Raw<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Raw {
            json: Value::deserialize(deserializer)?,
            _type: std::marker::PhantomData,
        })
    }
}

impl<T> Raw<T> {
    /// The key's JSON as written (`null` when it is missing).
    pub(crate) fn json(&self) -> &Value {
        &self.json
    }

    /// Whether the key is missing (or `null`).
    pub(crate) fn is_missing(&self) -> bool {
        self.json.is_null()
    }
}

impl<T: JsonType> Raw<T> {
    /// The value, `None` when the key is missing.
    ///
    /// # Errors
    /// [`ModelError::InvalidMetadata`] naming `key` when the value is not
    /// a `T`.
    pub(crate) fn get(&self, key: &str) -> Result<Option<T>> {
        if self.json.is_null() {
            return Ok(None);
        }
        T::from_json(&self.json)
            .map(Some)
            .ok_or_else(|| invalid(key, &self.json, &format!("expected {}", T::EXPECTED)))
    }

    /// The value, `default` when the key is missing.
    ///
    /// # Errors
    /// As [`Raw::get`].
    pub(crate) fn or(&self, key: &str, default: T) -> Result<T> {
        Ok(self.get(key)?.unwrap_or(default))
    }
}

/// A key whose JSON `null` is a value of its own: transformers' `None`,
/// a feature turned off (`"sliding_window": null`), where a missing key
/// takes the configuration class's default.
#[derive(Debug, Clone, Default)]
pub(crate) struct Nullable<T>(Option<Raw<T>>);

impl<'de, T> serde::Deserialize<'de> for Nullable<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Called for a key that is present, `null` included.
        Raw::deserialize(deserializer).map(|raw| Nullable(Some(raw)))
    }
}

impl<T: JsonType> Nullable<T> {
    /// The value: `default` when the key is missing, `None` when it is
    /// `null`.
    ///
    /// # Errors
    /// As [`Raw::get`].
    pub(crate) fn or(&self, key: &str, default: Option<T>) -> Result<Option<T>> {
        match &self.0 {
            None => Ok(default),
            Some(raw) => raw.get(key),
        }
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
        self.integer_in(key, default, 1, max)
    }

    /// The integer, `default` when the key is missing.
    ///
    /// # Errors
    /// [`ModelError::InvalidMetadata`] naming `key` unless it is an integer
    /// from `min` to `max`.
    pub(crate) fn integer_in(&self, key: &str, default: u64, min: u64, max: u64) -> Result<usize> {
        if self.json.is_null() {
            return Ok(default as usize);
        }
        self.json
            .as_u64()
            .filter(|n| (min..=max).contains(n))
            .map(|n| n as usize)
            .ok_or_else(|| {
                invalid(
                    key,
                    &self.json,
                    &format!("expected an integer from {min} to {max}"),
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
        self.json
            .as_f64()
            .filter(|&v| accept(v))
            .ok_or_else(|| invalid(key, &self.json, reason))
    }
}
