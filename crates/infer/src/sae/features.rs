//! The inputs that activate each latent of an autoencoder most, over a
//! dataset view, with their surrounding text when the dataset kept the
//! token ids it was recorded from (`acts record` keeps them).

use modelbin_format::saev::{LayerChoice, TokenText};

use super::Sae;
use super::view::View;
use crate::{Result, SaeError};

/// Which latents to describe and how many inputs each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureOptions {
    /// Inputs kept per latent, the strongest first.
    pub top: usize,
    /// Only this latent; otherwise the most often firing latents.
    pub latent: Option<usize>,
    /// Without `latent`: how many latents, the most often firing first.
    pub latents: usize,
}

impl Default for FeatureOptions {
    /// Five inputs for each of the 20 most often firing latents: the
    /// command line's defaults.
    fn default() -> Self {
        FeatureOptions {
            top: 5,
            latent: None,
            latents: 20,
        }
    }
}

/// One input that activates a latent.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    /// The latent's activation.
    pub value: f32,
    /// The input's image (window) in the dataset.
    pub img: u64,
    /// Its layer.
    pub layer: i64,
    /// Its token in the image.
    pub token: u64,
    /// The text before the token, the token, and the text after it, when
    /// the dataset kept its token ids.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<[String; 3]>,
}

/// A latent with its firing density and strongest inputs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Feature {
    /// The latent's index.
    pub latent: usize,
    /// The fraction of inputs it fires on.
    pub density: f64,
    /// Its strongest inputs, strongest first.
    pub top: Vec<Hit>,
}

/// What [`features`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Features {
    /// The latents chosen, the most often firing first.
    pub features: Vec<Feature>,
    /// Whether contexts could be shown (the dataset kept token ids).
    pub has_text: bool,
}

/// Encodes every input of `view` with `sae` and describes the latents
/// `options` choose. `progress` is told the bytes done and the total after
/// each batch and returns `false` to stop ([`SaeError::Interrupted`]).
pub fn features(
    sae: &Sae<f32>,
    view: &View,
    options: FeatureOptions,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Features> {
    if let Some(latent) = options.latent
        && latent >= sae.d_sae
    {
        return Err(SaeError::NoSuchLatent {
            latent,
            d_sae: sae.d_sae,
        }
        .into());
    }
    let top = options.top.max(1);
    // Per latent: firing count and the strongest (value, example index).
    let mut fired = vec![0u64; sae.d_sae];
    let mut best: Vec<Vec<(f32, u64)>> = vec![Vec::new(); sae.d_sae];
    let row_bytes = view.d_in() as u64 * 4;
    let mut index = 0u64;
    for batch in view.loader(0, 0, false)? {
        view.check_finite(&batch.data)?;
        let codes = sae.encode(&batch.data, batch.rows);
        for row in 0..batch.rows {
            for (j, value) in codes.active(row) {
                fired[j] += 1;
                keep_best(&mut best[j], (value, index + row as u64), top);
            }
        }
        index += batch.rows as u64;
        if !progress(index * row_bytes, view.examples() * row_bytes) {
            return Err(SaeError::Interrupted.into());
        }
    }
    let mut chosen: Vec<usize> = match options.latent {
        Some(latent) => vec![latent],
        None => (0..sae.d_sae).filter(|&j| fired[j] > 0).collect(),
    };
    chosen.sort_by_key(|&j| (std::cmp::Reverse(fired[j]), j));
    if options.latent.is_none() {
        chosen.truncate(options.latents);
    }
    let dataset = view.dataset();
    let text = TokenText::of(dataset)?;
    let examples = dataset.view(view.patches(), LayerChoice::One(view.layer()))?;
    let mut features = Vec::with_capacity(chosen.len());
    for j in chosen {
        let mut hits = Vec::with_capacity(best[j].len());
        for &(value, i) in &best[j] {
            let example = examples.get(i)?;
            hits.push(Hit {
                value,
                img: example.img,
                layer: example.layer,
                token: example.token,
                context: text
                    .as_ref()
                    .map(|text| text.context(example.img, example.token)),
            });
        }
        features.push(Feature {
            latent: j,
            density: fired[j] as f64 / view.examples().max(1) as f64,
            top: hits,
        });
    }
    Ok(Features {
        features,
        has_text: text.is_some(),
    })
}

/// Inserts `hit` into `list` (strongest first), keeping `top` entries.
fn keep_best(list: &mut Vec<(f32, u64)>, hit: (f32, u64), top: usize) {
    if list.len() == top && list.last().is_some_and(|last| last.0 >= hit.0) {
        return;
    }
    let at = list.partition_point(|other| other.0 >= hit.0);
    list.insert(at, hit);
    list.truncate(top);
}

/// One self-contained HTML page (no scripts, no network) titled after
/// `name`, with a section per feature: its density and a table of its
/// inputs, the token marked in each context.
pub fn html_page(name: &str, features: &[Feature]) -> String {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut page = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>Features of {0}</title>\
         <style>body{{font-family:sans-serif;max-width:60em;margin:auto}}\
         td{{font-family:monospace;white-space:pre;padding:0 .5em}}mark{{background:#fd6}}</style>\
         <h1>Features of {0}</h1>",
        escape(name)
    );
    for feature in features {
        page.push_str(&format!(
            "<h2 id=\"latent-{0}\">Latent {0}</h2><p>fires on {1:.3}% of inputs</p><table>",
            feature.latent,
            100.0 * feature.density
        ));
        for hit in &feature.top {
            let shown = match &hit.context {
                Some([before, token, after]) => format!(
                    "{}<mark>{}</mark>{}",
                    escape(before),
                    escape(token),
                    escape(after)
                ),
                None => format!(
                    "image {}, layer {}, token {}",
                    hit.img, hit.layer, hit.token
                ),
            };
            page.push_str(&format!(
                "<tr><td>{:.4}</td><td>{shown}</td></tr>",
                hit.value
            ));
        }
        page.push_str("</table>");
    }
    page
}
