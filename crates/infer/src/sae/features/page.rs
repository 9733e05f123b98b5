//! One self-contained HTML page of [`Features`]: inline CSS and script, the
//! data embedded as JSON, no network. The script (`page/page.js`) draws the
//! index and a latent's view when asked, so pages of many latents open
//! fast.

use std::collections::HashMap;

use modelbin_format::saev::alone;
use serde_json::{Value, json};

use super::{Features, Thumbnails};

const TEMPLATE: &str = include_str!("page/page.html");
const CSS: &str = include_str!("page/page.css");
const SCRIPT: &str = include_str!("page/page.js");

/// The page of `features`, titled after `name` (the autoencoder); with
/// `open`, it shows that latent's view alone. For a dataset recorded from
/// images, `thumbnails` ([`Thumbnails::of_features`]) are the pictures the
/// heat maps are drawn over; without them, the heat maps are drawn alone.
pub fn html_page(
    name: &str,
    features: &Features,
    open: Option<usize>,
    thumbnails: Option<&Thumbnails>,
) -> String {
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
        thumbnails,
    )
}

/// The view of one latent alone (what a notebook cell shows), given as the
/// JSON object `sae features --json` prints for it, with the view's
/// `examples` and the autoencoder's `d_sae`, and for an image dataset the
/// pictures of its images ([`Thumbnails::of_latent`]).
pub fn latent_page(
    name: &str,
    examples: u64,
    d_sae: usize,
    feature: &Value,
    thumbnails: Option<&Thumbnails>,
) -> String {
    page(
        name,
        Some(feature["latent"].clone()),
        examples,
        d_sae,
        std::slice::from_ref(feature),
        thumbnails,
    )
}

/// The page of `latents` (as `--json` prints them), encoded compactly: one
/// table of every token text on the page, which contexts and searches refer
/// to by number (the most frequent texts get the shortest numbers); the
/// index as columns; and each latent's view as a JSON string of numbers
/// only, which the script parses when the latent is opened. Activations
/// and effect values are rounded to the digits the page shows. Images are
/// listed once ([`Pictures`]) and referred to by number.
fn page(
    name: &str,
    open: Option<Value>,
    examples: u64,
    d_sae: usize,
    latents: &[Value],
    thumbnails: Option<&Thumbnails>,
) -> String {
    let table = TokenTable::of(latents);
    let pictures = Pictures::of(latents, thumbnails);
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
        "details": latents.iter().map(|f| table.detail(f, &pictures).to_string()).collect::<Vec<_>>(),
        "images": pictures.data(),
    });
    // `<` only occurs inside JSON strings, where `\u003c` means the same
    // and cannot end the script element.
    let data = data.to_string().replace('<', "\\u003c");
    fill(
        TEMPLATE,
        &[
            ("CSS", CSS),
            ("JS", SCRIPT),
            ("NAME", &escape(name)),
            ("DATA", &data),
        ],
    )
}

