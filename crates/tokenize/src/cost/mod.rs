//! Models, their encodings and prices; [`chat`] counts chat requests.

pub mod chat;

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::{Error, Result};

/// Model names → encoding, exactly as tiktoken 0.14.0's `model.py` maps them.
const MODEL_TO_ENCODING: [(&str, &str); 45] = [
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4-mini", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4o", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5-turbo", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("gpt-35-turbo", "cl100k_base"),
    ("davinci-002", "cl100k_base"),
    ("babbage-002", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
    ("text-embedding-3-small", "cl100k_base"),
    ("text-embedding-3-large", "cl100k_base"),
    ("text-davinci-003", "p50k_base"),
    ("text-davinci-002", "p50k_base"),
    ("text-davinci-001", "r50k_base"),
    ("text-curie-001", "r50k_base"),
    ("text-babbage-001", "r50k_base"),
    ("text-ada-001", "r50k_base"),
    ("davinci", "r50k_base"),
    ("curie", "r50k_base"),
    ("babbage", "r50k_base"),
    ("ada", "r50k_base"),
    ("code-davinci-002", "p50k_base"),
    ("code-davinci-001", "p50k_base"),
    ("code-cushman-002", "p50k_base"),
    ("code-cushman-001", "p50k_base"),
    ("davinci-codex", "p50k_base"),
    ("cushman-codex", "p50k_base"),
    ("text-davinci-edit-001", "p50k_edit"),
    ("code-davinci-edit-001", "p50k_edit"),
    ("text-similarity-davinci-001", "r50k_base"),
    ("text-similarity-curie-001", "r50k_base"),
    ("text-similarity-babbage-001", "r50k_base"),
    ("text-similarity-ada-001", "r50k_base"),
    ("text-search-davinci-doc-001", "r50k_base"),
    ("text-search-curie-doc-001", "r50k_base"),
    ("text-search-babbage-doc-001", "r50k_base"),
    ("text-search-ada-doc-001", "r50k_base"),
    ("code-search-babbage-code-001", "r50k_base"),
    ("code-search-ada-code-001", "r50k_base"),
    ("gpt2", "gpt2"),
    ("gpt-2", "gpt2"),
];

/// Model-name prefixes → encoding, as tiktoken's `model.py` lists them: for
/// a name not mapped exactly, the first prefix it starts with wins.
const MODEL_PREFIX_TO_ENCODING: [(&str, &str); 17] = [
    ("o1-", "o200k_base"),
    ("o3-", "o200k_base"),
    ("o4-mini-", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-4.5-", "o200k_base"),
    ("gpt-4.1-", "o200k_base"),
    ("chatgpt-4o-", "o200k_base"),
    ("gpt-4o-", "o200k_base"),
    ("gpt-4-", "cl100k_base"),
    ("gpt-3.5-turbo-", "cl100k_base"),
    ("gpt-35-turbo-", "cl100k_base"),
    ("gpt-oss-", "o200k_harmony"),
    ("ft:gpt-4o", "o200k_base"),
    ("ft:gpt-4", "cl100k_base"),
    ("ft:gpt-3.5-turbo", "cl100k_base"),
    ("ft:davinci-002", "cl100k_base"),
    ("ft:babbage-002", "cl100k_base"),
];

/// The encoding of `model`, as tiktoken maps it: by exact name, else by the
/// first known prefix it starts with.
pub fn encoding_for_model(model: &str) -> Result<&'static str> {
    MODEL_TO_ENCODING
        .iter()
        .find(|&&(name, _)| name == model)
        .or_else(|| {
            MODEL_PREFIX_TO_ENCODING
                .iter()
                .find(|&&(prefix, _)| model.starts_with(prefix))
        })
        .map(|&(_, encoding)| encoding)
        .ok_or_else(|| Error::UnknownModel {
            model: model.to_owned(),
            known: "gpt-5, gpt-4.1, gpt-4o, o1, o3, o4-mini, gpt-4, gpt-3.5-turbo, \
                    gpt-oss-*, text-embedding-3-*, davinci-002, gpt2 and older OpenAI models"
                .to_owned(),
        })
}

/// Prices of one model, in its table's currency per million tokens (a
/// table in another unit is converted when parsed).
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Input tokens.
    pub input: f64,
    /// Cached input tokens, where the model has a cached rate.
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Output tokens, where the model produces any.
    #[serde(default)]
    pub output: Option<f64>,
    /// The built-in encoding the model's text is counted with (one of
    /// tiktoken's, e.g. `o200k_base`), for a model tiktoken does not map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
}

