//! One self-contained HTML page of [`Features`]: inline CSS and script, the
//! data embedded as JSON, no network. The script (`page/page.js`) draws the
//! index and a latent's view when asked, so pages of many latents open
//! fast.

use super::Features;

const TEMPLATE: &str = include_str!("page/page.html");
const CSS: &str = include_str!("page/page.css");
const SCRIPT: &str = include_str!("page/page.js");

/// The page of `features`, titled after `name` (the autoencoder); with
/// `open`, it shows that latent's view alone (as a notebook cell shows one
/// latent).
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
