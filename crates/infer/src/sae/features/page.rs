//! One self-contained HTML page of [`Features`]: inline CSS and script, the
//! data embedded as JSON, no network. The script (`page/page.js`) draws the
//! index and a latent's view when asked, so pages of many latents open
//! fast.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::Features;

const TEMPLATE: &str = include_str!("page/page.html");
const CSS: &str = include_str!("page/page.css");
const SCRIPT: &str = include_str!("page/page.js");

/// The page of `features`, titled after `name` (the autoencoder); with
/// `open`, it shows that latent's view alone.
pub fn html_page(name: &str, features: &Features, open: Option<usize>) -> String {
    let latents: Vec<Value> = features
        .latents
        .iter()
        .map(|f| serde_json::to_value(f).expect("features serialize"))
        .collect();
    page(
        name,
        open.map(Value::from),
        features.examples,
        features.d_sae,
        &latents,
    )
}

/// The view of one latent alone (what a notebook cell shows), given as the
/// JSON object `sae features --json` prints for it, with the view's
/// `examples` and the autoencoder's `d_sae`.
pub fn latent_page(name: &str, examples: u64, d_sae: usize, feature: &Value) -> String {
    page(
        name,
        Some(feature["latent"].clone()),
        examples,
        d_sae,
        std::slice::from_ref(feature),
    )
}

/// The page of `latents` (as `--json` prints them), encoded compactly: one
/// table of every token text on the page, which contexts and searches refer
/// to by number (the most frequent texts get the shortest numbers); the
/// index as columns; and each latent's view as a JSON string of numbers
/// only, which the script parses when the latent is opened. Activations
/// and effect values are rounded to the digits the page shows.
fn page(name: &str, open: Option<Value>, examples: u64, d_sae: usize, latents: &[Value]) -> String {
    let table = TokenTable::of(latents);
    let column = |key: &str| -> Value { latents.iter().map(|f| f[key].clone()).collect() };
    let bands: Vec<Value> = latents
        .iter()
        .map(|f| {
            let band = f["band"].as_str().unwrap_or_default();
            BANDS.iter().position(|b| *b == band).into()
        })
        .collect();
    let data = json!({
        "name": name,
        "open": open,
        "examples": examples,
        "d_sae": d_sae,
        "tokens": table.texts,
        "latent": column("latent"),
        "density": column("density"),
        "band": bands,
        "max": column("max"),
        "preview": latents.iter().map(preview).collect::<Vec<_>>(),
        "words": latents.iter().map(|f| table.words(f)).collect::<Vec<_>>(),
        "details": latents.iter().map(|f| table.detail(f).to_string()).collect::<Vec<_>>(),
    });
    // `<` only occurs inside JSON strings, where `\u003c` means the same
    // and cannot end the script element.
    let data = data.to_string().replace('<', "\\u003c");
    TEMPLATE
        .replace("{{CSS}}", CSS)
        .replace("{{JS}}", SCRIPT)
        .replace("{{NAME}}", &escape(name))
        .replace("{{DATA}}", &data)
}

/// The density bands in the order the page numbers them (`BANDS` in the
/// script).
const BANDS: [&str; 5] = ["dead", "ultra-rare", "rare", "typical", "dense"];

/// The contexts a latent's view shows: its top ones, then each interval's
/// samples.
fn contexts(feature: &Value) -> impl Iterator<Item = &Value> {
    let samples = list(&feature["quantiles"]).flat_map(|q| list(&q["samples"]));
    list(&feature["top"]).chain(samples)
}