/// A price table: `{"as_of", "currency", "unit", "models": {name: price}}`,
/// for example
///
/// ```json
/// {"as_of": "2026-11-01", "currency": "EUR", "unit": "per 1K tokens",
///  "models": {"my-model": {"input": 0.5, "cached_input": 0.05, "output": 1.5,
///                          "encoding": "o200k_base"}}}
/// ```
///
/// `as_of` is a `YYYY-MM-DD` date, `currency` an ISO 4217 code (three
/// capital letters, printed as given), `unit` one of [`PRICE_UNITS`];
/// `encoding` (one of tiktoken's) is needed for a model tiktoken does not
/// map. [`PriceTable::parse`] converts the prices to per 1M tokens.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct PriceTable {
    /// The date the prices were taken.
    pub as_of: String,
    /// Where they come from.
    #[serde(default)]
    pub source: Option<String>,
    /// Currency, an ISO 4217 code (the bundled table's is USD).
    pub currency: String,
    /// Unit of the prices: "per 1M tokens" once parsed.
    pub unit: String,
    /// Prices by model name.
    pub models: BTreeMap<String, ModelPrice>,
}

/// The units a price table may give its prices in, with the tokens each
/// is a price of.
pub const PRICE_UNITS: [(&str, f64); 3] = [
    ("per 1M tokens", 1e6),
    ("per 1K tokens", 1e3),
    ("per token", 1.0),
];

/// The unit every parsed table holds its prices in.
const PARSED_UNIT: &str = "per 1M tokens";

/// What a price table must look like, for error messages.
const TABLE_SHAPE: &str = r#"expected {"as_of": "YYYY-MM-DD", "currency": "USD", "unit": "per 1M tokens", "models": {"NAME": {"input": 2.5, "cached_input": 1.25, "output": 10.0, "encoding": "o200k_base"}}}"#;

/// The price table bundled with modelbin.
pub const BUNDLED_PRICES: &str = include_str!("../../data/prices.json");

impl PriceTable {
    /// The bundled table.
    pub fn bundled() -> PriceTable {
        PriceTable::parse(BUNDLED_PRICES).expect("the bundled price table is valid")
    }

    /// Parses a table in the bundled table's shape (see [`PriceTable`]):
    /// `as_of` must be a real date, `currency` an ISO 4217 code and `unit`
    /// one of [`PRICE_UNITS`]; the prices are converted to per 1M tokens.
    /// Every price must be a finite number, zero or more.
    pub fn parse(json: &str) -> Result<PriceTable> {
        let mut table: PriceTable = serde_json::from_str(json)
            .map_err(|e| Error::BadPriceTable(format!("{e}; {TABLE_SHAPE}")))?;
        if !is_date(&table.as_of) {
            return Err(Error::BadPriceTable(format!(
                "as_of `{}` is not a YYYY-MM-DD date",
                table.as_of
            )));
        }
        if !(table.currency.len() == 3 && table.currency.bytes().all(|b| b.is_ascii_uppercase())) {
            return Err(Error::BadPriceTable(format!(
                "currency `{}` is not an ISO 4217 code (three capital letters, e.g. USD, EUR)",
                table.currency
            )));
        }
        let Some(&(_, tokens)) = PRICE_UNITS
            .iter()
            .find(|(unit, _)| unit.eq_ignore_ascii_case(table.unit.trim()))
        else {
            return Err(Error::BadPriceTable(format!(
                "unit `{}` is not one of: {}",
                table.unit,
                PRICE_UNITS.map(|(unit, _)| unit).join(", ")
            )));
        };
        let to_parsed_unit = 1e6 / tokens;
        for price in table.models.values_mut() {
            price.input *= to_parsed_unit;
            price.cached_input = price.cached_input.map(|p| p * to_parsed_unit);
            price.output = price.output.map(|p| p * to_parsed_unit);
        }
        table.unit = PARSED_UNIT.to_owned();
        for (model, price) in &table.models {
            let rates = [
                ("input", Some(price.input)),
                ("cached_input", price.cached_input),
                ("output", price.output),
            ];
            for (rate, value) in rates {
                if let Some(value) = value.filter(|v| !v.is_finite() || *v < 0.0) {
                    return Err(Error::BadPriceTable(format!(
                        "model `{model}`: {rate} price {value} must be a finite number, zero or more"
                    )));
                }
            }
            if let Some(encoding) = &price.encoding
                && crate::embedded::name(encoding).is_none()
            {
                return Err(Error::BadPriceTable(format!(
                    "model `{model}`: encoding `{encoding}` is not a built-in one ({})",
                    crate::embedded::NAMES.join(", ")
                )));
            }
        }
        Ok(table)
    }