/// `template` with each `{{KEY}}` of `values` replaced by its value, in one
/// pass over the template: a value is never scanned again, so a name or a
/// token text that holds `{{DATA}}` stays that text instead of receiving
/// the next value. Any other `{{…}}` is kept as it is.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let extra: usize = values.iter().map(|(_, v)| v.len()).sum();
    let mut out = String::with_capacity(template.len() + extra);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let value = after.find("}}").and_then(|end| {
            let key = &after[..end];
            let value = values.iter().find(|(k, _)| *k == key)?.1;
            Some((value, &after[end + 2..]))
        });
        match value {
            Some((value, next)) => {
                out.push_str(value);
                rest = next;
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The density bands in the order the page numbers them (`BANDS` in the
/// script).
const BANDS: [&str; 5] = ["dead", "ultra-rare", "rare", "typical", "dense"];

/// The contexts a latent's view shows: its top ones, then each interval's
/// samples.
pub(super) fn contexts(feature: &Value) -> impl Iterator<Item = &Value> {
    let samples = list(&feature["quantiles"]).flat_map(|q| list(&q["samples"]));
    list(&feature["top"]).chain(samples)
}

/// The items of a JSON array; none for anything else.
fn list(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

/// The token a context's input sits on, or the file name of its image.
fn hit(context: &Value) -> Option<&str> {
    if let Some(path) = context["image"]["path"].as_str() {
        return Some(file_name(path));
    }
    let at = context["at"].as_u64()? as usize;
    context["tokens"][at].as_str()
}

/// The last component of `path`.
fn file_name(path: &str) -> &str {
    std::path::Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(path)
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

/// The distinct tokens a latent's strongest inputs sit on, each shown by
/// itself ([`alone`]: spaces as `␣`), joined for its line in the index.
fn preview(feature: &Value) -> String {
    let mut preview: Vec<String> = Vec::new();
    for token in list(&feature["top"]).filter_map(hit) {
        let shown = alone(token);
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
            let names =
                contexts(feature).filter_map(|c| c["image"]["path"].as_str().map(file_name));
            let in_effects = effect_lists(feature)
                .into_iter()
                .flat_map(list)
                .map(|t| &t["token"]);
            let texts = in_contexts.chain(in_effects).filter_map(Value::as_str);
            for text in texts.chain(names) {
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
    /// and activations of its nonzero tokens, interleaved), of an image
    /// `[value, picture, token, firing, cls]` (`picture` its number in
    /// [`Pictures`], `firing` over its patches, `cls` the activation on
    /// CLS or null) or, without text, `[value, img, layer, token]`;
    /// effects `[raised, lowered]` or `[pieces]`, each a list of token
    /// numbers and values interleaved.
    fn detail(&self, feature: &Value, pictures: &Pictures) -> Value {
        let firing = |acts: &Value| -> Vec<Value> {
            list(acts)
                .enumerate()
                .filter(|(_, a)| a.as_f64().is_some_and(|a| a != 0.0))
                .flat_map(|(i, a)| [json!(i), shown(a)])
                .collect()
        };
        let context = |c: &Value| -> Value {
            let image = &c["image"];
            if image.is_object() {
                json!([
                    shown(&c["value"]),
                    pictures.number(c["img"].as_u64()),
                    c["token"],
                    firing(&image["acts"]),
                    shown(&image["cls"]),
                ])
            } else if c["tokens"].is_array() {
                let tokens: Vec<Value> = list(&c["tokens"]).map(|t| self.id(t)).collect();
                json!([shown(&c["value"]), c["at"], tokens, firing(&c["acts"])])
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

/// The images a page's latents show, each once, numbered in image order,
/// with their pictures when given.
struct Pictures<'t> {
    /// (image, file name), by image.
    images: Vec<(u64, String)>,
    /// The grid of the contexts, `[rows, cols]`.
    grid: Value,
    /// Whether contexts hold a patch grid (not a `cls` view).
    cells: bool,
    thumbnails: Option<&'t Thumbnails>,
}

impl<'t> Pictures<'t> {
    fn of(latents: &[Value], thumbnails: Option<&'t Thumbnails>) -> Pictures<'t> {
        let mut images: Vec<(u64, String)> = Vec::new();
        let (mut grid, mut cells) = (Value::Null, false);
        for context in latents.iter().flat_map(contexts) {
            let image = &context["image"];
            if let (Some(img), Some(path)) = (context["img"].as_u64(), image["path"].as_str()) {
                images.push((img, file_name(path).to_owned()));
                grid = image["grid"].clone();
                cells |= list(&image["acts"]).next().is_some();
            }
        }
        images.sort_unstable();
        images.dedup_by_key(|i| i.0);
        Pictures {
            images,
            grid,
            cells,
            thumbnails,
        }
    }

    /// The number of image `img` on the page.
    fn number(&self, img: Option<u64>) -> Value {
        img.and_then(|img| self.images.binary_search_by_key(&img, |i| i.0).ok())
            .into()
    }

    /// The page's `images`: null without images, else the grid, the
    /// model's patch size and input size (`[height, width]`; without
    /// thumbnails, one pixel a patch), whether contexts hold a grid, and
    /// each image as `[img, name, picture URI or "", note or ""]`.
    fn data(&self) -> Value {
        if self.images.is_empty() {
            return Value::Null;
        }
        let vision = self.thumbnails.map(|t| &t.vision);
        let list: Vec<Value> = self
            .images
            .iter()
            .map(|(img, name)| {
                let thumbnail = self.thumbnails.and_then(|t| {
                    let at = t.list.binary_search_by_key(img, |t| t.img).ok()?;
                    Some(&t.list[at])
                });
                let note = match thumbnail {
                    Some(t) => t.note().unwrap_or_default(),
                    None => "no picture given",
                };
                let uri = thumbnail.and_then(|t| t.uri.as_deref()).unwrap_or_default();
                json!([img, name, uri, note])
            })
            .collect();
        json!({
            "grid": self.grid,
            "patch": vision.map_or(json!(1), |v| json!(v.patch_size)),
            "input": vision.map_or(self.grid.clone(), |v| json!(v.input_size)),
            "cells": self.cells,
            "list": list,
        })
    }
}

/// `text` safe as HTML text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_placeholder_is_filled_once_from_the_template() {
        let every = "{{CSS}}{{JS}}{{NAME}}{{DATA}}{{OTHER}}{{";
        assert_eq!(
            fill(
                "<{{NAME}}|{{DATA}}|{{OTHER}}|{{NAME",
                &[("NAME", every), ("DATA", "d")]
            ),
            format!("<{every}|d|{{{{OTHER}}}}|{{{{NAME")
        );
        let features = Features {
            examples: 0,
            d_sae: 0,
            has_text: false,
            vision: None,
            latents: Vec::new(),
        };
        let page = html_page(every, &features, None, None);
        assert!(
            page.contains(&format!("<title>Features of {every}</title>")),
            "the title keeps the name's text"
        );
        assert!(page.contains(&format!(r#"<span id="name">{every}</span>"#)));
        assert_eq!(page.matches(CSS).count(), 1);
        assert_eq!(page.matches(SCRIPT).count(), 1);
        assert_eq!(
            page.matches(r#"<script type="application/json""#).count(),
            1
        );
        // The data names the autoencoder with the same text, as JSON.
        assert!(page.contains(&format!(r#""name":"{every}""#)));
    }
}
