//! One self-contained HTML page of [`Features`]: inline CSS and script, the
//! data embedded as JSON, no network. The script (`page/page.js`) draws the
//! index and a latent's view when asked, so pages of many latents open
//! fast.

use super::Features;

const TEMPLATE: &str = include_str!("page/page.html");
const CSS: &str = include_str!("page/page.css");
const SCRIPT: &str = include_str!("page/page.js");

/// The page of `features`, titled after `name` (the autoencoder); with
/// `open`, it shows that latent's view alone.
pub fn html_page(name: &str, features: &Features, open: Option<usize>) -> String {
    #[derive(serde::Serialize)]
    struct Embedded<'a> {
        name: &'a str,
        open: Option<usize>,
        #[serde(flatten)]
        features: &'a Features,
    }
    let data = serde_json::to_string(&Embedded {
        name,
        open,
        features,
    })
    .expect("features serialize");
    page(name, &data)
}

/// The view of one latent alone (what a notebook cell shows), given as the
/// JSON object `sae features --json` prints for it, with the view's
/// `examples` and the autoencoder's `d_sae`.
pub fn latent_page(name: &str, examples: u64, d_sae: usize, feature: &serde_json::Value) -> String {
    let data = serde_json::json!({
        "name": name,
        "open": feature["latent"],
        "examples": examples,
        "d_sae": d_sae,
        "has_text": feature["top"][0]["tokens"].is_array(),
        "latents": [feature],
    });
    page(name, &data.to_string())
}

/// The page around `data`, the JSON its script reads.
fn page(name: &str, data: &str) -> String {
    // `<` only occurs inside JSON strings, where `\u003c` means the same
    // and cannot end the script element.
    let data = data.replace('<', "\\u003c");
    TEMPLATE
        .replace("{{CSS}}", CSS)
        .replace("{{JS}}", SCRIPT)
        .replace("{{NAME}}", &escape(name))
        .replace("{{DATA}}", &data)
}

/// `text` safe as HTML text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