    /// How `model` is priced and counted: the entry it is priced as (see
    /// [`PriceTable::price`]) and the encoding of its text, from that
    /// entry's `encoding` or, as tiktoken maps them, from the model's name
    /// or the name it is priced as.
    pub fn pricing(&self, model: &str) -> Result<Pricing<'_>> {
        let (priced_as, price) = self.price(model)?;
        let encoding = match price.encoding.as_deref().and_then(crate::embedded::name) {
            Some(encoding) => encoding,
            None => encoding_for_model(model)
                .or_else(|_| encoding_for_model(priced_as))
                .map_err(|_| Error::NoEncoding(priced_as.to_owned()))?,
        };
        Ok(Pricing {
            priced_as,
            price,
            encoding,
        })
    }

    /// What `input_tokens` input tokens (of which `cached_tokens` at the
    /// cached rate) and `output_tokens` output tokens of `model` cost.
    /// Refused: more cached tokens than input tokens, cached tokens for a
    /// model without a cached rate, and output tokens for a model that
    /// produces none (an embedding model), rather than pricing them at 0;
    /// and a cost that is not a finite number ([`Error::CostNotFinite`]).
    pub fn estimate(
        &self,
        model: &str,
        input_tokens: u64,
        cached_tokens: u64,
        output_tokens: u64,
    ) -> Result<CostEstimate> {
        let Pricing {
            priced_as,
            price,
            encoding,
        } = self.pricing(model)?;
        if cached_tokens > input_tokens {
            return Err(Error::CachedAboveInput {
                cached: cached_tokens,
                input: input_tokens,
            });
        }
        let cached_cost = match cached_cost(price, cached_tokens) {
            _ if cached_tokens == 0 => 0.0,
            Some(cost) => cost,
            None => return Err(Error::NoCachedPrice(priced_as.to_owned())),
        };
        if output_tokens > 0 && price.output.is_none() {
            return Err(Error::NoOutputPrice(priced_as.to_owned()));
        }
        let input_cost = cost(price, input_tokens - cached_tokens, 0) + cached_cost;
        let output_cost = cost(price, 0, output_tokens);
        // Prices are finite, but their products with counts can overflow.
        if ![input_cost, output_cost, input_cost + output_cost]
            .iter()
            .all(|c| c.is_finite())
        {
            return Err(Error::CostNotFinite {
                model: priced_as.to_owned(),
                input_tokens,
                output_tokens,
            });
        }
        Ok(CostEstimate {
            model: model.to_owned(),
            priced_as: priced_as.to_owned(),
            encoding,
            input_tokens,
            cached_tokens,
            output_tokens,
            input_cost,
            output_cost,
            total_cost: input_cost + output_cost,
            currency: self.currency.clone(),
            prices_as_of: self.as_of.clone(),
        })
    }

    /// The price of `model`: its own entry, or for a dated snapshot
    /// (`gpt-4o-2024-08-06`, `gpt-4-0613`) the entry of the model it is a
    /// snapshot of, returned as the name it is priced as. Any other name is
    /// [`Error::UnknownModel`] listing the nearest known names: a variant
    /// such as `o1-preview` is never priced as `o1`.
    pub fn price(&self, model: &str) -> Result<(&str, &ModelPrice)> {
        if let Some((name, price)) = self.models.get_key_value(model) {
            return Ok((name, price));
        }
        // Names are matched without regard to ASCII case (`GPT-4o`).
        let lowered = model.to_ascii_lowercase();
        if let Some((name, price)) = self.models.get_key_value(&lowered) {
            return Ok((name, price));
        }
        self.models
            .iter()
            .filter(|(name, _)| {
                lowered
                    .strip_prefix(name.to_ascii_lowercase().as_str())
                    .is_some_and(is_snapshot_suffix)
            })
            .max_by_key(|(name, _)| name.len())
            .map(|(name, price)| (name.as_str(), price))
            .ok_or_else(|| Error::UnknownModel {
                model: model.to_owned(),
                known: self.nearest(model).join(", "),
            })
    }

    /// Up to five known names nearest to `model`: fewest edits (insertions,
    /// deletions, substitutions and swaps of neighbours, ignoring ASCII
    /// case), then the longest shared prefix, then by name.
    fn nearest(&self, model: &str) -> Vec<String> {
        let model = model.to_ascii_lowercase();
        let shared = |name: &str| {
            name.bytes()
                .zip(model.bytes())
                .take_while(|(a, b)| a == b)
                .count()
        };
        let mut names: Vec<(usize, std::cmp::Reverse<usize>, &String)> = self
            .models
            .keys()
            .map(|name| {
                let lowered = name.to_ascii_lowercase();
                let edits = strsim::osa_distance(&lowered, &model);
                (edits, std::cmp::Reverse(shared(&lowered)), name)
            })
            .collect();
        names.sort();
        names
            .into_iter()
            .take(5)
            .map(|(.., name)| name.clone())
            .collect()
    }

    /// This table with `other`'s entries added, replacing entries of the
    /// same name (`--prices FILE` overlays the bundled table). A table in
    /// another currency replaces this one whole: prices in two currencies
    /// are never mixed, nor converted.
    pub fn overlay(mut self, other: PriceTable) -> PriceTable {
        if other.currency != self.currency {
            return other;
        }
        self.models.extend(other.models);
        self.as_of = format!("{} (bundled {})", other.as_of, self.as_of);
        self
    }

    /// Days from the table's `as_of` date (`YYYY-MM-DD`) to `today` (days
    /// since 1970-01-01), when `as_of` is such a date.
    pub fn age_in_days(&self, today: i64) -> Option<i64> {
        days_from_civil(self.as_of.get(..10)?).map(|day| today - day)
    }

    /// The table an estimate prices with: the bundled one, overlaid with
    /// the entries of the price table file `file` (read under
    /// [`MAX_PRICE_TABLE_BYTES`]) and of the table text `text`.
    pub fn with_overlays(file: Option<&std::path::Path>, text: Option<&str>) -> Result<PriceTable> {
        let mut table = PriceTable::bundled();
        if let Some(path) = file {
            let text = modelbin_format::io::source::read_capped_text(
                path,
                "a price table",
                MAX_PRICE_TABLE_BYTES,
            )?;
            table = table.overlay(PriceTable::parse(&text)?);
        }
        if let Some(text) = text {
            table = table.overlay(PriceTable::parse(text)?);
        }
        Ok(table)
    }

    /// How old the prices are when more than [`STALE_AFTER_DAYS`] days
    /// have passed since `as_of` (today by the system clock): what a face
    /// warns of.
    pub fn staleness(&self) -> Option<Stale> {
        let today = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| (d.as_secs() / 86_400) as i64);
        let age_days = self.age_in_days(today)?;
        (age_days > STALE_AFTER_DAYS).then(|| Stale {
            as_of: self.as_of.clone(),
            age_days,
        })
    }
}

