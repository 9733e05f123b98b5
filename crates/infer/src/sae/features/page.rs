//! One self-contained HTML page of [`Features`]: inline CSS and script, the
//! data embedded as JSON, no network. The script (`page/page.js`) draws the
//! index and a latent's view when asked, so pages of many latents open
//! fast.

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

/// The page of `latents` (as `--json` prints them). The index gets what it
/// shows and searches of each latent; the rest of a latent stays a JSON
/// string the script parses when the latent is opened, which keeps a page
/// of many latents quick to open.
fn page(name: &str, open: Option<Value>, examples: u64, d_sae: usize, latents: &[Value]) -> String {
    let data = json!({
        "name": name,
        "open": open,
        "examples": examples,
        "d_sae": d_sae,
        "latents": latents.iter().map(index_entry).collect::<Vec<_>>(),
        "details": latents.iter().map(Value::to_string).collect::<Vec<_>>(),
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

/// A latent's line in the index: its figures, the distinct tokens its
/// strongest inputs sit on (`preview`), and the lowercased texts a search
/// looks in (`words`: the tokens of every input shown and of its decoder
/// effects, NUL-separated).
fn index_entry(feature: &Value) -> Value {
    let hit = |c: &Value| -> Option<String> {
        let at = c["at"].as_u64()? as usize;
        c["tokens"][at].as_str().map(str::to_owned)
    };
    let contexts = || {
        let samples = feature["quantiles"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|q| q["samples"].as_array().into_iter().flatten());
        feature["top"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(samples)
    };
    let mut preview: Vec<String> = Vec::new();
    for token in feature["top"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(hit)
    {
        let shown = match token.trim() {
            "" => token.replace(' ', "␣"),
            trimmed => trimmed.to_owned(),
        };
        if preview.len() < 5 && !preview.contains(&shown) {
            preview.push(shown);
        }
    }
    let effects = &feature["effects"];
    let effect_tokens = [&effects["logits"]["raised"], &effects["nearest"]["pieces"]]
        .into_iter()
        .flat_map(|list| list.as_array().into_iter().flatten())
        .filter_map(|t| t["token"].as_str().map(str::to_owned));
    let words: Vec<String> = contexts().filter_map(hit).chain(effect_tokens).collect();
    json!({
        "latent": feature["latent"],
        "density": feature["density"],
        "band": feature["band"],
        "max": feature["max"],
        "preview": preview,
        "words": words.join("\0").to_lowercase(),
    })
}

/// `text` safe as HTML text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