/// The items of a JSON array; none for anything else.
fn list(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

/// The token a context's input sits on.
fn hit(context: &Value) -> Option<&str> {
    let at = context["at"].as_u64()? as usize;
    context["tokens"][at].as_str()
}

/// The token lists of a latent's decoder effects, with the key the page
/// knows each by: the next tokens it raises and lowers (TLLM) or the
/// nearest word pieces (BERT).
fn effect_lists(feature: &Value) -> [&Value; 3] {
    let effects = &feature["effects"];
    [
        &effects["logits"]["raised"],
        &effects["logits"]["lowered"],
        &effects["nearest"]["pieces"],
    ]
}

/// The distinct tokens a latent's strongest inputs sit on, spaces shown,
/// joined for its line in the index.
fn preview(feature: &Value) -> String {
    let mut preview: Vec<String> = Vec::new();
    for token in list(&feature["top"]).filter_map(hit) {
        let shown = match token.trim() {
            "" => token.replace(' ', "␣"),
            trimmed => trimmed.to_owned(),
        };
        if preview.len() < 5 && !preview.contains(&shown) {
            preview.push(shown);
        }
    }
    preview.join(" · ")
}

/// `value` rounded to what the page's `num` shows of it: one decimal from
/// 100 up, three significant digits below.
fn shown(value: &Value) -> Value {
    let Some(v) = value.as_f64() else {
        return value.clone();
    };
    let rounded = if v.abs() >= 100.0 {
        (v * 10.0).round() / 10.0
    } else {
        format!("{v:.2e}").parse().unwrap_or(v)
    };
    json!(rounded)
}

/// Every token text of a page's latents, each once, numbered.
struct TokenTable {
    texts: Vec<String>,
    ids: HashMap<String, usize>,
}

impl TokenTable {
    /// The table of the tokens of `latents`' contexts and effects, the most
    /// frequent first.
    fn of(latents: &[Value]) -> TokenTable {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for feature in latents {
            let in_contexts = contexts(feature).flat_map(|c| list(&c["tokens"]));
            let in_effects = effect_lists(feature)
                .into_iter()
                .flat_map(list)
                .map(|t| &t["token"]);
            for text in in_contexts.chain(in_effects).filter_map(Value::as_str) {
                *counts.entry(text).or_default() += 1;
            }
        }
        let mut texts: Vec<(&str, usize)> = counts.into_iter().collect();
        texts.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let texts: Vec<String> = texts.into_iter().map(|(t, _)| t.to_owned()).collect();
        let ids = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i))
            .collect();
        TokenTable { texts, ids }
    }

    /// The number of `text` (a JSON string the table was built from).
    fn id(&self, text: &Value) -> Value {
        text.as_str().and_then(|t| self.ids.get(t)).copied().into()
    }

    /// The tokens a search looks in for a latent: those its shown inputs
    /// sit on and those its decoder raises or lies closest to, each once.
    fn words(&self, feature: &Value) -> Vec<usize> {
        let [raised, _, pieces] = effect_lists(feature);
        let effects = list(raised)
            .chain(list(pieces))
            .filter_map(|t| t["token"].as_str());
        let mut words: Vec<usize> = contexts(feature)
            .filter_map(hit)
            .chain(effects)
            .filter_map(|t| self.ids.get(t).copied())
            .collect();
        words.sort_unstable();
        words.dedup();
        words
    }

    /// A latent's view as numbers: `[fired, mean, histogram, top,
    /// intervals, effects]`, each interval `[low, high, fired, samples]`,
    /// each context `[value, at, tokens, firing]` (`firing` the positions
    /// and activations of its nonzero tokens, interleaved) or, without
    /// text, `[value, img, layer, token]`; effects `[raised, lowered]` or
    /// `[pieces]`, each a list of token numbers and values interleaved.
    fn detail(&self, feature: &Value) -> Value {
        let context = |c: &Value| -> Value {
            if c["tokens"].is_array() {
                let tokens: Vec<Value> = list(&c["tokens"]).map(|t| self.id(t)).collect();
                let firing: Vec<Value> = list(&c["acts"])
                    .enumerate()
                    .filter(|(_, a)| a.as_f64().is_some_and(|a| a != 0.0))
                    .flat_map(|(i, a)| [json!(i), shown(a)])
                    .collect();
                json!([shown(&c["value"]), c["at"], tokens, firing])
            } else {
                json!([shown(&c["value"]), c["img"], c["layer"], c["token"]])
            }
        };
        let contexts_of = |list_of: &Value| -> Vec<Value> { list(list_of).map(context).collect() };
        let intervals: Vec<Value> = list(&feature["quantiles"])
            .map(|q| json!([q["low"], q["high"], q["fired"], contexts_of(&q["samples"])]))
            .collect();
        let tokens = |effects: &Value| -> Vec<Value> {
            list(effects)
                .flat_map(|t| [self.id(&t["token"]), shown(&t["value"])])
                .collect()
        };
        let [raised, lowered, pieces] = effect_lists(feature);
        let effects = if raised.is_array() {
            json!([tokens(raised), tokens(lowered)])
        } else if pieces.is_array() {
            json!([tokens(pieces)])
        } else {
            Value::Null
        };
        json!([
            feature["fired"],
            feature["mean"],
            feature["histogram"],
            contexts_of(&feature["top"]),
            intervals,
            effects,
        ])
    }
}

/// `text` safe as HTML text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