/// The most bytes a price table file may hold.
pub const MAX_PRICE_TABLE_BYTES: u64 = 1 << 20;

/// Days a price table may age before an estimate warns that its prices
/// may have changed.
pub const STALE_AFTER_DAYS: i64 = 90;

/// Prices older than [`STALE_AFTER_DAYS`]: a warning as data, which each
/// face words.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Stale {
    /// The table's date.
    pub as_of: String,
    /// Its age in days.
    pub age_days: i64,
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the price table is from {} ({} days ago); prices may have changed",
            self.as_of, self.age_days
        )
    }
}

/// Whether `suffix` (what follows a known name) dates a snapshot:
/// `-YYYY-MM-DD` or `-MMDD`.
fn is_snapshot_suffix(suffix: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match suffix.strip_prefix('-') {
        Some(rest) if rest.len() == 4 => digits(rest),
        Some(rest) if rest.len() == 10 => {
            let parts: Vec<&str> = rest.split('-').collect();
            parts.len() == 3
                && parts
                    .iter()
                    .zip([4, 2, 2])
                    .all(|(p, n)| p.len() == n && digits(p))
        }
        _ => false,
    }
}

/// Whether `date` is a real `YYYY-MM-DD` date (Feb 29 in leap years only).
fn is_date(date: &str) -> bool {
    let shaped = date.len() == 10
        && date.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    if !shaped {
        return false;
    }
    let number = |range: std::ops::Range<usize>| date[range].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 => 28 + u32::from(leap),
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date (proleptic Gregorian).
fn days_from_civil(date: &str) -> Option<i64> {
    let mut parts = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// The entry a model is priced as and the encoding of its text (see
/// [`PriceTable::pricing`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing<'a> {
    /// The name of the entry that prices it.
    pub priced_as: &'a str,
    /// That entry's prices.
    pub price: &'a ModelPrice,
    /// The built-in encoding its text is counted with.
    pub encoding: &'static str,
}

/// What sending tokens to a model costs, as `modelbin tokens cost --json`
/// prints it (see [`PriceTable::estimate`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CostEstimate {
    /// The model asked for.
    pub model: String,
    /// The table entry that prices it (a snapshot is priced as its model).
    pub priced_as: String,
    /// The encoding its text is counted with.
    pub encoding: &'static str,
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Input tokens at the cached rate.
    pub cached_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The input tokens' cost.
    pub input_cost: f64,
    /// The output tokens' cost.
    pub output_cost: f64,
    /// Their sum.
    pub total_cost: f64,
    /// The table's currency.
    pub currency: String,
    /// The table's date.
    pub prices_as_of: String,
}

/// Cost in the table's currency of `input` and `output` tokens.
pub fn cost(price: &ModelPrice, input: u64, output: u64) -> f64 {
    (input as f64 * price.input + output as f64 * price.output.unwrap_or(0.0)) / 1e6
}

/// Cost of `cached` input tokens at the cached rate; `None` when the model
/// has no cached rate.
pub fn cached_cost(price: &ModelPrice, cached: u64) -> Option<f64> {
    price.cached_input.map(|rate| cached as f64 * rate / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_map_to_encodings() {
        for (model, encoding) in [
            ("gpt-4o", "o200k_base"),
            ("gpt-4o-mini-2024-07-18", "o200k_base"),
            ("gpt-4.1-nano", "o200k_base"),
            ("gpt-5", "o200k_base"),
            ("o3-mini", "o200k_base"),
            ("o1", "o200k_base"),
            ("gpt-4", "cl100k_base"),
            ("gpt-4-turbo", "cl100k_base"),
            ("gpt-3.5-turbo-0125", "cl100k_base"),
            ("text-embedding-3-small", "cl100k_base"),
        ] {
            assert_eq!(encoding_for_model(model).unwrap(), encoding, "{model}");
        }
        let err = encoding_for_model("llama-3").unwrap_err().to_string();
        assert!(err.contains("llama-3") && err.contains("gpt-4o"), "{err}");
    }

    #[test]
    fn prices_resolve_snapshots_and_compute_costs() {
        let table = PriceTable::bundled();
        let (name, price) = table.price("gpt-4o-2024-08-06").unwrap();
        assert_eq!(name, "gpt-4o");
        assert_eq!(table.price("gpt-4o-mini").unwrap().0, "gpt-4o-mini");
        assert!((cost(price, 1_000_000, 1_000_000) - 12.5).abs() < 1e-9);
        assert!(matches!(
            table.price("gpt-4ox"),
            Err(Error::UnknownModel { ref model, .. }) if model == "gpt-4ox"
        ));
        assert_eq!(table.price("gpt-4-0613").unwrap().0, "gpt-4");
        // A variant is not its base model: no silent fallback.
        for variant in ["o1-preview", "gpt-5-codex", "gpt-4-32k", "gpt-4o-banana"] {
            match table.price(variant) {
                Err(Error::UnknownModel { model, known }) => {
                    assert_eq!(model, variant);
                    assert!(known.split(", ").count() <= 5, "{known}");
                }
                other => panic!("{variant}: {other:?}"),
            }
        }
        let nearest = table.price("o1-preview").unwrap_err().to_string();
        assert!(nearest.contains("o1"), "{nearest}");
        // Near misses come first: a dropped hyphen, a swap, a typo.
        for (typed, meant) in [
            ("gpt4o", "gpt-4o"),
            ("gtp-4o", "gpt-4o"),
            ("gpt-5-mimi", "gpt-5-mini"),
        ] {
            match table.price(typed) {
                Err(Error::UnknownModel { known, .. }) => {
                    assert_eq!(known.split(", ").next(), Some(meant), "{typed}: {known}")
                }
                other => panic!("{typed}: {other:?}"),
            }
        }
        assert!(matches!(
            PriceTable::parse("{\"as_of\": 1}"),
            Err(Error::BadPriceTable(_))
        ));
    }

    #[test]
    fn a_table_s_unit_currency_and_date_are_honoured_or_refused() {
        let table = |as_of: &str, currency: &str, unit: &str| {
            PriceTable::parse(&format!(
                r#"{{"as_of": "{as_of}", "currency": "{currency}", "unit": "{unit}",
                    "models": {{"m": {{"input": 0.5, "cached_input": 0.05, "output": 1.5,
                    "encoding": "o200k_base"}}}}}}"#
            ))
        };
        let per_1k = table("2026-11-01", "EUR", "per 1K tokens").unwrap();
        assert_eq!(per_1k.unit, "per 1M tokens");
        let estimate = per_1k.estimate("m", 1000, 0, 2000).unwrap();
        assert_eq!(estimate.currency, "EUR");
        assert!((estimate.input_cost - 0.5).abs() < 1e-12, "{estimate:?}");
        assert!((estimate.output_cost - 3.0).abs() < 1e-12, "{estimate:?}");
        let per_token = table("2026-11-01", "USD", "per token").unwrap();
        assert_eq!(per_token.models["m"].input, 500_000.0);
        for (as_of, currency, unit, field) in [
            ("yesterday", "USD", "per 1M tokens", "as_of"),
            ("2026-02-30", "USD", "per 1M tokens", "as_of"),
            ("2026-11-01", "bananas", "per 1M tokens", "currency"),
            ("2026-11-01", "usd", "per 1M tokens", "currency"),
            ("2026-11-01", "USD", "per 1K characters", "unit"),
        ] {
            match table(as_of, currency, unit) {
                Err(Error::BadPriceTable(why)) => assert!(why.starts_with(field), "{why}"),
                other => panic!("{as_of} {currency} {unit}: {other:?}"),
            }
        }
        assert!(is_date("2024-02-29") && !is_date("2023-02-29") && !is_date("2026-1-01"));
        // Another currency replaces the bundled table; the same one adds.
        let euros = PriceTable::bundled().overlay(per_1k);
        assert_eq!((euros.currency.as_str(), euros.models.len()), ("EUR", 1));
        let dollars = PriceTable::bundled().overlay(per_token);
        assert_eq!(dollars.models.len(), PriceTable::bundled().models.len() + 1);
        // A missing field's error shows the expected shape.
        match PriceTable::parse(r#"{"as_of": "2026-11-01"}"#) {
            Err(Error::BadPriceTable(why)) => {
                assert!(why.contains(r#""unit": "per 1M tokens""#), "{why}")
            }
            other => panic!("{other:?}"),
        }
        // A model tiktoken does not map needs an encoding, and is told so.
        let unmapped = PriceTable::parse(
            r#"{"as_of": "2026-11-01", "currency": "USD", "unit": "per 1M tokens",
                "models": {"llama": {"input": 1.0}}}"#,
        )
        .unwrap();
        match unmapped.pricing("llama") {
            Err(e @ Error::NoEncoding(_)) => assert!(e.to_string().contains("\"encoding\""), "{e}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn estimates_refuse_what_a_model_cannot_price() {
        let table = PriceTable::bundled();
        let estimate = table
            .estimate("GPT-4o-2024-08-06", 1_000_000, 0, 1_000_000)
            .unwrap();
        assert_eq!(
            (estimate.priced_as.as_str(), estimate.encoding),
            ("gpt-4o", "o200k_base")
        );
        assert!((estimate.total_cost - 12.5).abs() < 1e-9);
        assert!(matches!(
            table.estimate("gpt-4o", 10, 11, 0),
            Err(Error::CachedAboveInput {
                cached: 11,
                input: 10
            })
        ));
        assert!(matches!(
            table.estimate("gpt-4", 10, 1, 0),
            Err(Error::NoCachedPrice(ref model)) if model == "gpt-4"
        ));
        assert!(matches!(
            table.estimate("text-embedding-3-small", 10, 0, 100),
            Err(Error::NoOutputPrice(ref model)) if model == "text-embedding-3-small"
        ));
        assert_eq!(
            table
                .estimate("text-embedding-3-small", 10, 0, 0)
                .unwrap()
                .output_cost,
            0.0
        );
    }

    #[test]
    fn costs_beyond_a_double_are_refused_and_prices_must_be_finite() {
        let table = PriceTable::parse(
            r#"{"as_of": "2026-01-01", "currency": "USD", "unit": "per 1M tokens",
                "models": {"huge": {"input": 1e308, "output": 1e300, "encoding": "o200k_base"}}}"#,
        )
        .unwrap();
        assert!(matches!(
            table.estimate("huge", 2, 0, 0),
            Err(Error::CostNotFinite {
                input_tokens: 2,
                ..
            })
        ));
        assert!(matches!(
            table.estimate("huge", 0, 0, u64::MAX),
            Err(Error::CostNotFinite {
                output_tokens: u64::MAX,
                ..
            })
        ));
        // One token of each still has a finite cost.
        let estimate = table.estimate("huge", 1, 0, 1).unwrap();
        assert!(estimate.total_cost.is_finite());
        for bad in ["-1", "1e999", "\"NaN\""] {
            let json = format!(
                r#"{{"as_of": "2026-01-01", "currency": "USD", "unit": "per 1M tokens", "models": {{"m": {{"input": {bad}}}}}}}"#
            );
            assert!(
                matches!(PriceTable::parse(&json), Err(Error::BadPriceTable(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_price_entry_can_name_its_encoding() {
        let extra = PriceTable::parse(
            r#"{"as_of": "2026-11-01", "currency": "USD", "unit": "per 1M tokens",
                "models": {"my-model": {"input": 2.0, "output": 4.0, "encoding": "cl100k_base"}}}"#,
        )
        .unwrap();
        let table = PriceTable::bundled().overlay(extra);
        assert_eq!(table.pricing("my-model").unwrap().encoding, "cl100k_base");
        assert_eq!(table.pricing("My-Model").unwrap().priced_as, "my-model");
        let bad = PriceTable::parse(
            r#"{"as_of": "2026-01-01", "currency": "USD", "unit": "per 1M tokens",
                "models": {"m": {"input": 1.0, "encoding": "p60k_base"}}}"#,
        );
        assert!(
            matches!(bad, Err(Error::BadPriceTable(ref m)) if m.contains("p60k_base")),
            "{bad:?}"
        );
        let unmapped = PriceTable::parse(
            r#"{"as_of": "2026-01-01", "currency": "USD", "unit": "per 1M tokens", "models": {"llama": {"input": 1.0}}}"#,
        )
        .unwrap();
        assert!(matches!(
            unmapped.pricing("llama"),
            Err(Error::NoEncoding(ref model)) if model == "llama"
        ));
    }

    #[test]
    fn overlays_cached_rates_and_age() {
        let extra = PriceTable::parse(
            r#"{"as_of": "2026-11-01", "currency": "USD", "unit": "per 1M tokens",
                "models": {"gpt-5-codex": {"input": 1.25, "output": 10.0}, "gpt-4o": {"input": 5.0}}}"#,
        )
        .unwrap();
        let table = PriceTable::bundled().overlay(extra);
        assert_eq!(table.price("gpt-5-codex").unwrap().1.input, 1.25);
        assert_eq!(table.price("gpt-4o").unwrap().1.input, 5.0);
        assert_eq!(
            table.price("gpt-5").unwrap().1.input,
            1.25,
            "bundled entries stay"
        );
        let (_, gpt5) = table.price("gpt-5").unwrap();
        assert_eq!(cached_cost(gpt5, 1_000_000), Some(0.125));
        assert_eq!(cached_cost(table.price("gpt-4").unwrap().1, 1), None);
        // 2025-08-07 is day 20,307 after 1970-01-01.
        assert_eq!(days_from_civil("2025-08-07"), Some(20_307));
        assert_eq!(days_from_civil("1970-01-01"), Some(0));
        let bundled = PriceTable::bundled();
        let day = days_from_civil(&bundled.as_of).unwrap();
        assert_eq!(bundled.age_in_days(day + 90), Some(90));
        assert_eq!(days_from_civil("2025-13-01"), None);
    }
}
